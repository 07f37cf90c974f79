// The account of a replay the engine does not drive: the what-if from a recording starts
// from adopted segments and serves recorded OOM requests its trace does not hold, so it
// runs its own loop. This keeps that loop's RunResult (one tenant) as the engine keeps a
// run's, and makes the observer calls the engine would make, so that a report and the
// exporters read the replay as they read a run.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/metered_device.hpp"
#include "sim/observer.hpp"
#include "sim/policy.hpp"
#include "sim/result.hpp"
#include "sim/trace.hpp"

namespace allocsim {

// Contract:
// - watch() once, with the policy and the device it draws on, before any request;
// - serving() before each request: the event, time and stream the observers are told (a
//   request outside the trace is told at the trace event it comes before);
// - placed() and freed() for the trace's blocks, outside() for a request the trace does not
//   hold that was served (the exporters see it placed and freed at once), failed() for a
//   request not served, note_peak() wherever the policy's allocated bytes may have peaked,
//   event_done() after each trace event; finish() once, after the last event, before the
//   blocks still live go back;
// - `exporters` hear every block and device call, outside requests included, and never a
//   sample or an OOM (their files keep the shape they have); `recorders` hear the trace's
//   blocks, the device calls, a sample after each trace event and every OOM.
class ReplayAccount final : public DeviceCallListener {
 public:
  ReplayAccount(std::shared_ptr<const Trace> trace, std::string policy, const DeviceSpec& device,
                std::span<Observer* const> exporters, std::span<Observer* const> recorders);

  void watch(const Policy& policy, MeteredDevice& device);
  bool listened() const { return !exporters_.empty() || !recorders_.empty(); }

  void device_call(SegmentAction action, Addr addr, Bytes bytes) override;
  void serving(Nanos time, std::size_t event, Stream stream);
  void placed(const Block& block);
  void freed(const Block& block);
  void outside(const Block& block);
  // `skipped`: the trace allocation dropped (none for a request outside the trace).
  void failed(Bytes bytes, std::optional<AllocId> skipped);
  void note_peak();
  void event_done();
  // `peak_device`: the most the device held, inside a call too (the run's and the tenant's
  // peak reserved: one tenant on a device of its own).
  RunResult finish(Bytes peak_device);

  const TenantResult& tenant() const { return result_; }

 private:
  void tell_block(BlockAction action, const Block& block, std::span<Observer* const> to) const;

  std::shared_ptr<const Trace> trace_;
  DeviceSpec device_spec_;
  std::vector<Observer*> exporters_;
  std::vector<Observer*> recorders_;
  std::vector<Observer*> all_;
  const Policy* policy_ = nullptr;
  MeteredDevice* device_ = nullptr;
  TenantResult result_;
  Bytes requested_ = 0;  // of the trace's live blocks
  std::vector<AllocId> skipped_;
  Nanos now_ = 0;
  std::size_t event_ = 0;
  Stream stream_ = 0;
};

}  // namespace allocsim
