// What JavaScript calls (web/allocsim_core.js, built by the wasm preset): C functions that
// take text and bytes and answer JSON text, so the page needs no binding library.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "web/what_if_json.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// The last answer, kept until the next call: JavaScript reads it with UTF8ToString.
std::string& answer_text() {
  static std::string text;
  return text;
}

const char* answer(const json& value) {
  answer_text() = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return answer_text().c_str();
}

// Request: {"name": FILE, "policies": [SPEC...] or "a,b", "capacity": SIZE or null}.
// `bytes` is the recording: a PyTorch snapshot pickle, read by the command line's reader.
json replay(std::string_view bytes, const json& request) {
  const std::string name = request.value("name", std::string("snapshot"));
  std::vector<std::string> lists;
  const json& policies = request.contains("policies") ? request.at("policies") : json("caching,expandable");
  if (policies.is_string()) {
    lists.push_back(policies.get<std::string>());
  } else {
    for (const json& policy : policies) lists.push_back(policy.get<std::string>());
  }
  std::vector<std::string> specs;
  for (const PolicySpec& policy : parse_policy_lists(lists)) specs.push_back(policy.text);
  std::optional<Bytes> capacity;
  if (request.contains("capacity") && !request.at("capacity").is_null()) {
    capacity = parse_bytes(request.at("capacity").get<std::string>());
    if (*capacity == 0) throw Error("--capacity must be more than 0 bytes");
  }
  const TorchRecording recording = read_torch_recording_bytes(bytes, name);
  return what_if_json(recording, name, specs, capacity);
}

}  // namespace
}  // namespace allocsim

extern "C" {

// `bytes`/`size`: the recording; `request`: JSON (see replay above). Answers the what-if
// as JSON, or {"error": the command line's one-line message}.
const char* allocsim_replay(const std::uint8_t* bytes, std::size_t size, const char* request) {
  try {
    const std::string_view data(reinterpret_cast<const char*>(bytes), size);
    return allocsim::answer(allocsim::replay(data, nlohmann::json::parse(request)));
  } catch (const allocsim::Error& error) {
    return allocsim::answer({{"error", error.what()}});
  } catch (const std::exception& error) {
    return allocsim::answer({{"error", std::string("bad request: ") + error.what()}});
  }
}

}  // extern "C"
