// A workload spec read once into what it names, and specs made in code (a sweep's axes and
// --param, advise's changes) checked as a spelling is.
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

TEST_CASE("workload spec: a model made in code is spelled canonically and checked as the parser checks it",
          "[workload_spec]") {
  ModelSpec model = *parse_model_spec("bert_base_b8");
  set_model_token(model, model_token("amp"), 0, "bert_base_b8");
  const WorkloadSpec made = model_workload(model);
  CHECK(made.text == "bert_base_amp_b8");
  REQUIRE(made.model());
  CHECK(*made.model() == *parse_model_spec("bert_base_amp_b8"));

  // Each token is fine alone; together they are a combination the lowering does not model,
  // refused with the parser's own words for the same spelling.
  const std::string decoder = "llama2_7b_bf16_adamw_b4:lora=16";
  ModelSpec sharded = *parse_model_spec(decoder);
  set_model_token(sharded, model_token("zero=1"), 0, decoder);
  CHECK_THROWS_WITH(model_workload(sharded), Catch::Contains("zero=S and world=N come together"));
  set_model_token(sharded, model_token("world="), 8, decoder);
  CHECK_THROWS_WITH(model_workload(sharded), Catch::Contains("with lora or qlora (frozen parameters) are not modelled"));
  CHECK_THROWS_WITH(parse_model_spec(to_string(sharded)), Catch::Contains("with lora or qlora (frozen parameters) are not modelled"));

  ModelSpec both = *parse_model_spec(decoder);
  set_model_token(both, model_token("qlora="), 16, decoder);
  CHECK_THROWS_WITH(check_model_spec(both, to_string(both)), Catch::Contains("both set the lora rank"));
  CHECK_THROWS_AS(parse_model_spec(to_string(both)), Error);
}

TEST_CASE("workload spec: with_param sets a generator's parameter in place, checked", "[workload_spec]") {
  const WorkloadSpec random = parse_workload_spec("random:n=10,seed=4");
  const WorkloadSpec reseeded = with_param(random, "seed", "2", "--param seed");
  CHECK(reseeded.text == "random:n=10,seed=2");  // replaced where it was written, not given twice
  CHECK(with_param(random, "live", "64MiB", "--param live").text == "random:n=10,seed=4,live=64MiB");
  CHECK(std::get<GeneratorChoice>(reseeded.what).params.count("seed") == 2);  // what the generator reads
  CHECK(std::get<GeneratorChoice>(reseeded.what).params.count("n") == 10);
  CHECK_THROWS_WITH(with_param(random, "nosuch", "1", "--param nosuch"), Catch::Contains("nosuch"));
  CHECK_THROWS_WITH(with_param(parse_workload_spec("resnet50_b8"), "seed", "1", "--param seed"),
                    Catch::Contains("--param seed: workload resnet50_b8 is a model"));
}

TEST_CASE("workload spec: a trace held in memory is found by its name, loaded as a copy, and never streams",
          "[workload_spec]") {
  const auto trace = std::make_shared<Trace>(load_workload("random:n=50,seed=3"));
  const std::vector<WorkloadSpec> given{held_workload("captured", trace)};
  const WorkloadSpec found = parse_workload_spec("captured", given);
  REQUIRE(found.held());
  CHECK(found.text == "captured");
  CHECK(load_workload(found).events.size() == trace->events.size());
  CHECK_THROWS_WITH(stream_workload(found), Catch::Contains("cannot stream"));
  CHECK_THROWS_WITH(with_param(found, "n", "5", "--param"), Catch::Contains("is a trace; it has no parameters"));
  // Any other text is parsed as a spec, as without the given ones.
  CHECK(parse_workload_spec("resnet50_b8", given).model() != nullptr);
  CHECK_THROWS_AS(held_workload("empty", nullptr), Error);
}

}  // namespace
}  // namespace allocsim
