// Every file a command reads and writes, checked before anything runs: no output is one
// of the inputs or another output, and every output's folder takes a new file. Files are
// compared by identity, not by spelling: `./x.csv`, `dir/../x.csv`, a symlink and a hard
// link to x.csv are all x.csv.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace allocsim {

class OutputPaths {
 public:
  // `option` names the path in messages ("--csv", "--workload"); an empty path is none.
  void input(std::string_view option, const std::string& path);
  void output(std::string_view option, const std::string& path);

  // Contract: throws Error naming both options when an output is an input or another
  // output, and naming the output when its folder is missing, it is a folder, or no file
  // can be created beside it (probed by creating and removing one). Touches no input.
  void check() const;

 private:
  struct Named {
    std::string option;
    std::string path;
  };
  std::vector<Named> inputs_;
  std::vector<Named> outputs_;
};

// True when `a` and `b` name the same file: the same (device, inode) where both exist,
// else the same path once made absolute, `.`, `..` and the symlinks of its existing part
// resolved.
bool same_file(const std::string& a, const std::string& b);

}  // namespace allocsim
