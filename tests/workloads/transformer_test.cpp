// The transformer workloads (bert_base, bert_large, gpt2) checked against figures worked
// out by hand from the Hugging Face configurations: parameter totals, the bytes of the
// attention scores, and the lifetime rules every training step keeps.
#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/model/zoo.hpp"

namespace allocsim {
namespace {

constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();

Model build(std::string_view name) {
  const ZooModel* model = find_zoo_model(name);
  REQUIRE(model != nullptr);
  return model->build();
}

std::int64_t parameters_under(const Model& model, std::string_view prefix) {
  std::int64_t total = 0;
  for (const Node node : boost::make_iterator_range(boost::vertices(model.graph))) {
    if (!model.graph[node].name.starts_with(prefix)) continue;
    for (const std::int64_t params : model.graph[node].params) total += params;
  }
  return total;
}

std::string_view layer_of(const Trace& trace, AllocId id) { return trace.layer_names[trace.layer[index_of(id)]]; }

// The bytes of the first allocation a layer makes, or 0.
Bytes first_bytes(const Trace& trace, std::string_view layer) {
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc && layer_of(trace, event.id) == layer) return trace.bytes_of(event.id);
  }
  return 0;
}

// By AllocId: the index of the event that frees it, or kNever.
std::vector<std::size_t> free_events(const Trace& trace) {
  std::vector<std::size_t> freed(trace.allocations(), kNever);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events[i].op == Op::free) freed[index_of(trace.events[i].id)] = i;
  }
  return freed;
}

// Where each step begins: the allocation of its batch's input ids.
std::vector<std::size_t> step_starts(const Trace& trace) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& event = trace.events[i];
    if (event.op == Op::alloc && event.tag == Tag::input && layer_of(trace, event.id) == "input_ids") {
      starts.push_back(i);
    }
  }
  return starts;
}

}  // namespace

TEST_CASE("transformers have the Hugging Face parameter counts", "[transformer]") {
  // BertModel (the "bert." ops): embeddings (30522 + 512 + 2) H + 2H, per layer
  // 4 (H^2 + H) + 2 H I + I + H + 4H, pooler H^2 + H (zoo.cpp works it through):
  // base 109,482,240, large 335,141,888. The 2-label classifier adds 2H + 2.
  const Model base = build("bert_base");
  CHECK(parameters_under(base, "bert.") == 109'482'240);
  CHECK(base.parameter_count() == 109'482'240 + 2 * 768 + 2);
  // 5 embedding tensors, 16 per layer, 2 in the pooler, 2 in the classifier.
  CHECK(base.parameter_tensors() == 5 + 16 * 12 + 2 + 2);

  const Model large = build("bert_large");
  CHECK(parameters_under(large, "bert.") == 335'141'888);
  CHECK(large.parameter_count() == 335'141'888 + 2 * 1024 + 2);
  CHECK(large.parameter_tensors() == 5 + 16 * 24 + 2 + 2);

  // GPT2LMHeadModel: wte 38,597,376 + wpe 786,432 + 12 x 7,087,872 + ln_f 1,536; the
  // LM head shares wte. 148 tensors: wte, wpe, 12 per block, ln_f's two. A decoder preset:
  // its configuration's count and the graph's agree.
  const Model gpt2 = build("gpt2");
  CHECK(gpt2.parameter_count() == 124'439'808);
  CHECK(find_zoo_model("gpt2")->decoder->parameter_count() == 124'439'808);
  CHECK(gpt2.parameter_tensors() == 2 + 12 * 12 + 2);
}

TEST_CASE("the LM head's tied weight is allocated once, and its gradient joins wte's", "[transformer]") {
  // Weights: 4 B per parameter, plus per block the causal-mask buffer (1024 x 1024 bool).
  // One step: one .grad per parameter tensor, 4 B each.
  const Trace trace = load_workload("gpt2_s32_b2_sgd");
  Bytes weights = 0;
  Bytes grads_kept = 0;
  const std::vector<std::size_t> freed = free_events(trace);
  for (const Event& event : trace.events) {
    if (event.op != Op::alloc) continue;
    if (event.tag == Tag::weight) weights += trace.bytes_of(event.id);
    if (event.tag == Tag::gradient && freed[index_of(event.id)] == kNever) grads_kept += trace.bytes_of(event.id);
    CHECK((layer_of(trace, event.id) != "lm_head" || event.tag != Tag::weight));
  }
  CHECK(weights == 4 * 124'439'808 + 12 * 1024 * 1024);
  CHECK(grads_kept == 4 * 124'439'808);
}

