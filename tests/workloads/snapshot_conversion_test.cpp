// A snapshot's dict read into a trace and a recording: the reading rules
// (snapshot_conversion.cpp's opening comment), one case each, and its errors naming the
// entry. These were the Python converter's tests (tools/tests/test_torch_snapshot.py),
// kept with their assertions when the converter moved into C++; its CSV rows are rendered
// here from the trace and the recorded addresses, as the converter wrote them.
#include "workloads/snapshot_conversion.hpp"

#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/pickle_writer.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

json entry(const char* action, std::int64_t addr, std::int64_t size, std::int64_t stream, std::int64_t time_us) {
  return {{"action", action}, {"addr", addr}, {"size", size}, {"stream", stream}, {"time_us", time_us}, {"frames", json::array()}};
}

// A recording that starts mid-run, on two streams, with an empty_cache() and a failed malloc.
json tiny() {
  json snapshot = json::parse(R"({"segments": [
      {"device": 0, "address": 327680, "total_size": 2097152, "stream": 777, "segment_type": "small",
       "blocks": [{"address": 327680, "size": 512, "requested_size": 64, "state": "active_allocated"},
                  {"address": 328192, "size": 512, "requested_size": 0, "state": "inactive"}]},
      {"device": 0, "address": 65536, "total_size": 2097152, "stream": 777, "segment_type": "small",
       "blocks": [{"address": 65536, "size": 512, "requested_size": 200, "state": "active_allocated"},
                  {"address": 131072, "size": 512, "requested_size": 300, "state": "active_allocated"}]}]})");
  snapshot["device_traces"] = json::array({json::array({
      entry("segment_alloc", 0x10000, 2097152, 777, 1000),
      entry("alloc", 0x10000, 100, 777, 1000),
      entry("alloc", 0x20000, 300, 5, 1002),
      entry("free_requested", 0x30000, 50, 5, 1003),  // a block from before the recording
      entry("free_completed", 0x30000, 50, 5, 1004),
      entry("free_requested", 0x10000, 100, 777, 1001),  // goes back in time: clamped
      entry("free_completed", 0x10000, 100, 777, 1005),
      entry("segment_free", 0x10000, 2097152, 777, 1006),  // empty_cache(): one release
      entry("segment_free", 0x40000, 2097152, 777, 1007),
      entry("alloc", 0x10000, 200, 777, 1008),             // the address is reused
      entry("segment_free", 0x60000, 2097152, 777, 1009),  // a failed malloc's own release
      json{{"action", "oom"}, {"device_free", 0}, {"size", 1048576}, {"stream", 777}, {"time_us", 1010}},
      entry("snapshot", 0, 600, 0, 1011),
  })});
  return snapshot;
}

constexpr const char* kTinyRows =
    "time_ns,op,id,bytes,stream,tag\n"
    "0,alloc,0x30000,50,0,other\n"
    "0,alloc,0x50000,64,1,other\n"
    "0,alloc,0x10000,100,1,other\n"
    "2000,alloc,0x20000,300,0,other\n"
    "4000,free,0x30000,50,,\n"
    "5000,free,0x10000,100,,\n"
    "6000,release,,,,\n"
    "8000,alloc,0x10000,200,1,other\n";

