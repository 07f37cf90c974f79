// A Device that passes every call to another one, so that a decorator (metering, logging)
// overrides only the calls it changes and a new Device call is forwarded in one place.
#pragma once

#include "sim/device.hpp"

namespace allocsim {

// Contract: every call goes to upstream() unchanged; `upstream` outlives this device.
class ForwardingDevice : public Device {
 public:
  explicit ForwardingDevice(Device& upstream) : upstream_(upstream) {}

  std::optional<Segment> malloc(Bytes bytes) override { return upstream_.malloc(bytes); }
  void free(Segment segment) override { upstream_.free(segment); }
  void copy(Addr dst, Addr src, Bytes bytes) override { upstream_.copy(dst, src, bytes); }
  Bytes capacity() const override { return upstream_.capacity(); }
  Bytes used() const override { return upstream_.used(); }
  Bytes granularity() const override { return upstream_.granularity(); }
  Nanos elapsed() const override { return upstream_.elapsed(); }
  Addr reserve_addresses(Bytes bytes) override { return upstream_.reserve_addresses(bytes); }
  void release_addresses(Addr at, Bytes bytes) override { upstream_.release_addresses(at, bytes); }
  std::optional<Segment> create_physical(Bytes bytes) override { return upstream_.create_physical(bytes); }
  void release_physical(Segment physical) override { upstream_.release_physical(physical); }
  void map(Addr at, std::span<const Segment> pages) override { upstream_.map(at, pages); }
  void unmap(Addr at, Bytes bytes) override { upstream_.unmap(at, bytes); }
  int compute_capability() const override { return upstream_.compute_capability(); }
  bool open_context() override { return upstream_.open_context(); }
  void close_context() override { upstream_.close_context(); }

 protected:
  Device& upstream() const { return upstream_; }

 private:
  Device& upstream_;
};

}  // namespace allocsim
