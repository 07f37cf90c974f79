// A progress line on stderr for long runs: points done, rate and time left, redrawn in
// place. Silent unless stderr is a terminal, so logs and pipes stay clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>

namespace allocsim {

class Progress {
 public:
  // enabled: draw at all (callers pass stderr_is_terminal() unless told otherwise).
  Progress(std::ostream& out, std::size_t total, bool enabled);
  void update(std::size_t done);
  void finish();  // clears the line

  static bool stderr_is_terminal();

 private:
  std::ostream& out_;
  std::size_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace allocsim