// The snapshot pickled as Python would (tuples as lists), by our own writer.
void write(PickleWriter& pickle, const json& value) {
  if (value.is_object()) {
    pickle.begin_dict();
    for (const auto& [key, item] : value.items()) {
      pickle.key(key);
      write(pickle, item);
    }
    pickle.end_dict();
  } else if (value.is_array()) {
    pickle.begin_list();
    for (const json& item : value) write(pickle, item);
    pickle.end_list();
  } else if (value.is_string()) {
    pickle.value(value.get<std::string>());
  } else if (value.is_boolean()) {
    pickle.value(value.get<bool>());
  } else if (value.is_number_unsigned()) {
    pickle.value(value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    pickle.value(value.get<std::int64_t>());
  } else if (value.is_number_float()) {
    pickle.value(value.get<double>());
  } else {
    pickle.none();
  }
}
TorchRecording convert(const json& snapshot, std::optional<int> device = {}) {
  std::ostringstream out;
  PickleWriter pickle(out);
  write(pickle, snapshot);
  pickle.finish();
  return read_torch_recording_bytes(out.str(), "snap.pickle", device);
}

std::string hex(Addr addr) {
  std::ostringstream out;
  out << "0x" << std::hex << addr;
  return out.str();
}

// The trace's rows as the converter's CSV had them: the id is the block's address.
std::string data_lines(const TorchRecording& recording) {
  const Trace& trace = recording.trace;
  std::string out = "time_ns,op,id,bytes,stream,tag\n";
  for (const Event& event : trace.events) {
    out += std::to_string(event.time) + "," + std::string(name_of(event.op)) + ",";
    if (event.op == Op::release) {
      out += ",,,\n";
      continue;
    }
    const std::size_t index = index_of(event.id);
    out += hex(recording.addresses.at(index)) + "," + std::to_string(trace.requested[index]) + ",";
    out += event.op == Op::alloc ? std::to_string(event.stream) + "," + std::string(name_of(event.tag)) + "\n" : ",\n";
  }
  return out;
}

std::string error_of(const json& snapshot, std::optional<int> device = {}) {
  try {
    static_cast<void>(convert(snapshot, device));
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST_CASE("snapshot conversion: a tiny snapshot converts exactly", "[snapshot]") {
  const TorchRecording out = convert(tiny());
  // Two pre-existing blocks first; the clamped free_requested makes no row; the failed
  // malloc's own release is left out; streams 5 and 777 are ours 0 and 1.
  CHECK(data_lines(out) == kTinyRows);
  CHECK(out.trace.info.name == "snap.pickle");
  CHECK(out.trace.info.source == "torch snapshot");
  CHECK_FALSE(out.settings.recorded);
  CHECK_FALSE(out.settings.max_split_size.has_value());  // PyTorch's default: unlimited
  CHECK(out.settings.roundup_power2_divisions.size() == 16);
  std::vector<std::tuple<std::string, Addr, Bytes, Stream, std::size_t>> events;
  for (const RecordedSegmentEvent& e : out.segment_events) {
    events.emplace_back(std::string(to_string(e.action)), e.addr, e.size, e.stream, e.during_event);
  }
  // The rows that made them: an alloc, the release row (twice), and none for the failed
  // malloc's own release (8 is past the last row).
  CHECK(events == decltype(events){{"segment_alloc", 0x10000, 2097152, 1, 2},
                                   {"segment_free", 0x10000, 2097152, 1, 6},
                                   {"segment_free", 0x40000, 2097152, 1, 6},
                                   {"segment_free", 0x60000, 2097152, 1, 8}});
  REQUIRE(out.ooms.size() == 1);
  CHECK(out.ooms[0].size == 1048576);
  CHECK(out.ooms[0].before_event == 8);
  std::vector<std::tuple<Addr, Bytes, Stream, std::optional<Bytes>>> preexisting;
  for (const PreexistingBlock& b : out.preexisting) preexisting.emplace_back(b.addr, b.requested, b.stream, b.block_size);
  CHECK(preexisting == decltype(preexisting){{196608, 50, 0, std::nullopt}, {327680, 64, 1, 512}});
  // At the start: the snapshot's segments with the trace's segment events undone.
  std::vector<std::tuple<Addr, Bytes, Stream, bool>> start;
  for (const RecordedSegment& seg : out.segments_at_start) start.emplace_back(seg.addr, seg.size, seg.stream, seg.small);
  CHECK(start == decltype(start){{0x40000, 2097152, 1, true}, {0x50000, 2097152, 1, true}, {0x60000, 2097152, 1, true}});
  const auto blocks = [&](std::size_t index) {
    std::vector<std::tuple<Addr, Bytes, bool>> out_blocks;
    for (const RecordedBlock& b : out.segments_at_end.at(index).blocks) out_blocks.emplace_back(b.addr, b.size, b.allocated);
    return out_blocks;
  };
  CHECK(blocks(0) == decltype(blocks(0)){{65536, 512, true}, {131072, 512, true}});
  CHECK(blocks(1) == decltype(blocks(1)){{327680, 512, true}, {328192, 512, false}});
}

TEST_CASE("snapshot conversion: recorded settings and a second device", "[snapshot]") {
  json snapshot = tiny();
  snapshot["allocator_settings"] = {{"expandable_segments", true}};
  snapshot["device_traces"] = json::array({json::array(), json::array({entry("alloc", 0x100, 7, 0, 5)})});
  const TorchRecording out = convert(snapshot, 1);
  CHECK(out.settings.recorded);
  CHECK(out.settings.expandable_segments);
  CHECK(out.settings.roundup_power2_divisions.empty());
  CHECK_FALSE(out.settings.max_split_size.has_value());
  snapshot["allocator_settings"] = json::parse(R"({"max_split_size": 4194304, "garbage_collection_threshold": 0.5,
      "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:4", "roundup_power2_divisions": {"2": 4, "1": 0}})");
  const TorchRecording set = convert(snapshot, 1);
  CHECK(set.settings.max_split_size == std::optional<Bytes>(4194304));
  CHECK(set.settings.garbage_collection_threshold == 0.5);
  CHECK(set.settings.conf == "max_split_size_mb:4");
  CHECK(set.settings.roundup_power2_divisions == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 0}, {2, 4}});
}

