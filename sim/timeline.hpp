// A bounded timeline of each tenant's allocated and reserved bytes, sampled on change.
// When full it halves itself, keeping the larger of each neighbouring pair, and from then
// on keeps every other change: memory stays bounded and peaks survive the thinning.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "sim/observer.hpp"

namespace allocsim {

class Timeline final : public Observer {
 public:
  explicit Timeline(std::size_t max_points = 100'000);

  void on_event(const Sample& sample) override;
  const std::vector<Sample>& points() const { return points_; }

  // CSV: time_ns,tenant,event,allocated_bytes,reserved_bytes,device_used_bytes
  void write_csv(std::ostream& out) const;

 private:
  void thin();

  std::size_t max_points_;
  std::size_t stride_ = 1;
  std::size_t skipped_ = 0;
  std::vector<Sample> points_;
  std::vector<Sample> last_;  // per tenant, to see a change
};

}  // namespace allocsim
