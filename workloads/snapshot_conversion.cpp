// Reading rules (the trace's events, sim/trace.hpp; the recording's fields, torch_recording.hpp):
// - `alloc` -> alloc at the address (the recording's `addresses`), bytes = the unrounded request, tag = other
//   (or the entry's `category`, where a snapshot carries one: PARAMETER -> weight,
//   OPTIMIZER_STATE -> optimizer, INPUT -> input, TEMPORARY -> temp, ACTIVATION and
//   AUTOGRAD_DETAIL -> activation, GRADIENT -> gradient), stream = the CUDA stream renumbered
//   0,1,2... in order of the raw stream values (PyTorch orders free blocks and releases by
//   the raw stream, so ties break the same way). Its layer (layer_of_frames: the innermost
//   frame of the program's Python code, `model.py:42 forward`, or `autograd backward`; none
//   when frames were not recorded) goes in the recording's `frames`/`alloc_frames` and the
//   trace's layers: what every output names a block by and a report colours it by.
// - Devices: one trace list per visible device; cuda_device N, else the only non-empty one.
// - PyTorch 2.0 and 2.1 record no time_us: entries are then 1 us apart. 2.0 blocks carry no
//   address (the segment's address plus the sizes of the blocks before) and no requested
//   size (history[0].real_size, else the size). A bare list of segments (PyTorch <= 1.13,
//   no trace) is refused.
// - `free_completed` -> free: the block becomes reusable then. `free_requested` carries
//   nothing, except that it may reveal a pre-existing block.
// - Pre-existing blocks (the recording started mid-run, or the ring buffer wrapped): a block
//   whose first trace entry is a free, and an active block of the snapshot's `segments`
//   that the trace never mentions, become allocs at time 0 before everything else.
// - empty_cache(): a maximal run of consecutive `segment_free`/`segment_unmap` entries
//   becomes one `release` at the time of its first entry, unless an `oom` entry follows
//   it before the next `alloc`: then it is the allocator's own release stages inside a
//   malloc that failed (CachingAllocator's malloc records `oom` after releasing), which a
//   simulator redoes by itself. Limitation: a retry that *succeeded* (segment_free...,
//   segment_alloc, alloc) looks exactly like empty_cache() followed by a malloc that needs
//   a new segment, so it becomes a release too; so do garbage-collection frees.
// - time_ns = (time_us - first time_us) * 1000, rounded half to even, clamped so times
//   never decrease.
// Where Python's rules compared values of any type, this port asks for numbers where a
// number is used (a segment's stream), and says so by entry; an address or size the
// recording keeps must not be negative.
#include "workloads/snapshot_conversion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/error.hpp"
#include "sim/trace.hpp"
#include "sim/types.hpp"
#include "workloads/python_repr.hpp"

namespace allocsim {
namespace {

using nlohmann::json;
using Value = PickleValue;

constexpr std::string_view kActions[] = {"alloc",         "free_requested", "free_completed", "segment_alloc", "segment_free",
                                         "segment_map",   "segment_unmap",  "snapshot",       "oom"};
constexpr std::int64_t kSmallSegment = 2 << 20;  // the small pool's segment size; large-pool segments are >= 10 MiB

// A problem with the input: Error("ORIGIN: " + what) at the top.
struct Bad {
  std::string what;
};

bool is_one_of(const Value& item, std::initializer_list<std::string_view> names) {
  const json& value = item.scalar();
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return std::find(names.begin(), names.end(), text) != names.end();
}
bool is_action(const Value& value, std::string_view name) {
  return value.is_string() && value.scalar().get_ref<const std::string&>() == name;
}
bool is_release(const Value& action) { return is_one_of(action, {"segment_free", "segment_unmap"}); }
bool is_segment_action(const Value& action) {
  return is_one_of(action, {"segment_alloc", "segment_free", "segment_map", "segment_unmap"});
}
bool is_known_action(const Value& action) {
  return action.is_string() && std::find(std::begin(kActions), std::end(kActions),
                                         action.scalar().get_ref<const std::string&>()) != std::end(kActions);
}

// Python's int that is not a bool, within 64 signed bits (a pickle's ints are 64 bits).
std::optional<std::int64_t> as_int(const json& value) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(number);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}
std::optional<std::int64_t> as_int(const Value& value) { return as_int(value.scalar()); }
bool is_int(const Value& value) { return as_int(value).has_value(); }

// Python's truth value of a plain value.
bool truthy(const Value& item) {
  if (item.is_object() || item.is_array()) return !item.empty();
  const json& value = item.scalar();
  switch (value.type()) {
    case json::value_t::null: return false;
    case json::value_t::boolean: return value.get<bool>();
    case json::value_t::number_integer: return value.get<std::int64_t>() != 0;
    case json::value_t::number_unsigned: return value.get<std::uint64_t>() != 0;
    case json::value_t::number_float: return value.get<double>() != 0;
    case json::value_t::string: return !value.get_ref<const std::string&>().empty();
    case json::value_t::binary: return !value.get_binary().empty();
    default: return !value.empty();
  }
}

// Python's `value == number` for a plain value (a bool or a float can equal an int).
bool equals(const Value& item, std::int64_t number) {
  const json& value = item.scalar();
  if (value.is_boolean()) return static_cast<std::int64_t>(value.get<bool>()) == number;
  if (const auto whole = as_int(value)) return *whole == number;
  if (value.is_number_float()) return value.get<double>() == static_cast<double>(number);
  return false;
}

// dict.get(key): None when absent.
Value get(const Value& dict, const char* key) { return dict.get(key); }
bool has(const Value& dict, const char* key) { return dict.contains(key); }
std::string shown(const Value& value) { return allocsim::shown(value.to_json()); }
std::string python_str(const Value& value) { return allocsim::python_str(value.to_json()); }

// The device a segment belongs to: its `device`, else the converted one.
bool on_device(const Value& segment, int device) { return !has(segment, "device") || equals(get(segment, "device"), device); }

// A time_us: an int, or a float where a snapshot has one.
struct Time {
  bool real = false;
  std::int64_t whole = 0;
  double value = 0;
  double as_double() const { return real ? value : static_cast<double>(whole); }
  bool operator<(const Time& other) const {
    return real || other.real ? as_double() < other.as_double() : whole < other.whole;
  }
};

std::string hex(std::int64_t addr) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::uint64_t magnitude = addr < 0 ? 0 - static_cast<std::uint64_t>(addr) : static_cast<std::uint64_t>(addr);
  std::string digits;
  do {
    digits += kDigits[magnitude & 15];
    magnitude >>= 4;
  } while (magnitude != 0);
  std::reverse(digits.begin(), digits.end());
  return (addr < 0 ? "-0x" : "0x") + digits;
}

