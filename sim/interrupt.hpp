// SIGINT and SIGTERM during long work (a sweep, maxbatch): the handler only sets a flag;
// the work reads it between its units (a point, a search), stops taking new ones, saves
// what it finished, and throws Interrupted, which main turns into exit 128 + signal. The
// replays and generators inside a unit read it too (stop_if_interrupted): the unit is dropped.
#pragma once

#include <cstddef>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

// Installs the handlers (again: harmless). The first signal sets the flag and restores the
// default action, so a second one ends the process at once, as a user pressing ^C twice expects.
void catch_interrupts();

// The signal caught since the last clear (SIGINT, SIGTERM), 0 while none. Safe from any thread.
int interrupt_signal();
void clear_interrupt();

// "SIGINT", "SIGTERM".
const char* signal_name(int signal);

// Throws Interrupted when a signal was caught. A replay asks every kEventsBetweenStopChecks
// events, so that ^C stops a sweep's running points within a moment, not only the points
// not started; without catch_interrupts nothing is ever caught.
void stop_if_interrupted();
inline constexpr std::size_t kEventsBetweenStopChecks = std::size_t{1} << 16;

// Work stopped by a signal after saving what it finished; what() says where and how to go on.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& message) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace allocsim