// What the sidecar's parser refused when the converter wrote it (found by the fuzz target
// that read it: tests/fuzz/torch_snapshot/*_float, *_interval) is refused where the
// snapshot says it, naming the entry.
TEST_CASE("snapshot conversion: a settings value or an address out of range is an Error naming it", "[snapshot]") {
  const auto with_settings = [](const json& settings) {
    json snapshot = tiny();
    snapshot["allocator_settings"] = settings;
    return snapshot;
  };
  CHECK(error_of(with_settings({{"roundup_power2_divisions", {{"x", 1}}}})) ==
        "snap.pickle: allocator_settings: roundup_power2_divisions interval 'x' is not a non-negative integer");
  CHECK_THAT(error_of(with_settings({{"roundup_power2_divisions", {{"1", 2.5}}}})),
             Catch::StartsWith("snap.pickle: allocator_settings: 'roundup_power2_divisions' is 2.5, not a whole number"));
  CHECK_THAT(error_of(with_settings({{"roundup_power2_divisions", {{"1", -1}}}})),
             Catch::StartsWith("snap.pickle: allocator_settings: 'roundup_power2_divisions' is -1, not a whole number"));
  CHECK(error_of(with_settings({{"expandable_segments", "yes"}})) ==
        "snap.pickle: allocator_settings: 'expandable_segments' is 'yes', not a bool");
  CHECK(error_of(with_settings({{"garbage_collection_threshold", "high"}})) ==
        "snap.pickle: allocator_settings: 'garbage_collection_threshold' is 'high', not a number");
  json negative = tiny();
  negative["device_traces"][0][2]["addr"] = -4096;
  CHECK(error_of(negative) == "snap.pickle: device_traces[0][2] (alloc): 'addr' is negative (-4096)");
  json oom = tiny();
  oom["device_traces"][0][11]["device_free"] = -1;
  CHECK(error_of(oom) == "snap.pickle: device_traces[0][11] (oom): 'device_free' is negative (-1)");
  json segment = tiny();
  segment["segments"][1]["segment_type"] = 3;
  CHECK(error_of(segment) == "snap.pickle: segments[1]: 'segment_type' is 3, not a str");
  json requested = tiny();
  requested["segments"][0]["blocks"][0]["requested_size"] = -64;
  CHECK(error_of(requested) == "snap.pickle: segments[0].blocks[0]: 'requested_size' is negative (-64)");
  // A request the trace cannot hold is named by its entry, not by a line of text in between.
  json huge = tiny();
  huge["device_traces"][0][2]["size"] = std::int64_t{1} << 50;
  CHECK_THAT(error_of(huge), Catch::StartsWith("snap.pickle: device_traces[0][2]: "));
  // Nothing but snapshot entries: no event.
  const json empty = {{"segments", json::array()}, {"device_traces", json::array({json::array({entry("snapshot", 0, 0, 0, 1)})})}};
  CHECK(error_of(empty) == "snap.pickle: device trace 0: empty trace: no events");
}

