#include "policies/common/offline_plan.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <numeric>
#include <span>
#include <tuple>

#include "policies/common/free_list.hpp"

namespace allocsim {
namespace {

constexpr Bytes kNone = std::numeric_limits<Bytes>::max();

// By AllocId: the request aligned up (0 for a zero-byte request), computed at each read, so
// that the online heuristics hold no array of them.
struct AlignedSizes {
  std::span<const Bytes> requested;
  Bytes alignment;
  Bytes operator[](std::size_t i) const { return align_up(requested[i], alignment); }
};

// What the greedy heuristics plan with, 24 bytes an allocation: the aligned sizes, and the
// lifetimes in event indices, [start, end) (an allocation never freed lives to the end).
struct Items {
  std::vector<Bytes> size;
  std::vector<std::uint64_t> start;
  std::vector<std::uint64_t> end;
  std::size_t count() const { return size.size(); }
  friend bool operator==(const Items&, const Items&) = default;
};

Items items_of(const Trace& trace, Bytes alignment) {
  Items items;
  const std::size_t n = trace.allocations();
  const AlignedSizes aligned{trace.requested, alignment};
  items.size.resize(n);
  items.start.assign(n, 0);
  items.end.assign(n, trace.events.size());
  for (std::size_t i = 0; i < n; ++i) items.size[i] = aligned[i];
  for (std::size_t k = 0; k < trace.events.size(); ++k) {
    const Event& event = trace.events[k];
    if (event.op == Op::alloc) items.start[index_of(event.id)] = k;
    if (event.op == Op::free) items.end[index_of(event.id)] = k;
  }
  return items;
}

// Walks the trace with the set of live (non-empty) allocations, calling visit(i, live)
// at each allocation i with the ones alive just before it.
template <typename Visit>
void sweep(const Trace& trace, const Items& items, Visit visit) {
  std::vector<std::uint32_t> live;
  std::vector<std::uint32_t> position(items.count());
  for (const Event& event : trace.events) {
    const std::uint32_t i = index_of(event.id);
    if (!names_allocation(event.op) || items.size[i] == 0) continue;
    if (event.op == Op::alloc) {
      visit(i, live);
      position[i] = static_cast<std::uint32_t>(live.size());
      live.push_back(i);
    } else {
      const std::uint32_t last = live.back();
      live[position[i]] = last;
      position[last] = position[i];
      live.pop_back();
    }
  }
}

// Who overlaps whom in time. The degrees come in O(events): an allocation overlaps those
// live when it is made and those made while it lives. The rows themselves, O(pairs), are
// built the first time one is asked for: the greedy heuristics may never need them (see
// greedy()). Neighbours of i are adjacency[first[i] .. first[i + 1]).
class Conflicts {
 public:
  Conflicts(const Trace& trace, const Items& items) : trace_(trace), items_(items), first_(items.count() + 1, 0) {
    std::vector<std::uint64_t> made_before(trace.events.size() + 1, 0);  // non-empty allocs before each event
    for (std::size_t k = 0; k < trace.events.size(); ++k) {
      const Event& event = trace.events[k];
      const bool made = event.op == Op::alloc && items.size[index_of(event.id)] != 0;
      made_before[k + 1] = made_before[k] + (made ? 1 : 0);
    }
    std::vector<std::uint64_t> degree(items.count() + 1, 0);
    sweep(trace, items, [&](std::uint32_t i, const std::vector<std::uint32_t>& live) {
      degree[i] = live.size() + made_before[items.end[i]] - made_before[items.start[i] + 1];
    });
    std::partial_sum(degree.begin(), degree.end() - 1, first_.begin() + 1);
  }

  std::uint64_t degree(std::uint32_t i) const { return first_[i + 1] - first_[i]; }

  std::span<const std::uint32_t> row(std::uint32_t i) {
    if (!built_) build();
    return std::span<const std::uint32_t>(adjacency_).subspan(first_[i], degree(i));
  }

 private:
  void build() {
    built_ = true;
    adjacency_.resize(first_.back());
    std::vector<std::uint64_t> fill(first_.begin(), first_.end() - 1);
    sweep(trace_, items_, [&](std::uint32_t i, const std::vector<std::uint32_t>& live) {
      for (std::uint32_t j : live) {
        adjacency_[fill[i]++] = j;
        adjacency_[fill[j]++] = i;
      }
    });
  }