std::string device_where(int device, std::size_t index) {
  return "device_traces[" + std::to_string(device) + "][" + std::to_string(index) + "]";
}

// A whole number the recording keeps unsigned (an address, a size): negative is refused.
std::uint64_t unsigned_of(std::int64_t value, const std::string& where, const char* key) {
  if (value < 0) throw Bad{where + ": '" + key + "' is negative (" + std::to_string(value) + ")"};
  return static_cast<std::uint64_t>(value);
}
// addr + size, which must not pass 2^63.
std::int64_t end_of(std::int64_t addr, std::int64_t size, const std::string& where) {
  std::int64_t end = 0;
  if (__builtin_add_overflow(addr, size, &end)) throw Bad{where + ": address plus size is out of range"};
  return end;
}

// The snapshot's top level, checked.
void check_top_level(const Value data) {
  if (data.is_array()) {
    const std::vector<Value> items = data.elements();
    const bool segments_only = std::all_of(items.begin(), items.end(), [](const Value& item) {
      return item.is_object() && item.contains("total_size");
    });
    if (segments_only) {
      throw Bad{"a bare list of segments with no trace: a snapshot from PyTorch 1.13 or older "
                "(torch.cuda.memory_snapshot()), which records no trace; replaying needs PyTorch 2.0 "
                "or later (torch.cuda.memory._record_memory_history, then _dump_snapshot)"};
    }
  }
  if (!data.is_object()) {
    const json& scalar = data.scalar();
    const char* type = data.is_tuple()               ? "tuple"
                       : data.is_array()             ? "list"
                       : scalar.is_string()          ? "str"
                       : scalar.is_boolean()         ? "bool"
                       : scalar.is_number_float()    ? "float"
                       : scalar.is_number_integer()  ? "int"
                       : scalar.is_binary()          ? "bytes"
                                                     : "NoneType";
    throw Bad{std::string("not a memory snapshot: the pickle holds a ") + type + ", not a dict"};
  }
  for (const char* key : {"segments", "device_traces"}) {
    if (!get(data, key).is_array() || get(data, key).is_tuple()) throw Bad{std::string("not a memory snapshot: no '") + key + "' list"};
  }
  if (data.get("device_traces").empty()) throw Bad{"no device traces (was _record_memory_history enabled?)"};
}

int chosen_device(const Value snapshot, std::optional<int> device) {
  const Value traces = snapshot.get("device_traces");
  if (device) {
    if (*device < 0 || static_cast<std::size_t>(*device) >= traces.size()) {
      throw Bad{"no device trace " + std::to_string(*device) + " (the snapshot has " + std::to_string(traces.size()) + ")"};
    }
    return *device;
  }
  std::vector<int> used;
  for (std::size_t index = 0; index < traces.size(); ++index) {
    if (truthy(traces[index])) used.push_back(static_cast<int>(index));
  }
  if (used.empty()) {
    throw Bad{"all " + std::to_string(traces.size()) + " device traces are empty (was _record_memory_history enabled?)"};
  }
  if (used.size() > 1) {
    std::string listed;
    for (const int index : used) {
      if (!listed.empty()) listed += ", ";
      const Value entries = traces[static_cast<std::size_t>(index)];
      const std::size_t length = entries.is_string() ? entries.scalar().get_ref<const std::string&>().size() : entries.size();
      listed += std::to_string(index) + " (" + std::to_string(length) + " entries)";
    }
    throw Bad{std::to_string(used.size()) + " devices have traces: " + listed + "; choose one with --cuda-device N"};
  }
  return used.front();
}

// The keys each action must carry besides `action` and `time_us`.
std::vector<const char*> required_keys(const Value action) {
  if (is_action(action, "oom")) return {"device_free", "size", "stream"};
  if (is_action(action, "snapshot")) return {};
  return {"addr", "size", "stream"};
}

