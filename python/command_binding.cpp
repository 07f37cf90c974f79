// allocsim.sweep, maxbatch, advise and compare: the commands themselves, run in-process
// with the arguments the Python layer spelled from keywords, so that their options,
// checks and CSV are the command line's. The GIL is released while they run; SIGINT and
// SIGTERM go to the commands' own handlers (sim/interrupt) for that time, so ^C stops a
// sweep between points with the rows that finished, and Python's handlers come back after.
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options/errors.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "app/commands.hpp"
#include "policies/registry.hpp"
#include "python/bindings.hpp"
#include "python/python_policy.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"

namespace py = pybind11;

namespace allocsim::python {
namespace {

// The handlers of SIGINT and SIGTERM as they were, put back when the command returns.
class SavedSignals {
 public:
  SavedSignals() {
    sigaction(SIGINT, nullptr, &interrupt_);
    sigaction(SIGTERM, nullptr, &terminate_);
  }
  ~SavedSignals() {
    sigaction(SIGINT, &interrupt_, nullptr);
    sigaction(SIGTERM, &terminate_, nullptr);
  }
  SavedSignals(const SavedSignals&) = delete;
  SavedSignals& operator=(const SavedSignals&) = delete;

 private:
  struct sigaction interrupt_ {};
  struct sigaction terminate_ {};
};

int dispatch(const std::string& command, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (command == "sweep") return sweep_command(args, out, err);
  if (command == "maxbatch") return maxbatch_command(args, out);
  if (command == "advise") return advise_command(args, out);
  if (command == "compare") return compare_command(args, out);
  throw Error("no command " + command + " in the Python package");
}

// Policies written in Python, by the names the arguments give them, found by the command's
// policy_maker while the command runs (policies/registry's host_policies); none after.
class HostedForCommand {
 public:
  explicit HostedForCommand(const std::map<std::string, py::object>& policies) {
    if (policies.empty()) return;
    std::map<std::string, py::handle, std::less<>> handles(policies.begin(), policies.end());
    // Called without the GIL: handles are copied without touching reference counts, and
    // `policies` (the caller's) keeps the objects alive until the command returns.
    host_policies([handles = std::move(handles)](std::string_view spec) -> std::optional<PolicyMaker> {
      const auto found = handles.find(spec);
      if (found == handles.end()) return std::nullopt;
      return PolicyMaker{found->first, [name = found->first, policy = found->second](Device& device) {
                           const py::gil_scoped_acquire locked;
                           return make_python_policy(py::reinterpret_borrow<py::object>(policy), device, name, nullptr);
                         }};
    });
  }
  ~HostedForCommand() { host_policies(nullptr); }
  HostedForCommand(const HostedForCommand&) = delete;
  HostedForCommand& operator=(const HostedForCommand&) = delete;
};

// (status, stdout, "") when it ran; (-signal, stdout, message) when a signal stopped it.
// `hosted`: the Python policies the arguments name, by name.
py::tuple run_command(const std::string& command, const std::vector<std::string>& args,
                      const std::map<std::string, py::object>& hosted) {
  static std::mutex one_command;  // host_policies is the process's: one hosting command at a time
  std::ostringstream out;
  std::ostringstream err;
  int status = 0;
  std::string stopped;
  {
    py::gil_scoped_release unlocked;
    const std::unique_lock<std::mutex> alone = hosted.empty() ? std::unique_lock<std::mutex>() : std::unique_lock(one_command);
    const HostedForCommand hosting(hosted);
    const SavedSignals saved;
    catch_interrupts();  // the commands that stop between units install them too: harmless
    clear_interrupt();
    hold_interrupts(true);  // a ^C while the command sets up is still this command's
    try {
      status = dispatch(command, args, out, err);
      if (interrupt_signal() != 0 && status == 0) stopped = std::string("interrupted by ") + signal_name(interrupt_signal());
    } catch (const Interrupted& interrupted) {
      status = -interrupted.signal();
      stopped = interrupted.what();
    } catch (const boost::program_options::error& error) {
      hold_interrupts(false);
      throw Error(std::string(error.what()) + " (see allocsim " + command + " --help)");
    } catch (...) {
      hold_interrupts(false);
      throw;
    }
    hold_interrupts(false);
    if (!stopped.empty() && status == 0) status = -interrupt_signal();
    clear_interrupt();
  }
  return py::make_tuple(status, out.str(), stopped);
}

}  // namespace

void bind_commands(py::module_& module) {
  module.def("_command", &run_command, py::arg("command"), py::arg("args"),
             py::arg("hosted") = std::map<std::string, py::object>());
}

}  // namespace allocsim::python
