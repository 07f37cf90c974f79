#include "app/progress.hpp"

#include <cstdio>
#include <string>

#include <unistd.h>

namespace allocsim {

Progress::Progress(std::ostream& out, std::size_t total, bool enabled) : out_(out), total_(total), enabled_(enabled) {}

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void Progress::update(std::size_t done) {
  if (!enabled_ || total_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;  // a person reads 10 a second
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total_);
  char line[160];
  if (done > 0 && rate > 0) {
    std::snprintf(line, sizeof line, "\r[%s%s] %zu/%zu points, %.1f/s, %.0f s left ", std::string(filled, '#').c_str(),
                  std::string(kWidth - filled, ' ').c_str(), done, total_, rate,
                  static_cast<double>(total_ - done) / rate);
  } else {
    std::snprintf(line, sizeof line, "\r[%s] %zu/%zu points ", std::string(kWidth, ' ').c_str(), done, total_);
  }
  out_ << line << std::flush;
  drawn_ = true;
}

void Progress::finish() {
  if (drawn_) out_ << '\r' << std::string(79, ' ') << '\r' << std::flush;
  drawn_ = false;
}

}  // namespace allocsim
