// Generation with a KV cache (generation.hpp, kv_cache.hpp) and variable-length batches
// (sequence_lengths.hpp, spec_lowering.hpp): what each cache allocates per layer and step,
// counted from the trace, and the len= draws.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/model/spec_lowering.hpp"

namespace allocsim {
namespace {

// A small grouped-query decoder in bf16: 3 layers, 4 heads of 16, 2 KV heads.
constexpr std::string_view kConfig = "layers=3,d_model=64,heads=4,kv_heads=2,d_ff=128,vocab=100,rope,attn=sdpa";
constexpr std::int64_t kLayers = 3, kKvHeads = 2, kHeadDim = 16, kVocab = 100;

std::string spec(std::string_view head, std::string_view keys = "") {
  std::string text = "decoder_bf16_infer_";
  text += head;
  text += ':';
  text += kConfig;
  if (!keys.empty()) {
    text += ',';
    text += keys;
  }
  return text;
}

std::string_view layer_of(const Trace& trace, AllocId id) { return trace.layer_names[trace.layer[index_of(id)]]; }

std::string cache_layer(std::int64_t layer, std::string_view what) {
  return "model.layers." + std::to_string(layer) + ".self_attn." + std::string(what);
}

// Step (1-based) of each event.
std::size_t step_at(const Trace& trace, std::size_t event) { return *step_of(trace.info, event); }

struct Counts {
  int allocs = 0;
  int frees = 0;
};

// Allocations and frees of `layer_name` in each step.
std::map<std::size_t, Counts> per_step(const Trace& trace, std::string_view layer_name) {
  std::map<std::size_t, Counts> counts;
  for (std::size_t e = 0; e < trace.events.size(); ++e) {
    const Event& event = trace.events[e];
    if (!names_allocation(event.op) || layer_of(trace, event.id) != layer_name) continue;
    Counts& c = counts[step_at(trace, e)];
    (event.op == Op::alloc ? c.allocs : c.frees) += 1;
  }
  return counts;
}

// The same requests in the same order, with the same sizes and layers.
bool same_trace(const Trace& a, const Trace& b) {
  if (a.events.size() != b.events.size() || a.requested != b.requested) return false;
  for (std::size_t e = 0; e < a.events.size(); ++e) {
    const Event& x = a.events[e];
    const Event& y = b.events[e];
    if (x.time != y.time || x.id != y.id || x.op != y.op || x.tag != y.tag || x.stream != y.stream) return false;
    if (names_allocation(x.op) && layer_of(a, x.id) != layer_of(b, y.id)) return false;
  }
  return true;
}

bool is_cache(std::string_view layer) { return layer.ends_with("k_cache") || layer.ends_with("v_cache"); }

}  // namespace

TEST_CASE("every kind of KV cache tags its keys and values kv_cache, and nothing else", "[generation]") {
  for (const char* keys : {"", "cache=static", "cache=paged,block=4,len=1:9,seed=3"}) {
    INFO(keys);
    const Trace trace = load_workload(spec("prefill6_decode9_b5", keys));
    int caches = 0;
    for (const Event& event : trace.events) {
      if (event.op != Op::alloc) continue;
      CHECK((event.tag == Tag::kv_cache) == is_cache(layer_of(trace, event.id)));
      caches += event.tag == Tag::kv_cache;
    }
    CHECK(caches >= 2 * kLayers);
  }
  CHECK(name_of(Tag::kv_cache) == "kv_cache");
  CHECK(tag_from_name("kv_cache") == Tag::kv_cache);
}

TEST_CASE("a dynamic-cache decode allocates and frees each layer's keys and values once per step", "[generation]") {
  constexpr std::int64_t batch = 2, prompt = 8, decode = 5;
  const Trace trace = load_workload(spec("prefill8_decode5_b2"));
  REQUIRE(trace.info.step_starts.size() == decode + 1);  // the prefill, then one step per token
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    for (const char* what : {"k_cache", "v_cache"}) {
      INFO(cache_layer(layer, what));
      const auto counts = per_step(trace, cache_layer(layer, what));
      CHECK(counts.at(1).allocs == 1);  // the prefill's cat copies the prompt's keys in
      CHECK(counts.at(1).frees == 0);
      for (std::size_t step = 2; step <= decode + 1; ++step) {
        INFO("step " << step);
        CHECK(counts.at(step).allocs == 1);
        CHECK(counts.at(step).frees == (step == decode + 1 ? 2 : 1));  // the last step's end frees the cache
      }
      // Each is one token longer than the one it replaces, which goes right after it is made:
      // alloc 0, alloc 1, free 0, alloc 2, free 1, ..., alloc T, free T-1, free T (the end).
      std::vector<Bytes> sizes;
      std::vector<AllocId> made;
      std::vector<AllocId> order;  // alloc and free events' ids, in trace order
      std::vector<Op> ops;
      for (const Event& event : trace.events) {
        if (!names_allocation(event.op) || layer_of(trace, event.id) != cache_layer(layer, what)) continue;
        if (event.op == Op::alloc) {
          sizes.push_back(trace.bytes_of(event.id));
          made.push_back(event.id);
        }
        order.push_back(event.id);
        ops.push_back(event.op);
      }
      REQUIRE(made.size() == decode + 1);
      std::vector<AllocId> expected_order{made[0]};
      std::vector<Op> expected_ops{Op::alloc};
      for (std::size_t t = 1; t < made.size(); ++t) {
        expected_order.insert(expected_order.end(), {made[t], made[t - 1]});
        expected_ops.insert(expected_ops.end(), {Op::alloc, Op::free});
      }
      expected_order.push_back(made.back());
      expected_ops.push_back(Op::free);
      CHECK(order == expected_order);
      CHECK(ops == expected_ops);
      REQUIRE(sizes.size() == decode + 1);
      for (std::int64_t t = 0; t <= decode; ++t) {
        CHECK(sizes[static_cast<std::size_t>(t)] == static_cast<Bytes>(batch * kKvHeads * (prompt + t) * kHeadDim * 2));
      }
    }
  }
}

