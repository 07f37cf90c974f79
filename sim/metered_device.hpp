// One tenant's view of a shared device: forwards every call and counts what this tenant
// reserved, called and spent. The engine gives each policy its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "sim/counter.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/observer.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {

// Told of every call with an address a tenant makes (malloc, free, map, unmap), once it
// succeeded: what an exporter draws as segments.
class DeviceCallListener {
 public:
  virtual void device_call(SegmentAction action, Addr addr, Bytes bytes) = 0;

 protected:
  ~DeviceCallListener() = default;
};

// Physical memory (create_physical) counts as a device allocation, like a malloc: both
// take memory from the device, and device_mallocs, device_frees and reserved bytes are
// what the policy holds of either kind. Calls it does not meter are forwarded as they are.
class MeteredDevice final : public ForwardingDevice {
 private:
  // Replay mostly runs on a SimDevice: calling it directly (it is final, so the generic
  // `call` binds statically) skips the virtual calls per device call on the hot path.
  // The time the call took on the device is this tenant's.
  template <typename Call>
  auto timed(Call call) {
    if (sim_) return timed_on(*sim_, call);
    return timed_on(upstream(), call);
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
  void took(const std::optional<Segment>& segment) {
    if (!segment) {
      ++failed_mallocs_;
      return;
    }
    segments_.add(1);
    reserved_.add(segment->bytes);
    grew_ = true;
    peak_used_ = std::max(peak_used_, sim_ ? sim_->used() : upstream().used());
  }
  void gave_back(const Segment& segment) {
    segments_.sub(1);
    reserved_.sub(segment.bytes);
  }

 public:
  MeteredDevice(Device& upstream, Bytes& peak_used)
      : ForwardingDevice(upstream), sim_(dynamic_cast<SimDevice*>(&upstream)), peak_used_(peak_used) {}

  // `listener` (null: none) hears of every call with an address from now on.
  void listen(DeviceCallListener* listener) { listener_ = listener; }

  std::optional<Segment> malloc(Bytes bytes) override {
    auto segment = timed([&](auto& device) { return device.malloc(bytes); });
    took(segment);
    if (listener_ && segment) listener_->device_call(SegmentAction::alloc, segment->addr, segment->bytes);
    return segment;
  }
  void free(Segment segment) override {
    timed([&](auto& device) { device.free(segment); });
    gave_back(segment);
    if (listener_) listener_->device_call(SegmentAction::free, segment.addr, segment.bytes);
  }
  std::optional<Segment> create_physical(Bytes bytes) override {
    auto physical = timed([&](auto& device) { return device.create_physical(bytes); });
    took(physical);
    return physical;
  }
  void release_physical(Segment physical) override {
    timed([&](auto& device) { device.release_physical(physical); });
    gave_back(physical);
  }
  void copy(Addr dst, Addr src, Bytes bytes) override {
    timed([&](auto& device) { device.copy(dst, src, bytes); });
    bytes_moved_ += bytes;
  }
  void map(Addr at, std::span<const Segment> pages) override {
    timed([&](auto& device) { device.map(at, pages); });
    if (listener_) listener_->device_call(SegmentAction::map, at, total_bytes(pages));
  }
  void unmap(Addr at, Bytes bytes) override {
    timed([&](auto& device) { device.unmap(at, bytes); });
    if (listener_) listener_->device_call(SegmentAction::unmap, at, bytes);
  }

  Bytes reserved() const { return reserved_.current; }
  // Whether reserved bytes grew since forget_growth(): only then can a new peak follow.
  bool grew() const { return grew_; }
  void forget_growth() { grew_ = false; }
  Nanos time_spent() const { return time_spent_; }
  Bytes bytes_moved() const { return bytes_moved_; }
  std::uint64_t mallocs() const { return segments_.total; }
  std::uint64_t frees() const { return segments_.total - segments_.current; }
  std::uint64_t failed_mallocs() const { return failed_mallocs_; }

 private:
  SimDevice* sim_;
  DeviceCallListener* listener_ = nullptr;
  Bytes& peak_used_;
  Counter reserved_;  // bytes
  Counter segments_;  // device allocations: total is every malloc, total - current every free
  Nanos time_spent_ = 0;
  Bytes bytes_moved_ = 0;
  std::uint64_t failed_mallocs_ = 0;
  bool grew_ = false;
};

}  // namespace allocsim
