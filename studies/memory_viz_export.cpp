#include "studies/memory_viz_export.hpp"

#include <algorithm>
#include <limits>

#include "sim/error.hpp"
#include "workloads/pickle_writer.hpp"

namespace allocsim {
namespace {

constexpr Bytes kSmallSegment = 2_MiB;  // PyTorch's small pool segment: the viewer's "small"
constexpr Addr kRebasedStart = 1_GiB;   // where the lowest segment's GiB lands
constexpr Addr kLargestInteger = Addr{1} << 53;  // exact in a double: the viewer's oldest unpickler

const char* name_of(MemoryVizExport::Action action) {
  using A = MemoryVizExport::Action;
  switch (action) {
    case A::alloc: return "alloc";
    case A::free_requested: return "free_requested";
    case A::free_completed: return "free_completed";
    case A::segment_alloc: return "segment_alloc";
    case A::segment_free: return "segment_free";
    case A::segment_map: return "segment_map";
    case A::segment_unmap: return "segment_unmap";
    case A::oom: return "oom";
  }
  return "?";
}

double time_us(Nanos time) { return static_cast<double>(time) / 1000.0; }


}  // namespace

MemoryVizExport::MemoryVizExport(const Scenario& scenario) : scenario_(scenario), tenants_(scenario.tenants.size()) {}

MemoryVizExport::Tenant* MemoryVizExport::recording(std::size_t tenant) {
  Tenant& state = tenants_.at(tenant);
  return state.exited ? nullptr : &state;
}

void MemoryVizExport::add(Tenant& tenant, Action action, Addr addr, Bytes size, Stream stream, Nanos time) {
  tenant.entries.push_back(Entry{action, addr, size, stream, time});
}

void MemoryVizExport::on_block(const BlockEvent& event) {
  Tenant* tenant = recording(event.tenant);
  if (!tenant) return;
  const std::uint32_t id = index_of(event.id);
  switch (event.action) {
    case BlockAction::placed:
      tenant->live[id] = LiveBlock{event.addr, event.size, event.requested, event.stream};
      add(*tenant, Action::alloc, event.addr, event.requested, event.stream, event.time);
      break;
    case BlockAction::freed:
      tenant->live.erase(id);
      add(*tenant, Action::free_requested, event.addr, event.requested, event.stream, event.time);
      add(*tenant, Action::free_completed, event.addr, event.requested, event.stream, event.time);
      break;
    case BlockAction::moved: {
      LiveBlock& block = tenant->live.at(id);
      add(*tenant, Action::free_requested, event.from, block.requested, block.stream, event.time);
      add(*tenant, Action::free_completed, event.from, block.requested, block.stream, event.time);
      block.addr = event.addr;
      add(*tenant, Action::alloc, event.addr, block.requested, block.stream, event.time);
      break;
    }
  }
}

void MemoryVizExport::on_segment(const SegmentEvent& event) {
  Tenant* tenant = recording(event.tenant);
  if (!tenant) return;
  switch (event.action) {
    case SegmentAction::alloc:
      tenant->segments[event.addr] = Piece{event.bytes, event.stream};
      add(*tenant, Action::segment_alloc, event.addr, event.bytes, event.stream, event.time);
      break;
    case SegmentAction::free:
      tenant->segments.erase(event.addr);
      add(*tenant, Action::segment_free, event.addr, event.bytes, event.stream, event.time);
      break;
    case SegmentAction::map:
      tenant->mapped[event.addr] = Piece{event.bytes, event.stream};
      add(*tenant, Action::segment_map, event.addr, event.bytes, event.stream, event.time);
      break;
    case SegmentAction::unmap: {
      // Cut [addr, end) out of the mapped pieces: an unmap may cover several maps.
      const Addr end = event.addr + event.bytes;
      std::map<Addr, Piece> kept;
      for (const auto& [at, piece] : tenant->mapped) {
        const Addr piece_end = at + piece.size;
        if (piece_end <= event.addr || at >= end) {
          kept.emplace(at, piece);
          continue;
        }
        if (at < event.addr) kept.emplace(at, Piece{event.addr - at, piece.stream});
        if (piece_end > end) kept.emplace(end, Piece{piece_end - end, piece.stream});
      }
      tenant->mapped = std::move(kept);
      add(*tenant, Action::segment_unmap, event.addr, event.bytes, event.stream, event.time);
      break;
    }
  }
}

void MemoryVizExport::on_oom(const OomRecord& record) {
  Tenant* tenant = recording(record.tenant);
  if (!tenant) return;
  const Trace& trace = *scenario_.tenants.at(record.tenant).trace;
  const Stream stream = record.at_start ? 0 : trace.events.at(record.event).stream;
  Entry entry{Action::oom, 0, record.bytes, stream, record.time};
  entry.device_free = record.context.device_available;
  tenant->entries.push_back(entry);
}

void MemoryVizExport::on_exit(std::size_t tenant, Nanos) { tenants_.at(tenant).exited = true; }

void MemoryVizExport::write_segments(PickleWriter& pickle, std::size_t device, const Tenant& tenant, Addr shift) const {
  struct Span {
    Addr addr;
    Bytes size;
    Stream stream;
    bool expandable;
  };
  std::vector<Span> spans;
  for (const auto& [addr, piece] : tenant.segments) spans.push_back(Span{addr, piece.size, piece.stream, false});
  for (const auto& [addr, piece] : tenant.mapped) {  // adjacent mapped pages of one stream: one segment
    Span* last = spans.empty() || !spans.back().expandable ? nullptr : &spans.back();
    if (last && last->addr + last->size == addr && last->stream == piece.stream) {
      last->size += piece.size;
    } else {
      spans.push_back(Span{addr, piece.size, piece.stream, true});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.addr < b.addr; });
  std::vector<LiveBlock> blocks;
  for (const auto& [id, block] : tenant.live) blocks.push_back(block);
  std::sort(blocks.begin(), blocks.end(), [](const LiveBlock& a, const LiveBlock& b) { return a.addr < b.addr; });

  const auto outside = [&](const LiveBlock& block) {
    return Error("--memory-viz: tenant " + std::to_string(device) + "'s block at " + format_address(block.addr) + " of " +
                 format_bytes(block.size) + " lies outside every segment its policy holds, or overlaps another block");
  };
  std::size_t next = 0;
  for (const Span& span : spans) {
    const Addr end = span.addr + span.size;
    if (next < blocks.size() && blocks[next].addr < span.addr) throw outside(blocks[next]);
    std::size_t last = next;
    Bytes allocated = 0;
    Bytes requested = 0;
    while (last < blocks.size() && blocks[last].addr < end) {
      allocated += blocks[last].size;
      requested += blocks[last].requested;
      ++last;
    }
    pickle.begin_dict();
    pickle.item("device", static_cast<std::int64_t>(device));
    pickle.item("address", span.addr - shift);
    pickle.item("total_size", span.size);
    pickle.item("allocated_size", allocated);
    pickle.item("active_size", allocated);
    pickle.item("requested_size", requested);
    pickle.item("stream", static_cast<std::int64_t>(span.stream));
    pickle.item("segment_type", span.size == kSmallSegment ? "small" : "large");
    pickle.key("segment_pool_id");
    pickle.begin_list();
    pickle.value(0);
    pickle.value(0);
    pickle.end_list();
    pickle.item("is_expandable", span.expandable);
    pickle.key("frames");
    pickle.begin_list();
    pickle.end_list();
    pickle.key("blocks");
    pickle.begin_list();
    const auto block = [&](Addr addr, Bytes size, Bytes block_requested, const char* state) {
      pickle.begin_dict();
      pickle.item("address", addr - shift);
      pickle.item("size", size);
      pickle.item("requested_size", block_requested);
      pickle.item("state", state);
      pickle.key("frames");
      pickle.begin_list();
      pickle.end_list();
      pickle.end_dict();
    };
    Addr cursor = span.addr;
    for (; next < last; ++next) {
      const LiveBlock& live = blocks[next];
      if (live.addr < cursor || live.addr + live.size > end) throw outside(live);
      if (live.addr > cursor) block(cursor, live.addr - cursor, 0, "inactive");
      block(live.addr, live.size, live.requested, "active_allocated");
      cursor = live.addr + live.size;
    }
    if (cursor < end) block(cursor, end - cursor, 0, "inactive");
    pickle.end_list();
    pickle.end_dict();
  }
  if (next < blocks.size()) throw outside(blocks[next]);
}

void MemoryVizExport::write(std::ostream& out) const {
  // The rebase: the lowest address any segment ever had, down to its GiB, becomes 1 GiB.
  Addr lowest = std::numeric_limits<Addr>::max();
  Addr highest = 0;
  const auto span = [&](Addr addr, Bytes size) {
    lowest = std::min(lowest, addr);
    highest = std::max(highest, addr + size);
  };
  for (const Tenant& tenant : tenants_) {
    for (const Entry& entry : tenant.entries) {
      if (entry.action != Action::oom) span(entry.addr, entry.size);
    }
  }
  if (highest == 0) lowest = kRebasedStart;
  const Addr base = align_down(lowest, 1_GiB);
  const Addr shift = base - kRebasedStart;  // wraps when base is 0: addr - shift still adds 1 GiB
  if (highest - shift >= kLargestInteger) {
    throw Error("--memory-viz: the run's segments span " + format_bytes(highest - base) +
                " of addresses, past the 2^53 the viewer reads exactly");
  }
  PickleWriter pickle(out);
  pickle.begin_dict();
  pickle.key("segments");
  pickle.begin_list();
  for (std::size_t device = 0; device < tenants_.size(); ++device) write_segments(pickle, device, tenants_[device], shift);
  pickle.end_list();
  pickle.key("device_traces");
  pickle.begin_list();
  for (const Tenant& tenant : tenants_) {
    pickle.begin_list();
    for (const Entry& entry : tenant.entries) {
      pickle.begin_dict();
      pickle.item("action", name_of(entry.action));
      if (entry.action == Action::oom) {
        pickle.item("device_free", entry.device_free);
      } else {
        pickle.item("addr", entry.addr - shift);
      }
      pickle.item("size", entry.size);
      pickle.item("stream", static_cast<std::int64_t>(entry.stream));
      pickle.item("time_us", time_us(entry.time));
      pickle.key("frames");
      pickle.begin_list();
      pickle.end_list();
      pickle.end_dict();
    }
    pickle.end_list();
  }
  pickle.end_list();
  pickle.end_dict();
  pickle.finish();
}

}  // namespace allocsim
