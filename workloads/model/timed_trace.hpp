// A trace builder with the lowering's clock: a nominal microsecond between requests, each
// allocation named by the layer that makes it (generation.cpp, kv_cache.cpp).
#pragma once

#include <string>
#include <utility>

#include "sim/trace.hpp"

namespace allocsim {

class TimedTrace {
 public:
  explicit TimedTrace(TraceInfo info) : builder_(std::move(info)) {}

  AllocId alloc(Bytes bytes, Tag tag, const std::string& layer) { return builder_.alloc(tick(), bytes, 0, tag, layer); }
  void free(AllocId id) { builder_.free(tick(), id); }
  void begin_step() { builder_.begin_step(); }
  Trace finish() && { return std::move(builder_).finish(); }

 private:
  static constexpr Nanos kEventGap = 1000;  // as lower.cpp's
  Nanos tick() { return time_ += kEventGap; }

  TraceBuilder builder_;
  Nanos time_ = 0;
};

}  // namespace allocsim
