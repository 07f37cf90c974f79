#include "workloads/snapshot_import.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "workloads/csv_trace.hpp"

extern char** environ;

namespace allocsim {
namespace {

namespace fs = std::filesystem;

// A private folder (mkdtemp: mode 0700, an unpredictable name) removed with its files
// when it goes out of scope, so nobody can plant a link where the converter writes.
struct TemporaryFolder {
  TemporaryFolder() {
    std::string pattern = (fs::temp_directory_path() / "allocsim-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error("cannot make a temporary folder to convert a snapshot");
    path = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Beside the sources this binary was built from; else, for the portable binary carried to
// another checkout (validate.sh runs it from the repository root), under tools/ here.
std::string converter_script() {
  const fs::path beside_sources = fs::path(ALLOCSIM_TOOLS_DIR) / "torch_snapshot.py";
  std::error_code ignored;
  if (fs::exists(beside_sources, ignored)) return beside_sources.string();
  return "tools/torch_snapshot.py";
}

}  // namespace

ConverterOutput run_snapshot_converter(const fs::path& pickle, std::optional<int> cuda_device) {
  const TemporaryFolder folder;
  const fs::path csv = folder.path / "trace.csv";
  const fs::path sidecar = folder.path / "settings.json";
  const fs::path errors = folder.path / "errors.txt";
  const std::string script = converter_script();
  // No shell: the path goes to python as one argument, whatever characters it holds.
  std::vector<std::string> args{"python3", script, pickle.string(), "-o", csv.string(), "--settings-out",
                                sidecar.string()};
  if (cuda_device) args.insert(args.end(), {"--cuda-device", std::to_string(*cuda_device)});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, "python3", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error(pickle.string() + ": cannot run python3 to read a PyTorch snapshot");
  int status = 0;
  if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string reason = read_all(errors);
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == '\r')) reason.pop_back();
    const auto last_line = reason.rfind('\n');
    if (last_line != std::string::npos) reason = reason.substr(last_line + 1);
    const std::string prefix = "torch_snapshot: ";
    if (reason.starts_with(prefix)) reason = reason.substr(prefix.size());
    std::replace(reason.begin(), reason.end(), '\0', '?');  // the converter escapes them; never cut a message short
    throw Error(reason.empty() ? pickle.string() + ": the snapshot converter failed" : reason);
  }
  return ConverterOutput{read_all(csv), read_all(sidecar)};
}

Trace parse_converted_trace(std::string_view csv, const std::string& pickle) {
  Trace trace = parse_csv_trace(csv, pickle + " (converted)");  // errors name the pickle
  trace.info = TraceInfo{pickle, "torch snapshot"};
  return trace;
}

ConvertedSnapshot convert_torch_snapshot(const fs::path& pickle, std::optional<int> cuda_device) {
  ConverterOutput output = run_snapshot_converter(pickle, cuda_device);
  return ConvertedSnapshot{parse_converted_trace(output.csv, pickle.string()), std::move(output.sidecar)};
}

Claim claims_torch_snapshot(std::string_view spec, std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5) {
    return Claim::by_content;
  }
  return spec.ends_with(".pickle") ? Claim::by_name : Claim::no;
}

Trace read_torch_snapshot(const fs::path& pickle, const LoadOptions& options) {
  return convert_torch_snapshot(pickle, options.cuda_device).trace;
}

}  // namespace allocsim
