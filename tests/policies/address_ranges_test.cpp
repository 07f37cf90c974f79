#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "policies/common/address_ranges.hpp"
#include "policies/common/free_list.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

std::vector<Range> walk(const AddressRanges& ranges) {
  std::vector<Range> out;
  for (auto at = ranges.begin(); at != ranges.end(); at = ranges.next(at)) out.push_back(ranges[at]);
  return out;
}

std::vector<Range> ranges_of(const std::map<Addr, Bytes>& model) {
  std::vector<Range> out;
  for (const auto& [addr, size] : model) out.push_back(Range{addr, size});
  return out;
}

TEST_CASE("address ranges split a full leaf and still find the first fit in address order", "[address_ranges]") {
  AddressRanges ranges;
  for (Addr a = 0; a < 3 * AddressRanges::kLeaf; ++a) ranges.insert(Range{1000 + a * 10, Bytes{a == 150 ? 9u : 1u}});
  ranges.check();
  CHECK(ranges.size() == 3 * AddressRanges::kLeaf);
  CHECK(ranges.first_fit(2, 0) == Range{2500, 9});
  CHECK(ranges.first_fit(2, 2501) == std::nullopt);
  CHECK(ranges.first_fit(1, 1005) == Range{1010, 1});
  CHECK(ranges[ranges.lower_bound(0)] == Range{1000, 1});
  CHECK(ranges.lower_bound(1000 + 3 * AddressRanges::kLeaf * 10) == ranges.end());
  for (Addr a = 0; a < 3 * AddressRanges::kLeaf; a += 2) ranges.erase(ranges.lower_bound(1000 + a * 10));
  ranges.check();
  CHECK(ranges.size() == 3 * AddressRanges::kLeaf / 2);
  CHECK(ranges[ranges.begin()] == Range{1010, 1});
  ranges.clear();
  CHECK(ranges.empty());
  CHECK(ranges.begin() == ranges.end());
  ranges.check();
}

// insert(Pos) takes the place a lookup already found: at a leaf's front, after its last
// range (where lower_bound names the next leaf), in a full leaf that must split, and at
// the very end; the order, leaves and first fits come out as the plain insert's.
TEST_CASE("address ranges insert at a position a lookup found, across full leaves", "[address_ranges]") {
  AddressRanges hinted;
  AddressRanges plain;
  std::map<Addr, Bytes> model;
  const auto add = [&](Addr addr, Bytes size) {
    hinted.insert(hinted.lower_bound(addr), Range{addr, size});
    plain.insert(Range{addr, size});
    model.emplace(addr, size);
  };
  for (Addr a = 0; a < 2 * AddressRanges::kLeaf; ++a) add(1000 + a * 100, 1 + a % 7);
  // Between every pair, then before the first and after the last: every leaf fills and splits.
  for (Addr a = 0; a < 2 * AddressRanges::kLeaf; ++a) add(1050 + a * 100, 1 + a % 5);
  add(10, 3);
  add(1'000'000, 40);
  hinted.check();
  CHECK(walk(hinted) == ranges_of(model));
  CHECK(walk(hinted) == walk(plain));
  for (Bytes size = 1; size <= 41; size += 4) CHECK(hinted.first_fit(size, 0) == plain.first_fit(size, 0));
}

// Against a std::map model: every lookup, first fit and neighbour walk agree, through
// inserts, erases and in-place changes that crowd some leaves and empty others.
TEST_CASE("address ranges add_merging joins the neighbours it is let join, and says which", "[address_ranges]") {
  AddressRanges ranges;
  ranges.insert({1000, 100});
  ranges.insert({1200, 100});
  ranges.insert({1400, 50});
  CHECK(ranges.largest() == 100);
  std::vector<Addr> absorbed;
  const auto record = [&](Range neighbour) { absorbed.push_back(neighbour.addr); };
  // Touches both, joins only the one after it.
  const Range merged = ranges.add_merging({1100, 100}, [](Range neighbour) { return neighbour.addr > 1100; }, record);
  CHECK(merged == Range{1100, 200});
  CHECK(absorbed == std::vector<Addr>{1200});
  CHECK(ranges.size() == 3);
  CHECK(ranges[ranges.lower_bound(1100)] == Range{1100, 200});
  // Touches both and joins both; the range refused before stays apart.
  absorbed.clear();
  CHECK(ranges.add_merging({1300, 100}, [](Range) { return true; }, record) == Range{1100, 350});
  CHECK(absorbed == std::vector<Addr>{1400, 1100});
  CHECK(ranges.size() == 2);
  CHECK(ranges.largest() == 350);
  // Touches nothing: inserted as it is.
  CHECK(ranges.add_merging({2000, 10}, [](Range) { return true; }, record) == Range{2000, 10});
  CHECK(ranges.size() == 3);
  ranges.check();
  CHECK(AddressRanges().largest() == 0);
}

