// The second half of the snapshot reader: the conversion's two outputs, the CSV trace
// and the JSON sidecar, parsed from buffers (parse_torch_recording). A sidecar that is not
// what the converter writes is an Error naming the pickle, never a crash.
#include <string>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

constexpr const char* kCsv = "time_ns,op,id,bytes,stream,tag\n0,alloc,7f0000000000,512,0,other\n10,free,7f0000000000,,0,other\n";

// A sidecar as the converter writes it; each argument is the JSON text of one number or
// list, so a test can put a bad value where the converter writes a whole number.
std::string sidecar(const std::string& device = "0", const std::string& addresses = "[139637983019008]",
                    const std::string& divisions = R"({"1": 0, "2": 4})", const std::string& stream = "0") {
  return R"({"device": )" + device + R"(, "format": "PyTorch 2.2", "addresses": )" + addresses +
         R"(, "allocator_settings": {"max_split_size": -1, "roundup_power2_divisions": )" + divisions +
         R"(}, "preexisting": [], "segments_at_start": [], "segments_at_end": [{"addr": 139637983019008, "size": 2097152, "stream": )" +
         stream + R"(, "pool": "small", "blocks": [{"addr": 139637983019008, "size": 512, "allocated": false}]}],)" +
         R"( "segment_events": [{"action": "segment_alloc", "addr": 139637983019008, "size": 2097152, "stream": 0, "during_event": 0}]})";
}

TEST_CASE("torch recording: the converter's CSV and sidecar parse from buffers", "[torch-recording]") {
  const TorchRecording recording = parse_torch_recording(kCsv, sidecar(), "run.pickle");
  CHECK(recording.trace.events.size() == 2);
  CHECK(recording.trace.info.name == "run.pickle");
  CHECK(recording.addresses == std::vector<Addr>{139637983019008});
  CHECK(recording.settings.roundup_power2_divisions == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 0}, {2, 4}});
  REQUIRE(recording.segments_at_end.size() == 1);
  CHECK(recording.segments_at_end[0].blocks.size() == 1);
  CHECK(recording.segment_events.size() == 1);
  CHECK_THROWS_WITH(parse_torch_recording("time_ns,op,id,bytes\n0,grab,a,1\n", sidecar(), "run.pickle"),
                    "run.pickle (converted):2: unknown op 'grab' (alloc, free, release, sync)");
}

// Found by the torch_snapshot fuzz target (tests/fuzz/torch_snapshot/*_float, *_interval): a
// float where a whole number goes was cast (undefined behaviour out of range), and an interval
// that is not a number escaped as std::invalid_argument from std::stoull.
TEST_CASE("torch recording: a sidecar number that is not a whole number in range is an Error", "[torch-recording]") {
  const auto refused = [](const std::string& json) {
    CHECK_THROWS_AS(parse_torch_recording(kCsv, json, "run.pickle"), Error);
    CHECK_THROWS_WITH(parse_torch_recording(kCsv, json, "run.pickle"),
                      Catch::StartsWith("run.pickle: the converter's settings are unreadable"));
  };
  refused(sidecar("0", "[1e300]"));
  refused(sidecar("0", "[-1]"));
  refused(sidecar("1e20"));
  refused(sidecar("4294967296"));
  refused(sidecar("0", "[1]", R"({"x": 1})"));
  refused(sidecar("0", "[1]", R"({"1": 2.5})"));
  refused(sidecar("0", "[1]", R"({"1": 0})", "-1.5"));
  refused(sidecar("0", "[1]", R"({"1": 0})", "65536"));
  CHECK_THROWS_WITH(parse_torch_recording(kCsv, sidecar("0", "[1]", R"({"mb": 1})"), "run.pickle"),
                    Catch::Contains("roundup_power2_divisions interval 'mb'"));
}

TEST_CASE("torch recording: each allocation's first frame outside torch is its layer", "[torch-recording]") {
  constexpr const char* csv =
      "time_ns,op,id,bytes,stream,tag\n0,alloc,a,512,0,other\n1,alloc,b,512,0,weight\n2,alloc,c,512,0,other\n";
  std::string json = sidecar();
  json.pop_back();
  const auto with_frames = [&](const std::string& frames, const std::string& by_alloc) {
    return json + R"(, "frames": )" + frames + R"(, "alloc_frames": )" + by_alloc + "}";
  };
  const TorchRecording recording =
      parse_torch_recording(csv, with_frames(R"(["model.py:42 forward", "cache.py:7 update"])", "[1, -1, 0]"), "run.pickle");
  const Trace& trace = recording.trace;
  REQUIRE(trace.layer.size() == 3);
  CHECK(trace.layer_names[trace.layer[0]] == "cache.py:7 update");
  CHECK(trace.layer_names[trace.layer[1]] == TorchRecording::kNoFrame);
  CHECK(trace.layer_names[trace.layer[2]] == "model.py:42 forward");
  CHECK(trace.events[1].tag == Tag::weight);
  CHECK(parse_torch_recording(csv, sidecar(), "run.pickle").trace.layer.empty());  // no frames recorded
  CHECK_THROWS_WITH(parse_torch_recording(csv, with_frames(R"(["a"])", "[0, 0]"), "run.pickle"),
                    Catch::StartsWith("run.pickle: the converter's frames are unreadable"));
  CHECK_THROWS_AS(parse_torch_recording(csv, with_frames(R"(["a"])", "[0, 1, 0]"), "run.pickle"), Error);
  CHECK_THROWS_AS(parse_torch_recording(csv, with_frames(R"(["a"])", "[0, -2, 0]"), "run.pickle"), Error);
}

}  // namespace
}  // namespace allocsim
