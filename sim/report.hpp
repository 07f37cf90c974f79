// Writers for a run's results: the terminal table, CSV rows and JSON, all drawn from the
// metric table. One row or object per tenant; policy statistics become extra columns.
#pragma once

#include <ostream>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/result.hpp"

namespace allocsim {

void write_table(std::ostream& out, const RunResult& run);
// The same table over several runs (compare: one per policy), a column per tenant of each;
// `labels` (one per run) head its columns and begin the lines about it.
void write_table(std::ostream& out, std::span<const RunResult> runs, std::span<const std::string> labels);
// The header is always written, even for no runs; extra columns are the union of every
// policy statistic, in order of first appearance, empty where a policy lacks one.
void write_csv(std::ostream& out, std::span<const RunResult> runs);
// One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& text);

// Opens with "allocsim": the version and the command line (sim/version.hpp) that made it.
void write_json(std::ostream& out, const RunResult& run);
// Two objects of a tenant's in --json, which a --report page's lane carries too: its
// "verdict_detail" (the run verdict, the bytes weighed, what held the rest, the sentence the
// table opens with) and each of its "ooms".
nlohmann::json verdict_json(const RunResult& run, const TenantResult& tenant);
nlohmann::json oom_json(const OomRecord& oom);

// "activation 2.50 GiB, weight 97.5 MiB; top layers: conv1 392 MiB, ..." (empty when the
// trace has neither tags nor layers to tell).
std::string describe_breakdown(const Breakdown& breakdown);

// One line per OOM worth telling a person: where, how much, and why.
std::string describe_oom(const OomRecord& oom);

}  // namespace allocsim
