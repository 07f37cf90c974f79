// The subcommands that live in files of their own; run_cli dispatches to them.
#pragma once

#include <ostream>
#include <span>
#include <string>

namespace allocsim {

// Each takes the arguments after the subcommand's name and returns the exit status.
int replay_check_command(std::span<const std::string> args, std::ostream& out);

// allocsim sweep: the cross product of list-valued options, one CSV (sweep_command.cpp).
int sweep_command(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// allocsim maxbatch: the largest batch that runs without OOM, per policy (maxbatch_command.cpp).
int maxbatch_command(std::span<const std::string> args, std::ostream& out);

}  // namespace allocsim
