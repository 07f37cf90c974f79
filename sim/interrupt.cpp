#include "sim/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace allocsim {
namespace {

std::atomic<int> caught{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may touch only lock-free atomics");

extern "C" void on_signal(int signal) {
  caught.store(signal, std::memory_order_relaxed);
  std::signal(signal, SIG_DFL);  // async-signal-safe; the next ^C ends the process
}

}  // namespace

void catch_interrupts() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

int interrupt_signal() { return caught.load(std::memory_order_relaxed); }

void clear_interrupt() { caught.store(0, std::memory_order_relaxed); }

void stop_if_interrupted() {
  if (const int signal = interrupt_signal()) throw Interrupted(signal, std::string("interrupted by ") + signal_name(signal));
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace allocsim
