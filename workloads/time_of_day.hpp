// Logs that stamp each line with the time of day and no date (RMM's logging adaptor,
// TensorFlow's and glog's line prefixes): the time parsed, and made into a clock that
// starts at the first line and never runs backwards.
#pragma once

#include <optional>
#include <string_view>

#include "sim/units.hpp"

namespace allocsim {

// `HH:MM:SS.f` or `HH:MM:SS:f` (RMM up to v21.04 documents the colon), f one to nine
// digits: nanoseconds since midnight. Throws Error quoting the text.
Nanos parse_time_of_day(std::string_view text);

// Contract: next() returns the time since the first call's, never less than the one it
// returned before. A time more than half a day earlier than the last is taken as the next
// day (a log running past midnight); a time a little earlier (threads flushing out of
// order) is held at the last: the file's order is the order of events.
class DayClock {
 public:
  Nanos next(Nanos of_day);

 private:
  Nanos day_ = 0;
  Nanos last_ = 0;
  std::optional<Nanos> origin_;
};

}  // namespace allocsim
