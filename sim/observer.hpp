// Observers watch the engine loop; they never change an outcome. Statistics are built
// into the engine; timelines and trace recorders are observers.
#pragma once

#include <cstddef>

#include "sim/result.hpp"

namespace allocsim {

struct Sample {
  Nanos time;
  std::size_t tenant;
  std::size_t event;
  Bytes allocated;  // the tenant's, after the event
  Bytes reserved;   // the tenant's, after the event
  Bytes device_used;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_event(const Sample& sample) = 0;
  virtual void on_oom(const OomRecord&) {}
};

}  // namespace allocsim
