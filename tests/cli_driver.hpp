// Driving the command line in-process as a user would, for the CLI, GPU-command and
// sweep tests: run it, keep what it printed, and give it a private folder to write in.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace allocsim::test {

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

inline Outcome cli(std::vector<std::string> args) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

// A fresh folder under the system's temporary one, removed with what is in it.
class TempDir {
 public:
  TempDir()
      : path(std::filesystem::temp_directory_path() /
             ("allocsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside; with text, the file is written first.
  std::string file(const std::string& name, const std::string& text = "") const {
    const std::filesystem::path file_path = path / name;
    if (!text.empty()) std::ofstream(file_path) << text;
    return file_path.string();
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path), {}));
  }

  const std::filesystem::path path;

 private:
  static inline int counter_ = 0;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The lines of a text (an output, a CSV), without their '\n'.
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Bad input is answered with exactly one line.
inline bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

}  // namespace allocsim::test