  const Trace& trace_;
  const Items& items_;
  std::vector<std::uint64_t> first_;
  std::vector<std::uint32_t> adjacency_;
  bool built_ = false;
};

// An allocation already placed, for the scan in offset order: where it lies and when it lives.
struct Placed {
  Bytes begin;
  Bytes end;
  std::uint64_t start;
  std::uint64_t stop;
};

// Places allocations in `order`, each at the best-fitting gap (the smallest that holds
// it, the lowest among equals; or with `lowest`, the lowest that holds it) between the
// placed allocations that overlap it in time, or on top of them. Gives up (returns
// kNone) once the arena reaches `give_up`.
// Those placed neighbours are found one of two ways, whichever is cheaper for the item
// (`search` forces one, for the tests that compare them): gathered from its conflict row
// and sorted by offset, O(d log d) for d neighbours; or by scanning every placed
// allocation in offset order, kept sorted as they are placed, and skipping those that do
// not overlap it in time, O(placed). Both see the same neighbours in the same offset order,
// so the gap found is the same. The scan wins where most allocations overlap most others,
// as in a training step whose weights and optimizer state live throughout.
Bytes greedy(const Items& items, Conflicts& conflicts, const std::vector<std::uint32_t>& order, bool lowest,
             Bytes give_up, GapSearch search, std::vector<Bytes>& offset) {
  std::vector<char> placed(items.count(), 0);
  std::vector<std::pair<Bytes, Bytes>> taken;  // [offset, end) of placed neighbours
  std::vector<Placed> by_offset;               // every placed allocation, by begin
  Bytes arena = 0;
  for (std::uint32_t i : order) {
    const Bytes size = items.size[i];
    if (size == 0) continue;
    Bytes best = kNone;
    Bytes best_gap = kNone;
    Bytes top = 0;
    const auto consider = [&](Bytes begin, Bytes end) {
      if (begin > top && begin - top >= size && begin - top < best_gap) {
        best = top;
        best_gap = begin - top;
        if (lowest) return false;
      }
      top = std::max(top, end);
      return true;
    };
    const bool scan = search == GapSearch::by_offset ||
                      (search == GapSearch::cheaper && by_offset.size() < 4 * conflicts.degree(i));
    if (scan) {
      for (const Placed& other : by_offset) {
        if (other.start < items.end[i] && items.start[i] < other.stop && !consider(other.begin, other.end)) break;
      }
    } else {
      taken.clear();
      for (const std::uint32_t j : conflicts.row(i)) {
        if (placed[j]) taken.emplace_back(offset[j], offset[j] + items.size[j]);
      }
      std::sort(taken.begin(), taken.end());
      for (const auto& [begin, end] : taken) {
        if (!consider(begin, end)) break;
      }
    }
    if (best == kNone) best = top;
    offset[i] = best;
    placed[i] = 1;
    const Placed self{best, best + size, items.start[i], items.end[i]};
    by_offset.insert(std::upper_bound(by_offset.begin(), by_offset.end(), self,
                                      [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
                     self);
    arena = std::max(arena, best + size);
    if (arena >= give_up) return kNone;
  }
  return arena;
}

// Online best (or first) fit in time order over an arena that grows at its top.
Bytes online_fit(const Trace& trace, const AlignedSizes& sizes, bool first, std::vector<Bytes>& offset) {
  FreeList free(first ? FreeList::Orders::address : FreeList::Orders::address_and_size);
  Bytes top = 0;
  for (const Event& event : trace.events) {
    const std::uint32_t i = index_of(event.id);
    if (!names_allocation(event.op)) continue;
    const Bytes size = sizes[i];
    if (size == 0) continue;
    if (event.op == Op::free) {
      free.add(Range{offset[i], size});
      continue;
    }
    if (const auto range = first ? free.take_first_fit(size) : free.take_best_fit(size)) {
      offset[i] = range->addr;  // its front
    } else if (const auto last = free.last(); last && last->end() == top) {
      offset[i] = last->addr;  // the free range under the top grows into the request
      free.remove(*last);
      top = last->addr + size;
    } else {
      offset[i] = top;
      top += size;
    }
  }
  return top;
}

// For each allocation, the most live bytes at any moment of its lifetime.
std::vector<Bytes> breadth_of(const Trace& trace, const Items& items) {
  const std::size_t n = trace.events.size();
  std::size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  std::vector<Bytes> tree(2 * leaves, 0);  // a max segment tree over live bytes after each event
  Bytes live = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const Event& event = trace.events[k];
    if (event.op == Op::alloc) live += items.size[index_of(event.id)];
    if (event.op == Op::free) live -= items.size[index_of(event.id)];
    tree[leaves + k] = live;
  }
  for (std::size_t k = leaves - 1; k > 0; --k) tree[k] = std::max(tree[2 * k], tree[2 * k + 1]);
  std::vector<Bytes> breadth(items.count(), 0);
  for (std::size_t i = 0; i < items.count(); ++i) {
    Bytes most = 0;
    for (std::size_t lo = items.start[i] + leaves, hi = std::max(items.end[i], items.start[i] + 1) + leaves; lo < hi;
         lo /= 2, hi /= 2) {
      if (lo & 1) most = std::max(most, tree[lo++]);
      if (hi & 1) most = std::max(most, tree[--hi]);
    }
    breadth[i] = most;
  }
  return breadth;
}

Bytes aligned_lower_bound(const Trace& trace, const AlignedSizes& size) {
  Bytes live = 0;
  Bytes most = 0;
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc) live += size[index_of(event.id)];
    if (event.op == Op::free) live -= size[index_of(event.id)];
    most = std::max(most, live);
  }
  return most;
}

// The pairs of non-empty allocations alive at the same time: sweep()'s live sets, counted.
std::uint64_t overlapping_pairs(const Trace& trace, const AlignedSizes& size) {
  std::uint64_t pairs = 0;
  std::uint64_t live = 0;
  for (const Event& event : trace.events) {
    if (!names_allocation(event.op) || size[index_of(event.id)] == 0) continue;
    if (event.op == Op::alloc) pairs += live++;
    if (event.op == Op::free) --live;
  }
  return pairs;
}

// What a plan depends on: the aligned sizes and lifetimes, the trace's length (a block
// never freed lives to its end) and the options.
struct PlanKey {
  Items items;
  std::size_t events;
  Bytes alignment;
  std::uint64_t max_pairs;
  GapSearch gap_search;

