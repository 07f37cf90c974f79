#include "sim/timeline.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace allocsim {
namespace {

Bytes weight(const Sample& sample) { return sample.allocated + sample.reserved; }

}  // namespace

Timeline::Timeline(std::size_t max_points_per_tenant) : max_points_(max_points_per_tenant) {
  if (max_points_ < 2) throw Error("a timeline needs room for at least 2 points");
}

void Timeline::on_event(const Sample& sample) {
  if (sample.tenant >= tracks_.size()) tracks_.resize(sample.tenant + 1);
  Track& track = tracks_[sample.tenant];
  if (track.last && track.last->allocated == sample.allocated && track.last->reserved == sample.reserved) return;
  track.last = sample;
  if (!track.largest || weight(sample) > weight(*track.largest)) track.largest = sample;
  if (++track.in_window < track.window) return;
  track.points.push_back(*track.largest);
  track.largest.reset();
  track.in_window = 0;
  if (track.points.size() >= max_points_) thin(track);
}

void Timeline::thin(Track& track) const {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < track.points.size(); i += 2) {
    const bool second_larger = i + 1 < track.points.size() && weight(track.points[i + 1]) > weight(track.points[i]);
    track.points[kept++] = track.points[second_larger ? i + 1 : i];
  }
  track.points.resize(kept);
  track.window *= 2;
}

std::vector<Sample> Timeline::points() const {
  std::vector<Sample> all;
  for (const Track& track : tracks_) {
    all.insert(all.end(), track.points.begin(), track.points.end());
    if (track.largest) all.push_back(*track.largest);
  }
  std::stable_sort(all.begin(), all.end(), [](const Sample& a, const Sample& b) {
    return a.time != b.time ? a.time < b.time : a.tenant < b.tenant;
  });
  return all;
}

void Timeline::write_csv(std::ostream& out) const {
  out << "time_ns,tenant,event,allocated_bytes,reserved_bytes,device_used_bytes\n";
  for (const Sample& p : points()) {
    out << p.time << ',' << p.tenant << ',' << p.event << ',' << p.allocated << ',' << p.reserved << ','
        << p.device_used << '\n';
  }
}

}  // namespace allocsim