// The device's trace entries checked for the keys their action needs, and their times
// (PyTorch before 2.2 records no time_us: then every entry is 1 us after the one before).
struct Entries {
  Value list;
  std::vector<Time> times;
  bool timed = false;
  Value operator[](std::size_t index) const { return list[index]; }
  std::size_t size() const { return list.size(); }
};

Entries checked_entries(const Value snapshot, int device) {
  const Value entries = snapshot.get("device_traces")[static_cast<std::size_t>(device)];
  if (!entries.is_array() || entries.empty()) throw Bad{"device trace " + std::to_string(device) + " is empty"};
  Entries result{entries, {}, false};
  const std::vector<Value> items = entries.elements();
  result.timed = std::any_of(items.begin(), items.end(),
                             [](const Value& entry) { return entry.is_object() && entry.contains("time_us"); });
  result.times.reserve(entries.size());
  for (std::size_t index = 0; index < entries.size(); ++index) {
    const Value entry = entries[index];
    const std::string where = device_where(device, index);
    if (!entry.is_object() || !entry.contains("action")) {
      throw Bad{where + " is not a trace entry (a dict with an 'action')"};
    }
    const Value action = entry.get("action");
    std::vector<const char*> keys;
    if (result.timed) keys.push_back("time_us");
    if (is_known_action(action)) {
      for (const char* key : required_keys(action)) keys.push_back(key);
    }
    for (const char* key : keys) {
      if (!entry.contains(key)) throw Bad{where + " (" + printable(python_str(action)) + ") lacks key '" + key + "'"};
      const Value value = entry.get(key);
      const bool time = std::string_view(key) == "time_us";
      if (!is_int(value) && !(time && value.scalar().is_number_float())) {
        throw Bad{where + " (" + printable(python_str(action)) + "): '" + key + "' is " + shown(value) + ", not a number"};
      }
    }
    if (is_one_of(action, {"alloc", "free_requested", "free_completed"}) && *as_int(entry.get("size")) < 0) {
      throw Bad{where + " (" + action.scalar().get<std::string>() + "): negative size " + std::to_string(*as_int(entry.get("size")))};
    }
    if (!result.timed) {
      result.times.push_back(Time{false, static_cast<std::int64_t>(index), 0});
    } else if (const auto whole = as_int(entry.get("time_us"))) {
      result.times.push_back(Time{false, *whole, 0});
    } else {
      result.times.push_back(Time{true, 0, entry.get("time_us").scalar().get<double>()});
    }
  }
  return result;
}

// Whether a frame is the program's own Python code: a .py file outside torch. PyTorch's own
// Python is not, nor is any C++ frame, of torch or of a library (`thread48.o`, libstdc++'s
// thread start, runs autograd's engine), nor Python's frozen bootstrap (`<frozen ...>`).
bool program_python(std::string path) {
  std::replace(path.begin(), path.end(), '\\', '/');
  if (!path.ends_with(".py") || path.starts_with('<')) return false;
  return !path.starts_with("torch/") && path.find("/torch/") == std::string::npos;
}

// Whether a frame runs in autograd's engine, whose threads execute the backward pass.
bool autograd_engine(const Value& frame) {
  const Value name = get(frame, "name");
  return name.is_string() && name.scalar().get_ref<const std::string&>().find("torch::autograd::Engine::") != std::string::npos;
}

}  // namespace

std::optional<std::string> layer_of_frames(const PickleValue& frames) {
  if (!frames.is_array()) return std::nullopt;
  bool in_backward = false;
  for (const Value& frame : frames.elements()) {
    if (!frame.is_object()) continue;
    in_backward = in_backward || autograd_engine(frame);
    if (!get(frame, "filename").is_string()) continue;
    std::string path = frame.get("filename").scalar().get<std::string>();
    if (!program_python(path)) continue;
    std::replace(path.begin(), path.end(), '\\', '/');
    std::string text = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    if (const auto line = as_int(get(frame, "line"))) text += ":" + std::to_string(*line);
    const Value name = get(frame, "name");
    if (name.is_string() && !name.scalar().get_ref<const std::string&>().empty()) text += " " + name.scalar().get<std::string>();
    return printable(text);
  }
  if (in_backward) return std::string(kAutogradBackward);
  return std::nullopt;
}

