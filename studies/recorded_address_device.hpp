// A device that hands out segments at the addresses a recording shows: cudaMalloc often
// places a new segment below or between existing ones, and the caching allocator breaks
// ties between free blocks of equal size by address, so a replay on increasing addresses
// picks other blocks than the real allocator did. replay-check runs on this one.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <span>
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
//   after fail_next_malloc, the next malloc fails;
// - free takes the address this device gave and frees the upstream segment behind it;
// - expandable segments: reserve_addresses returns the address of the recorded map that
//   comes next (the policy maps the start of a range it has just reserved, as PyTorch
//   does) when that range overlaps nothing live; otherwise an address above every
//   recorded one. map, unmap and release_addresses take this device's addresses. The
//   maps start with the ranges mapped before the recording, adopted first (one map each).
class RecordedAddressDevice final : public ForwardingDevice {
 public:
  struct Placement {
    Addr addr;
    Bytes bytes;
  };
  struct Placements {
    std::vector<Placement> segments;  // every segment the recording reserved, in order (the starting ones first)
    std::vector<Placement> maps;      // the starting ranges' mapped prefixes, then every segment_map, in order
  };
  RecordedAddressDevice(Device& upstream, Placements placements)
      : ForwardingDevice(upstream), placements_(std::move(placements.segments)), maps_(std::move(placements.maps)) {
    for (const Placement& placement : placements_) above_ = std::max(above_, placement.addr + placement.bytes);
    for (const Placement& map : maps_) above_ = std::max(above_, map.addr + map.bytes);
    above_ = (above_ + (Addr{1} << 30)) & ~((Addr{1} << 30) - 1);  // a clear 1 GiB boundary past them
  }

  std::optional<Segment> malloc(Bytes bytes) override {
    if (free_limit_ && bytes > *free_limit_) return std::nullopt;
    if (std::exchange(fail_next_, false)) return std::nullopt;
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

  Addr reserve_addresses(Bytes bytes) override {
    const Addr real = upstream().reserve_addresses(bytes);
    Addr addr = above_ + real;
    if (maps_made_ < maps_.size() && fits({maps_[maps_made_].addr, bytes})) {
      addr = maps_[maps_made_].addr;
    } else {
      ++misplaced_;
    }
    ranges_.emplace(addr, Segment{real, bytes});
    return addr;
  }
  void release_addresses(Addr at, Bytes bytes) override {
    const auto found = ranges_.find(at);
    if (found == ranges_.end()) throw Error("recorded-address device: release of a range it did not give");
    upstream().release_addresses(found->second.addr, bytes);
    ranges_.erase(found);
  }
  void map(Addr at, std::span<const Segment> pages) override {
    ++maps_made_;
    upstream().map(upstream_address(at), pages);
  }
  void unmap(Addr at, Bytes bytes) override { upstream().unmap(upstream_address(at), bytes); }

  // While set, a malloc larger than `bytes` fails, as cudaMalloc did when PyTorch ran out
  // of memory with that much free on the device.
  void limit_free(std::optional<Bytes> bytes) { free_limit_ = bytes; }

  // The next malloc fails, as a cudaMalloc the recording shows failed (PyTorch released
  // cached blocks and retried).
  void fail_next_malloc() { fail_next_ = true; }

  // Segments that could not go where the recording put them.
  std::size_t misplaced() const { return misplaced_; }

 private:
  bool fits(const Placement& placement) const { return clear_of(live_, placement) && clear_of(ranges_, placement); }
  static bool clear_of(const std::map<Addr, Segment>& live, const Placement& placement) {
    const auto after = live.lower_bound(placement.addr);
    if (after != live.end() && after->first < placement.addr + placement.bytes) return false;
    if (after == live.begin()) return true;
    const auto before = std::prev(after);
    return before->first + before->second.bytes <= placement.addr;
  }

  Addr upstream_address(Addr at) const {
    auto range = ranges_.upper_bound(at);
    if (range == ranges_.begin() || at >= std::prev(range)->first + std::prev(range)->second.bytes) {
      throw Error("recorded-address device: a mapping outside every reserved range");
    }
    --range;
    return range->second.addr + (at - range->first);
  }

  std::vector<Placement> placements_;
  std::vector<Placement> maps_;
  std::size_t maps_made_ = 0;
  std::map<Addr, Segment> ranges_;  // our reserved address -> the upstream range
  std::size_t next_ = 0;
  Addr above_ = 0;
  std::size_t misplaced_ = 0;
  std::optional<Bytes> free_limit_;
  bool fail_next_ = false;
  std::map<Addr, Segment> live_;  // our address -> the upstream segment
};

}  // namespace allocsim
