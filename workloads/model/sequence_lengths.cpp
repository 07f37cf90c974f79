#include "workloads/model/sequence_lengths.hpp"

#include "sim/rng.hpp"

namespace allocsim {

std::vector<std::int64_t> draw_lengths(const VariableLengths& lengths, std::size_t count, std::size_t skip) {
  Rng rng(lengths.seed);
  const auto span = static_cast<std::uint64_t>(lengths.max - lengths.min + 1);
  for (std::size_t i = 0; i < skip; ++i) rng.below(span);
  std::vector<std::int64_t> drawn(count);
  for (std::int64_t& length : drawn) length = lengths.min + static_cast<std::int64_t>(rng.below(span));
  return drawn;
}

std::int64_t encode_length_range(std::int64_t min, std::int64_t max) { return min == max ? max : min << 32 | max; }

std::pair<std::int64_t, std::int64_t> decode_length_range(std::int64_t value) {
  const std::int64_t max = value & 0xffff'ffff;
  const std::int64_t min = value >> 32;
  return {min == 0 ? max : min, max};
}

std::string spell_length_range(std::int64_t value) {
  const auto [min, max] = decode_length_range(value);
  return min == max ? std::to_string(max) : std::to_string(min) + ":" + std::to_string(max);
}

}  // namespace allocsim
