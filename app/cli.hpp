// The allocsim command line, callable in-process so that tests drive it like a user.
#pragma once

#include <ostream>
#include <span>
#include <string>

namespace allocsim {

// args excludes the program name. Returns the exit status: 0 done (an OOM is a result,
// not a failure), 2 bad input (one line on `err`), 1 an internal error.
int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace allocsim
