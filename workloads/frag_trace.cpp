#include "workloads/frag_trace.hpp"

#include <algorithm>
#include <vector>

#include "sim/error.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

constexpr Nanos kGap = 1000;

class Clock {
 public:
  Nanos operator()() { return now_ += kGap; }

 private:
  Nanos now_ = 0;
};

void seed_case(TraceBuilder& trace, Bytes unit, std::uint64_t count, Bytes request) {
  Clock clock;
  std::vector<AllocId> kept;
  std::vector<AllocId> temps;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (i % 2 == 0) {
      kept.push_back(trace.alloc(clock(), unit, 0, Tag::weight));
    } else {
      temps.push_back(trace.alloc(clock(), unit, 0, Tag::temp));
    }
  }
  for (AllocId id : temps) trace.free(clock(), id);
  trace.free(clock(), trace.alloc(clock(), request, 0, Tag::activation));
  for (AllocId id : kept) trace.free(clock(), id);
}

void alternating(TraceBuilder& trace, Bytes unit, std::uint64_t count, std::uint64_t steps) {
  Clock clock;
  for (std::uint64_t step = 0; step < steps; ++step) {
    std::vector<AllocId> small;
    std::vector<AllocId> large;
    for (std::uint64_t i = 0; i < count; ++i) {
      small.push_back(trace.alloc(clock(), std::max<Bytes>(unit / 8, 1), 0, Tag::activation));
      large.push_back(trace.alloc(clock(), unit, 0, Tag::temp));
    }
    for (AllocId id : large) trace.free(clock(), id);
    trace.free(clock(), trace.alloc(clock(), std::max<std::uint64_t>(count / 2, 1) * unit, 0, Tag::workspace));
    for (AllocId id : small) trace.free(clock(), id);
  }
}

void sawtooth(TraceBuilder& trace, Bytes unit, std::uint64_t count, std::uint64_t steps) {
  Clock clock;
  std::vector<AllocId> pins;
  for (std::uint64_t tooth = 0; tooth < steps; ++tooth) {
    std::vector<AllocId> teeth;
    for (std::uint64_t i = 0; i < count; ++i) {
      teeth.push_back(trace.alloc(clock(), unit * (1 + (i + tooth) % count), 0, Tag::activation));
      if (i == count / 2) pins.push_back(trace.alloc(clock(), std::max<Bytes>(unit / 4, 1), 0, Tag::other));
    }
    for (AllocId id : teeth) trace.free(clock(), id);
  }
  for (AllocId id : pins) trace.free(clock(), id);
}

void sequences(TraceBuilder& trace, const Params& params, Bytes unit, std::uint64_t layers, std::uint64_t steps,
               bool padded) {
  const std::uint64_t min_len = params.count("min_len");
  const std::uint64_t max_len = params.count("max_len");
  const std::uint64_t bucket = params.count("bucket");
  if (min_len == 0 || min_len > max_len) throw Error("workload frag: need 0 < min_len <= max_len");
  if (bucket == 0) throw Error("workload frag: bucket must be at least 1");
  Rng rng(params.count("seed"));
  Clock clock;
  for (std::uint64_t step = 0; step < steps; ++step) {
    const std::uint64_t drawn = min_len + rng.below(max_len - min_len + 1);
    const std::uint64_t tokens = padded ? max_len : align_up(drawn, bucket);
    const AllocId input = trace.alloc(clock(), tokens * 8, 0, Tag::input);  // token ids, int64
    std::vector<AllocId> activations;
    for (std::uint64_t layer = 0; layer < layers; ++layer) {
      activations.push_back(trace.alloc(clock(), unit * tokens, 0, Tag::activation));
      // Attention scores, quadratic in length, live only inside the layer.
      trace.free(clock(), trace.alloc(clock(), unit / 64 * tokens * tokens / 8, 0, Tag::temp));
    }
    for (auto id = activations.rbegin(); id != activations.rend(); ++id) {
      const AllocId grad = trace.alloc(clock(), unit * tokens, 0, Tag::gradient);
      trace.free(clock(), *id);
      trace.free(clock(), grad);
    }
    trace.free(clock(), input);
  }
}

}  // namespace

Trace make_frag_trace(const Params& params, std::string name) {
  const std::string pattern(params.text("pattern"));
  Bytes unit = params.bytes("unit");
  std::uint64_t count = params.count("count");
  const std::uint64_t steps = params.count("steps");
  TraceBuilder trace(TraceInfo{std::move(name), "frag"});
  if (pattern == "seed") {
    seed_case(trace, unit ? unit : 1_GiB, count ? count : 8, params.bytes("request"));
  } else if (pattern == "alternating") {
    alternating(trace, unit ? unit : 64_MiB, count ? count : 16, steps);
  } else if (pattern == "sawtooth") {
    sawtooth(trace, unit ? unit : 64_MiB, count ? count : 8, steps);
  } else if (pattern == "padded" || pattern == "bucketed") {
    sequences(trace, params, unit ? unit : 256_KiB, count ? count : 24, steps, pattern == "padded");
  } else {
    throw Error("workload frag: pattern=" + pattern + " is not seed, alternating, sawtooth, padded or bucketed");
  }
  return std::move(trace).finish();
}

}  // namespace allocsim
