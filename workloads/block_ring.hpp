// A ring of blocks handed from one producer thread to one consumer thread: the producer
// fills a block while the consumer reads the one before. A block changes hands through
// one flag (release, then acquire), and a side that finds none ready spins a little, then
// yields: a block holds thousands of rows, so a hand-over per block costs next to nothing,
// where a lock and a sleep per block (a system call each) would not.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
    for (unsigned spins = 0; slot.full.load(std::memory_order_acquire); wait(spins)) {
      if (stopped_.load(std::memory_order_relaxed)) return nullptr;
    }
    return stopped_.load(std::memory_order_relaxed) ? nullptr : &slot.block;
  }
  void filled() { slots_[filled_++ % count_].full.store(true, std::memory_order_release); }
  // No block follows those filled (the producer's last call, whatever stopped it).
  void close() { closed_.store(true, std::memory_order_release); }

  // The consumer's side. to_take: the next filled block; nullptr once the producer has
  // closed the ring and every block it filled has been taken.
  Block* to_take() {
    Slot& slot = slots_[taken_ % count_];
    for (unsigned spins = 0;; wait(spins)) {
      if (slot.full.load(std::memory_order_acquire)) return &slot.block;
      if (closed_.load(std::memory_order_acquire)) {
        return slot.full.load(std::memory_order_acquire) ? &slot.block : nullptr;  // filled just before it closed
      }
    }
  }
  void taken() { slots_[taken_++ % count_].full.store(false, std::memory_order_release); }
  // The consumer wants no more blocks: the producer's next to_fill() says so.
  void stop() { stopped_.store(true, std::memory_order_relaxed); }

 private:
  // Each flag on a cache line of its own: the side waiting reads it over and over, and a
  // line it shared with the block's own fields would move between the cores at every row
  // the other side wrote.
  static constexpr std::size_t kLine = 64;
  struct Slot {
    alignas(kLine) std::atomic<bool> full{false};  // filled, not yet taken
    alignas(kLine) Block block;
  };

  static void wait(unsigned& spins) {
    if (++spins < kSpins) {
#if defined(__SSE2__)
      _mm_pause();
#endif
    } else {
      std::this_thread::yield();  // the other side may have lost its core
    }
  }
  static constexpr unsigned kSpins = 4096;

  std::unique_ptr<Slot[]> slots_;
  std::size_t count_;
  alignas(kLine) std::size_t filled_ = 0;  // the producer's own
  alignas(kLine) std::size_t taken_ = 0;   // the consumer's own
  alignas(kLine) std::atomic<bool> closed_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace allocsim
