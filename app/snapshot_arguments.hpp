// What the commands that read a PyTorch memory snapshot (replay-check, replay) share: the
// snapshot as their one positional argument, and --cuda-device to pick its trace.
#pragma once

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include <boost/program_options.hpp>

#include "app/parse_options.hpp"
#include "sim/error.hpp"

namespace allocsim {

struct SnapshotArguments {
  std::string file;
  std::optional<int> cuda_device;
};

// Adds --cuda-device to `description`, takes FILE positionally and parses `args`. False
// when --help was asked (`usage` and the options are printed to `out`); Error `missing`
// when no snapshot is named.
inline bool parse_snapshot_arguments(std::span<const std::string> args,
                                     boost::program_options::options_description& description,
                                     SnapshotArguments& snapshot, std::string_view usage, const std::string& missing,
                                     std::ostream& out) {
  namespace po = boost::program_options;
  description.add_options()("cuda-device", po::value<int>()->value_name("N")->notifier([&](int n) { snapshot.cuda_device = n; }),
                            "the device whose trace to replay (default: the only one with a trace)");
  po::options_description hidden;
  hidden.add_options()("file", po::value(&snapshot.file));
  po::options_description all;
  all.add(description).add(hidden);
  po::positional_options_description positional;
  positional.add("file", 1);
  if (parse_options(args, all, positional).count("help")) {
    out << usage << '\n' << description << '\n';
    return false;
  }
  if (snapshot.file.empty()) throw Error(missing);
  return true;
}

}  // namespace allocsim
