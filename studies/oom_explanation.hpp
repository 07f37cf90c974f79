// allocsim explain as a study: the verdict on a pasted OOM message (PyTorch) or BFC log
// (TensorFlow, XLA), from what the allocator did before it raised, with the arithmetic in the
// user's units, what would have to change, and the settings to try.
// PyTorch (the cache free is C, R - A, or R by wording; outside = T - F - A - cache free):
// - fragmentation: the cache's free bytes alone would hold the request; PyTorch had already
//   released its wholly free segments and retried, so they lie in partly used segments;
// - reservation: the request would fit in the device's free bytes plus the cache's plus what
//   is held outside this process's PyTorch (or under `L allowed`, the limit stands in the way);
// - capacity: otherwise, it cannot fit beside this process's live data on this card.
// TensorFlow: capacity when in-use + request exceed the limit; reservation when the limit
// still allowed a new region large enough (the device refused it); fragmentation otherwise.
// A close call (within the message's rounding) is said to be one; too little text is no
// verdict: what was read and what is missing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/oom.hpp"
#include "sim/units.hpp"

namespace allocsim {

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
  std::optional<OomKind> kind;
  bool certain = true;  // false: a comparison lies within the message's rounding
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
