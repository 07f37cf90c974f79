#include "workloads/time_of_day.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Nanos kDay = 24ull * 3600 * 1'000'000'000;

std::optional<std::uint64_t> digits(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Nanos parse_time_of_day(std::string_view text) {
  const auto bad = [&] { return Error("time '" + std::string(text) + "' is not HH:MM:SS.uuuuuu (or HH:MM:SS:uuuuuu)"); };
  if (text.size() < 10 || text[2] != ':' || text[5] != ':' || (text[8] != '.' && text[8] != ':')) throw bad();
  const auto hours = digits(text.substr(0, 2));
  const auto minutes = digits(text.substr(3, 2));
  const auto seconds = digits(text.substr(6, 2));
  const std::string_view fraction = text.substr(9);
  const auto value = digits(fraction);
  if (!hours || !minutes || !seconds || !value || *hours > 23 || *minutes > 59 || *seconds > 60 || fraction.size() > 9) {
    throw bad();
  }
  Nanos fraction_ns = *value;
  for (std::size_t count = fraction.size(); count < 9; ++count) fraction_ns *= 10;
  return ((*hours * 60 + *minutes) * 60 + *seconds) * 1'000'000'000 + fraction_ns;
}

Nanos DayClock::next(Nanos of_day) {
  Nanos time = day_ + of_day;
  if (time + kDay / 2 < last_) {
    day_ += kDay;
    time += kDay;
  }
  last_ = std::max(last_, time);
  if (!origin_) origin_ = last_;
  return last_ - *origin_;
}

}  // namespace allocsim
