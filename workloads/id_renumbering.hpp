// External allocation ids (any text, reusable after their free, as addresses are) to the
// dense ids Trace's contract asks for (sim/trace.hpp: 0..N-1, one per allocation). Every
// reader that renumbers uses this one map; the snapshot importer goes through the CSV reader.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "sim/error.hpp"
#include "sim/types.hpp"

namespace allocsim {

// Contract: an external id is live from open() to close(); open() of a live id and
// find()/close() of one that is not live throw Error naming the id.
class IdRenumbering {
 public:
  void check_not_live(std::string_view external) const {
    if (live_.contains(std::string(external))) {
      throw Error("alloc of id " + std::string(external) + ", which is already live");
    }
  }
  void open(std::string_view external, AllocId dense) {
    check_not_live(external);
    live_.emplace(std::string(external), dense);
  }
  AllocId find(std::string_view external) const {
    const auto found = live_.find(std::string(external));
    if (found == live_.end()) throw Error("free of id " + std::string(external) + ", which is not live");
    return found->second;
  }
  void close(std::string_view external) { live_.erase(std::string(external)); }

 private:
  std::unordered_map<std::string, AllocId> live_;  // external id -> dense id, while live
};

}  // namespace allocsim
