// The cap a framework puts on what its allocator may reserve, one rule for every policy
// that has one: exact bytes (TensorFlow's memory_limit), or a fraction of the device's
// total memory (TensorFlow's per_process_gpu_memory_fraction, JAX's
// XLA_PYTHON_CLIENT_MEM_FRACTION, PyTorch's set_per_process_memory_fraction), truncated
// to whole bytes as each of them does. A request that would take the reserve past the
// cap fails without a driver call; the OOM classification reads it as PolicyStats::limit.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/device.hpp"
#include "sim/error.hpp"

namespace allocsim {

class MemoryCap {
 public:
  MemoryCap() = default;  // no cap: the device's free memory is the limit
  static MemoryCap of_bytes(Bytes bytes) { return MemoryCap(bytes); }
  // Error naming `owner` outside [0, 1].
  static void check_fraction(double fraction, std::string_view owner) {
    if (fraction < 0 || fraction > 1) throw Error(std::string(owner) + ": fraction must be between 0 and 1");
  }
  // 0 is no cap.
  static MemoryCap fraction_of_total(double fraction, const Device& device, std::string_view owner) {
    check_fraction(fraction, owner);
    if (fraction == 0) return {};
    return MemoryCap(static_cast<Bytes>(fraction * static_cast<double>(device.capacity())));
  }

  bool capped() const { return bytes_.has_value(); }
  Bytes bytes() const { return bytes_.value_or(0); }  // 0 when uncapped, as PolicyStats::limit
  // Whether reserving `more` on top of `reserved` stays within the cap.
  bool admits(Bytes reserved, Bytes more) const { return !bytes_ || reserved + more <= *bytes_; }

 private:
  explicit MemoryCap(Bytes bytes) : bytes_(bytes) {}
  std::optional<Bytes> bytes_;
};

}  // namespace allocsim
