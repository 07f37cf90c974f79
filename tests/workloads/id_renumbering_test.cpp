#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/id_renumbering.hpp"

namespace allocsim {
namespace {

TEST_CASE("id renumbering: live ids map to their dense id, errors name the id", "[ids]") {
  IdRenumbering ids;
  CHECK_THROWS_WITH(ids.find("a"), "free of id a, which is not live");  // before anything was opened
  ids.open("a", AllocId{0});
  ids.open_with("0x7f00", [] { return AllocId{1}; });
  CHECK(ids.find("a") == AllocId{0});
  CHECK(ids.live() == 2);
  CHECK_THROWS_WITH(ids.check_not_live("a"), "alloc of id a, which is already live");
  bool made = false;
  CHECK_THROWS_WITH(ids.open_with("0x7f00", [&] { made = true; return AllocId{2}; }),
                    "alloc of id 0x7f00, which is already live");
  CHECK_FALSE(made);  // a live id is refused before the caller records an allocation
  CHECK(ids.take("0x7f00") == AllocId{1});
  CHECK_THROWS_WITH(ids.take("0x7f00"), "free of id 0x7f00, which is not live");
  CHECK_THROWS_WITH(ids.close("b"), "free of id b, which is not live");
  ids.open("0x7f00", AllocId{2});  // reused after its free, as an address is
  CHECK(ids.find("0x7f00") == AllocId{2});
}

// Many ids opened and closed in a random order, with reuse: the table grows and shifts
// entries back over freed slots; every answer must match a std::map's.
template <class Table>
void agrees_with_a_map(Table& ids, const std::vector<std::string>& names) {
  std::map<std::string, AllocId> oracle;
  std::mt19937_64 rng(7);
  std::uint32_t next = 0;
  for (int step = 0; step < 200'000; ++step) {
    const std::string& name = names[rng() % names.size()];
    const auto live = oracle.find(name);
    if (live == oracle.end()) {
      CHECK_THROWS_AS(ids.find(name), Error);
      ids.open(name, AllocId{next});
      oracle.emplace(name, AllocId{next++});
    } else if (rng() % 2 == 0) {
      CHECK_THROWS_AS(ids.check_not_live(name), Error);
      REQUIRE(ids.take(name) == live->second);
      oracle.erase(live);
    } else {
      REQUIRE(ids.find(name) == live->second);
    }
    REQUIRE(ids.live() == oracle.size());
  }
  for (const auto& [name, dense] : oracle) REQUIRE(ids.find(name) == dense);
}

TEST_CASE("id renumbering agrees with a map over many opens and frees, owned or viewed keys", "[ids]") {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) {
    names.push_back(i % 3 == 0 ? std::to_string(i) : "0x7f" + std::to_string(i * 4096) + (i % 5 ? "" : "_long_id_text"));
  }
  IdRenumbering owned;
  agrees_with_a_map(owned, names);
  IdViewRenumbering viewed;  // views into `names`, alive throughout
  agrees_with_a_map(viewed, names);
}

TEST_CASE("ids that differ only in a byte past the first eight are different ids", "[ids]") {
  IdViewRenumbering ids;
  ids.open("allocation_0001", AllocId{0});
  ids.open("allocation_0002", AllocId{1});
  ids.open("allocation_000", AllocId{2});
  CHECK(ids.find("allocation_0001") == AllocId{0});
  CHECK(ids.find("allocation_0002") == AllocId{1});
  CHECK(ids.find("allocation_000") == AllocId{2});
  CHECK_THROWS_AS(ids.find("allocation_0003"), Error);
}

}  // namespace
}  // namespace allocsim
