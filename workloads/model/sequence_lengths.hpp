// Variable-length batches (`len=min:max`, `seed=N`, `packed` / `padded`): each sequence's
// length drawn uniformly in [min, max] from a seeded generator (sim/rng.hpp, the same
// draws on every machine). Training pads a batch to its longest draw (the batch's shape
// changes every step) or packs the sequences into rows of a fixed length (it does not);
// generation (generation.hpp) draws how many tokens each sequence generates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace allocsim {

struct VariableLengths {
  std::int64_t min = 0;  // 0: not given, every sequence has the spec's length
  std::int64_t max = 0;
  std::uint64_t seed = 1;
  bool packed = false;   // training: concatenated into rows of sN tokens, not padded

  bool given() const { return max > 0; }
  friend bool operator==(const VariableLengths&, const VariableLengths&) = default;
};

// `count` lengths in [min, max], the draws after the first `skip` of the seed's stream
// (draw i of a training step's batch is number step * batch + i).
std::vector<std::int64_t> draw_lengths(const VariableLengths& lengths, std::size_t count, std::size_t skip = 0);

// The token's value for a range (len=8:64 or len=32): one number when min == max, so that
// the one-number spelling prints back as itself; and back.
std::int64_t encode_length_range(std::int64_t min, std::int64_t max);
std::pair<std::int64_t, std::int64_t> decode_length_range(std::int64_t value);

// "8:64" or "32" (min == max).
std::string spell_length_range(std::int64_t value);

}  // namespace allocsim
