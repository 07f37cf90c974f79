#include "workloads/kineto_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/units.hpp"
#include "workloads/device_choice.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {
namespace {

// Epoch microseconds with a fraction need more than a double's 53 bits to keep
// nanoseconds; x86's long double has 64.
using Json = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t, std::uint64_t, long double>;

constexpr std::string_view kMemoryEvent = "[memory]";
constexpr int kCudaDeviceType = 1;  // c10::DeviceType::CUDA
constexpr Nanos kMaxSpan = Nanos{1} << 62;

// The thread that made an event: Kineto writes `tid` as a number; a name (or none) is kept
// as its JSON text. Numbers order before names.
struct Thread {
  std::optional<std::int64_t> number;
  std::string name;
  // Spelt out, not <=>: LLVM 14's libc++ (the wasm build's) has no <=> for optional or string.
  friend bool operator==(const Thread&, const Thread&) = default;
  friend bool operator<(const Thread& a, const Thread& b) { return std::tie(a.number, a.name) < std::tie(b.number, b.name); }
};

struct MemoryEvent {
  std::size_t position;  // among the file's [memory] events, for messages
  long double ts;        // microseconds
  Thread thread;
  std::optional<std::int64_t> index;  // counted per thread
  std::uint64_t addr;
  std::int64_t bytes;
  std::optional<std::int64_t> total_allocated;
};

std::string describe(const MemoryEvent& event) {
  std::ostringstream ts;
  ts.precision(15);
  ts << event.ts;
  return "[memory] event " + std::to_string(event.position) + " (ts " + ts.str() + " us)";
}

// A number as Kineto writes it (a bare JSON number) or as a string of digits.
std::optional<std::int64_t> integer(const Json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();  // nlohmann's unsigned values are integers too
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    std::int64_t parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (!text.empty() && ec == std::errc{} && end == text.data() + text.size()) return parsed;
  }
  return std::nullopt;
}

std::int64_t add(std::int64_t a, std::int64_t b, const std::string& where) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw Error(where + ": the Bytes and Total Allocated add up past 2^63 B");
  return sum;
}

bool is_memory_event(const Json& event) {
  if (!event.is_object()) return false;
  const auto name = event.find("name");
  return name != event.end() && name->is_string() && name->get_ref<const std::string&>() == kMemoryEvent;
}

std::optional<std::int64_t> field(const Json& args, const char* key, const std::string& where) {
  const auto found = args.find(key);
  if (found == args.end()) return std::nullopt;
  const auto value = integer(*found);
  if (!value) throw Error(where + ": '" + key + "' is " + found->dump() + ", not an integer");
  return value;
}

// Collects the [memory] events of a Chrome trace, each as a small JSON object (name, ts,
// args), while the parser streams past everything else: a profiler trace is mostly kernels
// and operators and can be gigabytes. (nlohmann's filtering DOM callback would do it, but
// it scans the whole events array at every object's end: quadratic.)
class MemoryEventCollector final : public nlohmann::json_sax<Json> {
 public:
  Json events = Json::array();
  bool found_events = false;  // the document is an array, or has a traceEvents array

  bool null() override { return value(Json()); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override { return value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(Json(v)); }
  bool string(string_t& v) override { return value(Json(v)); }
  bool binary(binary_t&) override { return value(Json()); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) override {
    open(true);
    return true;
  }
  bool end_object() override {
    if (in_event() && depth() == event_depth_) {
      if (is_memory_event(event_)) events.push_back(std::move(event_));
      event_depth_ = 0;
    }
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    open(false);
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    throw Error(std::string("not valid JSON: ") + error.what());
  }

 private:
  struct Frame {
    bool object;
    bool events;  // the array of trace events
    bool args;    // an event's args
  };

  std::size_t depth() const { return frames_.size(); }
  bool in_event() const { return event_depth_ != 0; }

  void open(bool object) {
    const bool events_array = !object && ((frames_.empty()) || (frames_.size() == 1 && frames_[0].object && key_ == "traceEvents"));
    if (events_array) found_events = true;
    const bool args = in_event() && object && depth() == event_depth_ && key_ == "args";
    if (object && !in_event() && !frames_.empty() && frames_.back().events) {
      event_ = Json::object();
      event_depth_ = depth() + 1;
    } else if (args) {
      event_["args"] = Json::object();
    }
    frames_.push_back(Frame{object, events_array, args});
  }

  // A scalar: kept when it is a field of an event or of its args.
  bool value(Json v) {
    if (!in_event()) return true;
    if (depth() == event_depth_) {
      event_[key_] = std::move(v);
    } else if (depth() == event_depth_ + 1 && frames_.back().args) {
      event_["args"][key_] = std::move(v);
    }
    return true;
  }

  std::vector<Frame> frames_;
  std::string key_;
  Json event_;
  std::size_t event_depth_ = 0;  // the event object's depth while inside one, else 0
};

Thread thread_of(const Json& event) {
  const auto tid = event.find("tid");
  if (tid == event.end()) return Thread{};
  if (const auto number = integer(*tid)) return Thread{number, {}};
  return Thread{std::nullopt, tid->is_string() ? tid->get<std::string>() : tid->dump()};
}

// The order the allocator saw: by time; at one time, by thread, then within a thread by the
// event index (counted per thread, so it orders nothing across threads) when every event
// has one, else by the file's order. Ties across threads at one time have no recorded
// order: thread id first is a choice, made the same way on every read.
void sort_in_record_order(std::vector<MemoryEvent>& events) {
  const bool indexed = std::all_of(events.begin(), events.end(), [](const MemoryEvent& e) { return e.index.has_value(); });
  std::sort(events.begin(), events.end(), [indexed](const MemoryEvent& a, const MemoryEvent& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.thread != b.thread) return a.thread < b.thread;
    if (indexed && *a.index != *b.index) return *a.index < *b.index;
    return a.position < b.position;
  });
}

