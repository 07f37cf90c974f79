// A bounded timeline of each tenant's allocated and reserved bytes, sampled on change.
// Each tenant keeps its own points. When a tenant's points reach the bound they are
// halved, the larger of each neighbouring pair kept, and from then on one point stands
// for each window of changes: the window's largest. Memory stays bounded and peaks
// survive the thinning.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <vector>

#include "sim/observer.hpp"

namespace allocsim {

class Timeline final : public Observer {
 public:
  explicit Timeline(std::size_t max_points_per_tenant = 100'000);

  void on_event(const Sample& sample) override;
  // Every tenant's points, by time (ties: by tenant); a window still open counts.
  std::vector<Sample> points() const;

  // CSV: time_ns,tenant,event,allocated_bytes,reserved_bytes,device_used_bytes
  void write_csv(std::ostream& out) const;

 private:
  struct Track {
    std::vector<Sample> points;
    std::size_t window = 1;  // changes each point stands for
    std::size_t in_window = 0;
    std::optional<Sample> largest;  // of the open window
    std::optional<Sample> last;     // to see a change
  };
  void thin(Track& track) const;

  std::size_t max_points_;
  std::vector<Track> tracks_;  // by tenant
};

}  // namespace allocsim
