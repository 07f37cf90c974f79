// limiting: RMM's limiting_resource_adaptor(upstream, limit, alignment = 256)
// (rmm/mr/device/limiting_resource_adaptor.hpp; ../shared/reference/allocators.md 4.5).
// - a request counts align_up(bytes, alignment) against `limit`; past it the request
//   fails without reaching the upstream ("Exceeded memory limit");
// - otherwise it goes to the upstream; a free goes there and gives its count back.
// It limits what the program holds, not what the upstream reserves: a pool under it may
// still grow past the limit.
#pragma once

#include <array>
#include <memory>

#include "sim/device.hpp"
#include "sim/made_policy.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class LimitingPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"limit", ParamKind::bytes, "0",
                "allocation_limit: the most bytes (each request aligned) live at once; 0 = none"},
      ParamInfo{"alignment", ParamKind::bytes, "256", "what each request is rounded up to before it is counted"},
      ParamInfo{"upstream", ParamKind::text, "cuda",
                "the resource it forwards to: cuda (the device) or a policy spec in [...]"},
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    MakePolicy upstream;  // the spec `upstream` names, read; cuda: direct
    Bytes limit;
    Bytes alignment;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  LimitingPolicy(const Settings& settings, Device& device);

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override { return upstream_->inspect(detail); }
  void release_cached() override { upstream_->release_cached(); }
  void synchronize(const Sync& sync, Nanos now) override { upstream_->synchronize(sync, now); }
  void prepare(const ReplaySetup& setup) override { upstream_->prepare(setup); }
  void check() const override { upstream_->check(); }

 private:
  std::unique_ptr<Policy> upstream_;
  Bytes limit_;
  Bytes alignment_;
  Bytes counted_ = 0;
};

}  // namespace allocsim