class Pairing {
 public:
  Pairing(const std::string& name, std::vector<MemoryEvent> events) : name_(name), events_(std::move(events)) {}

  KinetoTrace build(int device, std::size_t other_events) && {
    check_totals();
    const auto preexisting = blocks_before_profiling();
    TraceBuilder builder(TraceInfo{name_, "kineto"});
    builder.reserve(events_.size() + preexisting.size());
    std::unordered_map<std::uint64_t, AllocId> live;
    for (const auto& [addr, bytes] : preexisting) live.emplace(addr, builder.alloc(0, bytes));
    const long double origin = events_.front().ts;
    Nanos last = 0;
    for (const MemoryEvent& event : events_) {
      const long double ns = std::round((event.ts - origin) * 1000.0L);
      if (ns > static_cast<long double>(kMaxSpan)) {
        throw Error(name_ + ": " + describe(event) + " is more than 146 years after the first event");
      }
      last = std::max(last, ns > 0 ? static_cast<Nanos>(ns) : Nanos{0});
      if (event.bytes > 0) {
        live.emplace(event.addr, builder.alloc(last, static_cast<Bytes>(event.bytes)));
      } else {
        const auto found = live.find(event.addr);
        builder.free(last, found->second);
        live.erase(found);
      }
    }
    return KinetoTrace{std::move(builder).finish(), device, preexisting.size(), other_events};
  }

 private:
  // Total Allocated after an event is the bytes live before the first one plus every event's
  // Bytes since; the baseline is taken from the first event that reports it.
  void check_totals() const {
    std::int64_t sum = 0;
    std::optional<std::int64_t> baseline;
    for (const MemoryEvent& event : events_) {
      const std::string where = name_ + ": " + describe(event);
      sum = add(sum, event.bytes, where);
      if (!event.total_allocated) continue;
      if (!baseline) {
        std::int64_t before = 0;
        if (__builtin_sub_overflow(*event.total_allocated, sum, &before)) throw Error(where + ": Total Allocated is out of range");
        baseline = before;
        continue;
      }
      const std::int64_t expected = add(*baseline, sum, where);
      if (*event.total_allocated != expected) {
        const auto shown = [](std::int64_t bytes) {
          return bytes < 0 ? "-" + format_bytes(0 - static_cast<Bytes>(bytes)) : format_bytes(static_cast<Bytes>(bytes));
        };
        throw Error(where + ": Total Allocated is " + std::to_string(*event.total_allocated) + " B (" +
                    shown(*event.total_allocated) + "), the events before it make it " + std::to_string(expected) +
                    " B (" + shown(expected) + "): events are missing or out of order");
      }
    }
  }

  // Pairs every event by address; a free of an address no event allocated or freed before
  // was allocated before profiling began. Returns those blocks (address, bytes) in the order
  // of their frees.
  std::vector<std::pair<std::uint64_t, Bytes>> blocks_before_profiling() const {
    struct Seen {
      bool live;
      Bytes bytes;
      std::size_t event;  // the position of the event that allocated or freed it
    };
    std::vector<std::pair<std::uint64_t, Bytes>> preexisting;
    std::unordered_map<std::uint64_t, Seen> seen;
    for (const MemoryEvent& event : events_) {
      const std::string where = name_ + ": " + describe(event);
      if (event.bytes == 0) throw Error(where + ": Bytes is 0, neither an allocation nor a free");
      const std::string addr = "Addr " + std::to_string(event.addr);
      const auto found = seen.find(event.addr);
      if (event.bytes > 0) {
        if (found != seen.end() && found->second.live) {
          throw Error(where + ": allocates " + addr + ", which [memory] event " + std::to_string(found->second.event) +
                      " allocated and no event freed");
        }
        seen.insert_or_assign(event.addr, Seen{true, static_cast<Bytes>(event.bytes), event.position});
        continue;
      }
      const Bytes freed = 0 - static_cast<Bytes>(event.bytes);  // modulo 2^64: exact for INT64_MIN too
      if (found == seen.end()) {
        preexisting.emplace_back(event.addr, freed);
      } else if (!found->second.live) {
        throw Error(where + ": frees " + addr + ", which [memory] event " + std::to_string(found->second.event) +
                    " freed and no event allocated since");
      } else if (found->second.bytes != freed) {
        throw Error(where + ": frees " + std::to_string(freed) + " B at " + addr + ", which [memory] event " +
                    std::to_string(found->second.event) + " allocated with " + std::to_string(found->second.bytes) +
                    " B");
      }
      seen.insert_or_assign(event.addr, Seen{false, freed, event.position});
    }
    return preexisting;
  }

