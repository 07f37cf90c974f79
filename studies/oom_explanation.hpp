// allocsim explain as a study: the verdict on a pasted OOM message (PyTorch) or BFC log
// (TensorFlow, XLA), from what the allocator did before it raised, with the arithmetic in the
// user's units, what would have to change, and the settings to try (docs/explain.md).
// PyTorch: T total, F device free, A allocated, the cache's free bytes (C, R - A, or R by
// wording), the request as PyTorch rounds a new segment. What is outside PyTorch
// (T - F - A - cache free) is split into this process's own (its CUDA context and libraries:
// P - A - cache free, or without P up to the context band) and other processes (T - F - P,
// or the rest); only the latter is another holder. The kinds, in order:
// - inconsistent: F alone holds the new segment: the message shows no shortage PyTorch saw;
// - fragmentation: the cache's free bytes hold the request, or F and those together do;
// - reservation: adding what other processes hold would (or an `L allowed` limit refuses);
// - capacity: otherwise.
// TensorFlow: capacity when in-use + request exceed the limit; reservation when the device
// refused a new region (the driver's `failed to allocate` lines, or the limit still allowed
// a region large enough); fragmentation otherwise. A request given only as a tensor's shape
// and type is their product.
// A close call (within the message's rounding) is said to be one; too little text is no
// verdict: what was read and what is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace allocsim {

// What explain answers: DESIGN's three kinds of OOM, or a message whose own figures show no
// shortage the allocator could have seen.
enum class ExplainedKind : std::uint8_t { capacity, fragmentation, reservation, inconsistent };
std::string_view name_of(ExplainedKind kind);

struct ExplainFigure {
  std::string key;    // the JSON key: request, device_free, cache_free, outside, ...
  std::string label;  // as the text says it: "device free"
  Bytes bytes = 0;
  std::string shown;  // in the user's units
  std::string how;    // where it comes from: "F", "T - F - A - R = ..."
};

struct OomExplanation {
  std::string source;   // "pytorch", "tensorflow"; empty when neither was found
  std::string wording;  // which version's wording, or which log
  std::optional<ExplainedKind> kind;
  bool certain = true;  // false: a comparison lies within the message's rounding, or two readings differ
  std::vector<ExplainFigure> figures;
  std::string why;
  std::string to_fit;
  std::vector<std::string> tries;
  std::vector<std::string> notes;
  std::vector<std::string> missing;  // what the text lacks for a verdict
};

OomExplanation explain_oom(std::string_view text);

// The answer as `allocsim explain` prints it: `kind: K` first, or `kind: undecided`.
std::string describe_explanation(const OomExplanation& explanation);
// The same answer as one JSON object.
std::string explanation_json(const OomExplanation& explanation);

}  // namespace allocsim
