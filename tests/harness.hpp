// Drives one policy on a SimDevice the way the engine would, and checks what every
// policy promises after each step: blocks aligned, no two live blocks overlapping,
// stats that add up, the device never over capacity.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/sim_device.hpp"

namespace allocsim::test {

inline DeviceSpec plain_device(Bytes capacity) {
  DeviceSpec spec;
  spec.capacity = capacity;
  return spec;
}

class Harness final : public MoveListener {
 public:
  Harness(const std::string& policy_spec, DeviceSpec device)
      : device_(std::move(device)), policy_(make_policy(policy_spec, device_)) {
    policy_->prepare(ReplaySetup{.moves = this});
  }

  std::optional<Block> alloc(Bytes bytes, Stream stream = 0) {
    const auto id = static_cast<AllocId>(next_id_++);
    const Bytes allocated_before = policy_->stats().allocated;
    const Allocation got = policy_->allocate(Request{id, bytes, stream, now_++});
    last_hang_ = got.hang;
    const std::optional<Block> block = got.block;
    if (!block) {
      // Nothing live moved or vanished: the policy still counts the same bytes, and every
      // live block is freed later by its original address (policies reject a stale one).
      REQUIRE(policy_->stats().allocated == allocated_before);
      check();
      return block;
    }
    REQUIRE(block->addr % kBlockAlignment == 0);
    REQUIRE(block->size >= bytes);
    REQUIRE(block->requested == bytes);
    REQUIRE(block->id == id);
    if (block->size > 0) {
      insert_live(*block);
    } else {
      zero_size_.push_back(*block);
    }
    allocated_ += block->size;
    check();
    return block;
  }

  // A block as allocate returned it, or as the caller kept it: a moved one goes back from
  // where the policy said it moved to.
  void free(Block block) {  // a copy: the block may live in live_, which this erases
    if (const auto moved = moved_to_.find(index_of(block.id)); moved != moved_to_.end()) {
      block.addr = moved->second;
      moved_to_.erase(moved);
    }
    if (block.size > 0) REQUIRE(live_.erase(block.addr) == 1);
    policy_->deallocate(block, now_++);
    allocated_ -= block.size;
    check();
  }

  void free_all() {
    while (!live_.empty()) free(live_.begin()->second);
    for (const Block& block : zero_size_) policy_->deallocate(block, now_++);
    zero_size_.clear();
  }

  void check() const {
    policy_->check();
    const PolicyStats stats = policy_->stats();
    REQUIRE(stats.allocated == allocated_);
    REQUIRE(stats.reserved >= stats.allocated);
    REQUIRE(stats.largest_free <= stats.reserved - stats.allocated);
    REQUIRE(device_.used() <= device_.capacity());
    REQUIRE(device_.used() >= stats.reserved);  // granularity may charge more than reserved
  }

  // Frees everything, empties the cache, destroys the policy: the device must be empty.
  void finish() {
    free_all();
    policy_->release_cached();
    policy_.reset();
    REQUIRE(device_.used() == device_.spec().context_overhead);
  }

  void moved(const Move& move) override {
    const auto found = live_.find(move.from);
    REQUIRE(found != live_.end());
    REQUIRE(found->second.id == move.id);
    REQUIRE(found->second.size == move.size);
    REQUIRE(move.to % kBlockAlignment == 0);
    Block block = found->second;
    live_.erase(found);
    block.addr = move.to;
    insert_live(block);
    moved_to_[index_of(move.id)] = move.to;
    ++moves_;
  }

  Policy& policy() { return *policy_; }
  // Why the last request would never have returned ("" when it did).
  const std::string& last_hang() const { return last_hang_; }
  std::size_t moves() const { return moves_; }
  SimDevice& device() { return device_; }
  std::size_t live_count() const { return live_.size(); }
  const std::map<Addr, Block>& live() const { return live_; }

 private:
  void insert_live(const Block& block) {
    auto next = live_.lower_bound(block.addr);
    if (next != live_.end()) REQUIRE(block.addr + block.size <= next->first);
    if (next != live_.begin()) {
      const auto prev = std::prev(next);
      REQUIRE(prev->first + prev->second.size <= block.addr);
    }
    live_.emplace(block.addr, block);
  }

  SimDevice device_;
  std::unique_ptr<Policy> policy_;
  std::map<Addr, Block> live_;
  std::vector<Block> zero_size_;
  std::map<std::uint32_t, Addr> moved_to_;  // by AllocId: where moved blocks are now
  std::string last_hang_;
  std::size_t moves_ = 0;
  Bytes allocated_ = 0;
  std::uint32_t next_id_ = 0;
  Nanos now_ = 0;
};

}  // namespace allocsim::test
