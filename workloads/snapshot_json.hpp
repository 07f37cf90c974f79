// A memory snapshot saved as JSON: `json.dump(torch.cuda.memory._snapshot(), f)`, the same
// dict as the pickle in text. It is read into the PickleGraph the pickle reader makes, so one
// reading (read_snapshot_recording) serves both formats and gives the same trace.
#pragma once

#include <string>
#include <string_view>

#include "workloads/pickle_reader.hpp"

namespace allocsim {

// Whether `bytes` reads as a JSON object: its first byte past white space is '{'. A pickle
// opens with its PROTO opcode (0x80), so the two never meet.
bool looks_like_json(std::string_view bytes);

// Contract:
// - objects become dicts (keys as text: json.dump wrote an int key as its decimal text, which
//   is how the pickle reader gives it too), arrays lists (JSON has no tuples), and strings,
//   numbers, true, false and null the pickle reader's scalars;
// - bad JSON throws Error "NAME: byte OFFSET: not a JSON snapshot: ..." on one line; one
//   nested deeper than kMaxPickleDepth "NAME: not a JSON snapshot: nested deeper than ...";
// - parsed as a stream of values (no JSON tree in between): a dump of a snapshot is several
//   times the pickle's size.
PickleGraph decode_snapshot_json(std::string_view text, const std::string& name);

}  // namespace allocsim
