#include "sim/background_trace.hpp"

#include <utility>

namespace allocsim {
namespace {

// One pass over a loading trace: each window is what was built since the last one; an
// error of the reader is raised as soon as it is known, before any further event.
class LoadingTraceSource final : public EventSource {
 public:
  LoadingTraceSource(std::string name, std::shared_ptr<const TraceProgress> progress)
      : name_(std::move(name)), progress_(std::move(progress)) {}

  EventWindow next() override {
    TraceProgress::Built built = progress_->wait_beyond(at_);
    if (built.done) {
      const Trace& trace = *progress_->finished();
      built = TraceProgress::Built{trace.events.data(), trace.requested.data(), trace.events.size(), true};
    }
    if (built.count <= at_) return {};
    const std::span<const Event> events(built.events + at_, built.count - at_);
    at_ = built.count;
    return EventWindow{events, nullptr, built.requested};
  }
  std::size_t slots() const override { return progress_->slots_hint(); }
  std::uint64_t events() const override { return whole().events.size(); }
  const TraceInfo& info() const override { return whole().info; }
  std::string_view name() const override { return name_; }
  std::optional<Bytes> live_lower_bound() const override { return whole().live_lower_bound; }
  const Trace* trace() const override { return &whole(); }
  bool holds_trace() const override { return true; }
  std::unique_ptr<EventSource> reopen() const override {
    return std::make_unique<LoadingTraceSource>(name_, progress_);
  }

 private:
  const Trace& whole() const { return *progress_->finished(); }

  std::string name_;
  std::shared_ptr<const TraceProgress> progress_;
  std::size_t at_ = 0;  // events handed out
};

}  // namespace

BackgroundTrace::BackgroundTrace(std::string name, std::function<Trace(TraceProgress&)> load)
    : name_(std::move(name)), progress_(std::make_shared<TraceProgress>()) {
  loader_ = std::thread([progress = progress_, load = std::move(load)] {
    try {
      // The holder first: once the trace is loaded, nothing may throw before it is handed over.
      auto trace = std::make_shared<Trace>();
      *trace = load(*progress);
      progress->finish(std::move(trace));
    } catch (...) {
      progress->fail(std::current_exception());
    }
  });
}

BackgroundTrace::~BackgroundTrace() { loader_.join(); }

std::unique_ptr<EventSource> BackgroundTrace::open() const {
  return std::make_unique<LoadingTraceSource>(name_, progress_);
}

}  // namespace allocsim
