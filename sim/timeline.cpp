#include "sim/timeline.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace allocsim {

Timeline::Timeline(std::size_t max_points) : max_points_(max_points) {
  if (max_points_ < 2) throw Error("a timeline needs room for at least 2 points");
}

void Timeline::on_event(const Sample& sample) {
  if (sample.tenant >= last_.size()) last_.resize(sample.tenant + 1, Sample{0, 0, 0, ~Bytes{0}, ~Bytes{0}, 0});
  Sample& last = last_[sample.tenant];
  if (last.allocated == sample.allocated && last.reserved == sample.reserved) return;
  last = sample;
  if (++skipped_ < stride_) return;
  skipped_ = 0;
  points_.push_back(sample);
  if (points_.size() >= max_points_) thin();
}

void Timeline::thin() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < points_.size(); i += 2) {
    const bool has_pair = i + 1 < points_.size();
    const bool second_larger = has_pair && points_[i + 1].allocated + points_[i + 1].reserved >
                                               points_[i].allocated + points_[i].reserved;
    points_[kept++] = second_larger ? points_[i + 1] : points_[i];
  }
  points_.resize(kept);
  stride_ *= 2;
}

void Timeline::write_csv(std::ostream& out) const {
  out << "time_ns,tenant,event,allocated_bytes,reserved_bytes,device_used_bytes\n";
  for (const Sample& p : points_) {
    out << p.time << ',' << p.tenant << ',' << p.event << ',' << p.allocated << ',' << p.reserved << ','
        << p.device_used << '\n';
  }
}

}  // namespace allocsim
