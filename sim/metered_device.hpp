// One tenant's view of a shared device: forwards every call and counts what this tenant
// reserved, called and spent. The engine gives each policy its own.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/device.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {

class MeteredDevice final : public Device {
 public:
  MeteredDevice(Device& upstream, Bytes& peak_used)
      : upstream_(upstream), sim_(dynamic_cast<SimDevice*>(&upstream)), peak_used_(peak_used) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    const Nanos start = upstream_elapsed();
    auto segment = sim_ ? sim_->malloc(bytes) : upstream_.malloc(bytes);
    time_spent_ += upstream_elapsed() - start;
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
    const Nanos start = upstream_elapsed();
    if (sim_) {
      sim_->free(segment);
    } else {
      upstream_.free(segment);
    }
    time_spent_ += upstream_elapsed() - start;
    ++frees_;
    reserved_ -= segment.bytes;
  }
  void copy(Addr dst, Addr src, Bytes bytes) override {
    const Nanos start = upstream_elapsed();
    upstream_.copy(dst, src, bytes);
    time_spent_ += upstream_elapsed() - start;
    bytes_moved_ += bytes;
  }
  Addr reserve_addresses(Bytes bytes) override { return upstream_.reserve_addresses(bytes); }
  void map(Bytes bytes) override {
    const Nanos start = upstream_elapsed();
    upstream_.map(bytes);
    time_spent_ += upstream_elapsed() - start;
  }
  void unmap(Bytes bytes) override {
    const Nanos start = upstream_elapsed();
    upstream_.unmap(bytes);
    time_spent_ += upstream_elapsed() - start;
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
  // Replay mostly runs on a SimDevice: calling it directly (it is final) skips two
  // virtual calls per device call on the hot path.
  Nanos upstream_elapsed() const { return sim_ ? sim_->elapsed() : upstream_.elapsed(); }

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
