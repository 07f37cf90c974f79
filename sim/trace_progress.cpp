#include "sim/trace_progress.hpp"

#include "sim/error.hpp"

namespace allocsim {

void TraceProgress::begin(std::size_t slots_hint) {
  const std::lock_guard lock(mutex_);
  begun_ = true;
  slots_hint_ = slots_hint;
  changed_.notify_all();
}

void TraceProgress::report(const Event* events, const Bytes* requested, std::size_t count) {
  const std::lock_guard lock(mutex_);
  built_.events = events;
  built_.requested = requested;
  built_.count = count;
  changed_.notify_all();
}

void TraceProgress::finish(std::shared_ptr<const Trace> trace) {
  const std::lock_guard lock(mutex_);
  // A reader may still hold a window of the reported arrays: the trace must be the very
  // arrays the builder reported (moved out of it, never copied).
  if (built_.count > 0 && (trace->events.data() != built_.events || trace->requested.data() != built_.requested)) {
    error_ = std::make_exception_ptr(Error("a trace loading in the background moved its arrays (a reader's bug)"));
  } else {
    trace_ = std::move(trace);
    built_ = Built{trace_->events.data(), trace_->requested.data(), trace_->events.size(), false};
    slots_hint_ = begun_ ? slots_hint_ : trace_->allocations();
  }
  built_.done = true;
  begun_ = true;
  changed_.notify_all();
}

void TraceProgress::fail(std::exception_ptr error) {
  const std::lock_guard lock(mutex_);
  error_ = std::move(error);
  built_.done = true;
  begun_ = true;
  changed_.notify_all();
}

void TraceProgress::keep(Trace arrays) {
  const std::lock_guard lock(mutex_);
  if (arrays.events.capacity() > 0 || arrays.requested.capacity() > 0) kept_.push_back(std::move(arrays));
}

TraceProgress::Built TraceProgress::wait_beyond(std::size_t seen) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return built_.done || built_.count > seen; });
  return built_;
}

std::size_t TraceProgress::slots_hint() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return begun_; });
  return slots_hint_;
}

const std::shared_ptr<const Trace>& TraceProgress::finished() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return built_.done; });
  if (error_) std::rethrow_exception(error_);
  return trace_;
}

}  // namespace allocsim
