// An allocator strategy, as the engine drives it. Policies live in policies/; this is
// the contract between them and the engine, kept beside Device for the same reason.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/types.hpp"

namespace allocsim {

class Trace;

// Every block a policy hands out starts on this boundary (CUDA's allocation alignment).
constexpr Bytes kBlockAlignment = 256;

struct Request {
  AllocId id;
  Bytes bytes;
  Stream stream;
  Nanos now;
};

struct Block {
  Addr addr;
  Bytes size;       // what the policy set aside, >= requested
  Bytes requested;  // what the program asked for
  AllocId id;       // the request's: a policy may index its own per-block state by it
  Stream stream;
  friend bool operator==(const Block&, const Block&) = default;
};

// A live block a policy relocated (compaction): the same allocation, now at `to`.
struct Move {
  AllocId id;
  Addr from;
  Addr to;
  Bytes size;
};

// Told of every move before the allocate or deallocate that made it returns.
class MoveListener {
 public:
  virtual ~MoveListener() = default;
  virtual void moved(const Move& move) = 0;
};

// What a policy's limit is, so that a verdict can name what holds the bytes it leaves.
enum class LimitKind : std::uint8_t {
  device,          // no limit of its own: what the device has free
  memory_limit,    // exact bytes (TensorFlow's memory_limit)
  fraction,        // a fraction of the device's total (per_process_gpu_memory_fraction, ...)
  system_reserve,  // the free memory at start less a reserve (TensorFlow's MinSystemMemory)
};

// Cheap counters, O(log n) at most: the engine reads them at every new peak.
struct PolicyStats {
  Bytes allocated = 0;     // sum of live block sizes
  Bytes reserved = 0;      // bytes held from the device
  Bytes largest_free = 0;  // the largest block servable now without calling the device
  Bytes limit = 0;         // most it may ever reserve (a memory_limit), 0 = the device
  LimitKind limit_kind = LimitKind::device;
  Bytes withheld = 0;      // system_reserve: the reserve the limit leaves on the device
  Bytes never_touched = 0; // reserved bytes no block has ever covered (a preallocated pool's unused part)
};

struct PolicyStat {
  std::string name;  // becomes an extra output column
  std::uint64_t value;
  Unit unit = Unit::count;
};

// How much an inspection says: the counters alone, or also the state for a person (a
// summary of every block, as allocators log at an OOM: the engine asks for it once).
enum class Detail : std::uint8_t { counters, full };

// A policy's state for a report or an OOM: may walk every block, so asked for on demand.
struct PolicyInspection {
  Bytes releasable = 0;           // bytes release_cached() would give back now
  std::vector<PolicyStat> extra;  // the policy's own statistics (extra output columns)
  std::string state;              // Detail::full only: a few lines for a person
  Bytes planned_reserve = 0;      // an offline planner: the reserve its plan needs (0 = no plan)
};

// What the engine tells a policy once, before the first request of a replay. A policy
// driven without it (as unit tests drive one) must still work.
struct ReplaySetup {
  std::size_t allocations = 0;    // ids will run 0..allocations-1: state indexed by id is sized once
  // The whole trace ahead (null: none), for offline planners: only they ask, since a trace
  // still loading in the background is waited for.
  std::function<const Trace*()> whole_trace = nullptr;
  MoveListener* moves = nullptr;  // told of every relocation; outlives the policy
  bool streamed = false;          // the trace exists but streams (no trace()): a planner must refuse
};

// How a policy, as its settings configure it, uses the device's segments: what decides
// which of a replay's figures a real device can change (real_gpu/validation). A policy
// says it with `static SegmentTraits segment_traits(const Settings&)`; without one, neither.
struct SegmentTraits {
  // It picks among equal free blocks of several segments by address, so what it reserves
  // can depend on where the device puts segments (caching, BFC growing regions).
  bool places_by_address = false;
  // Its segments are VMM pages of the driver's granularity mapped into address ranges.
  bool page_mapped = false;
};

// What a request got: a block, or nothing (an OOM). `hang` is set, with no block, when
// the real allocator would never have returned (an endless loop in its code): the engine
// stops the tenant there and reports why. It stays valid until the policy's next call.
struct Allocation {
  std::optional<Block> block;
  std::string_view hang;

  Allocation(std::nullopt_t) {}  // implicit, so that `return std::nullopt;` reads as an OOM
  Allocation(Block served) : block(served) {}
  Allocation(std::optional<Block> served) : block(served) {}
  static Allocation hung(std::string_view why) {
    Allocation allocation(std::nullopt);
    allocation.hang = why;
    return allocation;
  }

  explicit operator bool() const { return block.has_value(); }
  const Block& operator*() const { return *block; }
  const Block* operator->() const { return &*block; }
};

// Contract:
// - allocate returns a block with addr % kBlockAlignment == 0, size >= bytes and the
//   request's id, that overlaps no other live block, or no block (OOM). An OOM leaves every
//   live block where it was; a zero-byte request is served (possibly with a zero-size block).
// - deallocate receives a block exactly as allocate returned it, once; a policy that moves
//   live blocks reports each move to ReplaySetup::moves, and from then on the block has
//   the new address. Moves happen only in a call that succeeds.
// - Every segment comes from the Device the policy was made with; once every block has
//   been deallocated, the destructor has returned all of them (the engine frees what a
//   trace leaves live before it destroys a policy).
// - stats() is cheap; stats().reserved equals the bytes of the segments it holds.
// - check() throws allocsim::Error when an invariant is broken; it may take O(n).
// - rounded_size(bytes) <= the size of every block allocate returns for `bytes`.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual Allocation allocate(const Request& request) = 0;
  virtual void deallocate(const Block& block, Nanos now) = 0;
  virtual PolicyStats stats() const = 0;
  virtual PolicyInspection inspect(Detail) const { return {}; }
  virtual void release_cached() {}  // torch.cuda.empty_cache(): return wholly free segments
  // The program synchronised (an Op::sync): stream-ordered pools trim and learn which
  // frees other streams may now reuse. Others ignore it.
  virtual void synchronize(const Sync&, Nanos) {}
  // The smallest block this policy gives a request of `requested` bytes: its rounding,
  // without what placement adds. The verdict's lower bound sums these over the trace.
  virtual Bytes rounded_size(Bytes requested) const { return requested; }
  virtual void prepare(const ReplaySetup&) {}
  virtual void check() const {}
};

}  // namespace allocsim