TEST_CASE("address ranges keep exactly the order and first fits of a map", "[address_ranges]") {
  Rng rng(GENERATE(1, 2, 3));
  AddressRanges ranges;
  std::map<Addr, Bytes> model;
  for (int step = 0; step < 20'000; ++step) {
    const std::uint64_t action = rng.below(100);
    const Addr spot = rng.below(1 << 14) * 16;
    if (model.empty() || action < 50) {
      if (model.contains(spot)) continue;
      const Bytes size = 1 + rng.below(1 << rng.below(12));
      ranges.insert(Range{spot, size});
      model.emplace(spot, size);
    } else if (action < 85) {
      auto victim = model.lower_bound(spot);
      if (victim == model.end()) victim = model.begin();
      ranges.erase(ranges.lower_bound(victim->first));
      model.erase(victim);
    } else {
      auto changed = model.lower_bound(spot);
      if (changed == model.end()) continue;
      const Bytes size = 1 + rng.below(1 << rng.below(12));
      const Addr next = std::next(changed) == model.end() ? ~Addr{0} : std::next(changed)->first;
      const Addr prev = changed == model.begin() ? 0 : std::prev(changed)->first + 1;
      const Addr addr = std::min(next - 1, std::max(prev, changed->first + rng.below(8) - 4));
      ranges.set(ranges.lower_bound(changed->first), Range{addr, size});
      model.erase(changed);
      model.emplace(addr, size);
    }
    const Addr from = rng.below(1 << 14) * 16;
    const Bytes wanted = 1 + rng.below(1 << rng.below(13));
    std::optional<Range> expected;
    for (auto it = model.lower_bound(from); it != model.end(); ++it) {
      if (it->second >= wanted) {
        expected = Range{it->first, it->second};
        break;
      }
    }
    REQUIRE(ranges.first_fit(wanted, from) == expected);
    const auto at = ranges.lower_bound(from);
    const auto model_at = model.lower_bound(from);
    REQUIRE((at == ranges.end()) == (model_at == model.end()));
    if (model_at != model.end()) REQUIRE(ranges[at] == Range{model_at->first, model_at->second});
    if (model_at != model.begin()) {
      REQUIRE(ranges[ranges.prev(at)] == Range{std::prev(model_at)->first, std::prev(model_at)->second});
    }
    REQUIRE(ranges.size() == model.size());
    if (step % 500 == 0) {
      ranges.check();
      REQUIRE(walk(ranges) == ranges_of(model));
    }
  }
}

// The free list's fits against a plain model: every first, next, best and worst fit of a
// seeded mix of adds (merging) and takes is the one a scan of the model picks.
TEST_CASE("free list fits are the ones a scan of every free range picks", "[free_list]") {
  Rng rng(GENERATE(4, 5));
  FreeList list;
  std::map<Addr, Bytes> model;  // coalesced
  std::vector<Range> taken;
  list.add(Range{0, Bytes{1} << 30});
  model.emplace(0, Bytes{1} << 30);
  for (int step = 0; step < 10'000; ++step) {
    const Bytes size = 256 * (1 + rng.below(1 << rng.below(10)));
    const auto scan = [&](auto better) {
      std::optional<Range> pick;
      for (const auto& [addr, bytes] : model) {
        if (bytes >= size && (!pick || better(Range{addr, bytes}, *pick))) pick = Range{addr, bytes};
      }
      return pick;
    };
    const auto best = scan([](Range a, Range b) { return a.size < b.size; });
    const auto worst = scan([](Range a, Range b) { return a.size > b.size; });
    const auto first = scan([](Range, Range) { return false; });
    const Addr rover = taken.empty() ? 0 : taken.back().end();
    std::optional<Range> next;
    for (auto it = model.lower_bound(rover); it != model.end() && !next; ++it) {
      if (it->second >= size) next = Range{it->first, it->second};
    }
    if (!next) next = first;
    REQUIRE(list.best_fit(size) == best);
    REQUIRE(list.worst_fit(size) == worst);
    REQUIRE(list.first_fit(size) == first);
    REQUIRE(list.next_fit(size, rover) == next);
    Bytes largest = 0;
    for (const auto& [addr, bytes] : model) largest = std::max(largest, bytes);
    REQUIRE(list.largest() == largest);
    if (!taken.empty() && (rng.below(2) == 0 || !first)) {
      const auto victim = taken.begin() + static_cast<std::ptrdiff_t>(rng.below(taken.size()));
      list.add(*victim);
      Range merged = *victim;
      auto after = model.lower_bound(merged.addr);
      if (after != model.end() && after->first == merged.end()) {
        merged.size += after->second;
        after = model.erase(after);
      }
      if (after != model.begin() && std::prev(after)->first + std::prev(after)->second == merged.addr) {
        std::prev(after)->second += merged.size;
      } else {
        model.emplace(merged.addr, merged.size);
      }
      taken.erase(victim);
    } else if (const auto pick = rng.below(2) == 0 ? best : first) {
      list.take_front(*pick, size);
      model.erase(pick->addr);
      if (pick->size > size) model.emplace(pick->addr + size, pick->size - size);
      taken.push_back(Range{pick->addr, size});
    }
    if (step % 500 == 0) list.check();
  }
  list.check();
}

}  // namespace
}  // namespace allocsim