TEST_CASE("snapshot conversion: errors name the snapshot and the entry on one line", "[snapshot]") {
  CHECK(error_of(json::array({1, 2})) == "snap.pickle: not a memory snapshot: the pickle holds a list, not a dict");
  CHECK(error_of(json{{"segments", json::array()}}) == "snap.pickle: not a memory snapshot: no 'device_traces' list");
  CHECK(error_of(json{{"segments", json::array()}, {"device_traces", json::array()}}) ==
        "snap.pickle: no device traces (was _record_memory_history enabled?)");
  CHECK(error_of(tiny(), 3) == "snap.pickle: no device trace 3 (the snapshot has 1)");
  json broken = tiny();
  broken["device_traces"] = json::parse(R"([[{"action": "alloc", "addr": 1, "stream": 0, "time_us": 0}]])");
  CHECK(error_of(broken) == "snap.pickle: device_traces[0][0] (alloc) lacks key 'size'");
  // A NUL byte and a newline in a value are escaped, as Python's repr shows them.
  json nul = {{"segments", json::array()}, {"device_traces", json::array({json::array({entry("alloc", 1, 0, 0, 1)})})}};
  nul["device_traces"][0][0]["size"] = std::string("a\0\nb", 4);
  CHECK(error_of(nul) == "snap.pickle: device_traces[0][0] (alloc): 'size' is 'a\\x00\\nb', not a number");
  json negative = nul;
  negative["device_traces"][0][0]["size"] = -5;
  CHECK(error_of(negative) == "snap.pickle: device_traces[0][0] (alloc): negative size -5");
  const json sizeless = json::parse(R"({"segments": [{"device": 0, "address": 0, "total_size": 2097152,
      "blocks": [{"size": 512, "state": "inactive"}, {"state": "inactive"}]}],
      "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "stream": 0, "time_us": 1}]]})");
  CHECK(error_of(sizeless) == "snap.pickle: segments[0].blocks[1] lacks its size");
  json no_address = sizeless;
  no_address["segments"][0].erase("address");
  CHECK(error_of(no_address) == "snap.pickle: segments[0] lacks address or total_size (address None, total_size 2097152)");
  CHECK(error_of(json::parse(R"({"segments": [], "device_traces": [["STORAGE"]]})")) ==
        "snap.pickle: device_traces[0][0] is not a trace entry (a dict with an 'action')");
}

