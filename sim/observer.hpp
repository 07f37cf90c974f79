// Observers watch the engine loop; they never change an outcome. Statistics are built
// into the engine; timelines, trace recorders and exporters are observers.
#pragma once

#include <cstddef>
#include <cstdint>

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

// A live block appeared, went, or was relocated (compaction), as the engine sees it.
enum class BlockAction : std::uint8_t { placed, freed, moved };
struct BlockEvent {
  std::size_t tenant;
  std::size_t event;  // the trace event being served (the trace's size while the tenant exits)
  Nanos time;
  BlockAction action;
  AllocId id;
  Addr addr;        // moved: where it is now
  Bytes size;       // the block, after the policy's rounding
  Bytes requested;  // what the program asked for
  Stream stream;
  Addr from = 0;    // moved: where it was
};

// What a tenant's policy asked of the device layer, with an address: a segment reserved
// (cudaMalloc) or released (cudaFree), or pages mapped or unmapped in a reserved range.
enum class SegmentAction : std::uint8_t { alloc, free, map, unmap };
struct SegmentEvent {
  std::size_t tenant;
  std::size_t event;  // as in BlockEvent
  Nanos time;
  SegmentAction action;
  Addr addr;
  Bytes bytes;
  Stream stream;  // the stream of the request being served (0 outside a request)
};

// Contract: per tenant, on_segment(alloc/map) of the memory a block lies in comes before
// the block's on_block(placed), and on_block(freed) before the on_segment(free/unmap)
// that takes its memory. on_exit(tenant) comes once, when the tenant stops (trace done,
// OOM stop or hang), before the engine frees what it still holds.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_event(const Sample& sample) = 0;
  virtual void on_oom(const OomRecord&) {}
  virtual void on_block(const BlockEvent&) {}
  virtual void on_segment(const SegmentEvent&) {}
  virtual void on_exit(std::size_t /*tenant*/, Nanos /*time*/) {}
};

}  // namespace allocsim
