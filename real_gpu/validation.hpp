// Validation: one scenario replayed twice, in simulation and on a device (a GPU through
// CudaDevice, or the host stand-in), and the two compared metric by metric. The
// simulated device mirrors the real one at the moment the replay starts (capacity, what
// is already in use, page granularity), so every difference is the model's.
#pragma once

#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "policies/registry.hpp"
#include "real_gpu/cuda_device.hpp"
#include "sim/engine.hpp"

namespace allocsim {

struct ValidationOptions {
  PolicySpec policy;  // read where the command took it; its text is what outputs show
  CudaDeviceOptions device;
  CostModel cost;  // the simulation's
  OnOom on_oom = OnOom::stop;
};

struct Validation {
  std::string workload;
  std::string policy;
  std::string backend;
  DeviceSpec device;  // the simulated mirror of the real device
  Bytes ballast = 0;
  bool capped = false;         // --cap: the card behaves like a smaller one, so OOMs can happen
  bool page_mapped = false;    // segments are VMM pages of the real driver's granularity
  bool places_by_address = false;  // the policy's choices can depend on the device's addresses (SegmentTraits)
  RunResult simulated;
  RunResult measured;
  std::vector<DeviceCall> calls;  // the measured run's device calls, in order
};

// Throws Error on a missing trace or policy and on device failures other than OOM.
Validation validate(DeviceApi& api, std::shared_ptr<const Trace> trace, const ValidationOptions& options);

enum class Target : std::uint8_t {
  exact,  // the model claims the same number
  ratio,  // a cost: measured / simulated is reported
};

struct MetricComparison {
  std::string metric;
  Target target;
  std::optional<double> simulated;  // nullopt: no value (no OOM happened)
  std::optional<double> measured;
  // false: on this run the two are equal by construction, whatever the device does (the same
  // trace through the same policy, uncapped, with segments it never tells apart by address),
  // so agreeing proves nothing and is not counted. A disagreement is always informative.
  bool informative = true;

  bool agrees() const;  // exact: equal (both absent counts); ratio: always
};

std::vector<MetricComparison> compare(const Validation& validation);

void write_comparison_table(std::ostream& out, const Validation& validation, std::span<const MetricComparison> rows);
// One row per metric: workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,difference,
// agrees,informative
void write_comparison_csv(std::ostream& out, const Validation& validation, std::span<const MetricComparison> rows);
// One row per measured device call: index,op,bytes,measured_ns,simulated_ns
void write_calls_csv(std::ostream& out, const Validation& validation);

}  // namespace allocsim