TEST_CASE("a static cache allocates every layer's whole length once", "[generation]") {
  constexpr std::int64_t batch = 2, prompt = 8, decode = 5;
  const Trace trace = load_workload(spec("prefill8_decode5_b2", "cache=static"));
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    for (const char* what : {"k_cache", "v_cache"}) {
      int allocs = 0, frees = 0;
      for (std::size_t e = 0; e < trace.events.size(); ++e) {
        const Event& event = trace.events[e];
        if (!names_allocation(event.op) || layer_of(trace, event.id) != cache_layer(layer, what)) continue;
        if (event.op == Op::alloc) {
          ++allocs;
          CHECK(step_at(trace, e) == 1);
          CHECK(trace.bytes_of(event.id) == static_cast<Bytes>(batch * kKvHeads * (prompt + decode) * kHeadDim * 2));
        } else {
          ++frees;
        }
      }
      CHECK(allocs == 1);
      CHECK(frees == 1);
    }
  }
  // The attention reads all P + T slots under SDPA's boolean mask, so grouped-query heads
  // are repeated (use_gqa_in_sdpa needs no mask); a dynamic cache needs neither.
  const auto repeats = [](const Trace& t) {
    int count = 0;
    for (const Event& event : t.events) count += event.op == Op::alloc && layer_of(t, event.id).ends_with("key_heads");
    return count;
  };
  CHECK(repeats(trace) == kLayers * (decode + 1));
  CHECK(repeats(load_workload(spec("prefill8_decode5_b2"))) == 0);
}