TEST_CASE("snapshot conversion: PyTorch 2.0, without time, addresses or requested sizes", "[snapshot]") {
  // Rule 2: no time_us; blocks tile their segment and carry only history.
  const json snapshot = json::parse(R"({"segments": [{"device": 0, "address": 16777216, "total_size": 2097152, "stream": 0,
      "blocks": [{"size": 1024, "state": "inactive", "history": []},
                 {"size": 512, "state": "active_allocated", "history": [{"addr": 16778240, "real_size": 300, "frames": []}]},
                 {"size": 2095616, "state": "inactive"}]}],
      "device_traces": [[{"action": "alloc", "addr": 16777216, "size": 1000, "stream": 0},
                         {"action": "free_completed", "addr": 16777216, "size": 1000, "stream": 0}]]})");
  const TorchRecording out = convert(snapshot);
  CHECK(data_lines(out) ==
        "time_ns,op,id,bytes,stream,tag\n0,alloc,0x1000400,300,0,other\n0,alloc,0x1000000,1000,0,other\n"
        "1000,free,0x1000000,1000,,\n");
  std::vector<Addr> blocks;
  for (const RecordedBlock& block : out.segments_at_end.at(0).blocks) blocks.push_back(block.addr);
  CHECK(blocks == std::vector<Addr>{0x1000000, 0x1000400, 0x1000600});
  CHECK(out.format.starts_with("PyTorch 2.0"));
  CHECK_FALSE(out.settings.recorded);
  CHECK(out.addresses == std::vector<Addr>{0x1000400, 0x1000000});
}

TEST_CASE("snapshot conversion: older than 2.0 is refused naming the version", "[snapshot]") {
  CHECK_THAT(error_of(json::parse(R"([{"address": 0, "total_size": 2097152, "blocks": []}])")),
             Catch::Contains("PyTorch 1.13 or older"));
}

TEST_CASE("snapshot conversion: several devices need a choice", "[snapshot]") {
  // Rule 3: one list per visible device; the only non-empty one by default.
  const json one = entry("alloc", 0x100, 7, 0, 5);
  const auto with_traces = [](json traces) { return json{{"segments", json::array()}, {"device_traces", traces}}; };
  CHECK(convert(with_traces(json::array({json::array(), json::array({one})}))).device == 1);
  CHECK_THAT(error_of(with_traces(json::array({json::array({one}), json::array(), json::array({one, one})}))),
             Catch::Contains("2 devices have traces: 0 (1 entries), 2 (2 entries); choose one with --cuda-device N"));
  CHECK(convert(with_traces(json::array({json::array({one}), json::array(), json::array({one})})), 2).device == 2);
}

TEST_CASE("snapshot conversion: streams numbered by raw value", "[snapshot]") {
  // Rule 4: 0x200 appears first but is numbered after 0x100 (and the default stream 0).
  json snapshot = json::parse(R"({"segments": [{"device": 0, "address": 150994944, "total_size": 2097152, "stream": 0, "blocks": []}]})");
  snapshot["device_traces"] = json::array({json::array({entry("alloc", 0x100, 7, 0x200, 1), entry("alloc", 0x300, 7, 0x100, 2)})});
  CHECK(data_lines(convert(snapshot)) == "time_ns,op,id,bytes,stream,tag\n0,alloc,0x100,7,2,other\n1000,alloc,0x300,7,1,other\n");
}