namespace {

// Our tag for a memory profiler category (torch.profiler._memory_profiler.Category), or other.
Tag category_tag(const Value category) {
  if (!category.is_string()) return Tag::other;
  std::string name = category.scalar().get<std::string>();
  if (const auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  static const std::map<std::string, Tag, std::less<>> kTags = {
      {"parameter", Tag::weight},     {"optimizer_state", Tag::optimizer},  {"input", Tag::input},
      {"temporary", Tag::temp},       {"activation", Tag::activation},      {"autograd_detail", Tag::activation},
      {"gradient", Tag::gradient}};
  const auto found = kTags.find(name);
  return found == kTags.end() ? Tag::other : found->second;
}

struct Block {
  std::int64_t addr;
  std::int64_t size;
  std::int64_t requested;
  bool allocated;
};
struct DeviceSegment {
  std::size_t index;  // segments[index]
  std::int64_t addr, total;
  std::int64_t stream;  // the raw CUDA stream
  bool small, expandable;
  std::vector<Block> blocks;
};

// The device's segments, checked, blocks as they tile it. PyTorch 2.0 blocks carry no
// address (the segment's address plus the sizes of the blocks before) and no
// requested_size (the first history entry's real_size, else the size).
std::vector<DeviceSegment> device_segments(const Value snapshot, int device) {
  std::vector<DeviceSegment> result;
  const Value segments = snapshot.get("segments");
  for (std::size_t index = 0; index < segments.size(); ++index) {
    const Value segment = segments[index];
    const std::string where = "segments[" + std::to_string(index) + "]";
    if (!segment.is_object()) throw Bad{where + " is not a segment (a dict)"};
    if (!on_device(segment, device)) continue;
    const Value addr = get(segment, "address");
    const Value total = get(segment, "total_size");
    if (!is_int(addr) || !is_int(total)) {
      throw Bad{where + " lacks address or total_size (address " + shown(addr) + ", total_size " + shown(total) + ")"};
    }
    const std::optional<std::int64_t> stream = has(segment, "stream") ? as_int(segment.get("stream")) : 0;
    if (!stream) throw Bad{where + ": 'stream' is " + shown(segment.get("stream")) + ", not a number"};
    const Value raw_blocks = segment.get("blocks");
    if (has(segment, "blocks") && (!raw_blocks.is_array() || raw_blocks.is_tuple())) {
      throw Bad{where + ": 'blocks' is " + shown(raw_blocks) + ", not a list"};
    }
    unsigned_of(*as_int(addr), where, "address");
    unsigned_of(*as_int(total), where, "total_size");
    end_of(*as_int(addr), *as_int(total), where);
    const Value type = get(segment, "segment_type");
    if (has(segment, "segment_type") && !type.is_string()) throw Bad{where + ": 'segment_type' is " + shown(type) + ", not a str"};
    const bool small = has(segment, "segment_type") ? type.scalar().get_ref<const std::string&>() == "small"
                                                    : *as_int(total) == kSmallSegment;
    DeviceSegment out{index, *as_int(addr), *as_int(total), *stream, small, truthy(get(segment, "is_expandable")), {}};
    std::int64_t cursor = *as_int(addr);
    for (std::size_t number = 0; number < raw_blocks.size(); ++number) {
      const Value block = raw_blocks[number];
      const std::string block_where = where + ".blocks[" + std::to_string(number) + "]";
      if (!block.is_object() || !is_int(get(block, "size")) || *as_int(block.get("size")) < 0) {
        throw Bad{block_where + " lacks its size"};
      }
      const std::int64_t size = *as_int(block.get("size"));
      const std::optional<std::int64_t> block_addr = has(block, "address") ? as_int(block.get("address")) : cursor;
      if (!block_addr) throw Bad{block_where + ": 'address' is " + shown(block.get("address")) + ", not a number"};
      std::optional<std::int64_t> requested = as_int(get(block, "requested_size"));
      const Value history = get(block, "history");
      if (history.is_array() && !history.empty() && history[0].is_object()) {
        if (const auto real_size = as_int(get(history[0], "real_size"))) requested = real_size;
      }
      unsigned_of(*block_addr, block_where, "address");
      const Value state = get(block, "state");
      out.blocks.push_back(Block{*block_addr, size, requested.value_or(size),
                                 is_one_of(state, {"active_allocated", "active_pending_free"})});
      cursor = end_of(*block_addr, size, block_where);
    }
    result.push_back(std::move(out));
  }
  return result;
}

std::string snapshot_format(const Value snapshot, bool timed) {
  if (get(snapshot, "allocator_settings").is_object()) return "PyTorch 2.3 or later";
  if (timed) return "PyTorch 2.2 (time_us, no allocator_settings)";
  for (const Value& segment : snapshot.get("segments").elements()) {
    if (!segment.is_object()) continue;
    if (segment.contains("segment_pool_id")) return "PyTorch 2.1 (no time_us)";
    const Value blocks = get(segment, "blocks");
    if (!blocks.is_array()) continue;
    for (const Value& block : blocks.elements()) {
      if (block.is_object() && block.contains("address")) return "PyTorch 2.1 (no time_us)";
    }
  }
  return "PyTorch 2.0 (no time_us; block addresses computed from their segment)";
}

// A pool id as Python prints the tuple: "(3, 1)".
std::string pool_text(const Value pool) {
  std::string text = "(";
  for (std::size_t i = 0; i < pool.size(); ++i) text += (i == 0 ? "" : ", ") + python_repr(pool[i].to_json());
  return printable(text + (pool.size() == 1 ? ",)" : ")"));
}
bool is_default_pool(const Value pool) { return pool.size() == 2 && equals(pool[0], 0) && equals(pool[1], 0); }

// The private pools (CUDA graphs, MemPool) the device's segments or trace entries name:
// segment_pool_id / pool_id other than (0, 0), each with the first entry naming it.
std::vector<PrivatePool> private_pools(const Value snapshot, int device) {
  std::vector<PrivatePool> pools;
  const auto note = [&](const Value pool, const std::string& where) {
    if (!pool.is_array() || is_default_pool(pool)) return;
    const std::string text = pool_text(pool);
    for (const PrivatePool& known : pools) {
      if (known.pool == text) return;
    }
    pools.push_back(PrivatePool{text, where});
  };
  const Value segments = snapshot.get("segments");
  for (std::size_t index = 0; index < segments.size(); ++index) {
    const Value segment = segments[index];
    if (segment.is_object() && on_device(segment, device)) note(get(segment, "segment_pool_id"), "segments[" + std::to_string(index) + "]");
  }
  const Value entries = snapshot.get("device_traces")[static_cast<std::size_t>(device)];
  for (std::size_t index = 0; index < entries.size(); ++index) {
    if (entries[index].is_object()) note(get(entries[index], "pool_id"), device_where(device, index));
  }
  return pools;
}

struct Row {
  std::int64_t time_ns;
  Op op;  // alloc, free or release: a snapshot has no syncs
  std::int64_t addr;
  std::int64_t size;
  std::int64_t stream;  // raw CUDA stream, allocs only
  // The entry it came from: device_traces[device][entry], or segments[entry].blocks[block].
  std::size_t entry;
  std::size_t block = kNoBlock;
  static constexpr std::size_t kNoBlock = ~std::size_t{0};
};

struct SegmentEvent {
  RecordedSegmentEvent::Action action;
  std::int64_t addr, size, cuda_stream;
  std::size_t during;
};
struct Oom {
  std::int64_t size, device_free, cuda_stream;
  std::size_t row;
};

RecordedSegment plain_segment(std::int64_t addr, std::int64_t size, Stream stream, bool small, bool expandable) {
  return RecordedSegment{static_cast<Addr>(addr), static_cast<Bytes>(size), stream, small, expandable, {}};
}

// The segments that existed when recording began: those at the snapshot, with the trace's
// segment_alloc/free undone from last to first (blocks are left to the replay). An
// expandable segment is a mapped range: the trace's segment_map/unmap are undone on the
// ranges mapped at the snapshot, and what stays mapped held memory at the start.
// `streams`: ours for each raw CUDA stream.
std::vector<RecordedSegment> segments_at_start(const std::vector<RecordedSegment>& end_segments,
                                               const std::vector<SegmentEvent>& events,
                                               const std::map<std::int64_t, Stream>& streams) {
  using Action = RecordedSegmentEvent::Action;
  struct Range {
    std::int64_t addr, end;
    Stream stream;
    bool small;
  };
  std::map<std::int64_t, RecordedSegment> alive;
  std::vector<Range> mapped;
  for (const RecordedSegment& segment : end_segments) {
    const auto addr = static_cast<std::int64_t>(segment.addr);
    if (segment.expandable) {
      mapped.push_back(Range{addr, addr + static_cast<std::int64_t>(segment.size), segment.stream, segment.small});
    } else {
      alive[addr] = plain_segment(addr, static_cast<std::int64_t>(segment.size), segment.stream, segment.small, false);
    }
  }
  for (auto event = events.rbegin(); event != events.rend(); ++event) {
    const Stream stream = streams.at(event->cuda_stream);
    if (event->action == Action::alloc) {
      alive.erase(event->addr);
    } else if (event->action == Action::free) {
      alive[event->addr] = plain_segment(event->addr, event->size, stream, event->size == kSmallSegment, false);
    } else {  // segment_map, segment_unmap
      const std::int64_t start = event->addr, end = event->addr + event->size;
      std::vector<Range> pieces;
      for (const Range& range : mapped) {
        const Range below{range.addr, std::min(range.end, start), range.stream, range.small};
        const Range above{std::max(range.addr, end), range.end, range.stream, range.small};
        if (below.addr < below.end) pieces.push_back(below);
        if (above.addr < above.end) pieces.push_back(above);
      }
      mapped = std::move(pieces);
      if (event->action == Action::unmap) {
        // Large-pool pages are 20 MiB, small-pool ones 2 MiB (a guess where both fit: the
        // replay's first map of that range then differs, and replay-check says so).
        mapped.push_back(Range{start, end, stream, event->size % (10 * kSmallSegment) != 0});
      }
    }
  }
  std::stable_sort(mapped.begin(), mapped.end(), [](const Range& a, const Range& b) { return a.addr < b.addr; });
  std::vector<Range> merged;
  for (const Range& range : mapped) {  // adjacent mapped pieces of one range are one segment, as a snapshot lists them
    if (!merged.empty() && merged.back().end == range.addr && merged.back().stream == range.stream) {
      merged.back().end = range.end;
    } else {
      merged.push_back(range);
    }
  }
  for (const Range& range : merged) {
    alive[range.addr] = plain_segment(range.addr, range.end - range.addr, range.stream, range.small, true);
  }
  std::vector<RecordedSegment> result;
  result.reserve(alive.size());
  for (auto& [addr, segment] : alive) result.push_back(std::move(segment));
  return result;
}

// A number of allocator_settings that must be whole, from 0 to T's largest.
template <class T>
T whole(const json& value, std::string_view key) {
  constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  const std::optional<std::int64_t> number = as_int(value);
  if (!(value.is_number_unsigned() || (number && *number >= 0)) || value.get<std::uint64_t>() > most) {
    throw Bad{"allocator_settings: '" + std::string(key) + "' is " + allocsim::shown(value) + ", not a whole number from 0 to " +
              std::to_string(most)};
  }
  return static_cast<T>(value.get<std::uint64_t>());
}

// allocator_settings as the snapshot recorded them; PyTorch's defaults where it has none
// (max_split_size unlimited, roundup_power2_divisions 0 for each interval from 1 MB to 32 GB).
TorchAllocatorSettings allocator_settings(const Value snapshot) {
  TorchAllocatorSettings settings;
  const Value recorded = get(snapshot, "allocator_settings");
  if (!recorded.is_object()) {
    for (int i = 0; i < 16; ++i) settings.roundup_power2_divisions.emplace_back(std::uint64_t{1} << i, 0);
    return settings;
  }
  settings.recorded = true;
  const json item = recorded.to_json();
  const auto typed = [&](const char* key, json::value_t type, const char* what) {
    const auto found = item.find(key);
    if (found == item.end()) return false;
    const bool number = type == json::value_t::number_float && found->is_number();
    if (!number && found->type() != type) {
      throw Bad{std::string("allocator_settings: '") + key + "' is " + allocsim::shown(*found) + ", not " + what};
    }
    return true;
  };
  // PyTorch reports an unlimited max_split_size as SIZE_MAX, which older builds printed as -1.
  const auto max_split = item.find("max_split_size");
  if (max_split != item.end()) {
    const std::optional<std::int64_t> bytes = as_int(*max_split);
    if (bytes && *bytes >= 0 && *bytes < (std::int64_t{1} << 62)) settings.max_split_size = static_cast<Bytes>(*bytes);
  }
  if (typed("garbage_collection_threshold", json::value_t::number_float, "a number")) {
    settings.garbage_collection_threshold = item.at("garbage_collection_threshold").get<double>();
  }
  if (typed("expandable_segments", json::value_t::boolean, "a bool")) settings.expandable_segments = item.at("expandable_segments").get<bool>();
  if (typed("PYTORCH_CUDA_ALLOC_CONF", json::value_t::string, "a str")) settings.conf = item.at("PYTORCH_CUDA_ALLOC_CONF").get<std::string>();
  if (typed("roundup_power2_divisions", json::value_t::object, "a dict")) {
    for (const auto& [megabytes, divisions] : item.at("roundup_power2_divisions").items()) {
      std::uint64_t interval = 0;
      try {
        interval = parse_unsigned(megabytes, "roundup_power2_divisions interval '" + megabytes + "'");
      } catch (const Error& error) {
        throw Bad{std::string("allocator_settings: ") + error.what()};
      }
      settings.roundup_power2_divisions.emplace_back(interval, whole<std::uint64_t>(divisions, "roundup_power2_divisions"));
    }
  }
  std::sort(settings.roundup_power2_divisions.begin(), settings.roundup_power2_divisions.end());
  return settings;
}

// The rows replayed as the trace builder will: a row out of order, a second alloc of a live
// address or a free of one that is not live means the snapshot contradicts itself.
void check_rows(const std::vector<Row>& rows) {
  std::unordered_set<std::int64_t> live;
  std::int64_t last_time = 0;
  for (const Row& row : rows) {
    if (row.time_ns < last_time || (row.op == Op::alloc && !live.insert(row.addr).second) ||
        (row.op == Op::free && live.erase(row.addr) == 0)) {
      throw Bad{"inconsistent row " + std::to_string(row.time_ns) + "," +
                (row.op == Op::alloc ? "alloc" : row.op == Op::free ? "free" : "release") + "," + hex(row.addr) +
                ": two blocks at one address"};
    }
    last_time = row.time_ns;
  }
}

// time_ns of an entry: (time - first) * 1000 rounded half to even, as Python's round().
std::int64_t nanoseconds(const Time& latest, const Time& first, const std::string& where) {
  if (!latest.real && !first.real) {
    std::int64_t difference = 0, result = 0;
    if (!__builtin_sub_overflow(latest.whole, first.whole, &difference) &&
        !__builtin_mul_overflow(difference, std::int64_t{1000}, &result)) {
      return result;
    }
  } else {
    const double value = std::nearbyint((latest.as_double() - first.as_double()) * 1000);
    if (std::isfinite(value) && std::fabs(value) < 9.2e18) return static_cast<std::int64_t>(value);
  }
  throw Bad{where + ": 'time_us' is out of range"};
}

RecordedSegmentEvent::Action segment_action(const Value& action) {
  using Action = RecordedSegmentEvent::Action;
  const auto& name = action.scalar().get_ref<const std::string&>();
  return name == "segment_alloc" ? Action::alloc : name == "segment_free" ? Action::free
                                               : name == "segment_map"    ? Action::map
                                                                          : Action::unmap;
}

// The recording's frames as its trace's layers; nothing when the snapshot recorded none.
void name_layers(TorchRecording& recording) {
  Trace& trace = recording.trace;
  if (recording.alloc_frames.empty()) return;
  trace.layer_names = recording.frames;
  const auto none = static_cast<std::uint32_t>(trace.layer_names.size());
  trace.layer.assign(trace.allocations(), none);
  bool unnamed = false;
  for (std::size_t i = 0; i < recording.alloc_frames.size(); ++i) {
    const std::int64_t frame = recording.alloc_frames[i];
    if (frame == -1) {
      unnamed = true;
    } else {
      trace.layer[i] = static_cast<std::uint32_t>(frame);
    }
  }
  if (unnamed) trace.layer_names.emplace_back(TorchRecording::kNoFrame);
}

}  // namespace

TorchRecording read_snapshot_recording(const PickleValue& snapshot, const std::string& origin, std::optional<int> cuda_device) {
  try {
    check_top_level(snapshot);
    TorchRecording recording;
    const int device = chosen_device(snapshot, cuda_device);
    recording.device = device;
    const Entries entries = checked_entries(snapshot, device);
    const Time first_time = entries.times.front();
    Time latest = first_time;

    // For each index, whether the first alloc-or-oom entry at or after it is an oom: a
    // segment_free burst followed by oom before any alloc is part of a failed malloc.
    std::vector<bool> oom_next(entries.size(), false);
    bool next_is_oom = false;
    for (std::size_t index = entries.size(); index-- > 0;) {
      const Value action = entries[index].get("action");
      if (is_one_of(action, {"alloc", "oom"})) next_is_oom = is_action(action, "oom");
      oom_next[index] = next_is_oom;
    }

    std::vector<Row> body, pre_freed;
    std::vector<SegmentEvent> segment_events;
    std::vector<Oom> ooms;
    struct Origin {
      std::optional<std::string> frame;
      Tag tag;
    };
    std::vector<Origin> origins;  // of each alloc row of body, in order
    struct Live {
      std::int64_t size, stream;
    };
    std::unordered_map<std::int64_t, Live> live;  // blocks the output holds live
    std::unordered_set<std::int64_t> seen;

    for (std::size_t index = 0; index < entries.size(); ++index) {
      const Value entry = entries[index];
      const Value action = entry.get("action");
      const Time& time = entries.times[index];
      if (latest < time) latest = time;  // clamped: times never go back
      const std::int64_t time_ns = nanoseconds(latest, first_time, device_where(device, index));
      const bool with_addr = is_known_action(action) && !is_one_of(action, {"oom", "snapshot"});
      const std::int64_t addr = with_addr ? *as_int(entry.get("addr")) : 0;
      const auto size = [&] { return *as_int(entry.get("size")); };
      const auto stream = [&] { return *as_int(entry.get("stream")); };
      if (with_addr || is_action(action, "oom")) {
        const std::string where = device_where(device, index) + " (" + action.scalar().get<std::string>() + ")";
        unsigned_of(addr, where, "addr");
        unsigned_of(size(), where, "size");
        if (is_action(action, "oom")) unsigned_of(*as_int(entry.get("device_free")), where, "device_free");
        if (is_segment_action(action)) end_of(addr, size(), where);
      }
      if (is_action(action, "alloc")) {
        if (const auto found = live.find(addr); found != live.end()) {  // its free_completed is missing: free it here
          body.push_back(Row{time_ns, Op::free, addr, found->second.size, 0, index});
          live.erase(found);
        }
        live[addr] = Live{size(), stream()};
        seen.insert(addr);
        body.push_back(Row{time_ns, Op::alloc, addr, size(), stream(), index});
        origins.push_back(Origin{layer_of_frames(get(entry, "frames")), category_tag(get(entry, "category"))});
      } else if (is_one_of(action, {"free_requested", "free_completed"}) && !live.contains(addr)) {
        if (seen.contains(addr)) continue;  // freed twice, or never allocated after its last free
        seen.insert(addr);  // the block predates the recording: its size is the free's
        pre_freed.push_back(Row{0, Op::alloc, addr, size(), stream(), index});
        live[addr] = Live{size(), stream()};
      }
      if (is_action(action, "free_completed") && live.contains(addr)) {
        body.push_back(Row{time_ns, Op::free, addr, live[addr].size, 0, index});
        live.erase(addr);
      } else if (is_release(action) && (index == 0 || !is_release(entries[index - 1].get("action"))) && !oom_next[index]) {
        body.push_back(Row{time_ns, Op::release, 0, 0, 0, index});
      }
      if (is_segment_action(action)) {
        // The row whose processing made it: the alloc that follows a segment_alloc/map, or
        // the release row its burst became (a burst inside a failed malloc has none).
        const bool in_release = is_release(action) && !body.empty() && body.back().op == Op::release && !oom_next[index];
        segment_events.push_back(
            SegmentEvent{segment_action(action), addr, size(), stream(), in_release ? body.size() - 1 : body.size()});
      } else if (is_action(action, "oom")) {
        ooms.push_back(Oom{size(), *as_int(entry.get("device_free")), stream(), body.size()});
      }
    }

    const std::vector<DeviceSegment> segments = device_segments(snapshot, device);
    std::vector<Row> pre_kept;  // active at the snapshot, never mentioned by the trace
    for (const DeviceSegment& segment : segments) {
      for (std::size_t number = 0; number < segment.blocks.size(); ++number) {
        const Block& block = segment.blocks[number];
        if (block.allocated && !seen.contains(block.addr)) {
          unsigned_of(block.requested, "segments[" + std::to_string(segment.index) + "].blocks[" + std::to_string(number) + "]",
                      "requested_size");
          pre_kept.push_back(Row{0, Op::alloc, block.addr, block.requested, segment.stream, segment.index, number});
        }
      }
    }
    std::stable_sort(pre_kept.begin(), pre_kept.end(), [](const Row& a, const Row& b) { return a.addr < b.addr; });
    std::vector<Row> rows = pre_freed;
    rows.insert(rows.end(), pre_kept.begin(), pre_kept.end());
    rows.insert(rows.end(), body.begin(), body.end());
    const std::size_t shift = pre_freed.size() + pre_kept.size();
    origins.insert(origins.begin(), shift, Origin{std::nullopt, Tag::other});

    // cuda stream -> dense number in order of the raw values: PyTorch orders free blocks
    // and releases by the raw stream, so the replay's tie-breaks follow the same order.
    std::set<std::int64_t> raw;
    for (const Row& row : rows) {
      if (row.op == Op::alloc) raw.insert(row.stream);
    }
    for (const SegmentEvent& event : segment_events) raw.insert(event.cuda_stream);
    for (const Oom& oom : ooms) raw.insert(oom.cuda_stream);
    for (const DeviceSegment& segment : segments) raw.insert(segment.stream);
    if (raw.size() > (1u << 16)) {
      throw Bad{std::to_string(raw.size()) + " streams; the trace's stream field has 16 bits"};
    }
    std::map<std::int64_t, Stream> streams;
    for (const std::int64_t stream : raw) streams.emplace(stream, static_cast<Stream>(streams.size()));
    for (const SegmentEvent& event : segment_events) {
      recording.segment_events.push_back(RecordedSegmentEvent{event.action, static_cast<Addr>(event.addr),
                                                              static_cast<Bytes>(event.size), streams[event.cuda_stream],
                                                              event.during + shift});
    }
    for (const Oom& oom : ooms) {
      recording.ooms.push_back(RecordedOom{static_cast<Bytes>(oom.size), static_cast<Bytes>(oom.device_free),
                                           streams[oom.cuda_stream], oom.row + shift});
    }

    // The allocator's segments when the snapshot was taken, blocks in address order.
    std::vector<std::pair<std::int64_t, const DeviceSegment*>> by_address;
    for (const DeviceSegment& segment : segments) by_address.emplace_back(segment.addr, &segment);
    std::stable_sort(by_address.begin(), by_address.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::unordered_map<std::int64_t, std::int64_t> end_block_sizes;  // rounded, with unsplit slack
    for (const auto& [addr, segment] : by_address) {
      RecordedSegment out = plain_segment(segment->addr, segment->total, streams[segment->stream], segment->small, segment->expandable);
      out.blocks.reserve(segment->blocks.size());
      for (const Block& block : segment->blocks) {
        out.blocks.push_back(RecordedBlock{static_cast<Addr>(block.addr), static_cast<Bytes>(block.size), block.allocated});
        end_block_sizes[block.addr] = block.size;
      }
      recording.segments_at_end.push_back(std::move(out));
    }
    recording.segments_at_start = segments_at_start(recording.segments_at_end, segment_events, streams);

    for (std::size_t index = 0; index < shift; ++index) {
      const Row& row = rows[index];
      std::optional<Bytes> block_size;
      if (index >= pre_freed.size()) {
        if (const auto found = end_block_sizes.find(row.addr); found != end_block_sizes.end()) {
          block_size = static_cast<Bytes>(found->second);
        }
      }
      recording.preexisting.push_back(
          PreexistingBlock{static_cast<Addr>(row.addr), static_cast<Bytes>(row.size), streams[row.stream], block_size});
    }
    check_rows(rows);

    recording.format = snapshot_format(snapshot, entries.timed);
    recording.settings = allocator_settings(snapshot);
    recording.private_pools = private_pools(snapshot, device);

    // Each alloc's layer: the distinct frames in order of first use, and an index (or -1) each.
    std::unordered_map<std::string, std::int64_t> frame_index;
    for (const Origin& origin : origins) {
      if (origin.frame && frame_index.emplace(*origin.frame, static_cast<std::int64_t>(recording.frames.size())).second) {
        recording.frames.push_back(*origin.frame);
      }
    }

    // The trace, through the builder every reader uses; an event it refuses is named by its entry.
    TraceBuilder builder(TraceInfo{origin, "torch snapshot"});
    builder.reserve(rows.size());
    std::unordered_map<std::int64_t, AllocId> ids;  // by address, while live
    ids.reserve(live.size() + shift);
    recording.addresses.reserve(origins.size());
    if (!recording.frames.empty()) recording.alloc_frames.reserve(origins.size());
    std::size_t alloc_number = 0;
    for (const Row& row : rows) {
      try {
        const auto time = static_cast<Nanos>(row.time_ns);
        if (row.op == Op::alloc) {
          const Origin& made_by = origins[alloc_number++];
          ids[row.addr] = builder.alloc(time, static_cast<Bytes>(row.size), streams[row.stream], made_by.tag);
          recording.addresses.push_back(static_cast<Addr>(row.addr));
          if (!recording.frames.empty()) recording.alloc_frames.push_back(made_by.frame ? frame_index[*made_by.frame] : -1);
        } else if (row.op == Op::free) {
          const auto found = ids.find(row.addr);
          builder.free(time, found->second);
          ids.erase(found);
        } else {
          builder.release(time);
        }
      } catch (const Error& error) {
        throw Bad{(row.block == Row::kNoBlock ? device_where(device, row.entry)
                                              : "segments[" + std::to_string(row.entry) + "].blocks[" + std::to_string(row.block) + "]") +
                  ": " + error.what()};
      }
    }
    try {
      recording.trace = std::move(builder).finish();
    } catch (const Error& error) {
      throw Bad{"device trace " + std::to_string(device) + ": " + error.what()};
    }
    name_layers(recording);
    return recording;
  } catch (const Bad& bad) {
    throw Error(printable(origin) + ": " + bad.what);
  }
}

}  // namespace allocsim
