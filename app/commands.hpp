// Every subcommand, one file each; run_cli (cli.cpp) dispatches to them. Each takes the
// arguments after the subcommand's name and returns the exit status; bad input throws
// Error, which run_cli turns into one line and exit 2.
#pragma once

#include <istream>
#include <ostream>
#include <span>
#include <string>

#include "app/backend.hpp"

namespace allocsim {

// What `allocsim` alone and `allocsim --help` print first.
extern const char* const kAllocsimUsage;

// allocsim [run]: one scenario replayed and reported (run_command.cpp).
int run_command(std::span<const std::string> args, std::ostream& out);

// allocsim policies | workloads | devices: the catalogues (list_commands.cpp).
int policies_command(std::ostream& out);
int workloads_command(std::ostream& out);
int devices_command(std::ostream& out);

// allocsim replay-check FILE.pickle (replay_check_command.cpp).
int replay_check_command(std::span<const std::string> args, std::ostream& out);

// allocsim replay FILE.pickle --policy SPECS: what-if from a recording (replay_command.cpp).
int replay_command(std::span<const std::string> args, std::ostream& out);

// allocsim sweep: the cross product of list-valued options, one CSV (sweep_command.cpp).
int sweep_command(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// allocsim maxbatch: the largest batch that runs without OOM, per policy (maxbatch_command.cpp).
int maxbatch_command(std::span<const std::string> args, std::ostream& out);

// allocsim compare: one workload through several policies, one table (compare_command.cpp).
int compare_command(std::span<const std::string> args, std::ostream& out);

// allocsim advise: what to change so that a workload fits, each line a run (advise_command.cpp).
int advise_command(std::span<const std::string> args, std::ostream& out);

// allocsim explain [TEXT | FILE | -]: the kind of a pasted OOM message or log (explain_command.cpp).
int explain_command(std::span<const std::string> args, std::ostream& out, std::istream& in);

// allocsim trace info | convert | slice: look at, convert and cut traces (trace_command.cpp).
int trace_command(std::span<const std::string> args, std::ostream& out);

// allocsim validate | calibrate: on the GPU or the host stand-in (validate_command.cpp,
// calibrate_command.cpp).
int validate_command(std::span<const std::string> args, std::ostream& out, const DeviceOpener& open = open_backend);
int calibrate_command(std::span<const std::string> args, std::ostream& out, const DeviceOpener& open = open_backend);

}  // namespace allocsim
