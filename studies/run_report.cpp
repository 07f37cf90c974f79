#include "studies/run_report.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "sim/breakdown.hpp"
#include "sim/csv_columns.hpp"
#include "sim/report.hpp"
#include "sim/verdict.hpp"
#include "sim/version.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// Addresses as the map draws them: the address ranges the tenant ever used (segments and
// blocks), merged and laid end to end, so that the gaps between segments take no room.
class PackedAddresses {
 public:
  explicit PackedAddresses(const TenantBlocks& blocks) {
    std::vector<std::pair<Addr, Addr>> ranges;
    for (const SegmentSpan& segment : blocks.segments) ranges.emplace_back(segment.addr, segment.addr + segment.bytes);
    for (const BlockSpan& block : blocks.blocks) ranges.emplace_back(block.addr, block.addr + block.size);
    std::sort(ranges.begin(), ranges.end());
    for (const auto& [from, to] : ranges) {
      if (!merged_.empty() && from <= merged_.back().to) {
        merged_.back().to = std::max(merged_.back().to, to);
      } else {
        merged_.push_back(Range{from, to, merged_.empty() ? 0 : merged_.back().offset + merged_.back().to - merged_.back().from});
      }
    }
  }
  Bytes offset_of(Addr addr) const {
    auto it = std::upper_bound(merged_.begin(), merged_.end(), addr, [](Addr a, const Range& r) { return a < r.from; });
    if (it == merged_.begin()) return 0;
    --it;
    return it->offset + (addr - it->from);
  }
  Bytes extent() const { return merged_.empty() ? 0 : merged_.back().offset + merged_.back().to - merged_.back().from; }
  json ranges() const {
    json out = json::array();
    for (const Range& range : merged_) out.push_back({range.offset, range.to - range.from});
    return out;
  }

 private:
  struct Range {
    Addr from;
    Addr to;
    Bytes offset;
  };
  std::vector<Range> merged_;
};

std::vector<Tag> tags_by_id(const Trace& trace) {
  std::vector<Tag> tags(trace.allocations(), Tag::other);
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc) tags[index_of(event.id)] = event.tag;
  }
  return tags;
}

json series_of(const Timeline& timeline, std::size_t tenant) {
  json points = json::array();
  for (const Sample& sample : timeline.points()) {
    if (sample.tenant == tenant) {
      points.push_back({sample.time, sample.allocated, sample.reserved, sample.device_used, sample.event});
    }
  }
  return points;
}

json breakdown_of(const Breakdown& breakdown) {
  json by_tag = json::array();
  for (int tag = 0; tag < kTagCount; ++tag) {
    if (breakdown.by_tag[tag] > 0) by_tag.push_back({name_of(static_cast<Tag>(tag)), breakdown.by_tag[tag]});
  }
  json layers = json::array();
  for (const auto& [layer, bytes] : breakdown.top_layers) layers.push_back({layer, bytes});
  return {{"event", breakdown.event}, {"by_tag", by_tag}, {"layers", layers}};
}

constexpr std::size_t kPeakLayers = 15;
constexpr std::size_t kColouredLayers = 10;
constexpr std::size_t kFreeBlocksShown = 12;
constexpr std::size_t kOomsShown = 5;

// The free blocks inside the tenant's segments just after `event`: each segment less the
// live blocks in it. Mapped ranges (VMM) that touch are one range, as a block may span
// them; the unmapped rest of a reserved address range is no segment and no free block (a
// request needs pages mapped first). Empty without segments.
json free_blocks_at(const TenantBlocks& blocks, const PackedAddresses& packed, std::size_t event) {
  std::vector<std::pair<Addr, Bytes>> live;
  for (const BlockSpan& block : blocks.blocks) {
    if (block.placed_event <= event && block.freed_event > event) live.emplace_back(block.addr, block.size);
  }
  std::sort(live.begin(), live.end());
  struct Held {
    Addr from;
    Addr to;
    bool mapped;
  };
  std::vector<Held> held;
  bool mapped = false;
  for (const SegmentSpan& segment : blocks.segments) {
    if (segment.reserved_event > event || segment.released_event <= event) continue;
    held.push_back(Held{segment.addr, segment.addr + segment.bytes, segment.mapped});
    mapped = mapped || segment.mapped;
  }
  std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.from < b.from; });
  std::vector<Held> ranges;
  for (const Held& range : held) {
    if (!ranges.empty() && ranges.back().mapped && range.mapped && ranges.back().to == range.from) {
      ranges.back().to = range.to;
    } else {
      ranges.push_back(range);
    }
  }
  std::vector<std::pair<Bytes, Addr>> holes;  // size, address
  Bytes segment_bytes = 0;
  for (const Held& range : ranges) {
    segment_bytes += range.to - range.from;
    Addr at = range.from;
    const Addr end = range.to;
    for (auto it = std::lower_bound(live.begin(), live.end(), std::pair<Addr, Bytes>{range.from, 0});
         it != live.end() && it->first < end; ++it) {
      if (it->first > at) holes.emplace_back(it->first - at, at);
      at = std::max(at, it->first + it->second);
    }
    if (end > at) holes.emplace_back(end - at, at);
  }
  std::sort(holes.begin(), holes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  Bytes free_bytes = 0;
  for (const auto& hole : holes) free_bytes += hole.first;
  json largest = json::array();
  for (std::size_t i = 0; i < holes.size() && i < kFreeBlocksShown; ++i) {
    largest.push_back({packed.offset_of(holes[i].second), holes[i].first});
  }
  return {{"segments_bytes", segment_bytes}, {"mapped", mapped},          {"count", holes.size()},
          {"bytes", free_bytes},              {"largest", largest},         {"complete", blocks.dropped_blocks == 0 && blocks.dropped_segments == 0}};
}

