// The device profile: what calibrate writes, --device-profile reads back unchanged.
#include <sstream>

#include <catch2/catch.hpp>

#include "sim/cost_profile.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

CostProfile example() {
  CostProfile profile;
  profile.device = "NVIDIA H200";
  profile.backend = "cuda";
  profile.total_bytes = 150'754'820'096;
  profile.context_bytes = 524'288'000;
  profile.compute_capability = 90;
  profile.cost.malloc_fixed_ns = 12'345;
  profile.cost.malloc_ns_per_byte = 3.25e-5;
  profile.cost.free_fixed_ns = 6'789;
  profile.cost.free_ns_per_byte = 1.5e-6;
  profile.cost.copy_bytes_per_ns = 2150.75;
  profile.map_granularity = 2_MiB;
  profile.map = {40'000, 2.5e-5};
  profile.unmap = {30'000, 1e-6};
  profile.samples = {{"malloc", 512, 9000}, {"free", 512, 4000}, {"copy", 1_GiB, 499'000}};
  return profile;
}

CostProfile round_trip(const CostProfile& profile) {
  std::stringstream text;
  write_cost_profile(text, profile);
  return read_cost_profile(text, "profile.json");
}

TEST_CASE("cost profile: a written profile reads back field for field", "[sim][cost]") {
  const CostProfile in = example();
  const CostProfile out = round_trip(in);
  CHECK(out.device == in.device);
  CHECK(out.backend == in.backend);
  CHECK(out.total_bytes == in.total_bytes);
  CHECK(out.context_bytes == in.context_bytes);
  CHECK(out.compute_capability == 90);
  CHECK(out.cost.malloc_fixed_ns == in.cost.malloc_fixed_ns);
  CHECK(out.cost.malloc_ns_per_byte == in.cost.malloc_ns_per_byte);
  CHECK(out.cost.free_fixed_ns == in.cost.free_fixed_ns);
  CHECK(out.cost.free_ns_per_byte == in.cost.free_ns_per_byte);
  CHECK(out.cost.copy_bytes_per_ns == in.cost.copy_bytes_per_ns);
  CHECK(out.map_granularity == 2_MiB);
  CHECK(out.map.fixed_ns == 40'000);
  CHECK(out.map.ns_per_byte == 2.5e-5);
  CHECK(out.unmap.fixed_ns == 30'000);
  REQUIRE(out.samples.size() == 3);
  CHECK(out.samples[2].op == "copy");
  CHECK(out.samples[2].bytes == 1_GiB);
  CHECK(out.samples[2].ns == 499'000);
  // And the model prices a call the same afterwards.
  CHECK(out.cost.malloc_cost(1_GiB) == in.cost.malloc_cost(1_GiB));
}

TEST_CASE("cost profile: a bad profile names the file and the key", "[sim][cost]") {
  const auto error_of = [](const std::string& text) {
    std::istringstream in(text);
    try {
      read_cost_profile(in, "p.json");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  std::stringstream good;
  write_cost_profile(good, example());
  const std::string text = good.str();
  const auto replaced = [&text](const std::string& from, const std::string& to) {
    std::string copy = text;
    const auto at = copy.find(from);
    REQUIRE(at != std::string::npos);
    return copy.replace(at, from.size(), to);
  };
  CHECK_THAT(error_of("{"), Catch::StartsWith("p.json: not JSON"));
  CHECK_THAT(error_of("{\"format\": \"x\"}"), Catch::Contains("not an allocsim device profile"));
  CHECK_THAT(error_of(replaced("\"version\": 1", "\"version\": 9")), Catch::Contains("version 9"));
  CHECK_THAT(error_of(replaced("\"malloc_fixed_ns\"", "\"malloc_fix\"")),
             Catch::Contains("p.json: cost.malloc_fixed_ns is missing"));
  CHECK_THAT(error_of(replaced("\"free_fixed_ns\": 6789", "\"free_fixed_ns\": -1")),
             Catch::Contains("cost.free_fixed_ns must be a whole number"));
  CHECK_THAT(error_of(replaced("\"copy_bytes_per_ns\": 2150.75", "\"copy_bytes_per_ns\": 0")),
             Catch::Contains("copy_bytes_per_ns must be more than 0"));
  CHECK_THROWS_WITH(load_cost_profile("/nonexistent/p.json"), Catch::Contains("/nonexistent/p.json"));
}

}  // namespace
}  // namespace allocsim
