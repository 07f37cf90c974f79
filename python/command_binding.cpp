// allocsim.sweep, maxbatch, advise and compare: the commands themselves, run in-process
// with the arguments the Python layer spelled from keywords, so that their options,
// checks and CSV are the command line's. The GIL is released while they run; SIGINT and
// SIGTERM go to the commands' own handlers (sim/interrupt) for that time, so ^C stops a
// sweep between points with the rows that finished, and Python's handlers come back after.
#include <csignal>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "app/commands.hpp"
#include "python/bindings.hpp"
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

// (status, stdout, "") when it ran; (-signal, stdout, message) when a signal stopped it.
py::tuple run_command(const std::string& command, const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  int status = 0;
  std::string stopped;
  {
    py::gil_scoped_release unlocked;
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

void bind_commands(py::module_& module) { module.def("_command", &run_command); }

}  // namespace allocsim::python