// Blocks: [offset, size, requested, tag, layer, placed event, freed event (null: live at the
// end), placed time, freed time]; segments: [offset, bytes, from time, to time, from event,
// to event]. `end` and `end_event` close what was still live.
json map_of(const TenantBlocks& blocks, const Trace& trace, Nanos end, std::size_t end_event, std::size_t cap) {
  const PackedAddresses packed(blocks);
  const std::vector<Tag> tags = tags_by_id(trace);
  std::vector<std::size_t> order(blocks.blocks.size());
  std::iota(order.begin(), order.end(), 0);
  if (order.size() > cap) {
    // The blocks a person sees at this scale: the largest in bytes x lifetime.
    const auto area = [&](std::size_t i) {
      const BlockSpan& b = blocks.blocks[i];
      const Nanos until = b.freed_event == kStillLive ? end : b.freed;
      return static_cast<double>(b.size) * static_cast<double>(std::max<Nanos>(until - b.placed, 1));
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return area(a) > area(b); });
    order.resize(cap);
    std::sort(order.begin(), order.end());
  }
  // Colour by tag, unless every allocation's tag is `other` (a recording's) and the trace
  // names layers (a recording's layers, from its frames): then by layer, the ones
  // largest in bytes x lifetime each a colour of their own.
  const bool by_layer = trace.layer_names.size() > 1 &&
                        std::all_of(tags.begin(), tags.end(), [](Tag tag) { return tag == Tag::other; });
  json palette = json::array();
  if (by_layer) {
    std::vector<double> area(trace.layer_names.size(), 0);
    for (const std::size_t i : order) {
      const BlockSpan& b = blocks.blocks[i];
      const Nanos until = b.freed_event == kStillLive ? end : b.freed;
      area[trace.layer[index_of(b.id)]] += static_cast<double>(b.size) * static_cast<double>(std::max<Nanos>(until - b.placed, 1));
    }
    std::vector<std::uint32_t> layers(area.size());
    std::iota(layers.begin(), layers.end(), 0);
    std::stable_sort(layers.begin(), layers.end(), [&](std::uint32_t a, std::uint32_t b) { return area[a] > area[b]; });
    // An allocation with no frame of the program stays grey with the rest: the colours go to
    // the program's own lines.
    std::erase_if(layers, [&](std::uint32_t layer) { return trace.layer_names[layer] == TorchRecording::kNoFrame; });
    for (std::size_t k = 0; k < layers.size() && k < kColouredLayers && area[layers[k]] > 0; ++k) palette.push_back(layers[k]);
  }
  json drawn = json::array();
  for (const std::size_t i : order) {
    const BlockSpan& b = blocks.blocks[i];
    const std::size_t id = index_of(b.id);
    const int layer = trace.layer.empty() ? -1 : static_cast<int>(trace.layer[id]);
    const bool live = b.freed_event == kStillLive;
    drawn.push_back({packed.offset_of(b.addr), b.size, b.requested, static_cast<int>(tags[id]), layer, b.placed_event,
                     live ? json(nullptr) : json(b.freed_event), b.placed, live ? end : b.freed});
  }
  json segments = json::array();
  for (const SegmentSpan& s : blocks.segments) {
    const bool live = s.released_event == kStillLive;
    segments.push_back({packed.offset_of(s.addr), s.bytes, s.reserved, live ? end : s.released, s.reserved_event,
                        live ? end_event : s.released_event});
  }
  return {{"extent", packed.extent()},
          {"ranges", packed.ranges()},
          {"segments", segments},
          {"blocks", drawn},
          {"total_blocks", blocks.blocks.size() + blocks.dropped_blocks},
          {"shown_blocks", drawn.size()},
          {"layers", trace.layer_names},
          {"colour_by", by_layer ? "layer" : "tag"},
          {"palette", palette}};
}

// --json's object of the OOM, with what the page tells beside it.
json oom_of(const OomRecord& oom, json free) {
  json told = oom_json(oom);
  told["text"] = describe_oom(oom);
  told["state"] = oom.policy_state;
  told["holders"] = describe_holders(holders_at(oom.context));
  told["free"] = std::move(free);
  return told;
}