  const std::string& name_;
  std::vector<MemoryEvent> events_;
};

}  // namespace

KinetoTrace parse_kineto_trace(std::string_view text, const std::string& name, std::optional<int> cuda_device) {
  if (text.starts_with("\x1f\x8b")) {
    throw Error(name + ": is gzip-compressed; decompress it first (gunzip -k " + name + ")");
  }
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  MemoryEventCollector collector;
  try {
    Json::sax_parse(text.begin(), text.end(), &collector);
  } catch (const Json::exception& error) {
    throw Error(name + ": not valid JSON: " + error.what());
  } catch (const Error& error) {
    throw Error(name + ": " + error.what());
  }
  if (!collector.found_events) {
    throw Error(name + ": not a Chrome trace: neither a JSON array of events nor an object with a traceEvents array");
  }
  std::map<int, std::vector<MemoryEvent>> by_device;
  std::size_t position = 0;
  std::size_t other_events = 0;
  for (const Json& event : collector.events) {
    if (!is_memory_event(event)) continue;
    const std::string where = name + ": [memory] event " + std::to_string(position);
    const auto args = event.find("args");
    if (args == event.end() || !args->is_object()) throw Error(where + " has no args");
    const auto ts = event.find("ts");
    if (ts == event.end() || !ts->is_number()) throw Error(where + " has no numeric ts");
    const auto device_type = field(*args, "Device Type", where);
    if (!device_type) throw Error(where + " has no Device Type");
    if (*device_type != kCudaDeviceType) {
      ++other_events;
      ++position;
      continue;
    }
    const auto addr = field(*args, "Addr", where);
    if (!addr) {
      throw Error(where + " has no Addr: this trace holds a memory curve, not allocations (PyTorch 1.8 and 1.9 "
                          "record no addresses); record with PyTorch 1.10 or later, profile_memory=True");
    }
    const auto bytes = field(*args, "Bytes", where);
    if (!bytes) throw Error(where + " has no Bytes");
    const auto device = field(*args, "Device Id", where);
    if (!device || *device < 0 || *device > 1'000'000) throw Error(where + " has no Device Id of a GPU");
    std::optional<std::int64_t> index = field(*args, "Profiler Event Index", where);
    if (!index) index = field(*args, "Ev Idx", where);
    const long double when = ts->get<long double>();
    if (!std::isfinite(when)) throw Error(where + ": ts is not a finite number");
    by_device[static_cast<int>(*device)].push_back(MemoryEvent{position, when, thread_of(event), index,
                                                               static_cast<std::uint64_t>(*addr), *bytes,
                                                               field(*args, "Total Allocated", where)});
    ++position;
  }
  if (position == 0) {
    throw Error(name + ": no [memory] events; record with torch.profiler.profile(profile_memory=True, ...)");
  }
  std::map<int, std::size_t> counts;
  for (const auto& [device, events] : by_device) counts.emplace(device, events.size());
  if (counts.empty()) {
    throw Error(name + ": no [memory] events of a CUDA device (" + std::to_string(other_events) + " of the CPU or others)");
  }
  const int device = choose_device(counts, cuda_device, name, "[memory] events");
  std::vector<MemoryEvent> events = std::move(by_device[device]);
  for (const auto& [other, list] : by_device) {
    if (other != device) other_events += list.size();
  }
  sort_in_record_order(events);
  return Pairing(name, std::move(events)).build(device, other_events);
}

KinetoTrace read_kineto_trace_file(const std::filesystem::path& path, std::optional<int> cuda_device) {
  return parse_kineto_trace(read_text_file(path), path.string(), cuda_device);
}

Claim claims_kineto_trace(std::string_view spec, std::string_view head) {
  if (head.starts_with(kUtf8Bom)) head.remove_prefix(kUtf8Bom.size());
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (head[first] == '{' || head[first] == '[') &&
      (head.find("\"traceEvents\"") != std::string_view::npos || head.find("\"ph\"") != std::string_view::npos)) {
    return Claim::by_content;
  }
  return spec.ends_with(".json") || spec.ends_with(".json.gz") ? Claim::by_name : Claim::no;
}

}  // namespace allocsim
