// One tenant's view of a shared device: forwards every call and counts what this tenant
// reserved, called and spent. The engine gives each policy its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "sim/device.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {

class MeteredDevice final : public Device {
 private:
  // Replay mostly runs on a SimDevice: calling it directly (it is final, so the generic
  // `call` binds statically) skips the virtual calls per device call on the hot path.
  // The time the call took on the device is this tenant's.
  template <typename Call>
  auto timed(Call call) {
    if (sim_) return timed_on(*sim_, call);
    return timed_on(upstream_, call);
  }
  template <typename D, typename Call>
  auto timed_on(D& device, Call call) {
    const Nanos start = device.elapsed();
    if constexpr (std::is_void_v<decltype(call(device))>) {
      call(device);
      time_spent_ += device.elapsed() - start;
    } else {
      auto result = call(device);
      time_spent_ += device.elapsed() - start;
      return result;
    }
  }

 public:
  MeteredDevice(Device& upstream, Bytes& peak_used)
      : upstream_(upstream), sim_(dynamic_cast<SimDevice*>(&upstream)), peak_used_(peak_used) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    const auto segment = timed([&](auto& device) { return device.malloc(bytes); });
    if (!segment) {
      ++failed_mallocs_;
      return segment;
    }
    ++mallocs_;
    reserved_ += segment->bytes;
    peak_used_ = std::max(peak_used_, sim_ ? sim_->used() : upstream_.used());
    return segment;
  }
  void free(Segment segment) override {
    timed([&](auto& device) { device.free(segment); });
    ++frees_;
    reserved_ -= segment.bytes;
  }
  void copy(Addr dst, Addr src, Bytes bytes) override {
    timed([&](auto& device) { device.copy(dst, src, bytes); });
    bytes_moved_ += bytes;
  }
  Addr reserve_addresses(Bytes bytes) override { return upstream_.reserve_addresses(bytes); }
  void map(Bytes bytes) override {
    timed([&](auto& device) { device.map(bytes); });
  }
  void unmap(Bytes bytes) override {
    timed([&](auto& device) { device.unmap(bytes); });
  }
  Bytes capacity() const override { return upstream_.capacity(); }
  Bytes used() const override { return upstream_.used(); }
  Bytes granularity() const override { return upstream_.granularity(); }
  Nanos elapsed() const override { return upstream_.elapsed(); }
  int compute_capability() const override { return upstream_.compute_capability(); }

  Bytes reserved() const { return reserved_; }
  Nanos time_spent() const { return time_spent_; }
  Bytes bytes_moved() const { return bytes_moved_; }
  std::uint64_t mallocs() const { return mallocs_; }
  std::uint64_t frees() const { return frees_; }
  std::uint64_t failed_mallocs() const { return failed_mallocs_; }

 private:
  Device& upstream_;
  SimDevice* sim_;
  Bytes& peak_used_;
  Bytes reserved_ = 0;
  Nanos time_spent_ = 0;
  Bytes bytes_moved_ = 0;
  std::uint64_t mallocs_ = 0;
  std::uint64_t frees_ = 0;
  std::uint64_t failed_mallocs_ = 0;
};

}  // namespace allocsim