  bool operator==(const PlanKey& other) const = default;
};

// A sweep replays one trace at every capacity point, and the plan is the same each time:
// the plans made last are kept, up to kMemoBytes with their keys, and handed out again to
// a trace that matches a key exactly. Shared by the sweep's threads.
class PlanMemo {
 public:
  static constexpr std::size_t kMemoBytes = 64u << 20;

  // What keeping the plan of `allocations` costs: its key's items and its offsets.
  static std::size_t cost(std::size_t allocations) { return allocations * 4 * sizeof(std::uint64_t); }
  // A plan the memo could not keep is never looked for, so that its key is not built for nothing.
  static bool holds(std::size_t allocations) { return cost(allocations) <= kMemoBytes; }

  std::optional<OfflinePlan> find(const PlanKey& key) {
    const std::lock_guard lock(mutex_);
    for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
      if (entry->key == key) {
        entries_.splice(entries_.begin(), entries_, entry);  // the most recent first
        return entries_.front().plan;
      }
    }
    return std::nullopt;
  }

  void keep(PlanKey key, const OfflinePlan& plan) {
    const std::size_t bytes = cost(plan.offset.size());
    if (bytes > kMemoBytes) return;
    const std::lock_guard lock(mutex_);
    for (const Entry& entry : entries_) {
      if (entry.key == key) return;  // another thread planned it meanwhile
    }
    entries_.push_front(Entry{std::move(key), plan, bytes});
    bytes_ += bytes;
    while (bytes_ > kMemoBytes) {
      bytes_ -= entries_.back().cost;
      entries_.pop_back();
    }
  }

 private:
  struct Entry {
    PlanKey key;
    OfflinePlan plan;
    std::size_t cost;
  };
  std::mutex mutex_;
  std::list<Entry> entries_;
  std::size_t bytes_ = 0;
};

