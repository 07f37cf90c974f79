// The recorded PyTorch snapshots of the shared folder, found only through the path CMake
// passes in (ALLOCSIM_SHARED_TRACES, a cache variable). Without them a test says that it
// skipped its shared part, and why, instead of passing in silence.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

namespace allocsim::test {

inline std::optional<std::filesystem::path> shared_trace(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(ALLOCSIM_SHARED_TRACES) / name;
  if (std::filesystem::exists(path)) return path;
  WARN("skipped: " << name << " is not at " << path.string() << " (configure with -DALLOCSIM_SHARED_TRACES=DIR)");
  return std::nullopt;
}

}  // namespace allocsim::test