// Each OOM told, the first kOomsShown: where the free blocks are the same as at the OOM
// told before, it says at which event they were shown ("free_as_at") instead of repeating
// them. (The policy's own account comes with the first OOM alone: the engine asks once.)
json ooms_of(const TenantResult& tenant, const TenantBlocks& blocks) {
  const PackedAddresses packed(blocks);
  json ooms = json::array();
  json shown_free;
  std::size_t free_event = 0;
  for (std::size_t i = 0; i < tenant.ooms.size() && i < kOomsShown; ++i) {
    const OomRecord& oom = tenant.ooms[i];
    json free = free_blocks_at(blocks, packed, oom.event);
    json told = oom_of(oom, free);
    if (i > 0 && free == shown_free) {
      told["free"] = nullptr;
      told["free_as_at"] = free_event;
    } else {
      shown_free = std::move(free);
      free_event = oom.event;
    }
    ooms.push_back(std::move(told));
  }
  return ooms;
}

// Several runs of one program (a compare, a replay under several policies): each policy's
// allocator costs put it on its own simulated clock, so their charts share the trace's
// event index instead, the same moment of the program at the same x.
bool one_program(std::span<const ReportedRun> runs) {
  if (runs.size() < 2) return false;
  return std::all_of(runs.begin(), runs.end(), [&](const ReportedRun& run) {
    return run.scenario.tenants.size() == 1 && run.scenario.tenants[0].trace == runs[0].scenario.tenants[0].trace;
  });
}

// The tenant's fields, each under its column's name: the run metrics but the wall-clock ones
// (the page's bytes are the same on every run), then the study's row over them.
json fields_of(const ReportedRun& run, const TenantResult& tenant) {
  json fields = metrics_json(run.result, tenant, [](const Metric& metric) { return !is_wall_clock(metric); });
  if (run.row.is_null()) return fields;
  if (run.result.tenants.size() != 1) throw std::logic_error("a study's row for a run of several tenants");
  for (const auto& [name, value] : run.row.items()) {
    if (name == "text" || name == "brief") {
      for (const auto& [field, shown] : value.items()) fields[name][field] = shown;
    } else {
      fields[name] = value;
    }
  }
  return fields;
}

// What the page draws of each run's device: its fields of the run metrics.
json device_of(const RunResult& run) {
  const TenantResult none;
  return metrics_json(run, run.tenants.empty() ? none : run.tenants.front(),
                      [](const Metric& metric) { return metric.name == "device" || metric.name == "capacity_bytes"; });
}

// A key of the page's own beside the fields: a column of that name would be hidden by it.
void add_own(json& lane, const char* key, json value) {
  if (lane.contains(key)) throw std::logic_error(std::string("a column is named ") + key + ", as the report's own key");
  lane[key] = std::move(value);
}

}  // namespace

std::string run_title(const RunResult& run) {
  std::string title;
  for (const TenantResult& tenant : run.tenants) {
    if (!title.empty()) title += ", ";
    title += tenant.workload + " with " + tenant.policy;
  }
  return title;
}

std::string run_report_data(std::string_view title, std::string_view command, std::span<const ReportedRun> runs,
                            std::size_t map_blocks) {
  json lanes = json::array();
  json devices = json::array();
  const TenantBlocks none;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const ReportedRun& run = runs[r];
    devices.push_back(device_of(run.result));
    for (const TenantResult& tenant : run.result.tenants) {
      const Trace& trace = *run.scenario.tenants[tenant.index].trace;
      const auto& logged = run.recorders.blocks.tenants();
      const TenantBlocks& blocks = tenant.index < logged.size() ? logged[tenant.index] : none;
      Breakdown peak = tenant.at_peak;
      // With --on-oom stop nothing was skipped: the trace alone tells every layer alive at the peak.
      if (tenant.peak_allocated > 0 && (tenant.oom_count == 0 || run.scenario.on_oom == OnOom::stop)) {
        peak = live_breakdown(trace, tenant.peak_event, {}, kPeakLayers);
      }
      std::string label = run.result.tenants.size() > 1 ? "tenant " + std::to_string(tenant.index) + ": " : std::string();
      label += run.label.empty() ? tenant.policy : run.label;
      json lane = fields_of(run, tenant);
      add_own(lane, "label", label);
      add_own(lane, "run", r);
      add_own(lane, "verdict_detail", verdict_json(run.result, tenant));
      add_own(lane, "peak", tenant.peak_allocated > 0 ? breakdown_of(peak) : json(nullptr));
      add_own(lane, "series", series_of(run.recorders.timeline, tenant.index));
      add_own(lane, "map", map_of(blocks, trace, tenant.end_time, tenant.events_replayed, map_blocks));
      add_own(lane, "ooms", ooms_of(tenant, blocks));
      lanes.push_back(std::move(lane));
    }
  }
  json tags = json::array();
  for (int tag = 0; tag < kTagCount; ++tag) tags.push_back(name_of(static_cast<Tag>(tag)));
  const json page = {{"kind", "run"},   {"title", title},          {"command", command}, {"version", allocsim_version()},
                     {"tags", tags},    {"runs", devices},         {"lanes", lanes},     {"map_cap", map_blocks},
                     {"x_axis", one_program(runs) ? "event" : "time"}};
  return page.dump();
}

}  // namespace allocsim
