// One way every subcommand reads its arguments: the values bound in `description` are set
// (po::notify), and what was given is returned for --help and count() checks.
#pragma once

#include <span>
#include <string>

#include "sim/error.hpp"
#include <vector>

#include <boost/program_options.hpp>

namespace allocsim {

inline boost::program_options::variables_map parse_options(
    std::span<const std::string> args, const boost::program_options::options_description& description,
    const boost::program_options::positional_options_description& positional = {}) {
  namespace po = boost::program_options;
  po::variables_map values;
  po::store(po::command_line_parser(std::vector<std::string>(args.begin(), args.end()))
                .options(description)
                .positional(positional)
                .run(),
            values);
  po::notify(values);
  return values;
}

// --threads N: 0 is every core (the caller's default), a negative count is refused (Boost
// would read -1 into an unsigned as four billion).
inline unsigned threads_option(int given) {
  if (given < 0) throw Error("--threads " + std::to_string(given) + " is negative; give 1 or more, or 0 for every core");
  return static_cast<unsigned>(given);
}

}  // namespace allocsim
