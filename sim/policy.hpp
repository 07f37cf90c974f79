// An allocator strategy, as the engine drives it. Policies live in policies/; this is
// the contract between them and the engine, kept beside Device for the same reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

struct PolicyStats {
  Bytes allocated = 0;     // sum of live block sizes
  Bytes reserved = 0;      // bytes held from the device
  Bytes largest_free = 0;  // the largest block servable now without calling the device
  Bytes releasable = 0;    // bytes release_cached() would give back now
  Bytes limit = 0;         // most it may ever reserve (a memory_limit), 0 = the device
};

struct PolicyStat {
  std::string name;  // becomes an extra output column
  std::uint64_t value;
  Unit unit = Unit::count;
};

// Contract:
// - allocate returns a block with addr % kBlockAlignment == 0, size >= bytes and the
//   request's id, that overlaps no other live block, or nullopt (OOM). An OOM leaves every live block where
//   it was; a zero-byte request is served (possibly with a zero-size block).
// - deallocate receives a block exactly as allocate returned it, once; a policy that moves
//   live blocks reports each move to its MoveListener, and from then on the block has
//   the new address. Moves happen only in a call that succeeds.
// - Every segment comes from the Device the policy was made with; once every block has
//   been deallocated, the destructor has returned all of them (the engine frees what a
//   trace leaves live before it destroys a policy).
// - stats().reserved equals the bytes of the segments it holds.
// - check() throws allocsim::Error when an invariant is broken; it may take O(n).
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::optional<Block> allocate(const Request& request) = 0;
  virtual void deallocate(const Block& block, Nanos now) = 0;
  virtual PolicyStats stats() const = 0;
  virtual void release_cached() {}  // torch.cuda.empty_cache(): return wholly free segments
  virtual void check() const {}
  // A hint before replay: ids will run 0..allocations-1, so state indexed by id can be
  // sized once instead of growing (and briefly doubling) on the way.
  virtual void expect_allocations(std::size_t) {}
  // Offline policies only: the whole trace this policy will be asked to replay, once,
  // before its first request (the engine calls it; a policy driven without it, as unit
  // tests drive one, must still work). Online policies ignore it.
  virtual void plan(const Trace&) {}
  // Policies that move live blocks (compact) report every move here; the listener (the
  // engine, a test harness) outlives the policy. Policies that never move ignore it.
  virtual void listen_for_moves(MoveListener*) {}
  virtual std::vector<PolicyStat> extra_stats() const { return {}; }
  // Non-empty once the real allocator would never have returned from the last request
  // (an endless loop in its code): the engine stops the tenant there and reports why.
  virtual std::string hang_reason() const { return {}; }
  // The policy's state in a few lines for a person, as allocators log at an OOM.
  virtual std::string describe_state() const { return {}; }
};

}  // namespace allocsim
