// The one stats triple of the device layer: what is held now, the most ever held at once,
// and everything ever added (so `total - current` is everything taken back).
#pragma once

#include <algorithm>
#include <cstdint>

namespace allocsim {

// Contract: sub(n) takes back no more than is current (a caller bug otherwise).
struct Counter {
  std::uint64_t current = 0;
  std::uint64_t peak = 0;
  std::uint64_t total = 0;

  void add(std::uint64_t n) {
    current += n;
    total += n;
    peak = std::max(peak, current);
  }
  void sub(std::uint64_t n) { current -= n; }
};

}  // namespace allocsim
