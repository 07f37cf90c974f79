// A model spec to its trace: training or inference steps (lower.hpp), a generation with
// a KV cache (generation.hpp: infer_prefillP_decodeT), or training steps over batches of
// drawn lengths (len=, sequence_lengths.hpp: padded to each micro-batch's longest, or
// packed into rows of sN tokens). Checks the combinations the parser cannot: which keys
// need which others, and which make no sense together.
#pragma once

#include <string>

#include "sim/trace.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {

Trace lower_spec(const ModelSpec& spec, std::string name);

// The sequence length of each micro-batch of a padded spec (len= without packed), in
// order: the longest of its batch's draws.
std::vector<std::int64_t> padded_lengths(const ModelSpec& spec);

}  // namespace allocsim
