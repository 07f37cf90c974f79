// A snapshot saved with json.dump reads as its pickle does: the same reading, the same
// trace and recording; bad JSON is a one-line error naming the byte.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "workloads/pickle_reader.hpp"
#include "workloads/snapshot_import.hpp"
#include "workloads/snapshot_json.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

std::string tiny_pickle() {
  std::ifstream in(std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_CASE("snapshot json: the pickle's dict as JSON reads as the same trace and recording", "[snapshot]") {
  const std::string pickle = tiny_pickle();
  REQUIRE_FALSE(pickle.empty());
  // What json.dump writes of the dict: tuples as lists, int keys as text (read_pickle does both).
  const std::string text = "\n " + read_pickle(pickle, "tiny.pickle").dump(1);
  REQUIRE(looks_like_json(text));
  CHECK_FALSE(looks_like_json(pickle));
  const TorchRecording from_pickle = read_torch_recording_bytes(pickle, "tiny.snapshot.pickle");
  const TorchRecording from_json = read_torch_recording_bytes(text, "tiny.snapshot.pickle");
  // Events are 16 plain bytes (sim/types.hpp): equal bytes, equal events.
  REQUIRE(from_json.trace.events.size() == from_pickle.trace.events.size());
  CHECK(std::memcmp(from_json.trace.events.data(), from_pickle.trace.events.data(),
                    from_pickle.trace.events.size() * sizeof(Event)) == 0);
  CHECK(from_json.trace.requested == from_pickle.trace.requested);
  CHECK(from_json.trace.layer == from_pickle.trace.layer);
  CHECK(from_json.trace.layer_names == from_pickle.trace.layer_names);
  CHECK(from_json.addresses == from_pickle.addresses);
  CHECK(from_json.format == from_pickle.format);
  CHECK(from_json.settings.roundup_power2_divisions == from_pickle.settings.roundup_power2_divisions);
  CHECK(from_json.segments_at_start.size() == from_pickle.segments_at_start.size());
  CHECK(from_json.segments_at_end.size() == from_pickle.segments_at_end.size());
  CHECK(from_json.segment_events.size() == from_pickle.segment_events.size());
  CHECK(from_json.preexisting.size() == from_pickle.preexisting.size());
  CHECK(from_json.frames == from_pickle.frames);
}

TEST_CASE("snapshot json: the catalogue knows a saved snapshot by its first key, whatever its name", "[snapshot]") {
  CHECK(claims_torch_snapshot("run.json", "{\"segments\": [{\"device\": 0") == Claim::by_content);
  CHECK(claims_torch_snapshot("x", " \n{ \"device_traces\": [[") == Claim::by_content);
  CHECK(claims_torch_snapshot("trace.json", "{\"schemaVersion\": 1, \"traceEvents\": [") == Claim::no);
  CHECK(claims_torch_snapshot("run.pickle", "{\"other\": 1}") == Claim::by_name);
}

TEST_CASE("snapshot json: bad JSON is one line naming the byte; deep nesting is refused", "[snapshot]") {
  CHECK_THROWS_WITH(decode_snapshot_json("{\"segments\": [1, 2,]}", "s.json"),
                    Catch::StartsWith("s.json: byte 20: not a JSON snapshot: parse error") && !Catch::Contains("\n") &&
                        !Catch::Contains("[json.exception"));
  CHECK_THROWS_WITH(decode_snapshot_json("{} x", "s.json"), Catch::StartsWith("s.json: byte "));
  CHECK_THROWS_WITH(decode_snapshot_json("", "s.json"), Catch::StartsWith("s.json: byte "));
  const std::string deep = "{\"a\": " + std::string(kMaxPickleDepth + 1, '[') + std::string(kMaxPickleDepth + 1, ']') + "}";
  CHECK_THROWS_WITH(decode_snapshot_json(deep, "s.json"), Catch::Contains("nested deeper than"));
  CHECK_THROWS_AS(read_torch_recording_bytes("{\"segments\": []}", "s.json"), Error);
}

}  // namespace
}  // namespace allocsim
