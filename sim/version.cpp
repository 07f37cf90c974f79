#include "sim/version.hpp"

#include <vector>

namespace allocsim {
namespace {

std::vector<std::string>& stored_command_line() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace

std::string_view allocsim_version() { return ALLOCSIM_VERSION; }

void set_command_line(std::span<const std::string> args) { stored_command_line().assign(args.begin(), args.end()); }

std::span<const std::string> command_line() { return stored_command_line(); }

}  // namespace allocsim
