#include "workloads/random_trace.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "sim/error.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

constexpr std::uint64_t kMaxRandomEvents = std::uint64_t{1} << 31;  // ids are 32-bit; memory runs out first

Bytes draw_size(Rng& rng, const RandomTraceOptions& options) {
  if (options.sizes == SizeDistribution::uniform) {
    return options.min_bytes + rng.below(options.max_bytes - options.min_bytes + 1);
  }
  const double low = std::log(static_cast<double>(options.min_bytes));
  const double high = std::log(static_cast<double>(options.max_bytes));
  const auto bytes = static_cast<Bytes>(std::exp(low + rng.unit() * (high - low)));
  return std::clamp(bytes, options.min_bytes, options.max_bytes);
}

// Live ids in a deque: random order swaps the pick to the back, FIFO pops the front,
// LIFO the back; each is O(1).
AllocId pick_victim(Rng& rng, std::deque<AllocId>& live, FreeOrder order) {
  AllocId victim{};
  if (order == FreeOrder::fifo) {
    victim = live.front();
    live.pop_front();
    return victim;
  }
  if (order == FreeOrder::random) std::swap(live[rng.below(live.size())], live.back());
  victim = live.back();
  live.pop_back();
  return victim;
}

}  // namespace

RandomTraceOptions random_trace_options(const Params& params) {
  RandomTraceOptions options;
  options.events = params.count("n");
  options.seed = params.count("seed");
  options.min_bytes = params.bytes("min");
  options.max_bytes = params.bytes("max");
  options.target_live = params.bytes("live");
  options.gap = params.count("gap");
  options.sync_every = params.count("sync_every");
  const std::uint64_t streams = params.count("streams");
  const std::string_view sizes = params.text("sizes");
  const std::string_view order = params.text("order");
  if (options.events == 0 || options.events > kMaxRandomEvents) {
    throw Error("workload random: n must be between 1 and " + std::to_string(kMaxRandomEvents));
  }
  if (options.min_bytes == 0 || options.min_bytes > options.max_bytes || options.max_bytes > kMaxRequestBytes) {
    throw Error("workload random: need 0 < min <= max <= 2^48 bytes");
  }
  if (streams == 0 || streams > 0xffff) throw Error("workload random: streams must be 1..65535");
  options.streams = static_cast<Stream>(streams);
  if (sizes == "loguniform") {
    options.sizes = SizeDistribution::log_uniform;
  } else if (sizes == "uniform") {
    options.sizes = SizeDistribution::uniform;
  } else {
    throw Error("workload random: sizes=" + std::string(sizes) + " is not loguniform or uniform");
  }
  if (order == "random") {
    options.order = FreeOrder::random;
  } else if (order == "fifo") {
    options.order = FreeOrder::fifo;
  } else if (order == "lifo") {
    options.order = FreeOrder::lifo;
  } else {
    throw Error("workload random: order=" + std::string(order) + " is not random, fifo or lifo");
  }
  return options;
}

namespace {

// The program synchronising now and then (a loss.item() each step), for stream-ordered pools.
void sync_after(TraceBuilder& builder, const RandomTraceOptions& options, std::uint64_t event, Nanos time) {
  if (options.sync_every != 0 && (event + 1) % options.sync_every == 0) builder.sync(time, Sync{SyncKind::device, 0, 0});
}

}  // namespace

Trace make_random_trace(const RandomTraceOptions& options, std::string name) {
  Rng rng(options.seed);
  TraceBuilder builder(TraceInfo{std::move(name), "random"});
  builder.reserve(options.events);
  std::deque<AllocId> live;
  Bytes live_bytes = 0;
  Nanos time = 0;
  for (std::uint64_t event = 0; event < options.events; ++event, time += options.gap) {
    const std::uint64_t remaining = options.events - event;
    // Drift towards the target: allocate more often below it, free more often above.
    const double alloc_chance = live_bytes < options.target_live ? 0.6 : 0.4;
    const bool must_free = remaining <= live.size();
    if (!live.empty() && (must_free || rng.unit() >= alloc_chance)) {
      const AllocId victim = pick_victim(rng, live, options.order);
      live_bytes -= builder.bytes_of(victim);
      builder.free(time, victim);
      sync_after(builder, options, event, time);
      continue;
    }
    const Bytes bytes = draw_size(rng, options);
    const auto stream = static_cast<Stream>(rng.below(options.streams));
    live.push_back(builder.alloc(time, bytes, stream));
    live_bytes += bytes;
    sync_after(builder, options, event, time);
  }
  return std::move(builder).finish();
}

}  // namespace allocsim