TEST_CASE("the attention scores grow with the square of the sequence length", "[transformer]") {
  // Q.K^T per layer: B x heads x S x S elements, 4 B in fp32, 2 B under amp.
  const auto scores = [](const std::string& spec, std::string_view layer) {
    return first_bytes(load_workload(spec), layer);
  };
  const std::string bert = "bert.encoder.layer.0.attention.self.scores";
  CHECK(scores("bert_base_s64_b2", bert) == Bytes{2} * 12 * 64 * 64 * 4);
  CHECK(scores("bert_base_s128_b2", bert) == Bytes{2} * 12 * 128 * 128 * 4);
  CHECK(scores("bert_base_b2", bert) == Bytes{2} * 12 * 128 * 128 * 4);  // the default, S = 128
  CHECK(scores("bert_large_s64_b2", "bert.encoder.layer.23.attention.self.scores") == Bytes{2} * 16 * 64 * 64 * 4);
  CHECK(scores("bert_base_s128_b2_amp", bert) == Bytes{2} * 12 * 128 * 128 * 2);
  const std::string gpt2 = "model.layers.0.self_attn.scores";
  CHECK(scores("gpt2_s32_b3", gpt2) == Bytes{3} * 12 * 32 * 32 * 4);
  CHECK(scores("gpt2_s64_b3", gpt2) == Bytes{3} * 12 * 64 * 64 * 4);
  CHECK(scores("gpt2_s64_b3:attn=eager", gpt2) == Bytes{3} * 12 * 64 * 64 * 4);  // the default, spelled
  // SDPA's kernels (attn=sdpa, attn=flash) keep no scores.
  CHECK(scores("gpt2_s64_b3:attn=flash", gpt2) == 0);
  CHECK(scores("gpt2_s64_b3:attn=sdpa", gpt2) == 0);
  // GPT-2's logits, B x S x 50257.
  const Trace trace = load_workload("gpt2_s32_b3");
  CHECK(first_bytes(trace, "lm_head") == Bytes{3} * 32 * 50257 * 4);
}

TEST_CASE("every transient transformer tensor is freed within its own step", "[transformer]") {
  // Activations, temporaries and workspaces die inside their step; gradients too, except
  // one .grad per parameter tensor (4 B per parameter), which the next zero_grad frees.
  const auto spec = GENERATE(as<std::string>{}, "bert_base_s64_b2_steps2_adam", "bert_large_s32_b1_steps2_amp",
                             "gpt2_s64_b2_steps2_adam", "gpt2_s32_b2_steps2_amp_acc2");
  INFO(spec);
  const auto model_spec = parse_model_spec(spec);
  REQUIRE(model_spec);
  const Model model = model_spec->build();
  const Trace trace = load_workload(spec);
  const std::vector<std::size_t> freed = free_events(trace);
  const std::vector<std::size_t> starts = step_starts(trace);
  const std::size_t micro_batches = static_cast<std::size_t>(model_spec->options.accumulation);
  REQUIRE(starts.size() == 2 * micro_batches);
  for (std::size_t step = 0; step < 2; ++step) {
    const std::size_t begin = starts[step * micro_batches];
    const std::size_t end = step == 0 ? starts[micro_batches] : trace.events.size();
    std::size_t grads_kept = 0;
    Bytes grad_bytes_kept = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const Event& event = trace.events[i];
      if (event.op != Op::alloc) continue;
      INFO("step " << step + 1 << ": " << name_of(event.tag) << " of " << layer_of(trace, event.id));
      const std::size_t free_at = freed[index_of(event.id)];
      if (event.tag == Tag::activation || event.tag == Tag::workspace || event.tag == Tag::temp) {
        CHECK(free_at < end);
      } else if (event.tag == Tag::gradient && free_at >= end) {
        ++grads_kept;
        grad_bytes_kept += trace.bytes_of(event.id);
      }
    }
    CHECK(grads_kept == model.parameter_tensors());
    CHECK(grad_bytes_kept == 4 * static_cast<Bytes>(model.parameter_count()));
  }
}

TEST_CASE("the sequence token is checked", "[transformer]") {
  CHECK(parse_model_spec("bert_base_s512_b8")->sequence == 512);
  CHECK(parse_model_spec("gpt2_s1024_b4_acc4")->sequence == 1024);
  CHECK(parse_model_spec("gpt2_b4")->sequence == 1024);     // the default: run_clm's block size
  CHECK(parse_model_spec("bert_large")->sequence == 128);   // run_glue's max_seq_length
  CHECK(parse_model_spec("gpt2_s64_steps2")->options.steps == 2);  // steps is not s + digits
  CHECK_THROWS_WITH(load_workload("resnet50_s128_b8"), Catch::Contains("takes no sequence length"));
  CHECK_THROWS_WITH(load_workload("bert_base_s513"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(load_workload("gpt2_s1025"), Catch::Contains("positions is 1024"));
  CHECK_THROWS_AS(load_workload("bert_base_s0"), Error);
  CHECK_THROWS_AS(load_workload("gpt2_s0"), Error);
  CHECK_THROWS_WITH(load_workload("gpt2_sx"), Catch::Contains("unknown token 'sx'"));
  CHECK_THROWS_WITH(load_workload("bert_base_seq128"), Catch::Contains("unknown token 'seq128'"));
}

}  // namespace allocsim
