// What a trace still being built has so far, shared by the thread that builds it and the
// replays that read it meanwhile (sim/background_trace.hpp). The builder (TraceBuilder::
// report_to) tells it every so often how many events are done, in arrays reserved once so
// that they never move; a reader waits for more, or for the end.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "sim/trace.hpp"

namespace allocsim {

class TraceProgress {
 public:
  // The events built so far, read by a replay while more come.
  struct Built {
    const Event* events = nullptr;
    const Bytes* requested = nullptr;  // by AllocId, for the allocations among `events`
    std::size_t count = 0;
    bool done = false;  // count is the whole trace (or the build failed: see finished())
  };

  // Builder side. `slots_hint`: about how many allocations the trace holds, known before
  // its events (what a replay sizes its per-allocation state by).
  void begin(std::size_t slots_hint);
  void report(const Event* events, const Bytes* requested, std::size_t count);
  // The end: the whole trace, or the error that stopped the build.
  void finish(std::shared_ptr<const Trace> trace);
  void fail(std::exception_ptr error);
  // What a builder that reported leaves when it dies: its arrays live on here, since a
  // replay may still be reading them.
  void keep(Trace arrays);

  // Reader side. Waits until more than `seen` events are built or the build has ended.
  Built wait_beyond(std::size_t seen) const;
  std::size_t slots_hint() const;  // waits for begin() or the end
  // Waits for the end: the whole trace; rethrows the build's error.
  const std::shared_ptr<const Trace>& finished() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  Built built_;
  bool begun_ = false;
  std::size_t slots_hint_ = 0;
  std::shared_ptr<const Trace> trace_;
  std::exception_ptr error_;
  std::vector<Trace> kept_;
};

}  // namespace allocsim
