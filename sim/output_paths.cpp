#include "sim/output_paths.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "sim/error.hpp"

namespace allocsim {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error) && !error;
  // One does not exist yet: only the same path, spelled out, can be it.
  const fs::path left = fs::weakly_canonical(fs::absolute(a), error);
  if (error) return false;
  const fs::path right = fs::weakly_canonical(fs::absolute(b), error);
  return !error && left == right;
}

void OutputPaths::input(std::string_view option, const std::string& path) {
  if (!path.empty()) inputs_.push_back({std::string(option), path});
}

void OutputPaths::output(std::string_view option, const std::string& path) {
  if (!path.empty()) outputs_.push_back({std::string(option), path});
}

void OutputPaths::check() const {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const Named& output = outputs_[i];
    for (const Named& input : inputs_) {
      if (same_file(output.path, input.path)) {
        throw Error(output.option + " " + output.path + " is the file " + input.option + " " + input.path +
                    " reads; refusing to write over an input (name another output file)");
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (same_file(output.path, outputs_[j].path)) {
        throw Error(output.option + " " + output.path + " and " + outputs_[j].option + " " + outputs_[j].path +
                    " are the same file; give each output its own");
      }
    }
  }
  for (const Named& output : outputs_) {
    const fs::path path(output.path);
    const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    std::error_code error;
    if (!fs::is_directory(folder, error)) {
      throw Error("cannot write " + output.option + " " + output.path + ": no folder " + folder.string());
    }
    if (fs::is_directory(path, error)) throw Error("cannot write " + output.option + " " + output.path + ": it is a folder");
    // The output is written beside itself and renamed (write_file_atomically): the folder
    // must take a new file. A probe says so now rather than after a long run.
    fs::path probe = path;
    probe += ".probe" + std::to_string(::getpid());
    const bool created = static_cast<bool>(std::ofstream(probe, std::ios::binary));
    fs::remove(probe, error);
    if (!created) throw Error("cannot write " + output.option + " " + output.path + ": its folder takes no new file");
  }
}

}  // namespace allocsim
