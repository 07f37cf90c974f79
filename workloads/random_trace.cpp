#include "workloads/random_trace.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <deque>
#include <vector>

#include "sim/error.hpp"
#include "sim/rng.hpp"
#include "sim/slot_numbers.hpp"

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

// The generator as a stream: a window of events at a time, ids being slots (a freed
// one is taken again first), state sized by the live set. make_random_trace reads it whole.
class RandomStream final : public EventSource {
 public:
  RandomStream(const RandomTraceOptions& options, std::string name)
      : options_(options), rng_(options.seed), info_(std::move(name), "random") {}

  EventWindow next() override {
    std::size_t count = 0;
    // Each step makes one request and perhaps a sync after it.
    while (event_ < options_.events && count + 2 <= kWindow) {
      const std::uint64_t remaining = options_.events - event_;
      // Drift towards the target: allocate more often below it, free more often above.
      const double alloc_chance = live_bytes_ < options_.target_live ? 0.6 : 0.4;
      const bool must_free = remaining <= live_.size();
      if (!live_.empty() && (must_free || rng_.unit() >= alloc_chance)) {
        const AllocId victim = pick_victim(rng_, live_, options_.order);
        const std::uint32_t slot = index_of(victim);
        live_bytes_ -= bytes_by_slot_[slot];
        slots_.give_back(slot);
        events_[count] = Event{time_, victim, stream_by_slot_[slot], Op::free, Tag::other};
        bytes_[count++] = bytes_by_slot_[slot];
      } else {
        const Bytes bytes = draw_size(rng_, options_);
        const auto stream = static_cast<Stream>(rng_.below(options_.streams));
        const std::uint32_t slot = slots_.take();
        if (slot == bytes_by_slot_.size()) {
          bytes_by_slot_.push_back(0);
          stream_by_slot_.push_back(0);
        }
        bytes_by_slot_[slot] = bytes;
        stream_by_slot_[slot] = stream;
        live_.push_back(static_cast<AllocId>(slot));
        live_bytes_ += bytes;
        lower_bound_ = std::max(lower_bound_, live_bytes_);
        events_[count] = Event{time_, static_cast<AllocId>(slot), stream, Op::alloc, Tag::other};
        bytes_[count++] = bytes;
      }
      // The program synchronising now and then (a loss.item() each step), for stream-ordered pools.
      if (options_.sync_every != 0 && (event_ + 1) % options_.sync_every == 0) {
        const Sync sync{SyncKind::device, 0, 0};
        events_[count] = Event{time_, sync_id(sync), sync.stream, Op::sync, Tag::other};
        bytes_[count++] = 0;
      }
      ++event_;
      time_ += options_.gap;
    }
    return EventWindow{std::span<const Event>(events_.data(), count), bytes_.data(), nullptr};
  }
  std::size_t slots() const override { return bytes_by_slot_.size(); }  // a hint: they grow as it goes
  std::uint64_t events() const override {
    return options_.events + (options_.sync_every ? options_.events / options_.sync_every : 0);
  }
  const TraceInfo& info() const override { return info_; }
  std::optional<Bytes> live_lower_bound() const override {
    if (event_ < options_.events) return std::nullopt;
    return lower_bound_;
  }
  std::unique_ptr<EventSource> reopen() const override { return std::make_unique<RandomStream>(options_, info_.name); }

 private:
  static constexpr std::size_t kWindow = 4096;
  RandomTraceOptions options_;
  Rng rng_;
  TraceInfo info_;
  std::deque<AllocId> live_;
  SlotNumbers slots_;  // an allocation's id is its slot
  std::vector<Bytes> bytes_by_slot_;
  std::vector<Stream> stream_by_slot_;
  Bytes live_bytes_ = 0;
  Bytes lower_bound_ = 0;
  std::uint64_t event_ = 0;
  Nanos time_ = 0;
  std::array<Event, kWindow> events_;
  std::array<Bytes, kWindow> bytes_;
};

class RandomStreamFactory final : public EventSourceFactory {
 public:
  RandomStreamFactory(const RandomTraceOptions& options, std::string name) : options_(options), name_(std::move(name)) {}
  std::unique_ptr<EventSource> open() const override { return std::make_unique<RandomStream>(options_, name_); }

 private:
  RandomTraceOptions options_;
  std::string name_;
};

}  // namespace

Trace make_random_trace(const RandomTraceOptions& options, std::string name) {
  RandomStream stream(options, std::move(name));
  return materialise(stream);
}

std::shared_ptr<const EventSourceFactory> random_trace_stream(const RandomTraceOptions& options, std::string name) {
  return std::make_shared<const RandomStreamFactory>(options, std::move(name));
}

}  // namespace allocsim