TEST_CASE("snapshot conversion: frames outside torch and categories", "[snapshot]") {
  const json torch_frame = {{"filename", "/usr/lib/python3/site-packages/torch/nn/modules/linear.py"}, {"line", 125}, {"name", "forward"}};
  const json cpp_frame = {{"filename", "/pytorch/c10/cuda/CUDACachingAllocator.cpp"}, {"line", 900}, {"name", "malloc"}};
  const json model = {{"filename", "/home/me/model.py"}, {"line", 42}, {"name", "forward"}};
  const json cache = {{"filename", "/home/me/cache.py"}, {"line", 7}, {"name", "update"}};
  json entries = json::array({entry("alloc", 0x100, 7, 0, 1), entry("alloc", 0x200, 7, 0, 2), entry("alloc", 0x300, 7, 0, 3),
                              entry("alloc", 0x400, 7, 0, 4)});
  entries[0]["frames"] = {cpp_frame, torch_frame, model};
  entries[1]["frames"] = {torch_frame, cache, model};
  entries[1]["category"] = "PARAMETER";
  entries[2]["frames"] = {torch_frame};
  entries[3]["frames"] = {model};
  entries[3]["category"] = "Category.GRADIENT";
  const json snapshot = {{"segments", json::array()}, {"device_traces", json::array({entries})}};
  const TorchRecording out = convert(snapshot);
  CHECK(out.frames == std::vector<std::string>{"model.py:42 forward", "cache.py:7 update"});
  CHECK(out.alloc_frames == std::vector<std::int64_t>{0, 1, -1, 0});
  // The trace's layers: the frames, and one for the allocations without a frame of the program.
  const Trace& trace = out.trace;
  REQUIRE(trace.layer.size() == 4);
  CHECK(trace.layer_names[trace.layer[0]] == "model.py:42 forward");
  CHECK(trace.layer_names[trace.layer[1]] == "cache.py:7 update");
  CHECK(trace.layer_names[trace.layer[2]] == TorchRecording::kNoFrame);
  CHECK(trace.events[1].tag == Tag::weight);
  CHECK(data_lines(out) ==
        "time_ns,op,id,bytes,stream,tag\n0,alloc,0x100,7,0,other\n1000,alloc,0x200,7,0,weight\n"
        "2000,alloc,0x300,7,0,other\n3000,alloc,0x400,7,0,gradient\n");
  // No frames recorded: no layers.
  const json plain = {{"segments", json::array()}, {"device_traces", json::array({json::array({entry("alloc", 0x100, 7, 0, 1)})})}};
  CHECK(convert(plain).alloc_frames.empty());
  CHECK(convert(plain).trace.layer.empty());
}

TEST_CASE("snapshot conversion: a layer is the program's innermost Python frame, or autograd backward", "[snapshot]") {
  // Frames as _record_memory_history(stacks="all") records them, innermost first.
  const json allocator = {{"filename", "CUDACachingAllocator.cpp"}, {"line", 0}, {"name", "c10::cuda::malloc"}};
  const json engine = {{"filename", "??"}, {"line", 0}, {"name", "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"}};
  const json thread = {{"filename", "thread48.o"}, {"line", 0}, {"name", "execute_native_thread_routine"}};
  const json start = {{"filename", "??"}, {"line", 0}, {"name", "start_thread"}};
  const json torch_python = {{"filename", "/opt/conda/lib/python3.11/site-packages/torch/_tensor.py"}, {"line", 521}, {"name", "backward"}};
  const json frozen = {{"filename", "<frozen importlib._bootstrap>"}, {"line", 1}, {"name", "_call_with_frames_removed"}};
  const json model = {{"filename", "/home/me/model.py"}, {"line", 42}, {"name", "forward"}};
  const json train = {{"filename", "/home/me/train.py"}, {"line", 10}, {"name", "<module>"}};
  const json windows = {{"filename", "C:\\work\\net.py"}, {"line", 3}, {"name", "forward"}};
  json entries = json::array();
  for (std::int64_t i = 1; i <= 6; ++i) entries.push_back(entry("alloc", 0x100 * i, 7, 0, i));
  entries[0]["frames"] = {allocator, engine, thread, start};        // the backward thread: no Python frame
  entries[1]["frames"] = {allocator, thread, model};                 // a C++ frame outside torch is skipped
  entries[2]["frames"] = {allocator, thread, start};                 // C++ alone, not autograd's engine: none
  entries[3]["frames"] = {frozen, torch_python, train};              // the bootstrap and torch's Python skipped
  entries[4]["frames"] = {allocator, windows};
  entries[5]["frames"] = {allocator, engine, torch_python, train};   // backward called from train.py, same thread
  const json snapshot = {{"segments", json::array()}, {"device_traces", json::array({entries})}};
  const TorchRecording out = convert(snapshot);
  CHECK(out.frames ==
        std::vector<std::string>{"autograd backward", "model.py:42 forward", "train.py:10 <module>", "net.py:3 forward"});
  CHECK(out.alloc_frames == std::vector<std::int64_t>{0, 1, -1, 2, 3, 2});
}

