#include "studies/chrome_trace_export.hpp"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/oom.hpp"
#include "sim/version.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

constexpr int kDevicePid = 0;
int pid_of(std::size_t tenant) { return static_cast<int>(tenant) + 1; }
double micros(Nanos time) { return static_cast<double>(time) / 1000.0; }

json process_name(int pid, const std::string& name) {
  return json{{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}};
}

// The tag of every allocation of `trace`, by id: the slices' names.
std::vector<Tag> tags_of(const Trace& trace) {
  std::vector<Tag> tags(trace.allocations(), Tag::other);
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc) tags[index_of(event.id)] = event.tag;
  }
  return tags;
}

}  // namespace

ChromeTraceExport::ChromeTraceExport(const Scenario& scenario, std::size_t max_lifetimes)
    : scenario_(scenario), max_lifetimes_(max_lifetimes), timeline_(kCounterPoints),
      open_(scenario.tenants.size()), exited_(scenario.tenants.size(), false) {}

void ChromeTraceExport::keep(Lifetime lifetime) {
  if (max_lifetimes_ == 0) return;
  if (kept_.size() < max_lifetimes_) {
    kept_.push(lifetime);
  } else if (Larger{}(lifetime, kept_.top())) {
    kept_.pop();
    kept_.push(lifetime);
  }
}

void ChromeTraceExport::on_block(const BlockEvent& event) {
  if (exited_.at(event.tenant)) return;
  auto& open = open_[event.tenant];
  switch (event.action) {
    case BlockAction::placed:
      open[index_of(event.id)] = Lifetime{event.tenant, index_of(event.id), event.addr, event.size, event.requested,
                                          event.stream, event.time, event.time, lifetimes_++};
      break;
    case BlockAction::freed: {
      const auto found = open.find(index_of(event.id));
      if (found == open.end()) break;
      found->second.end = event.time;
      keep(found->second);
      open.erase(found);
      break;
    }
    case BlockAction::moved:  // the same allocation: its slice goes on
      break;
  }
}

void ChromeTraceExport::on_oom(const OomRecord& record) { ooms_.push_back(record); }

void ChromeTraceExport::on_exit(std::size_t tenant, Nanos time) {
  exited_.at(tenant) = true;
  std::vector<Lifetime> live;
  for (auto& [id, lifetime] : open_[tenant]) live.push_back(lifetime);
  std::sort(live.begin(), live.end(), [](const Lifetime& a, const Lifetime& b) { return a.order < b.order; });
  for (Lifetime& lifetime : live) {
    lifetime.end = time;
    keep(lifetime);
  }
  open_[tenant].clear();
}

void ChromeTraceExport::write(std::ostream& out) const {
  json events = json::array();
  const DeviceSpec& device = scenario_.device;
  events.push_back(process_name(kDevicePid, "device " + device.name + " (" + format_bytes(device.capacity) + ")"));
  std::vector<std::vector<Tag>> tags;
  for (std::size_t t = 0; t < scenario_.tenants.size(); ++t) {
    const TenantSpec& tenant = scenario_.tenants[t];
    events.push_back(process_name(pid_of(t), "tenant " + std::to_string(t) + ": " + tenant.trace->info.name + " @ " +
                                                 tenant.policy.text));
    tags.push_back(tags_of(*tenant.trace));
  }
  for (const Sample& sample : timeline_.points()) {
    const double ts = micros(sample.time);
    events.push_back(json{{"ph", "C"}, {"name", "memory"}, {"pid", pid_of(sample.tenant)}, {"tid", 0}, {"ts", ts},
                          {"args", {{"allocated", sample.allocated}, {"reserved", sample.reserved}}}});
    events.push_back(json{{"ph", "C"}, {"name", "device"}, {"pid", kDevicePid}, {"tid", 0}, {"ts", ts},
                          {"args", {{"used", sample.device_used}}}});
  }
  auto kept = kept_;
  std::vector<Lifetime> lifetimes;
  while (!kept.empty()) {
    lifetimes.push_back(kept.top());
    kept.pop();
  }
  std::sort(lifetimes.begin(), lifetimes.end(), [](const Lifetime& a, const Lifetime& b) { return a.order < b.order; });
  for (const Lifetime& lifetime : lifetimes) {
    const std::vector<Tag>& tenant_tags = tags[lifetime.tenant];  // a replay's extra requests are in no trace
    const Tag tag = lifetime.id < tenant_tags.size() ? tenant_tags[lifetime.id] : Tag::other;
    const std::string name = std::string(name_of(tag)) + " " + format_bytes(lifetime.size);
    const std::string id = std::to_string(lifetime.tenant) + "." + std::to_string(lifetime.id);
    json begin{{"ph", "b"}, {"cat", "allocation"}, {"name", name}, {"id", id}, {"pid", pid_of(lifetime.tenant)},
               {"tid", 0}, {"ts", micros(lifetime.start)},
               {"args", {{"address", format_address(lifetime.addr)}, {"size_bytes", lifetime.size},
                         {"requested_bytes", lifetime.requested}, {"stream", lifetime.stream},
                         {"allocation", lifetime.id}}}};
    json end{{"ph", "e"}, {"cat", "allocation"}, {"name", name}, {"id", id}, {"pid", pid_of(lifetime.tenant)},
             {"tid", 0}, {"ts", micros(lifetime.end)}};
    events.push_back(std::move(begin));
    events.push_back(std::move(end));
  }
  for (const OomRecord& oom : ooms_) {
    events.push_back(json{{"ph", "i"}, {"s", "p"}, {"name", "OOM (" + std::string(name_of(oom.kind)) + ")"},
                          {"pid", pid_of(oom.tenant)}, {"tid", 0}, {"ts", micros(oom.time)},
                          {"args", {{"requested_bytes", oom.bytes}, {"kind", name_of(oom.kind)}, {"request_kind", name_of(oom.request_kind)},
                                    {"event", oom.event}, {"device_free_bytes", oom.context.device_available}}}});
  }
  const json trace{
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ns"},
      {"otherData",
       {{"generator", "allocsim " + std::string(allocsim_version())},
        {"time_unit", "us of simulated time"},
        {"counter_unit", "bytes"},
        {"lifetimes_cap", max_lifetimes_},
        {"lifetimes_total", lifetimes_},
        {"lifetimes_shown", lifetimes.size()},
        {"lifetimes_rule", "the " + std::to_string(max_lifetimes_) +
                               " largest allocations (ties: the earlier), each an async slice from alloc to free"}}}};
  out << trace.dump() << '\n';
}

}  // namespace allocsim
