#include "workloads/snapshot_import.hpp"

#include <algorithm>
#include <string>

#include "workloads/snapshot_json.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

Claim claims_torch_snapshot(std::string_view spec, std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5) {
    return Claim::by_content;
  }
  // The same dict saved with json.dump: an object opening with a key only a snapshot has first.
  if (looks_like_json(head)) {
    std::string_view rest = head.substr(head.find('{') + 1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n")));
    if (rest.starts_with("\"segments\"") || rest.starts_with("\"device_traces\"")) return Claim::by_content;
  }
  return spec.ends_with(".pickle") ? Claim::by_name : Claim::no;
}

Trace read_torch_snapshot(const std::filesystem::path& pickle, const LoadOptions& options) {
  // Through the recording, so that the trace has its layers as every other reader of a
  // recording sees them (trace info, run's breakdown, Python's, the replay's report).
  return read_torch_recording(pickle, options.cuda_device).trace;
}

}  // namespace allocsim