TEST_CASE("snapshot conversion: expandable segments at the start undo the maps", "[snapshot]") {
  // Rule 6: a snapshot lists an expandable segment per mapped range; the trace's maps and
  // unmaps, undone, leave what was mapped when the recording began.
  constexpr std::int64_t M = 1 << 20, base = 0x2000000;
  const json segment = {{"device", 0}, {"address", base}, {"total_size", 40 * M}, {"stream", 0}, {"segment_type", "large"},
                        {"is_expandable", true},
                        {"blocks", json::array({json{{"address", base}, {"size", 40 * M}, {"state", "inactive"}}})}};
  json maps = json::array({entry("segment_map", base + 20 * M, 20 * M, 0, 1), entry("alloc", base + 20 * M, 5, 0, 1),
                           entry("segment_unmap", base + 60 * M, 20 * M, 0, 2)});
  const auto start = [&] {
    std::vector<std::tuple<Addr, Bytes, bool, bool>> out;
    const json snapshot = {{"segments", json::array({segment})}, {"device_traces", json::array({maps})}};
    for (const RecordedSegment& s : convert(snapshot).segments_at_start) out.emplace_back(s.addr, s.size, s.small, s.expandable);
    return out;
  };
  CHECK(start() == decltype(start()){{base, 20 * M, false, true}, {base + 60 * M, 20 * M, false, true}});
  maps[2] = entry("segment_map", base, 20 * M, 0, 0);  // mapped from the first entry on: nothing at the start
  CHECK(start().empty());
}

TEST_CASE("snapshot conversion: private pools are named with their entry", "[snapshot]") {
  // Rule 7: replay-check refuses them by these names.
  json snapshot = json::parse(R"({"segments": [
      {"device": 0, "address": 150994944, "total_size": 2097152, "stream": 0, "segment_pool_id": [0, 0], "blocks": []},
      {"device": 0, "address": 167772160, "total_size": 2097152, "stream": 0, "segment_pool_id": [3, 1], "blocks": []}]})");
  json pooled = entry("alloc", 0x200, 7, 0, 1);
  pooled["pool_id"] = {4, 0};
  snapshot["device_traces"] = json::array({json::array({entry("alloc", 0x100, 7, 0, 1), pooled})});
  std::vector<std::pair<std::string, std::string>> pools;
  for (const PrivatePool& pool : convert(snapshot).private_pools) pools.emplace_back(pool.pool, pool.entry);
  CHECK(pools == decltype(pools){{"(3, 1)", "segments[1]"}, {"(4, 0)", "device_traces[0][1]"}});
}

TEST_CASE("snapshot conversion: a pickle's bytes in memory read as its file does", "[snapshot]") {
  const std::string path = std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle";
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const TorchRecording from_file = read_torch_recording(path);
  const TorchRecording from_bytes = read_torch_recording_bytes(bytes, path);
  // Events are 16 plain bytes (sim/types.hpp): equal bytes, equal events.
  const auto same = [](const Trace& a, const Trace& b) {
    return a.events.size() == b.events.size() &&
           std::memcmp(a.events.data(), b.events.data(), a.events.size() * sizeof(Event)) == 0;
  };
  CHECK(same(from_bytes.trace, from_file.trace));
  CHECK(from_bytes.addresses == from_file.addresses);
  CHECK(from_bytes.segments_at_end.size() == from_file.segments_at_end.size());
  CHECK_THROWS_WITH(read_torch_recording_bytes(bytes.substr(0, 100), "dropped.pickle"),
                    Catch::StartsWith("dropped.pickle: byte "));
  CHECK_THROWS_WITH(read_torch_recording("/nonexistent/x.pickle"), "/nonexistent/x.pickle: cannot open");
}

}  // namespace
}  // namespace allocsim
