#include "sim/breakdown.hpp"

#include <algorithm>

namespace allocsim {

Breakdown live_breakdown(const Trace& trace, std::size_t event, std::span<const AllocId> skipped, std::size_t top) {
  Breakdown result;
  result.event = event;
  const bool layered = !trace.layer.empty();
  std::vector<Bytes> by_layer(layered ? trace.layer_names.size() : 0, 0);
  const std::size_t end = std::min(event + 1, trace.events.size());
  for (std::size_t i = 0; i < end; ++i) {
    const Event& e = trace.events[i];
    if (!names_allocation(e.op)) continue;
    if (!skipped.empty() && std::binary_search(skipped.begin(), skipped.end(), e.id)) continue;
    // A free adds its bytes' two's complement: the unsigned sums come out the same, and
    // no branch on the op is mispredicted on every other event of a random trace.
    const Bytes bytes = trace.bytes_of(e.id);
    const Bytes change = e.op == Op::alloc ? bytes : Bytes{0} - bytes;
    result.by_tag[static_cast<std::size_t>(e.tag)] += change;
    if (layered) by_layer[trace.layer[index_of(e.id)]] += change;
  }
  for (std::size_t layer = 0; layer < by_layer.size(); ++layer) {
    if (by_layer[layer] > 0) result.top_layers.emplace_back(trace.layer_names[layer], by_layer[layer]);
  }
  std::stable_sort(result.top_layers.begin(), result.top_layers.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (result.top_layers.size() > top) result.top_layers.resize(top);
  return result;
}

}  // namespace allocsim
