#include "studies/replay_account.hpp"

#include <algorithm>

#include "sim/breakdown.hpp"
#include "sim/event_source.hpp"
#include "sim/oom.hpp"

namespace allocsim {

ReplayAccount::ReplayAccount(std::shared_ptr<const Trace> trace, std::string policy, const DeviceSpec& device,
                             std::span<Observer* const> exporters, std::span<Observer* const> recorders)
    : trace_(std::move(trace)), device_spec_(device), exporters_(exporters.begin(), exporters.end()),
      recorders_(recorders.begin(), recorders.end()) {
  all_ = exporters_;
  all_.insert(all_.end(), recorders_.begin(), recorders_.end());
  result_.workload = trace_->info.name;
  result_.policy = std::move(policy);
  result_.events = trace_->events.size();
  result_.live_lower_bound = trace_->live_lower_bound;
  result_.steps = trace_->info.step_starts.size();
}

void ReplayAccount::watch(const Policy& policy, MeteredDevice& device) {
  policy_ = &policy;
  device_ = &device;
  if (listened()) device.listen(this);
}

void ReplayAccount::device_call(SegmentAction action, Addr addr, Bytes bytes) {
  const SegmentEvent segment{0, event_, now_, action, addr, bytes, stream_};
  for (Observer* observer : all_) observer->on_segment(segment);
}

void ReplayAccount::serving(Nanos time, std::size_t event, Stream stream) {
  now_ = time;
  event_ = event;
  stream_ = stream;
}

void ReplayAccount::tell_block(BlockAction action, const Block& block, std::span<Observer* const> to) const {
  const BlockEvent told{0, event_, now_, action, block.id, block.addr, block.size, block.requested, block.stream};
  for (Observer* observer : to) observer->on_block(told);
}

void ReplayAccount::placed(const Block& block) {
  requested_ += trace_->bytes_of(block.id);
  result_.peak_requested = std::max(result_.peak_requested, requested_);
  tell_block(BlockAction::placed, block, all_);
}

void ReplayAccount::freed(const Block& block) {
  requested_ -= trace_->bytes_of(block.id);
  tell_block(BlockAction::freed, block, all_);
}

void ReplayAccount::outside(const Block& block) {
  // Its requested size is not known to the trace: the block's own, as the exporters have it.
  const Block whole{block.addr, block.size, block.size, block.id, block.stream};
  tell_block(BlockAction::placed, whole, exporters_);
  tell_block(BlockAction::freed, whole, exporters_);
}

void ReplayAccount::failed(Bytes bytes, std::optional<AllocId> skipped) {
  if (skipped) skipped_.push_back(*skipped);
  const bool first = result_.oom_count == 0;
  PolicyInspection inspection = policy_->inspect(first ? Detail::full : Detail::counters);
  if (first) {
    const TraceSource source(trace_);
    result_.needs = peak_live(source, [&](Bytes request) { return policy_->rounded_size(request); });
    result_.planned_reserve = inspection.planned_reserve;
  }
  // One process alone on the device, without a CUDA context: the device is all it has.
  const TenantShare share{device_spec_.capacity, 0, 0, {}};
  OomContext context{bytes, requested_, requested_, device_spec_.capacity, device_->available(), policy_->stats(),
                     inspection.releasable, result_.needs, share};
  const OomKind kind = classify_over_run(context);
  const OomKind request_kind = classify_oom(context);
  OomRecord record{0,     event_, step_of(trace_->info, event_), now_, bytes, kind, request_kind, false,
                   std::move(context), first ? std::move(inspection.state) : std::string()};
  ++result_.oom_count;
  ++result_.ooms_by_request_kind[static_cast<std::size_t>(request_kind)];
  for (Observer* observer : recorders_) observer->on_oom(record);
  if (result_.ooms.size() < kMaxOomRecords) result_.ooms.push_back(std::move(record));
}

void ReplayAccount::note_peak() {
  const PolicyStats stats = policy_->stats();
  if (stats.allocated <= result_.peak_allocated) return;
  result_.peak_allocated = stats.allocated;
  result_.peak_event = event_;
  result_.reserved_at_peak = stats.reserved;
  result_.largest_free_at_peak = stats.largest_free;
  result_.never_touched_at_peak = stats.never_touched;
}

void ReplayAccount::event_done() {
  if (recorders_.empty()) return;
  const Sample sample{now_, 0, event_, policy_->stats().allocated, device_->reserved(), device_->used()};
  for (Observer* observer : recorders_) observer->on_event(sample);
}

RunResult ReplayAccount::finish(Bytes peak_device) {
  const Nanos end = trace_->events.empty() ? Nanos{} : trace_->events.back().time;
  result_.events_replayed = trace_->events.size();
  result_.end_time = end;
  result_.peak_reserved = peak_device;
  result_.allocator_time = device_->time_spent();
  result_.device_mallocs = device_->mallocs();
  result_.device_frees = device_->frees();
  result_.device_failed_mallocs = device_->failed_mallocs();
  result_.bytes_moved = device_->bytes_moved();
  result_.extra = policy_->inspect(Detail::counters).extra;
  if (result_.peak_allocated > 0) {
    std::sort(skipped_.begin(), skipped_.end());
    result_.at_peak = live_breakdown(*trace_, result_.peak_event, skipped_);
    result_.peak_step = step_of(trace_->info, result_.peak_event);
  }
  // The exit comes after every event served, a recorded OOM after the trace's last included
  // (the segments then free are gone after it, not at it).
  serving(end, std::max(trace_->events.size(), event_ + 1), 0);
  for (Observer* observer : all_) observer->on_exit(0, end);
  RunResult run;
  run.device = device_spec_;
  run.peak_device = peak_device;
  run.events_replayed = result_.events_replayed;
  run.tenants.push_back(result_);
  return run;
}

}  // namespace allocsim
