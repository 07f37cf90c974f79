// A trace file read on a thread of its own while the engine replays the events read so
// far: loading and replaying overlap, on two cores, and the trace in the end is the one the
// reader makes, with its errors. A reader that reports its progress (TraceBuilder::report_to:
// our CSV, .atrace) is replayed as it goes; any other is replayed once it is read whole.
// What needs the whole trace (an offline planner, the breakdown at the peak, the event
// count) waits for the end.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "sim/event_source.hpp"
#include "sim/trace_progress.hpp"

namespace allocsim {

class BackgroundTrace final : public EventSourceFactory {
 public:
  // Starts `load` on its own thread; `name` is the workload's (the file's path).
  BackgroundTrace(std::string name, std::function<Trace(TraceProgress&)> load);
  ~BackgroundTrace() override;  // waits for the load to end
  BackgroundTrace(const BackgroundTrace&) = delete;
  BackgroundTrace& operator=(const BackgroundTrace&) = delete;

  // A cursor over the events read so far, waiting for more as the replay reaches them.
  std::unique_ptr<EventSource> open() const override;
  // Waits for the end: the whole trace; rethrows the reader's Error.
  const std::shared_ptr<const Trace>& trace() const { return progress_->finished(); }

 private:
  std::string name_;
  std::shared_ptr<TraceProgress> progress_;
  std::thread loader_;
};

}  // namespace allocsim
