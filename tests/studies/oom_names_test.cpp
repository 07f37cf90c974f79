// An OOM's two names (sim/oom.hpp, docs/outputs.md): the run verdict, judged against the
// live lower bound, and the kind at the request. Real inputs at capacities that make them
// run out (the shared recordings, the Kineto fixture under bfc at 4 GiB): no headline says
// that another placement could fit a run whose lower bound exceeds what the device gives or
// the policy's own limit, and the table, the JSON, the report and `replay`'s table name the
// two alike for the same run.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"
#include "policies/registry.hpp"
#include "recording_policies.hpp"
#include "shared_traces.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/verdict.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/run_report.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

constexpr const char* kPlacement = "another placement could fit it";

// The headline against the lower bound, for the run and for every OOM's own verdict.
void check_headline(const RunResult& run, const TenantResult& tenant) {
  const Verdict verdict = verdict_of(run, tenant);
  const std::string text = describe_verdict(verdict, run.device.name);
  INFO(text);
  const bool placement = text.find(kPlacement) != std::string::npos;
  CHECK(placement == (verdict.kind == OomKind::fragmentation));
  for (const OomRecord& oom : tenant.ooms) {
    const OomContext& c = oom.context;
    const Bytes needs = std::max(c.needs, c.own_live_requested + c.request);
    INFO("OOM at event " << oom.event << ": needs " << needs << ", gives " << c.share.gives() << ", limit "
                         << c.policy.limit);
    if (oom.kind == OomKind::fragmentation) {
      CHECK(needs <= c.share.gives());
      CHECK((c.policy.limit == 0 || needs <= c.policy.limit));
    }
    if (needs > c.share.could_give()) CHECK(oom.kind == OomKind::capacity);
  }
  if (placement) {
    CHECK(verdict.needs <= verdict.gives);
    const OomRecord& first = *tenant.first_oom();
    CHECK((first.context.policy.limit == 0 || verdict.needs <= first.context.policy.limit));
  }
}

// The two names of the first OOM said alike by the table, the JSON and the report's data.
void check_names(const RunResult& run, const TenantResult& tenant, const nlohmann::json& lane) {
  const OomRecord& first = *tenant.first_oom();
  const std::string verdict(verdict_word(verdict_of(run, tenant)));
  const std::string at_request(name_of(first.request_kind));
  CHECK(verdict == name_of(first.kind));
  std::ostringstream table;
  write_table(table, run);
  CHECK_THAT(table.str(), Contains("does not fit (" + verdict + ")") &&
                              Contains("was " + at_request + " at the request") &&
                              Contains("requested, " + at_request + " at the request: "));
  const std::string line = describe_oom(first);
  CHECK((line.find("; run verdict: " + verdict) != std::string::npos) == (first.kind != first.request_kind));
  std::ostringstream json;
  write_json(json, run);
  const nlohmann::json document = nlohmann::json::parse(json.str());
  const nlohmann::json& object = document["tenants"][tenant.index];
  CHECK(object["verdict"] == verdict);
  CHECK(object["first_oom_kind"] == verdict);
  CHECK(object["verdict_detail"]["verdict"] == verdict);
  CHECK(object["first_oom_request_kind"] == at_request);
  CHECK(object["ooms"][0]["kind"] == verdict);
  CHECK(object["ooms"][0]["request_kind"] == at_request);
  CHECK(object["ooms_" + at_request].get<std::uint64_t>() >= 1);
  CHECK(lane["ooms"][0]["kind"] == verdict);
  CHECK(lane["ooms"][0]["request_kind"] == at_request);
  CHECK(lane["ooms"][0]["text"] == line);
  CHECK(lane["verdict"] == verdict);
  CHECK(lane["first_oom_request_kind"] == at_request);
  CHECK_THAT(lane["verdict_detail"]["text"].get<std::string>(),
             Catch::StartsWith("tenant 0 does not fit (" + verdict + ")"));
}

// One tenant of `trace` under `policy` on `capacity`, with the report's recorders.
void run_and_check(const std::shared_ptr<const Trace>& trace, const std::string& policy, Bytes capacity) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.tenants.push_back(TenantSpec{trace, policy_maker(policy), 0});
  RunRecorders recorders;
  const std::vector<Observer*> observers = recorders.observers();
  const RunResult run = allocsim::run(scenario, observers);
  const TenantResult& tenant = run.tenants[0];
  INFO(policy << " on " << format_bytes(capacity) << ": " << tenant.oom_count << " OOMs");
  check_headline(run, tenant);
  if (!tenant.first_oom()) return;
  const ReportedRun reported{"", scenario, run, recorders};
  const nlohmann::json data = nlohmann::json::parse(run_report_data("t", "c", {&reported, 1}));
  check_names(run, tenant, data["lanes"][0]);
}

