#include <array>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"

namespace allocsim {
namespace {

constexpr std::array kParams{
    ParamInfo{"limit", "4GiB", "a size"},
    ParamInfo{"growth", "false", "a switch"},
    ParamInfo{"fraction", "0.5", "a real"},
    ParamInfo{"steps", "3", "a count"},
};

TEST_CASE("specs split into a name and key=value arguments", "[spec]") {
  const Spec spec = parse_spec("bfc:growth=true,limit=2GiB");
  CHECK(spec.name == "bfc");
  REQUIRE(spec.args.size() == 2);
  CHECK(spec.args[0] == std::pair<std::string, std::string>{"growth", "true"});
  CHECK(parse_spec("direct").args.empty());
  CHECK(parse_spec("direct:").args.empty());
  CHECK_THROWS_WITH(parse_spec(":a=1"), Catch::Contains("no name"));
  CHECK_THROWS_WITH(parse_spec("bfc:growth"), Catch::Contains("'growth' is not key=value"));
  CHECK_THROWS_WITH(parse_spec("bfc:=1"), Catch::Contains("is not key=value"));
}

TEST_CASE("params take defaults, typed values, and reject unknown keys with the valid ones", "[spec]") {
  const Params defaults(parse_spec("x"), kParams, "policy x");
  CHECK(defaults.bytes("limit") == 4_GiB);
  CHECK_FALSE(defaults.boolean("growth"));
  CHECK(defaults.number("fraction") == 0.5);
  CHECK(defaults.count("steps") == 3);

  const Params given(parse_spec("x:limit=512MiB,growth=yes,steps=10"), kParams, "policy x");
  CHECK(given.bytes("limit") == 512_MiB);
  CHECK(given.boolean("growth"));
  CHECK(given.count("steps") == 10);

  CHECK_THROWS_WITH(Params(parse_spec("x:limt=1"), kParams, "policy x"),
                    "policy x: unknown key 'limt'; valid keys: limit=4GiB, growth=false, fraction=0.5, steps=3");
  const Params bad(parse_spec("x:limit=4QB,growth=maybe,fraction=half,steps=-1"), kParams, "policy x");
  CHECK_THROWS_WITH(bad.bytes("limit"), Catch::Contains("policy x: limit:") && Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(bad.boolean("growth"), "policy x: growth=maybe is not true or false");
  CHECK_THROWS_WITH(bad.number("fraction"), "policy x: fraction=half is not a number");
  CHECK_THROWS_WITH(bad.count("steps"), "policy x: steps=-1 is not a non-negative integer");
}

TEST_CASE("an unknown policy lists the valid ones", "[spec]") {
  SimDevice device(DeviceSpec{});
  CHECK_THROWS_WITH(make_policy("bfcc", device), Catch::StartsWith("unknown policy 'bfcc'; valid policies: ") &&
                                                     Catch::Contains("bfc") && Catch::Contains("direct"));
  for (const PolicyInfo& info : all_policies()) CHECK(make_policy(info.name, device) != nullptr);
}

TEST_CASE("a generic spec prints back as it was written", "[spec]") {
  for (const char* text : {"random", "random:n=100", "random:n=100,seed=1,live=1048576,sizes=uniform",
                           "caching:roundup_power2_divisions=[256:1,>:4],fraction=0.5", "a/b.csv:seed=1", "x:k=v=w"}) {
    INFO(text);
    CHECK(to_string(parse_spec(text)) == text);
  }
  const Spec spec{"frag", {{"pattern", "seed"}, {"pattern", "saw"}}};  // a key twice stays twice, in order
  CHECK(to_string(spec) == "frag:pattern=seed,pattern=saw");
  CHECK(parse_spec(to_string(spec)) == spec);
  CHECK(to_string(parse_spec("random:")) == "random");
}

}  // namespace
}  // namespace allocsim
