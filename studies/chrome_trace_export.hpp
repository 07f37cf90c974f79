// --chrome-trace FILE.json: the simulated run as Chrome trace JSON (the Trace Event
// Format), which ui.perfetto.dev and chrome://tracing open. Times are microseconds of
// simulated time.
//
// - One process per tenant, named "tenant N: WORKLOAD @ POLICY" (process_name
//   metadata), and process 0 for the device.
// - Counter tracks in bytes: "memory allocated" and "memory reserved" per tenant,
//   "device used" on the device; sampled on change through a Timeline, so they stay
//   bounded (kCounterPoints per tenant, peaks kept).
// - Allocation lifetimes as async slices (ph b/e, one id per allocation), named by tag and
//   size: the kMaxLifetimes largest of the run (ties: the earlier), the cap and how many
//   there were stated in otherData. A block still live when its tenant stops ends there.
// - OOMs as instant events on their tenant, with the verdict and the bytes asked.
#pragma once

#include <cstddef>
#include <ostream>
#include <queue>
#include <unordered_map>
#include <vector>

#include "sim/engine.hpp"
#include "sim/observer.hpp"
#include "sim/timeline.hpp"

namespace allocsim {

class ChromeTraceExport final : public Observer {
 public:
  static constexpr std::size_t kMaxLifetimes = 20'000;
  static constexpr std::size_t kCounterPoints = 100'000;

  explicit ChromeTraceExport(const Scenario& scenario, std::size_t max_lifetimes = kMaxLifetimes);

  void on_event(const Sample& sample) override { timeline_.on_event(sample); }
  void on_block(const BlockEvent& event) override;
  void on_oom(const OomRecord& record) override;
  void on_exit(std::size_t tenant, Nanos time) override;

  void write(std::ostream& out) const;

  struct Lifetime {
    std::size_t tenant;
    std::uint32_t id;
    Addr addr;
    Bytes size;
    Bytes requested;
    Stream stream;
    Nanos start;
    Nanos end;
    std::size_t order;  // placings before this one, in the whole run
  };

 private:
  struct Larger {  // the heap's top is the lifetime to drop first: the smallest, then the latest
    bool operator()(const Lifetime& a, const Lifetime& b) const {
      return a.size != b.size ? a.size > b.size : a.order < b.order;
    }
  };
  void keep(Lifetime lifetime);

  const Scenario& scenario_;
  std::size_t max_lifetimes_;
  Timeline timeline_;
  std::vector<std::unordered_map<std::uint32_t, Lifetime>> open_;  // by tenant, by allocation id
  std::vector<bool> exited_;
  std::priority_queue<Lifetime, std::vector<Lifetime>, Larger> kept_;
  std::size_t lifetimes_ = 0;
  std::vector<OomRecord> ooms_;
};

}  // namespace allocsim
