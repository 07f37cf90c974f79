// The version of allocsim, set in one place: the top CMakeLists.txt's project(VERSION).
// Outputs that leave the tool (JSON) carry it with the command line that made them.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace allocsim {

std::string_view allocsim_version();  // "0.1"

// The command line of this process as the CLI received it (without the program name),
// for outputs to say what made them. Empty until set: a library caller may never set it.
void set_command_line(std::span<const std::string> args);
std::span<const std::string> command_line();

}  // namespace allocsim
