// A ring of blocks handed from one producer thread to one consumer thread: the producer
// fills a block while the consumer reads the one before. A block changes hands through
// its slot's state (stored with release, loaded with acquire); a side that finds none
// ready waits on that state (std::atomic::wait: a short spin, then the kernel), so a thread
// with nothing to do gives its core back instead of asking for it again and again, and a
// hand-over costs a system call only when the other side sleeps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace allocsim {

template <class Block>
class BlockRing {
 public:
  explicit BlockRing(std::size_t blocks) : slots_(std::make_unique<Slot[]>(blocks)), count_(blocks) {}
  BlockRing(const BlockRing&) = delete;
  BlockRing& operator=(const BlockRing&) = delete;

  // The producer's side. to_fill: the next block to fill, once the consumer has handed it
  // back; nullptr once the consumer has stopped (stop()).
  Block* to_fill() {
    Slot& slot = slots_[filled_ % count_];
    while (slot.state.load(std::memory_order_acquire) == kFull) {
      if (stopped_.load(std::memory_order_acquire)) return nullptr;
      slot.state.wait(kFull, std::memory_order_acquire);
    }
    return stopped_.load(std::memory_order_acquire) ? nullptr : &slot.block;
  }
  void filled() { hand(slots_[filled_++ % count_].state, kFull); }
  // No block follows those filled (the producer's last call, whatever stopped it): the
  // next slot says so, once the consumer has handed it back.
  void close() {
    if (to_fill()) hand(slots_[filled_ % count_].state, kEnd);
  }

  // The consumer's side. to_take: the next filled block; nullptr once the producer has
  // closed the ring and every block it filled has been taken.
  Block* to_take() {
    Slot& slot = slots_[taken_ % count_];
    std::uint32_t state = slot.state.load(std::memory_order_acquire);
    for (; state == kEmpty; state = slot.state.load(std::memory_order_acquire)) {
      slot.state.wait(kEmpty, std::memory_order_acquire);
    }
    return state == kEnd ? nullptr : &slot.block;
  }
  void taken() { hand(slots_[taken_++ % count_].state, kEmpty); }
  // The consumer wants no more blocks: the producer's next to_fill() says so, and one
  // waiting for a slot wakes to hear it.
  void stop() {
    stopped_.store(true, std::memory_order_release);
    for (std::size_t i = 0; i < count_; ++i) hand(slots_[i].state, kEmpty);
  }

 private:
  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kFull = 1;
  static constexpr std::uint32_t kEnd = 2;  // closed: no block here or after

  static void hand(std::atomic<std::uint32_t>& state, std::uint32_t to) {
    state.store(to, std::memory_order_release);
    state.notify_one();
  }

  // Each state on a cache line of its own: a side waiting reads it over and over, and a line
  // it shared with the block's own fields would move between the cores at every row the
  // other side wrote.
  static constexpr std::size_t kLine = 64;
  struct Slot {
    alignas(kLine) std::atomic<std::uint32_t> state{kEmpty};
    alignas(kLine) Block block;
  };

  std::unique_ptr<Slot[]> slots_;
  std::size_t count_;
  alignas(kLine) std::size_t filled_ = 0;  // the producer's own
  alignas(kLine) std::size_t taken_ = 0;   // the consumer's own
  alignas(kLine) std::atomic<bool> stopped_{false};
};

}  // namespace allocsim