// `known`: the trace's items, when the caller has them (the memo's key); gathered here only
// when the greedy heuristics run.
OfflinePlan plan_afresh(const Trace& trace, const Items* known, const OfflinePlanOptions& options) {
  const std::size_t n = trace.allocations();
  const AlignedSizes sizes{trace.requested, options.alignment};
  OfflinePlan plan;
  plan.alignment = options.alignment;
  plan.aligned_lower_bound = aligned_lower_bound(trace, sizes);
  plan.offset.assign(n, 0);
  plan.arena = online_fit(trace, sizes, false, plan.offset);
  plan.heuristic = "online-best-fit";
  if (plan.arena != plan.aligned_lower_bound) {
    std::vector<Bytes> offset(n, 0);
    if (const Bytes arena = online_fit(trace, sizes, true, offset); arena < plan.arena) {
      plan.arena = arena;
      plan.offset = std::move(offset);
      plan.heuristic = "online-first-fit";
    }
  }

  plan.pairs = overlapping_pairs(trace, sizes);
  if (plan.arena == plan.aligned_lower_bound || plan.pairs > options.max_pairs) return plan;

  std::optional<Items> gathered;
  const Items& items = known ? *known : gathered.emplace(items_of(trace, options.alignment));

  Conflicts conflicts(trace, items);
  const std::vector<Bytes> breadth = breadth_of(trace, items);
  auto lifetime = [&](std::uint32_t i) { return items.end[i] - items.start[i]; };
  // Each order breaks ties by the others, then by id, so that plans are deterministic.
  struct Order {
    const char* name;
    std::function<bool(std::uint32_t, std::uint32_t)> before;
  };
  const Order orders[] = {
      {"greedy-by-size", [&](std::uint32_t a, std::uint32_t b) {
         return std::tuple(items.size[a], lifetime(a), b) > std::tuple(items.size[b], lifetime(b), a);
       }},
      {"greedy-by-breadth", [&](std::uint32_t a, std::uint32_t b) {
         return std::tuple(breadth[a], items.size[a], lifetime(a), b) > std::tuple(breadth[b], items.size[b], lifetime(b), a);
       }},
      {"greedy-by-lifetime", [&](std::uint32_t a, std::uint32_t b) {
         return std::tuple(lifetime(a), items.size[a], b) > std::tuple(lifetime(b), items.size[b], a);
       }},
      {"greedy-by-area", [&](std::uint32_t a, std::uint32_t b) {
         const auto area = [&](std::uint32_t i) { return static_cast<double>(items.size[i]) * static_cast<double>(lifetime(i)); };
         return std::tuple(area(a), items.size[a], b) > std::tuple(area(b), items.size[b], a);
       }},
  };
  std::vector<std::uint32_t> order(n);
  std::vector<Bytes> offset(n, 0);
  for (const Order& candidate : orders) {
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), candidate.before);
    for (const bool lowest : {false, true}) {
      const Bytes arena = greedy(items, conflicts, order, lowest, plan.arena, options.gap_search, offset);
      if (arena < plan.arena) {
        plan.arena = arena;
        plan.offset = offset;
        plan.heuristic = std::string(candidate.name).append(lowest ? ", first gap" : ", best gap");
        if (arena == plan.aligned_lower_bound) return plan;
      }
    }
  }
  return plan;
}

}  // namespace

OfflinePlan plan_offline(const Trace& trace, const OfflinePlanOptions& options) {
  static PlanMemo memo;
  if (!PlanMemo::holds(trace.allocations())) return plan_afresh(trace, nullptr, options);
  PlanKey key{items_of(trace, options.alignment), trace.events.size(), options.alignment, options.max_pairs,
              options.gap_search};
  if (std::optional<OfflinePlan> plan = memo.find(key)) return std::move(*plan);
  OfflinePlan plan = plan_afresh(trace, &key.items, options);
  memo.keep(std::move(key), plan);
  return plan;
}

std::optional<std::string> find_plan_conflict(const Trace& trace, const OfflinePlan& plan) {
  std::map<Bytes, std::uint32_t> live;  // offset -> id, of live non-empty allocations
  for (const Event& event : trace.events) {
    const std::uint32_t i = index_of(event.id);
    if (!names_allocation(event.op) || plan.size(trace, i) == 0) continue;
    if (event.op == Op::free) {
      live.erase(plan.offset[i]);
      continue;
    }
    const Bytes begin = plan.offset[i];
    const Bytes end = begin + plan.size(trace, i);
    auto clash = [&](std::uint32_t j) {
      return "allocations " + std::to_string(j) + " and " + std::to_string(i) + " overlap: [" +
             std::to_string(plan.offset[j]) + ", " + std::to_string(plan.offset[j] + plan.size(trace, j)) + ") and [" +
             std::to_string(begin) + ", " + std::to_string(end) + ")";
    };
    if (end > plan.arena) return "allocation " + std::to_string(i) + " ends past the arena";
    const auto next = live.lower_bound(begin);
    if (next != live.end() && next->first < end) return clash(next->second);
    if (next != live.begin()) {
      const auto prev = std::prev(next);
      if (prev->first + plan.size(trace, prev->second) > begin) return clash(prev->second);
    }
    live.emplace(begin, i);
  }
  return std::nullopt;
}

}  // namespace allocsim
