#include "app/cli.hpp"

#include <iostream>
#include <vector>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"
#include "sim/version.hpp"

namespace allocsim {

namespace po = boost::program_options;

const char* const kAllocsimUsage = R"(allocsim: replay GPU memory allocation workloads through allocator policies.

Usage:
  allocsim [run] --workload SPEC --policy SPEC [options]   replay and report (the default)
  allocsim policies                                         every policy, what it models, its options
  allocsim workloads                                        every workload generator and the trace format
  allocsim devices                                          device presets for --device
  allocsim replay-check FILE.pickle                         does `caching` reserve what PyTorch did?
  allocsim replay FILE.pickle --policy SPECS                would another setting have saved this run?
  allocsim sweep --workload SPEC... --policy SPECS [lists]  the cross product of lists, one CSV (sweep --help)
  allocsim maxbatch --workload MODEL --policy SPECS         the largest batch without OOM, per policy
  allocsim compare --workload SPEC --policy SPECS           the policies side by side (--report FILE.html)
  allocsim advise --workload SPEC [--framework tf|torch]    what to change so that it fits (advise --help)
  allocsim explain [TEXT | FILE | -]                        why a pasted OOM message or log ran out (explain --help)
  allocsim trace info|convert|slice FILE ...                look at, convert or cut a trace (trace --help)
  allocsim validate --workload SPEC --policy SPEC [--cap S] simulation and the GPU side by side (validate --help)
  allocsim calibrate [--out FILE]                           measure the GPU's allocation costs for --device-profile
  allocsim --version                                        the version (JSON outputs carry it and the command line)

Examples:
  allocsim --workload random:n=100000,seed=7 --policy bestfit
  allocsim --workload trace.csv --policy direct --capacity 8GiB --on-oom continue
  allocsim --device v100-16gb --tenant random:live=10GiB@bestfit --tenant random:seed=2,live=2GiB@direct
  allocsim --capacity 16GiB --tenant resnet50_b64@bfc@start=2s --tenant resnet50_b32@growth   (B starts first)
  allocsim --workload random --policy bestfit:region=4GiB --csv out.csv --json out.json --timeline t.csv
  allocsim --workload resnet50_b64 --policy bfc --report run.html   (a page to look at, offline)

A workload spec is one value, commas and all (llama2_7b_bf16:qlora=64,ckpt is one); where a
command takes several workloads (sweep), repeat --workload, one spec each.
Sizes take binary or SI units: 4096, 512MiB, 16GiB, 1.5GB. Times: 0, 250us, 500ms, 2s.
The table opens with a verdict per tenant: fits, or why not over the whole run (capacity:
no allocator fits; reservation: what holds the bytes; fragmentation), then the metrics.
Exit status: 0 when the run completed (an OOM is a result, reported in the output), 2 on bad input.
)";

int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  try {
    std::vector<std::string> invocation{"allocsim"};
    invocation.insert(invocation.end(), args.begin(), args.end());
    set_command_line(invocation);
    const std::string command = args.empty() ? "" : args.front();
    if (command == "--version" || command == "version") {
      out << "allocsim " << allocsim_version() << '\n';
      return 0;
    }
    if (command == "policies") return policies_command(out);
    if (command == "workloads") return workloads_command(out);
    if (command == "devices") return devices_command(out);
    if (command == "help") return run_command(std::vector<std::string>{"--help"}, out);
    if (command == "run") return run_command(args.subspan(1), out);
    if (command == "replay-check") return replay_check_command(args.subspan(1), out);
    if (command == "replay") return replay_command(args.subspan(1), out);
    if (command == "sweep") return sweep_command(args.subspan(1), out, err);
    if (command == "maxbatch") return maxbatch_command(args.subspan(1), out);
    if (command == "compare") return compare_command(args.subspan(1), out);
    if (command == "advise") return advise_command(args.subspan(1), out);
    if (command == "explain") return explain_command(args.subspan(1), out, std::cin);
    if (command == "trace") return trace_command(args.subspan(1), out);
    if (command == "validate") return validate_command(args.subspan(1), out);
    if (command == "calibrate") return calibrate_command(args.subspan(1), out);
    if (!command.empty() && command.front() != '-') {
      throw Error("unknown command '" + command +
                  "' (run, replay-check, replay, sweep, maxbatch, compare, advise, explain, trace, validate, calibrate, policies, workloads, devices, help, version)");
    }
    if (args.empty()) {
      out << kAllocsimUsage;
      return 2;
    }
    return run_command(args, out);
  } catch (const Interrupted& stopped) {
    err << "allocsim: " << stopped.what() << '\n';
    return 128 + stopped.signal();
  } catch (const Error& error) {
    err << "allocsim: " << error.what() << '\n';
    return 2;
  } catch (const po::error& error) {
    err << "allocsim: " << error.what() << " (see allocsim --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "allocsim: out of memory: the workload is too large for this machine\n";
    return 2;
  } catch (const std::exception& error) {
    err << "allocsim: internal error: " << error.what() << '\n';
    return 1;
  }
}

}  // namespace allocsim
