// A device that hands out segments at the addresses a recording shows: cudaMalloc often
// places a new segment below or between existing ones, and the caching allocator breaks
// ties between free blocks of equal size by address, so a replay on increasing addresses
// picks other blocks than the real allocator did. replay-check runs on this one.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"

namespace allocsim {

// Contract:
// - the upstream device does the accounting (capacity, used, costs); this one only
//   renames the segments it returns;
// - malloc n returns the n-th recorded segment's address when its size is the recorded
//   one and the range overlaps no live segment; otherwise (the replay has diverged) an
//   address above every recorded one, so that it can never collide with them;
// - while limit_free is set, a malloc over that many bytes fails (the recorded OOMs);
// - free takes the address this device gave and frees the upstream segment behind it.
class RecordedAddressDevice final : public ForwardingDevice {
 public:
  struct Placement {
    Addr addr;
    Bytes bytes;
  };
  // `placements`: every segment the recording reserved, in order (the starting ones first).
  RecordedAddressDevice(Device& upstream, std::vector<Placement> placements)
      : ForwardingDevice(upstream), placements_(std::move(placements)) {
    for (const Placement& placement : placements_) above_ = std::max(above_, placement.addr + placement.bytes);
    above_ = (above_ + (Addr{1} << 30)) & ~((Addr{1} << 30) - 1);  // a clear 1 GiB boundary past them
  }

  std::optional<Segment> malloc(Bytes bytes) override {
    if (free_limit_ && bytes > *free_limit_) return std::nullopt;
    const std::optional<Segment> real = upstream().malloc(bytes);
    if (!real) return std::nullopt;
    Addr addr = above_ + real->addr;
    if (next_ < placements_.size() && placements_[next_].bytes == bytes && fits(placements_[next_])) {
      addr = placements_[next_].addr;
    } else {
      ++misplaced_;
    }
    ++next_;
    live_.emplace(addr, *real);
    return Segment{addr, bytes};
  }

  void free(Segment segment) override {
    const auto found = live_.find(segment.addr);
    if (found == live_.end()) throw Error("recorded-address device: free of a segment it did not give");
    const Segment real = found->second;
    live_.erase(found);
    upstream().free(real);
  }

  // While set, a malloc larger than `bytes` fails, as cudaMalloc did when PyTorch ran out
  // of memory with that much free on the device.
  void limit_free(std::optional<Bytes> bytes) { free_limit_ = bytes; }

  // Segments that could not go where the recording put them.
  std::size_t misplaced() const { return misplaced_; }

 private:
  bool fits(const Placement& placement) const {
    const auto after = live_.lower_bound(placement.addr);
    if (after != live_.end() && after->first < placement.addr + placement.bytes) return false;
    if (after == live_.begin()) return true;
    const auto before = std::prev(after);
    return before->first + before->second.bytes <= placement.addr;
  }

  std::vector<Placement> placements_;
  std::size_t next_ = 0;
  Addr above_ = 0;
  std::size_t misplaced_ = 0;
  std::optional<Bytes> free_limit_;
  std::map<Addr, Segment> live_;  // our address -> the upstream segment
};

}  // namespace allocsim
