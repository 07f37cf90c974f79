// Fragmentation workloads (`frag:pattern=...`): small synthetic traces built so that free
// memory ends up in holes, to compare what placements lose to fragmentation and what
// moving (compact) or page stitching (vmm) win back.
// - seed: the seed article's case: `count` blocks of `unit` (8 x 1 GiB fill an 8 GiB
//   card), every other one a temporary; the temporaries go, leaving half the memory free
//   in holes of `unit`, then one `request` (3 GiB) that no hole holds;
// - alternating: each step keeps `count` small blocks (unit / 8) and frees the large
//   temporaries (unit) between them, then asks for one block of count / 2 x unit;
// - sawtooth: each tooth allocates `count` blocks of sizes cycling through 1..count x
//   unit, pins a small block (unit / 4) among them that lives to the end, and frees the
//   rest: the pins pile up and cut the free space;
// - padded / bucketed: a transformer-like step per batch of random sequence length
//   (min_len..max_len tokens): `count` layers of activations of unit bytes per token,
//   kept until backward frees them in reverse; padded rounds every batch up to max_len
//   (same sizes each step: no fragmentation, more bytes), bucketed up to a multiple of
//   `bucket` tokens (fewer bytes, sizes that change every step).
#pragma once

#include <array>
#include <string>

#include "sim/spec.hpp"
#include "sim/trace.hpp"

namespace allocsim {

inline constexpr std::array kFragTraceParams{
    ParamInfo{"pattern", ParamKind::text, "seed", "seed, alternating, sawtooth, padded or bucketed"},
    ParamInfo{"unit", ParamKind::bytes, "0",
              "base block size; 0 = the pattern's (seed 1GiB, alternating/sawtooth 64MiB, "
              "padded/bucketed 256KiB per token and layer)"},
    ParamInfo{"count", ParamKind::count, "0",
              "blocks per step (layers for padded/bucketed); 0 = the pattern's (8, 16, 8, 24)"},
    ParamInfo{"steps", ParamKind::count, "8", "rounds, teeth or batches (not seed)"},
    ParamInfo{"request", ParamKind::bytes, "3GiB", "seed: the request that no hole holds"},
    ParamInfo{"min_len", ParamKind::count, "32", "padded/bucketed: shortest sequence, tokens"},
    ParamInfo{"max_len", ParamKind::count, "512", "padded/bucketed: longest sequence, tokens"},
    ParamInfo{"bucket", ParamKind::count, "64", "bucketed: lengths round up to a multiple of this"},
    ParamInfo{"seed", ParamKind::count, "1", "padded/bucketed: the sequence lengths' seed"},
};

Trace make_frag_trace(const Params& params, std::string name);  // throws Error on bad values

}  // namespace allocsim
