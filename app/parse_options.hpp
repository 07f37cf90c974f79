// One way every subcommand reads its arguments: the values bound in `description` are set
// (po::notify), and what was given is returned for --help and count() checks.
#pragma once

#include <span>
#include <string>
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

}  // namespace allocsim
