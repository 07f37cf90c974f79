// allocsim replay: the what-if from a PyTorch recording. Every policy starts from the
// allocator state the recording began in and replays its trace on a device as large as
// the recorded run could use, so that "would expandable_segments:True, max_split_size_mb
// or garbage_collection_threshold have saved this run?" is answered on the user's file.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "sim/csv_columns.hpp"
#include "sim/device.hpp"
#include "sim/engine.hpp"
#include "sim/units.hpp"
#include "sim/result.hpp"
#include "studies/run_exports.hpp"
#include "studies/run_report.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

// One side of the comparison: the recording itself, or one policy's replay of it.
struct WhatIfOutcome {
  std::string policy;       // the spec replayed; the recorded settings' spec for the recording
  std::string start;        // how it began: the recorded segments adopted, or the live blocks placed
  Bytes peak_reserved = 0;  // bytes held from the device, at the most
  Bytes peak_allocated = 0; // live block bytes, at the most
  std::size_t device_allocs = 0;  // segments reserved: cudaMalloc calls, or page maps
  std::size_t ooms = 0;           // requests not served (the recorded OOMs' and the trace's)
  std::optional<std::string> first_oom;  // where, for a person
  // What a user sets in PyTorch for this side's policy (policies/torch_alloc_conf), the
  // recording's own PYTORCH_CUDA_ALLOC_CONF kept where the policy does not change it.
  std::string torch_setting;
  // A replayed side only: the replay as a one-tenant run of the recording's trace, for a
  // report (the recorders only when asked for: record).
  RunResult run;
  Scenario scenario;
  std::shared_ptr<RunRecorders> recorders;
};

struct WhatIf {
  Bytes capacity = 0;           // the device's, its context included
  DeviceSpec device;            // the device replayed on
  std::string capacity_source;  // why this capacity
  WhatIfOutcome recorded;       // from the recording's own segment events and OOMs
  std::vector<WhatIfOutcome> replayed;  // one per policy that ran, in the order given
  // A policy that could not replay the recording at all, and why: it never hides the others.
  struct Failed {
    std::string policy;
    std::string error;
  };
  std::vector<Failed> failed;
  std::vector<std::string> ambiguous_sizes;  // pre-recording blocks two sizing rules fit
  std::optional<std::string> replay_check_divergence;  // replay-check's verdict on the recording
  std::size_t releases_in_allocs = 0;  // recorded releases that were no empty_cache() call, not replayed
  bool recorded_oom() const { return recorded.ooms > 0; }
  // The replayed side to take: the lowest reserved peak among those without an OOM, the
  // first on a tie; none when every one ran out of memory.
  std::optional<std::size_t> best() const;
};

// The device a replay runs on: none (what the recording says, see replay_from_recording),
// a capacity alone (all of it free to the allocator, charged to the byte), or a device as
// --device names it (its capacity, its process's CUDA context, its page size).
struct ReplayDevice {
  ReplayDevice() = default;
  ReplayDevice(Bytes capacity) : device(DeviceSpec{}), source("--capacity") { device->capacity = capacity; }
  ReplayDevice(std::optional<Bytes> capacity) {
    if (capacity) *this = ReplayDevice(*capacity);
  }
  ReplayDevice(DeviceSpec chosen, std::string why) : device(std::move(chosen)), source(std::move(why)) {}
  std::optional<DeviceSpec> device;
  std::string source;  // why this device, for a person: "--capacity", "--device a100-40gb"
};

// What the recorded run could hold, where the recording says: the least over its OOMs of
// the bytes it reserved then plus the device_free PyTorch recorded; none without an OOM.
std::optional<Bytes> recorded_capacity(const TorchRecording& recording);

// A policy to replay: a registry spec (read once, where the user typed it), or a policy that
// no registry row makes (one written in Python: `maker` alone, `maker.text` its name).
struct RecordingPolicy {
  RecordingPolicy(PolicySpec read) : spec(std::move(read)), maker(spec->maker()) {}
  RecordingPolicy(PolicyMaker made) : maker(std::move(made)) {}

  std::optional<PolicySpec> spec;
  PolicyMaker maker;  // used when there is no spec
  const std::string& text() const { return spec ? spec->text : maker.text; }
};

// Contract:
// - `caching` and `expandable` specs replay as the caching policy with the recorded
//   settings, the spec's own keys replacing theirs; a native one adopts the recorded
//   segments (at their addresses, with their blocks), as replay-check does, so plain
//   `caching` reproduces the recording; an expandable one adopts the recorded expandable
//   ranges of a recording made with them. Any other policy, and the other kind of the
//   two, starts by allocating the blocks live at the start, in address order: a policy
//   without a spec (a maker alone) too, through the same Policy calls.
// - the device: `device` when given; else, for a recording with an OOM, what the run
//   could hold (recorded_capacity); else 1 TiB (no limit that matters, small enough for
//   expandable's map). A device's context is charged before the start is rebuilt.
// - a recorded OOM's request is replayed where it happened: served, it is freed at once
//   (what the recording did next ran without it); a trace alloc that fails is skipped,
//   with its free. A policy avoided the recorded OOM when it failed no request at all.
// - a release row replay-check finds inside an alloc (a partial release or a garbage
//   collection) is no empty_cache() call: each policy's own alloc decides what it frees.
// - `exports`: the replay as a snapshot and a Chrome trace (one policy only; the trace's
//   recorded OOM requests appear as blocks freed at once; no OOM entries).
// - `record`: each replayed side keeps the observers a report needs (studies/run_report);
//   the report's run has the trace's blocks and OOMs, not the recorded OOM requests served.
// - throws Error on a recording it cannot rebuild (see replay_check); the specs were read where
//   the user typed them.
WhatIf replay_from_recording(const TorchRecording& recording, std::span<const RecordingPolicy> policies,
                             const ReplayDevice& device, const ExportFiles& exports = {}, bool record = false);

// One row of the what-if's results: a side (the recording, or one policy's replay of it).
struct WhatIfRow {
  const std::string* recording;  // the snapshot's name, as the user gave it
  const WhatIf* what_if;
  const WhatIfOutcome* outcome;
  bool is_recording;
};

// The what-if's fields, each declared once (name, unit, help, value, text for people): the
// CSV, the page's JSON, the Python dicts and the terminal's table are all drawn from it.
std::span<const Column<WhatIfRow>> what_if_columns();
// The recording's row first, then one per replayed side.
std::vector<WhatIfRow> what_if_rows(const WhatIf& what_if, const std::string& recording_name);

// One row per outcome, the recording's first, through the column table.
void write_what_if_csv(std::ostream& out, const WhatIf& what_if, const std::string& recording_name);
// The same rows as JSON objects, every column by its name, with "text" (the terminal's cells).
nlohmann::json what_if_sides_json(const WhatIf& what_if, const std::string& recording_name);
// The replayed sides as a --report page's runs (studies/run_report), each named by its policy
// and carrying its row of the column table (the recorded side has no run to draw). Needs the
// recorders (replay_from_recording's `record`).
std::vector<ReportedRun> what_if_reported(const WhatIf& what_if, const std::string& recording_name);
// The terminal's table: a row per column in it (its label first), a cell per side.
std::vector<std::vector<std::string>> what_if_table(const WhatIf& what_if, const std::string& recording_name);

}  // namespace allocsim