TEST_CASE("the Kineto fixture under bfc: the headline agrees with the live bound", "[oom][verdict]") {
  // Device 0 needs 6 KiB live: 4 GiB holds it; 3 to 7 KiB and bfc's own limits do not.
  const auto trace = std::make_shared<const Trace>(
      load_workload(std::string(ALLOCSIM_TEST_DATA) + "/kineto_two_gpus.pt.trace.json", LoadOptions{0}));
  for (const Bytes capacity : {4_GiB, 3_KiB, 5_KiB, 6_KiB, 7_KiB}) {
    for (const char* policy : {"bfc", "bfc:growth=true", "caching", "bestfit"}) run_and_check(trace, policy, capacity);
  }
  for (const char* policy : {"bfc:limit=5KiB", "bfc:limit=5632B", "bfc:limit=6KiB"}) run_and_check(trace, policy, 4_GiB);
}

TEST_CASE("the shared recordings run under bfc and caching near their lower bound", "[oom][verdict][shared]") {
  for (const char* name : {"lm_medium_ctx128_train.snapshot.pickle", "vae_decode_loop.snapshot.pickle"}) {
    const auto path = test::shared_trace(name);
    if (!path) continue;
    const auto trace = std::make_shared<const Trace>(load_workload(path->string()));
    const Bytes bound = trace->live_lower_bound;
    // Below the bound (capacity), between the bound and the bound plus bfc's reserve (bfc's
    // limit holds it back, the device would not), and a little above.
    for (const double factor : {0.5, 1.02, 1.1, 1.5}) {
      const auto capacity = static_cast<Bytes>(factor * static_cast<double>(bound));
      INFO(name << " at " << factor << "x its lower bound");
      for (const char* policy : {"bfc", "caching", "bestfit"}) run_and_check(trace, policy, capacity);
    }
  }
}

TEST_CASE("the shared recordings replayed on smaller cards: replay's table names both", "[oom][verdict][replay][shared]") {
  for (const char* name : {"lm_medium_ctx128_train.snapshot.pickle", "vae_decode_loop.snapshot.pickle"}) {
    const auto path = test::shared_trace(name);
    if (!path) continue;
    const TorchRecording recording = read_torch_recording(*path);
    const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "expandable", "bestfit"});
    const Bytes peak = replay_from_recording(recording, policies, {}).recorded.peak_reserved;
    for (const double factor : {0.5, 0.75}) {
      const auto capacity = static_cast<Bytes>(factor * static_cast<double>(peak));
      INFO(name << " at " << factor << "x: " << capacity << " B");
      const WhatIf what_if = replay_from_recording(recording, policies, capacity, {}, true);
      std::vector<std::string> verdicts{"-"};
      std::vector<std::string> at_request{"-"};
      for (const WhatIfOutcome& outcome : what_if.replayed) {
        const TenantResult& tenant = outcome.run.tenants[0];
        INFO(outcome.policy);
        check_headline(outcome.run, tenant);
        verdicts.emplace_back(verdict_word(verdict_of(outcome.run, tenant)));
        at_request.push_back(describe_request_kinds(tenant));
        if (!tenant.first_oom()) continue;
        const ReportedRun reported{outcome.policy, outcome.scenario, outcome.run, *outcome.recorders};
        const nlohmann::json data = nlohmann::json::parse(run_report_data("t", "c", {&reported, 1}));
        check_names(outcome.run, tenant, data["lanes"][0]);
      }
      // The command's two rows: the recording's "-", then each policy's.
      const test::Outcome shown = test::cli({"replay", path->string(), "--policy", "caching,expandable,bestfit",
                                             "--capacity", std::to_string(capacity)});
      REQUIRE(shown.status == 0);
      const auto cells = [&](const std::string& label) {
        std::istringstream lines(shown.out);
        std::vector<std::string> found;
        for (std::string line; std::getline(lines, line);) {
          if (!line.starts_with("  " + label + "   ")) continue;
          std::string rest = line.substr(2 + label.size());
          for (std::size_t at = rest.find_first_not_of(' '); at != std::string::npos;) {
            const std::size_t end = rest.find("   ", at);
            found.push_back(rest.substr(at, end == std::string::npos ? std::string::npos : end - at));
            at = end == std::string::npos ? end : rest.find_first_not_of(' ', end);
          }
        }
        return found;
      };
      CHECK(cells("run verdict") == verdicts);
      CHECK(cells("OOMs at the request") == at_request);
    }
  }
}

}  // namespace
}  // namespace allocsim
