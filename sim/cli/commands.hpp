// Subcommands that live in their own files; run_cli (cli.cpp) dispatches to them. Each
// throws Error on bad input and returns the exit status.
#pragma once

#include <ostream>
#include <span>
#include <string>

namespace allocsim {

// allocsim sweep: the cross product of list-valued options, one CSV (sweep_command.cpp).
int sweep_command(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// allocsim maxbatch: the largest batch that runs without OOM, per policy (maxbatch_command.cpp).
int maxbatch_command(std::span<const std::string> args, std::ostream& out);

}  // namespace allocsim
