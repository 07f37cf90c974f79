#include <cstddef>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "workloads/block_ring.hpp"

namespace allocsim {
namespace {

struct Numbers {
  std::vector<std::size_t> values;
};

// A producer filling `blocks` blocks of `per_block` numbers in order, 0 up, until the ring
// stops; returns how many blocks it filled.
std::size_t fill(BlockRing<Numbers>& ring, std::size_t blocks, std::size_t per_block) {
  std::size_t filled = 0;
  for (std::size_t next = 0; filled < blocks; ++filled) {
    Numbers* const block = ring.to_fill();
    if (!block) break;
    block->values.clear();
    for (std::size_t i = 0; i < per_block; ++i) block->values.push_back(next++);
    ring.filled();
  }
  ring.close();
  return filled;
}

TEST_CASE("a block ring hands every block over once, in order, through fewer slots than blocks", "[ring]") {
  BlockRing<Numbers> ring(3);
  std::size_t filled = 0;
  std::thread producer([&] { filled = fill(ring, 200, 17); });
  std::size_t expected = 0;
  std::size_t taken = 0;
  while (const Numbers* block = ring.to_take()) {
    REQUIRE(block->values.size() == 17);
    for (const std::size_t value : block->values) REQUIRE(value == expected++);
    ring.taken();
    ++taken;
  }
  producer.join();
  CHECK(filled == 200);
  CHECK(taken == 200);
}

TEST_CASE("a block ring the consumer stops stops its producer, which is then told no block is left", "[ring]") {
  BlockRing<Numbers> ring(2);
  std::size_t filled = 0;
  std::thread producer([&] { filled = fill(ring, 1000, 5); });
  for (int i = 0; i < 3; ++i) {
    REQUIRE(ring.to_take() != nullptr);
    ring.taken();
  }
  ring.stop();
  producer.join();  // would hang if the producer waited on for a slot
  CHECK(filled >= 3);
  CHECK(filled <= 3 + 2);  // what it took back, and the slots it had filled meanwhile
}

TEST_CASE("a closed block ring still hands over the blocks filled before it closed", "[ring]") {
  BlockRing<Numbers> ring(4);
  CHECK(fill(ring, 2, 1) == 2);  // no consumer yet: both fit in the ring
  REQUIRE(ring.to_take() != nullptr);
  ring.taken();
  REQUIRE(ring.to_take() != nullptr);
  ring.taken();
  CHECK(ring.to_take() == nullptr);
}

}  // namespace
}  // namespace allocsim
