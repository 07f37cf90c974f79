// RAPIDS RMM's logging_resource_adaptor CSV (../shared/reference/formats.md section 3,
// allocators.md 4.7): header `Thread,Time,Action,Pointer,Size,Stream`, one row per call,
// Action `allocate`, `free` or `allocate failure`. Every historical variant reads:
// - Time `HH:MM:SS.uuuuuu` (the adaptor's spdlog pattern `%t,%H:%M:%S.%f`), or
//   `HH:MM:SS:uuuuuu`, the form RMM's replay benchmark documents for logs up to v21.04;
// - Pointer `0x...` (fmt, or printf `%p` at HEAD) or hex without a prefix (`%llx` in the
//   first rapids_logger builds, 24.12 and 25.02);
// - Stream decimal (v0.15), `0x...` (fmt::ptr from v0.17 to v24.10; `std::hex` of the
//   handle at HEAD, which prints the default stream as `0`) or hex without a prefix
//   (`%llx`); streams are identities, so each distinct value is one stream;
// - null pointers of failure rows `(nil)`, `0x0` or `0`; logs before v22.04 have no failures;
// - a file named by RMM's Python `NAME.devN.EXT` or `NAME.devN` is recognised by its
//   header, or by that name when the header cannot tell (an empty log).
// What the format lacks, and what is assumed instead:
// - requested sizes: Size is what the caller passed (RMM rounds to 256 itself), so each
//   policy rounds as it does; no tags or layers (every allocation is `other`);
// - a date: times are of the day, counted from the first row's; a row earlier than the one before it (past midnight, or
//   threads flushing out of order) is placed at the earlier row's time: the file's order
//   is the global order, as RMM's replay benchmark takes it;
// - streams of threads: the per-thread default stream (handle 2) is one stream per logged
//   thread; the default (0) and legacy (1) streams are stream 0; every other handle its own
//   stream, numbered in order of first use;
// - a failed allocation is kept as a request the program made and freed at once (it never
//   had it): `failures` says which events they are, so a replay can check that it fails there.
#pragma once

#include <filesystem>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

struct RmmFailure {
  std::size_t event;  // the alloc event of the failed request
  std::size_t line;   // in the log
  Bytes bytes;
};

struct RmmLog {
  Trace trace;
  std::vector<RmmFailure> failures;
  std::size_t threads = 0;
};

// Throws Error "NAME:LINE: what" on the first bad row. The stream and file versions read
// the whole text and parse it.
RmmLog parse_rmm_log(std::string_view text, const std::string& name);
RmmLog read_rmm_log(std::istream& in, const std::string& name);
RmmLog read_rmm_log_file(const std::filesystem::path& path);

// By content: the first line is the header; by name: a path ending in .devN or .devN.EXT.
Claim claims_rmm_log(std::string_view spec, std::string_view head);

}  // namespace allocsim
