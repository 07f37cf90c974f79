// What JavaScript calls (web/allocsim_core.js, built by the wasm preset): C functions that
// take text and bytes and answer JSON text, so the page needs no binding library.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "studies/oom_explanation.hpp"
#include "studies/replay_from_recording.hpp"
#include "web/what_if_json.hpp"
#include "web/what_if_report.hpp"
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

// An answer that is JSON text already (a report's data, megabytes: not parsed again).
const char* answer(std::string text) {
  answer_text() = std::move(text);
  return answer_text().c_str();
}

// The answer of `call`, or {"error": the command line's one-line message}.
template <typename Call>
const char* answer_or_error(Call call) {
  try {
    return answer(call());
  } catch (const Error& error) {
    return answer({{"error", error.what()}});
  } catch (const std::exception& error) {
    return answer({{"error", std::string("bad request: ") + error.what()}});
  }
}

// The page asks for the table, then for the charts of the same file: the recording read
// last is kept with its bytes, so a second call on the same bytes reads nothing again.
const TorchRecording& recording_of(std::string_view bytes, const std::string& name) {
  static std::string last_bytes;
  static std::string last_name;
  static std::optional<TorchRecording> last;
  if (!last || name != last_name || bytes != last_bytes) {
    last.reset();
    last = read_torch_recording_bytes(bytes, name);
    last_bytes.assign(bytes);
    last_name = name;
  }
  return *last;
}

// Request: {"name": FILE, "policies": [SPEC...] or "a,b", "capacity": SIZE or null}.
struct PageRequest {
  std::string name;
  std::vector<RecordingPolicy> policies;  // each spec read once, here
  std::optional<Bytes> capacity;
};

PageRequest request_of(const char* text) {
  const json request = json::parse(text);
  PageRequest out;
  out.name = request.value("name", std::string("snapshot"));
  std::vector<std::string> lists;
  const json& policies = request.contains("policies") ? request.at("policies") : json("caching,expandable");
  if (policies.is_string()) {
    lists.push_back(policies.get<std::string>());
  } else {
    for (const json& policy : policies) lists.push_back(policy.get<std::string>());
  }
  for (PolicySpec& policy : parse_policy_lists(lists)) out.policies.emplace_back(std::move(policy));
  if (request.contains("capacity") && !request.at("capacity").is_null()) {
    out.capacity = parse_bytes(request.at("capacity").get<std::string>());
    if (*out.capacity == 0) throw Error("--capacity must be more than 0 bytes");
  }
  return out;
}

}  // namespace
}  // namespace allocsim

extern "C" {

// `bytes`/`size`: the recording (a snapshot pickle, or the same dict saved as JSON);
// `request`: JSON (see PageRequest above). Answers the what-if as JSON (web/what_if_json.hpp).
const char* allocsim_replay(const std::uint8_t* bytes, std::size_t size, const char* request) {
  return allocsim::answer_or_error([&] {
    const allocsim::PageRequest asked = allocsim::request_of(request);
    const std::string_view data(reinterpret_cast<const char*>(bytes), size);
    return allocsim::what_if_json(allocsim::recording_of(data, asked.name), asked.name, asked.policies, asked.capacity);
  });
}

// The same arguments; answers the data `allocsim replay ... --report` draws (studies/report/report.js).
const char* allocsim_report(const std::uint8_t* bytes, std::size_t size, const char* request) {
  return allocsim::answer_or_error([&] {
    const allocsim::PageRequest asked = allocsim::request_of(request);
    const std::string_view data(reinterpret_cast<const char*>(bytes), size);
    const allocsim::TorchRecording& recording = allocsim::recording_of(data, asked.name);
    return allocsim::what_if_report(recording, asked.name, asked.policies, asked.capacity);
  });
}

// `text`: a pasted OOM message or log. Answers {"text": what `allocsim explain` prints,
// "decided": whether it found a kind (the command exits 2 when not)}.
const char* allocsim_explain(const char* text) {
  return allocsim::answer_or_error([&] {
    const allocsim::OomExplanation explanation = allocsim::explain_oom(text);
    return nlohmann::json{{"text", allocsim::describe_explanation(explanation)}, {"decided", explanation.kind.has_value()}};
  });
}

}  // extern "C"