TEST_CASE("a paged cache allocates ceil(tokens / block) blocks per sequence and layer", "[generation]") {
  constexpr std::int64_t batch = 5, prompt = 6, block = 4;
  const std::string text = spec("prefill6_decode9_b5", "cache=paged,block=4,len=1:9,seed=3");
  const Trace trace = load_workload(text);
  const ModelSpec parsed = *parse_model_spec(text);
  const std::vector<std::int64_t> steps = draw_lengths(parsed.lengths, batch);
  REQUIRE(std::set<std::int64_t>(steps.begin(), steps.end()).size() > 1);  // the sequences end apart
  std::int64_t blocks = 0;
  for (const std::int64_t s : steps) blocks += (prompt + s + block - 1) / block;
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    for (const char* what : {"k_cache", "v_cache"}) {
      int allocs = 0, frees = 0;
      for (const Event& event : trace.events) {
        if (!names_allocation(event.op) || layer_of(trace, event.id) != cache_layer(layer, what)) continue;
        if (event.op == Op::alloc) {
          CHECK(trace.bytes_of(event.id) == static_cast<Bytes>(block * kKvHeads * kHeadDim * 2));
          ++allocs;
        } else {
          ++frees;
        }
      }
      CHECK(allocs == blocks);
      CHECK(frees == blocks);
    }
  }
  // generate stops when the longest is done; the batch shrinks as sequences end.
  const std::int64_t longest = *std::max_element(steps.begin(), steps.end());
  CHECK(trace.info.step_starts.size() == static_cast<std::size_t>(longest + 1));
  const std::size_t last_step = trace.info.step_starts.back();
  for (std::size_t e = last_step; e < trace.events.size(); ++e) {
    const Event& event = trace.events[e];
    if (event.op == Op::alloc && event.tag == Tag::activation && layer_of(trace, event.id) == "lm_head") {
      const auto rows = std::count(steps.begin(), steps.end(), longest);
      CHECK(trace.bytes_of(event.id) == static_cast<Bytes>(rows * kVocab * 2));
    }
  }
}

TEST_CASE("generation: weights in the compute dtype, last-position logits, transients freed each step",
          "[generation]") {
  constexpr std::int64_t batch = 2;
  const std::string text = spec("prefill8_decode5_b2");
  const Trace trace = load_workload(text);
  const ModelSpec parsed = *parse_model_spec(text);
  Bytes weights = 0;
  for (const Event& event : trace.events) {
    CHECK(event.tag != Tag::gradient);
    CHECK(event.tag != Tag::optimizer);
    if (event.op == Op::alloc && event.tag == Tag::weight) weights += trace.bytes_of(event.id);
    if (event.op == Op::alloc && event.tag == Tag::activation && layer_of(trace, event.id) == "lm_head") {
      CHECK(trace.bytes_of(event.id) == static_cast<Bytes>(batch * kVocab * 2));  // B x vocab, not B x S x vocab
    }
  }
  CHECK(weights == static_cast<Bytes>(parsed.decoder.parameter_count() * 2));
  // At each step's start only the cache is alive of what forwards made.
  std::map<AllocId, bool> live;
  std::size_t next_step = 1;
  for (std::size_t e = 0; e < trace.events.size(); ++e) {
    if (next_step < trace.info.step_starts.size() && e == trace.info.step_starts[next_step]) {
      ++next_step;
      for (const auto& [id, alive] : live) {
        if (alive && !is_cache(layer_of(trace, id))) FAIL_CHECK("alive between steps: " << layer_of(trace, id));
      }
    }
    const Event& event = trace.events[e];
    if (event.tag != Tag::activation || !names_allocation(event.op)) continue;
    live[event.id] = event.op == Op::alloc;
  }
  CHECK(next_step == trace.info.step_starts.size());
  // fp32 has no casts in RMSNorm and fp32 weights.
  const Trace fp32 = load_workload("decoder_infer_prefill8_decode5_b2:" + std::string(kConfig));
  Bytes fp32_weights = 0;
  for (const Event& event : fp32.events) {
    if (event.op == Op::alloc && event.tag == Tag::weight) fp32_weights += fp32.bytes_of(event.id);
  }
  CHECK(fp32_weights == 2 * weights);
}

