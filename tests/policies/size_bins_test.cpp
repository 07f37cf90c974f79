#include <catch2/catch.hpp>

#include <iterator>
#include <set>
#include <tuple>
#include <vector>

#include "policies/common/size_bins.hpp"
#include "sim/error.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

using Key = std::tuple<Bytes, Addr, std::uint32_t>;

std::vector<Key> walk(const SizeBins& bins) {
  std::vector<Key> keys;
  for (auto at = bins.begin(); at != SizeBins::end(); at = bins.next(at)) {
    keys.emplace_back(bins[at].size, bins[at].addr, bins[at].handle);
  }
  return keys;
}

TEST_CASE("size bins split each power of two into 32 bins, in size order", "[size_bins]") {
  CHECK(SizeBins::bin_of(0) == 0);
  CHECK(SizeBins::bin_of(31) == 31);
  CHECK(SizeBins::bin_of(32) == 32);
  CHECK(SizeBins::bin_of(63) == 63);
  CHECK(SizeBins::bin_of(64) == 64);
  CHECK(SizeBins::bin_of(65) == 64);  // [64, 128) in steps of 2
  CHECK(SizeBins::bin_of(66) == 65);
  CHECK(SizeBins::bin_of(1_MiB - 1) == SizeBins::bin_of(1_MiB) - 1);
  CHECK(SizeBins::bin_of(1_MiB + 32_KiB - 1) == SizeBins::bin_of(1_MiB));
  CHECK(SizeBins::bin_of(1_MiB + 32_KiB) == SizeBins::bin_of(1_MiB) + 1);
  CHECK(SizeBins::bin_of(~Bytes{0}) == SizeBins::kBins - 1);
  for (Bytes size = 1; size < 100'000; ++size) REQUIRE(SizeBins::bin_of(size - 1) <= SizeBins::bin_of(size));
}

TEST_CASE("size bins find the smallest block that fits, the lowest address among equals", "[size_bins]") {
  SizeBins bins;
  CHECK(bins.lower_bound(1) == SizeBins::end());
  bins.insert({4096, 9000, 1});
  bins.insert({4096, 1000, 2});
  bins.insert({512, 5000, 3});
  bins.insert({3_GiB, 0, 4});
  CHECK(bins[bins.lower_bound(600)].handle == 2);  // 4096 at 1000 before 4096 at 9000
  CHECK(bins[bins.lower_bound(512)].handle == 3);
  CHECK(bins[bins.lower_bound(4097)].handle == 4);  // the next non-empty bin, far above
  CHECK(bins.lower_bound(3_GiB + 1) == SizeBins::end());
  CHECK(bins.back().handle == 4);
  CHECK(bins[bins.prev(SizeBins::end())].handle == 4);
  bins.erase(4096, 1000);
  CHECK(bins[bins.lower_bound(600)].handle == 1);
  CHECK_FALSE(bins.contains(4096, 1000));
  CHECK_THROWS_AS(bins.erase(4096, 1000), Error);
  CHECK(bins.size() == 3);
  bins.check();
  bins.clear();
  CHECK(bins.empty());
  CHECK(bins.begin() == SizeBins::end());
  bins.check();
}

// The exact order of a std::set of (size, address), through every operation, on a seeded
// mix of sizes that crowds a few bins and spreads over many.
TEST_CASE("size bins keep exactly the order of a set of (size, address)", "[size_bins]") {
  Rng rng(GENERATE(1, 2, 3));
  SizeBins bins;
  std::set<Key> model;
  std::uint32_t handle = 0;
  for (int step = 0; step < 20'000; ++step) {
    const bool grow = model.empty() || rng.below(100) < 55;
    if (grow) {
      const Bytes size = rng.below(4) == 0 ? 512 * (1 + rng.below(8)) : Bytes{1} << rng.below(40) | rng.below(1 << 20);
      const Addr addr = rng.below(1 << 16) * 256;
      if (bins.contains(size, addr)) continue;
      bins.insert({size, addr, handle});
      model.emplace(size, addr, handle++);
    } else {
      auto victim = model.begin();
      std::advance(victim, static_cast<std::ptrdiff_t>(rng.below(model.size())));
      bins.erase(std::get<0>(*victim), std::get<1>(*victim));
      model.erase(victim);
    }
    const Bytes wanted = Bytes{1} << rng.below(41) | rng.below(1 << 12);
    const auto expected = model.lower_bound(Key{wanted, 0, 0});
    const SizeBins::Cursor found = bins.lower_bound(wanted);
    if (expected == model.end()) {
      REQUIRE(found == SizeBins::end());
      if (!model.empty()) REQUIRE(Key{bins[bins.prev(found)].size, bins[bins.prev(found)].addr, bins[bins.prev(found)].handle} == *model.rbegin());
    } else {
      REQUIRE(Key{bins[found].size, bins[found].addr, bins[found].handle} == *expected);
      if (expected != model.begin()) {
        const SizeBins::Entry& before = bins[bins.prev(found)];
        REQUIRE(Key{before.size, before.addr, before.handle} == *std::prev(expected));
      }
      if (std::next(expected) != model.end()) {
        const SizeBins::Entry& after = bins[bins.next(found)];
        REQUIRE(Key{after.size, after.addr, after.handle} == *std::next(expected));
      }
    }
    REQUIRE(bins.size() == model.size());
    if (step % 1000 == 0) {
      bins.check();
      REQUIRE(walk(bins) == std::vector<Key>(model.begin(), model.end()));
      std::vector<Key> visited;
      bins.for_each([&](const SizeBins::Entry& e) { visited.emplace_back(e.size, e.addr, e.handle); });
      REQUIRE(visited == std::vector<Key>(model.begin(), model.end()));
    }
  }
}

}  // namespace
}  // namespace allocsim
