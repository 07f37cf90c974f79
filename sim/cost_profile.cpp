#include "sim/cost_profile.hpp"

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/version.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "allocsim-device-profile";

json fit_json(const LatencyFit& fit) { return {{"fixed_ns", fit.fixed_ns}, {"ns_per_byte", fit.ns_per_byte}}; }

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  const json& at(const json& object, const char* key, const std::string& path) const {
    if (!object.is_object() || !object.contains(key)) throw Error(source_ + ": " + path + key + " is missing");
    return object.at(key);
  }
  std::uint64_t count(const json& object, const char* key, const std::string& path = "") const {
    const json& value = at(object, key, path);
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0)) {
      throw Error(source_ + ": " + path + key + " must be a whole number of 0 or more, not " + value.dump());
    }
    return value.get<std::uint64_t>();
  }
  double number(const json& object, const char* key, const std::string& path = "") const {
    const json& value = at(object, key, path);
    if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > std::numeric_limits<double>::max()) {
      throw Error(source_ + ": " + path + key + " must be a number of 0 or more, not " + value.dump());
    }
    return value.get<double>();
  }
  std::string text(const json& object, const char* key) const {
    const json& value = at(object, key, "");
    if (!value.is_string()) throw Error(source_ + ": " + key + " must be a string");
    return value.get<std::string>();
  }
  LatencyFit fit(const json& object, const char* key) const {
    const json& value = at(object, key, "");
    const std::string path = std::string(key) + ".";
    return {count(value, "fixed_ns", path), number(value, "ns_per_byte", path)};
  }

 private:
  const std::string& source_;
};

}  // namespace

void write_cost_profile(std::ostream& out, const CostProfile& profile) {
  const CostModel& cost = profile.cost;
  json samples = json::array();
  for (const CostSample& sample : profile.samples) {
    samples.push_back({{"op", sample.op}, {"bytes", sample.bytes}, {"ns", sample.ns}});
  }
  const json document = {
      {"format", kFormat},
      {"version", kCostProfileVersion},
      {"allocsim",
       {{"version", allocsim_version()},
        {"command_line", std::vector<std::string>(command_line().begin(), command_line().end())}}},
      {"device", profile.device},
      {"backend", profile.backend},
      {"total_bytes", profile.total_bytes},
      {"context_bytes", profile.context_bytes},
      {"compute_capability", profile.compute_capability},
      {"cost",
       {{"malloc_fixed_ns", cost.malloc_fixed_ns},
        {"malloc_ns_per_byte", cost.malloc_ns_per_byte},
        {"free_fixed_ns", cost.free_fixed_ns},
        {"free_ns_per_byte", cost.free_ns_per_byte},
        {"copy_bytes_per_ns", cost.copy_bytes_per_ns}}},
      {"map_granularity", profile.map_granularity},
      {"map", fit_json(profile.map)},
      {"unmap", fit_json(profile.unmap)},
      {"samples", samples},
  };
  out << document.dump(2) << '\n';
}

CostProfile read_cost_profile(std::istream& in, const std::string& source) {
  json document;
  try {
    document = json::parse(in);
  } catch (const json::parse_error& error) {
    throw Error(source + ": not JSON: " + error.what());
  }
  const Reader read(source);
  if (read.text(document, "format") != kFormat) throw Error(source + ": not an allocsim device profile");
  if (const auto version = read.count(document, "version"); version != kCostProfileVersion) {
    throw Error(source + ": profile version " + std::to_string(version) + ", this allocsim reads version " +
                std::to_string(kCostProfileVersion));
  }
  CostProfile profile;
  profile.device = read.text(document, "device");
  profile.backend = read.text(document, "backend");
  profile.total_bytes = read.count(document, "total_bytes");
  profile.context_bytes = read.count(document, "context_bytes");
  profile.compute_capability = static_cast<int>(read.count(document, "compute_capability"));
  const json& cost = read.at(document, "cost", "");
  profile.cost.malloc_fixed_ns = read.count(cost, "malloc_fixed_ns", "cost.");
  profile.cost.malloc_ns_per_byte = read.number(cost, "malloc_ns_per_byte", "cost.");
  profile.cost.free_fixed_ns = read.count(cost, "free_fixed_ns", "cost.");
  profile.cost.free_ns_per_byte = read.number(cost, "free_ns_per_byte", "cost.");
  profile.cost.copy_bytes_per_ns = read.number(cost, "copy_bytes_per_ns", "cost.");
  if (!(profile.cost.copy_bytes_per_ns > 0)) throw Error(source + ": cost.copy_bytes_per_ns must be more than 0");
  profile.map_granularity = read.count(document, "map_granularity");
  profile.map = read.fit(document, "map");
  profile.unmap = read.fit(document, "unmap");
  const json& samples = read.at(document, "samples", "");
  if (!samples.is_array()) throw Error(source + ": samples must be an array");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string path = "samples[" + std::to_string(i) + "].";
    const json& sample = samples[i];
    const json& op = read.at(sample, "op", path);
    if (!op.is_string()) throw Error(source + ": " + path + "op must be a string");
    profile.samples.push_back({op.get<std::string>(), read.count(sample, "bytes", path), read.count(sample, "ns", path)});
  }
  return profile;
}

CostProfile load_cost_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read device profile " + path);
  return read_cost_profile(in, path);
}

}  // namespace allocsim