TEST_CASE("len= draws are deterministic for a seed and differ across steps", "[generation]") {
  const VariableLengths lengths{16, 64, 7, false};
  CHECK(draw_lengths(lengths, 8) == draw_lengths(lengths, 8));
  CHECK(draw_lengths(lengths, 8) != draw_lengths(VariableLengths{16, 64, 8, false}, 8));
  for (const std::int64_t length : draw_lengths(lengths, 1000)) {
    CHECK(length >= 16);
    CHECK(length <= 64);
  }
  // Step k's batch is the stream's next draws.
  const auto both = draw_lengths(lengths, 8);
  const auto second = draw_lengths(lengths, 4, 4);
  CHECK(std::vector<std::int64_t>(both.begin() + 4, both.end()) == second);

  // Padded: each micro-batch is its longest draw, so the batch's shape changes.
  const std::string padded = "decoder_bf16_steps6_b4:" + std::string(kConfig) + ",len=16:64,seed=7";
  const ModelSpec spec_padded = *parse_model_spec(padded);
  const std::vector<std::int64_t> steps = padded_lengths(spec_padded);
  REQUIRE(steps.size() == 6);
  CHECK(std::set<std::int64_t>(steps.begin(), steps.end()).size() > 1);
  const auto input_sizes = [](const Trace& trace) {
    std::vector<Bytes> sizes;
    for (const Event& event : trace.events) {
      if (event.op == Op::alloc && layer_of(trace, event.id) == "input_ids") sizes.push_back(trace.bytes_of(event.id));
    }
    return sizes;
  };
  const Trace trace = load_workload(padded);
  std::vector<Bytes> expected;
  for (const std::int64_t s : steps) expected.push_back(static_cast<Bytes>(4 * s * 8));
  CHECK(input_sizes(trace) == expected);
  CHECK(same_trace(load_workload(padded), trace));  // the same seed, the same trace
  // Packed: rows of sN tokens every step, one shape.
  const Trace packed = load_workload("decoder_bf16_steps6_s64_b4:" + std::string(kConfig) + ",len=16:64,seed=7,packed");
  CHECK(input_sizes(packed) == std::vector<Bytes>(6, 4 * 64 * 8));
  CHECK(same_trace(packed, load_workload("decoder_bf16_steps6_s64_b4:" + std::string(kConfig))));
}

TEST_CASE("generation and len= specs: canonical spelling and errors", "[generation]") {
  const auto parsed = parse_model_spec("llama2_7b_infer_prefill512_decode256_b8:cache=paged,block=32,len=8:256,seed=4");
  REQUIRE(parsed);
  CHECK(parsed->generation == GenerationOptions{512, 256, KvCacheKind::paged, 32});
  CHECK(parsed->lengths == VariableLengths{8, 256, 4, false});
  CHECK(to_string(*parsed) == "llama2_7b_infer_prefill512_decode256_b8:cache=paged,block=32,len=8:256,seed=4");
  CHECK(to_string(*parse_model_spec("llama2_7b:len=32")) == "llama2_7b:len=32");

  const auto error = [](std::string_view text) {
    try {
      load_workload(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error("llama2_7b_prefill8_decode4_b2"), Catch::Contains("add infer"));
  CHECK_THAT(error("llama2_7b_infer_prefill8_b2"), Catch::Contains("both prefillN"));
  CHECK_THAT(error("resnet50_infer_prefill8_decode4"), Catch::Contains("a decoder's"));
  CHECK_THAT(error("llama2_7b_adam_infer_prefill8_decode4"), Catch::Contains("'adam' is not for a generation"));
  CHECK_THAT(error("llama2_7b_infer_s128_prefill8_decode4"), Catch::Contains("'s128' is not for a generation"));
  CHECK_THAT(error("llama2_7b_infer_prefill8_decode4:block=8"), Catch::Contains("block= is cache=paged's"));
  CHECK_THAT(error("llama2_7b_infer_prefill8_decode4:len=2:9"), Catch::Contains("1 to decode (4)"));
  CHECK_THAT(error("llama2_7b:cache=paged"), Catch::Contains("is a generation's"));
  CHECK_THAT(error("llama2_7b:cache=paged,cache=static"), Catch::Contains("both set the KV cache"));
  CHECK_THAT(error("llama2_7b:len=9:3"), Catch::Contains("'len=9:3' is out of range"));
  CHECK_THAT(error("llama2_7b:len=0:3"), Catch::Contains("out of range"));
  CHECK_THAT(error("llama2_7b:len=8:x"), Catch::Contains("unknown token 'len=8:x'"));
  CHECK_THAT(error("llama2_7b:cache=lru"), Catch::Contains("unknown token 'cache=lru'"));
  CHECK_THAT(error("llama2_7b_b2:seed=3"), Catch::Contains("are for len="));
  CHECK_THAT(error("llama2_7b:len=8:9,seed=-3"), Catch::Contains("'seed=-3' is out of range"));
  CHECK_THAT(error("llama2_7b_s64_b2:len=8:128,packed"), Catch::Contains("hold no sequence of 128"));
  CHECK_THAT(error("llama2_7b_s64_b2:len=8:32"), Catch::Contains("give len= or sN, not both"));
  CHECK_THAT(error("resnet50:len=8:32"), Catch::Contains("is a decoder's"));
}

}  // namespace allocsim
