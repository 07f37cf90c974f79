#include "sim/report.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/csv_columns.hpp"
#include "sim/metrics.hpp"
#include "sim/verdict.hpp"
#include "sim/version.hpp"

namespace allocsim {
namespace {

std::vector<std::string> extra_columns(std::span<const RunResult> runs) {
  std::vector<std::string> names;
  for (const RunResult& run : runs) {
    for (const TenantResult& tenant : run.tenants) {
      for (const PolicyStat& stat : tenant.extra) {
        if (std::find(names.begin(), names.end(), stat.name) == names.end()) names.push_back(stat.name);
      }
    }
  }
  return names;
}

const PolicyStat* find_stat(const TenantResult& tenant, const std::string& name) {
  for (const PolicyStat& stat : tenant.extra) {
    if (stat.name == name) return &stat;
  }
  return nullptr;
}

// ", step 2 of 2 (steady state)": which step of a trace with steps the peak is in; in a
// generation ", step 9 of 9 (decode step 8)".
std::string describe_step(const TenantResult& tenant) {
  if (!tenant.peak_step) return {};
  std::string text = ", step " + std::to_string(*tenant.peak_step) + " of " + std::to_string(tenant.steps);
  if (tenant.generation) {
    text += *tenant.peak_step == 1 ? " (the prefill)" : " (decode step " + std::to_string(*tenant.peak_step - 1) + ")";
  } else if (tenant.steps > 1) {
    text += *tenant.peak_step == 1 ? " (the warm-up)" : " (steady state)";
  }
  return text;
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string describe_breakdown(const Breakdown& breakdown) {
  std::vector<std::pair<Bytes, Tag>> tags;
  for (int tag = 0; tag < kTagCount; ++tag) {
    if (breakdown.by_tag[tag] > 0) tags.emplace_back(breakdown.by_tag[tag], static_cast<Tag>(tag));
  }
  if (tags.empty() || (tags.size() == 1 && tags[0].second == Tag::other && breakdown.top_layers.empty())) return {};
  std::stable_sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [bytes, tag] : tags) out += (out.empty() ? "" : ", ") + std::string(name_of(tag)) + " " + format_bytes(bytes);
  if (!breakdown.top_layers.empty()) {
    out += "; top layers:";
    for (const auto& [layer, bytes] : breakdown.top_layers) out += " " + layer + " " + format_bytes(bytes) + ",";
    out.pop_back();
  }
  return out;
}

std::string describe_oom(const OomRecord& oom) {
  const OomContext& c = oom.context;
  const Bytes pool_free = c.policy.reserved - c.policy.allocated;
  std::string why;
  switch (oom.request_kind) {
    case OomKind::capacity:
      why = "live bytes " + format_bytes(c.live_requested) + " + this request exceed the usable " +
            format_bytes(c.usable) + (c.policy.limit != 0 ? " or the policy's limit " + format_bytes(c.policy.limit) : "");
      break;
    case OomKind::fragmentation:
      why = format_bytes(pool_free) + " free in the pool and " + format_bytes(oom_headroom(c)) +
            " more it may take from the device, but the largest free block is " + format_bytes(c.policy.largest_free);
      break;
    case OomKind::reservation:
      why = "only " + format_bytes(oom_headroom(c)) + " it may take from the device and " + format_bytes(pool_free) +
            " in the pool; the rest is held by ";
      if (const std::vector<Holder> holders = holders_at(c); holders.empty()) {
        why += "nobody it could name";
      } else {
        why += describe_holders(holders);
      }
      break;
  }
  const std::string step = oom.step ? "step " + std::to_string(*oom.step) + ", " : std::string();
  // Its kind at the request leads; the run verdict follows where it says otherwise.
  const std::string verdict = oom.kind == oom.request_kind
                                  ? std::string()
                                  : "; " + std::string(kRunVerdict) + ": " + std::string(name_of(oom.kind));
  return "OOM at event " + std::to_string(oom.event) + " of tenant " + std::to_string(oom.tenant) + " (" + step +
         "t = " + format_nanos(oom.time) + "): " + format_bytes(oom.bytes) +
         (oom.at_start ? " requested for its CUDA context, " : " requested, ") + std::string(name_of(oom.request_kind)) +
         " " + std::string(kAtRequest) + ": " + why + verdict;
}

void write_table(std::ostream& out, const RunResult& run) { write_table(out, {&run, 1}, {}); }

void write_table(std::ostream& out, std::span<const RunResult> runs, std::span<const std::string> labels) {
  struct Column {
    const RunResult* run;
    const TenantResult* tenant;
    std::string label;   // the header cell
    std::string prefix;  // before each line about it: "" for a lone run's tenants
  };
  std::vector<Column> columns;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (const TenantResult& tenant : runs[r].tenants) {
      const std::string name = "tenant " + std::to_string(tenant.index);
      if (labels.empty()) {
        columns.push_back(Column{&runs[r], &tenant, name, ""});
      } else {
        const std::string label = runs[r].tenants.size() > 1 ? labels[r] + " " + name : labels[r];
        columns.push_back(Column{&runs[r], &tenant, label, label + ": "});
      }
    }
  }
  for (const Column& c : columns) out << c.prefix << describe_verdict(verdict_of(*c.run, *c.tenant), c.run->device.name);
  // A grid of strings first, so that every column can be padded to its widest cell.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{""};
  for (const Column& c : columns) header.push_back(c.label);
  rows.push_back(std::move(header));
  for (const Metric& metric : metrics()) {
    if (!metric.in_table) continue;
    std::vector<std::string> row{std::string(metric.name)};
    for (const Column& c : columns) row.push_back(format_human(metric.get(*c.run, *c.tenant), metric.unit));
    rows.push_back(std::move(row));
  }
  for (const std::string& name : extra_columns(runs)) {
    std::vector<std::string> row{name};
    for (const Column& c : columns) {
      const PolicyStat* stat = find_stat(*c.tenant, name);
      row.push_back(stat ? format_human(stat->value, stat->unit) : "-");
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t column = 0; column < row.size(); ++column) widths[column] = std::max(widths[column], row[column].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t column = 0; column < row.size(); ++column) {
      const std::size_t pad = widths[column] - row[column].size();
      line += column == 0 ? row[column] + std::string(pad, ' ') : "  " + std::string(pad, ' ') + row[column];
    }
    out << line << '\n';
  }
  for (const Column& c : columns) {
    const TenantResult& tenant = *c.tenant;
    if (const std::string breakdown = describe_breakdown(tenant.at_peak); !breakdown.empty()) {
      out << c.prefix << "tenant " << tenant.index << " at its peak (event " << tenant.peak_event << describe_step(tenant)
          << "): " << breakdown << '\n';
    }
  }
  for (const Column& c : columns) {
    const TenantResult& tenant = *c.tenant;
    if (const OomRecord* oom = tenant.first_oom()) {
      out << c.prefix << describe_oom(*oom) << '\n';
      if (!oom->policy_state.empty()) out << oom->policy_state;
    }
    if (tenant.hang_event) {
      out << c.prefix << "HANG at event " << *tenant.hang_event << " of tenant " << tenant.index << ": " << tenant.hang_reason
          << "; the real allocator never returns from this request, so the tenant stops here\n";
    }
    if (tenant.oom_count > 1) out << "  (" << tenant.oom_count << " OOMs in all for tenant " << tenant.index << ")\n";
  }
}

void write_csv(std::ostream& out, std::span<const RunResult> runs) {
  const std::vector<std::string> extras = extra_columns(runs);
  bool first = true;
  for (const Metric& metric : metrics()) {
    out << (first ? "" : ",") << metric.name;
    first = false;
  }
  for (const std::string& name : extras) out << ',' << name;
  out << '\n';
  for (const RunResult& run : runs) {
    for (const TenantResult& tenant : run.tenants) {
      first = true;
      for (const Metric& metric : metrics()) {
        out << (first ? "" : ",") << csv_field(format_plain(metric.get(run, tenant)));
        first = false;
      }
      for (const std::string& name : extras) {
        const PolicyStat* stat = find_stat(tenant, name);
        out << ',' << (stat ? std::to_string(stat->value) : "");
      }
      out << '\n';
    }
  }
}

nlohmann::json verdict_json(const RunResult& run, const TenantResult& tenant) {
  const Verdict verdict = verdict_of(run, tenant);
  nlohmann::json holders = nlohmann::json::array();
  for (const Holder& holder : verdict.holders) {
    nlohmann::json entry{{"kind", name_of(holder.kind)}, {"bytes", holder.bytes}};
    if (holder.kind == HolderKind::other_tenant) entry["tenant"] = holder.tenant;
    holders.push_back(std::move(entry));
  }
  return {{"verdict", verdict_word(verdict)},
          {"needs_bytes", verdict.needs},
          {"gives_bytes", verdict.gives},
          {"could_give_bytes", verdict.could_give},
          {"holders", std::move(holders)},
          {"text", describe_verdict(verdict, run.device.name)}};
}

nlohmann::json oom_json(const OomRecord& oom) {
  const OomContext& c = oom.context;
  return {{"event", oom.event},
          {"step", oom.step ? nlohmann::json(*oom.step) : nlohmann::json(nullptr)},
          {"time_ns", oom.time},
          {"bytes", oom.bytes},
          {"kind", name_of(oom.kind)},
          {"request_kind", name_of(oom.request_kind)},
          {"at_start", oom.at_start},
          {"live_requested_bytes", c.live_requested},
          {"usable_bytes", c.usable},
          {"device_available_bytes", c.device_available},
          {"allocated_bytes", c.policy.allocated},
          {"reserved_bytes", c.policy.reserved},
          {"largest_free_bytes", c.policy.largest_free},
          {"releasable_bytes", c.releasable}};
}

void write_json(std::ostream& out, const RunResult& run) {
  nlohmann::json document;
  // What made this file, so that a JSON read later says how to make it again.
  document["allocsim"] = {{"version", allocsim_version()}, {"command_line", std::vector<std::string>(command_line().begin(), command_line().end())}};
  document["device"] = {{"name", run.device.name},
                        {"capacity_bytes", run.device.capacity},
                        {"context_overhead_bytes", run.device.context_overhead},
                        {"granularity_bytes", run.device.granularity}};
  document["tenants"] = nlohmann::json::array();
  for (const TenantResult& tenant : run.tenants) {
    nlohmann::json object;
    for (const Metric& metric : metrics()) object[std::string(metric.name)] = metric_json(metric.get(run, tenant));
    for (const PolicyStat& stat : tenant.extra) object[stat.name] = stat.value;
    object["verdict_detail"] = verdict_json(run, tenant);
    object["ooms"] = nlohmann::json::array();
    for (const OomRecord& oom : tenant.ooms) object["ooms"].push_back(oom_json(oom));
    document["tenants"].push_back(std::move(object));
  }
  // Names come from files and specs the user typed: replace bytes that are not UTF-8.
  out << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace allocsim
