#include "sim/trace.hpp"

#include <algorithm>
#include <limits>

#include "sim/error.hpp"
#include "sim/huge_pages.hpp"
#include "sim/trace_progress.hpp"

namespace allocsim {
namespace {

constexpr std::size_t kReportEvery = std::size_t{1} << 16;  // events between reports to a background load

}  // namespace

std::optional<std::size_t> step_of(const TraceInfo& info, std::size_t event) {
  if (info.step_starts.empty()) return std::nullopt;
  const auto after = std::upper_bound(info.step_starts.begin(), info.step_starts.end(), event);
  return static_cast<std::size_t>(std::max<std::ptrdiff_t>(after - info.step_starts.begin(), 1));
}

TraceBuilder::TraceBuilder(TraceInfo info) { trace_.info = std::move(info); }

TraceBuilder::~TraceBuilder() {
  if (progress_) progress_->keep(std::move(trace_));
}

void TraceBuilder::begin_step() {
  std::vector<std::size_t>& starts = trace_.info.step_starts;
  starts.push_back(starts.empty() ? 0 : trace_.events.size());
}

void TraceBuilder::reserve(std::size_t events) {
  trace_.events.reserve(events);
  trace_.requested.reserve(events / 2 + 1);
  allocations_.reserve(events / 2 + 1);
  advise_huge_pages(trace_.events);
  advise_huge_pages(trace_.requested);
  advise_huge_pages(allocations_);
}

void TraceBuilder::report_to(TraceProgress& progress, std::size_t events, std::size_t allocations) {
  trace_.events.reserve(events);
  trace_.requested.reserve(allocations);
  advise_huge_pages(trace_.events);
  advise_huge_pages(trace_.requested);
  progress_ = &progress;
  progress.begin(std::min(allocations, events / 2 + 1));
  next_report_ = std::min(kReportEvery, trace_.events.capacity());
}

// Before the event goes in: a full reserve is found before its arrays would move.
void TraceBuilder::append(const Event& event) {
  if (trace_.events.size() >= next_report_) [[unlikely]] report();
  trace_.events.push_back(event);
}

void TraceBuilder::report() {
  const std::size_t built = trace_.events.size();
  if (built == trace_.events.capacity()) {
    throw Error("event " + std::to_string(built) + ": more events than the " + std::to_string(built) +
                " its reader reserved for a background load");
  }
  progress_->report(trace_.events.data(), trace_.requested.data(), built);
  next_report_ = std::min(built + kReportEvery, trace_.events.capacity());
}

void throw_time_goes_back(std::size_t event, Nanos previous, Nanos time) {
  throw Error("event " + std::to_string(event) + ": time " + std::to_string(time) + " ns goes back before " +
              std::to_string(previous) + " ns");
}

void throw_request_too_large(std::size_t event, Bytes bytes) {
  if (bytes > kMaxRequestBytes) {
    throw Error("event " + std::to_string(event) + ": size " + std::to_string(bytes) +
                " bytes is over the 2^48-byte limit");
  }
  throw Error("event " + std::to_string(event) + ": live bytes would exceed 2^64");
}

void TraceBuilder::check_time(Nanos time) {
  if (!trace_.events.empty()) check_event_time(trace_.events.size(), trace_.events.back().time, time);
}

AllocId TraceBuilder::alloc(Nanos time, Bytes bytes, Stream stream, Tag tag) {
  check_time(time);
  check_request(trace_.events.size(), bytes, live_bytes_);
  if (trace_.requested.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw Error("trace has more than 2^32-1 allocations");
  }
  const auto id = static_cast<AllocId>(trace_.requested.size());
  if (progress_ && trace_.requested.size() == trace_.requested.capacity()) [[unlikely]] {
    throw Error("event " + std::to_string(trace_.events.size()) + ": more allocations than the " +
                std::to_string(trace_.requested.capacity()) + " its reader reserved for a background load");
  }
  trace_.requested.push_back(bytes);
  allocations_.push_back(Allocation{stream, tag, true});
  append(Event{time, id, stream, Op::alloc, tag});
  live_bytes_ += bytes;
  trace_.live_lower_bound = std::max(trace_.live_lower_bound, live_bytes_);
  return id;
}

AllocId TraceBuilder::alloc(Nanos time, Bytes bytes, Stream stream, Tag tag, std::string_view layer_name) {
  const AllocId id = alloc(time, bytes, stream, tag);
  const auto [slot, added] = layer_index_.try_emplace(std::string(layer_name),
                                                      static_cast<std::uint32_t>(trace_.layer_names.size()));
  if (added) trace_.layer_names.emplace_back(layer_name);
  trace_.layer.resize(trace_.requested.size(), 0);  // allocations before the first named one get layer 0
  trace_.layer.back() = slot->second;
  return id;
}

void TraceBuilder::free(Nanos time, AllocId id) {
  check_time(time);
  const auto index = index_of(id);
  if (!is_live(id)) {
    const bool known = index < allocations_.size();
    throw Error("event " + std::to_string(trace_.events.size()) + ": free of id " + std::to_string(index) +
                (known ? ", which was already freed" : ", which was never allocated"));
  }
  Allocation& allocation = allocations_[index];
  allocation.live = false;
  live_bytes_ -= trace_.requested[index];
  append(Event{time, id, allocation.stream, Op::free, allocation.tag});
}

void TraceBuilder::release(Nanos time) {
  check_time(time);
  append(Event{time, AllocId{}, 0, Op::release, Tag::other});
}

void TraceBuilder::sync(Nanos time, const Sync& sync) {
  check_time(time);
  append(Event{time, sync_id(sync), sync.stream, Op::sync, Tag::other});
}

bool TraceBuilder::is_live(AllocId id) const {
  const auto index = index_of(id);
  return index < allocations_.size() && allocations_[index].live;
}

Trace TraceBuilder::finish() && {
  if (trace_.events.empty()) throw Error("empty trace: no events");
  if (!trace_.layer.empty()) trace_.layer.resize(trace_.requested.size(), 0);
  return std::move(trace_);
}

}  // namespace allocsim
