// The vocabulary of a trace: requests, their ids, streams and tags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace allocsim {

// Dense per trace: readers renumber, so replay indexes vectors by id.
enum class AllocId : std::uint32_t {};
constexpr std::uint32_t index_of(AllocId id) { return static_cast<std::uint32_t>(id); }

using Stream = std::uint16_t;

// release: the program asked its allocator to return cached memory (empty_cache()).
// sync: a synchronisation the program made (see Sync); stream-ordered pools act on it.
enum class Op : std::uint8_t { alloc, free, release, sync };
// Whether an event of this op names an allocation (its id and bytes mean something).
constexpr bool names_allocation(Op op) { return op == Op::alloc || op == Op::free; }
// Appended, never reordered: a tag's number is its meaning in traces already written.
// runtime: what the framework allocates besides the model (cuBLAS workspaces, cuDNN
// benchmark trials, DDP buckets), through the same allocator. kv_cache: an inference's
// keys and values kept across decode steps.
enum class Tag : std::uint8_t { weight, activation, gradient, optimizer, workspace, input, temp, other, runtime, kv_cache };
constexpr int kTagCount = 10;

std::string_view name_of(Op op);
std::string_view name_of(Tag tag);
std::optional<Op> op_from_name(std::string_view name);
std::optional<Tag> tag_from_name(std::string_view name);
// "weight, activation, ...": every tag's name in order, for messages and help.
std::string tag_names();

// What an Op::sync waited for, as CUDA's calls do:
// - device: cudaDeviceSynchronize, the host waits for every stream;
// - stream: cudaStreamSynchronize(stream), the host waits for that stream;
// - event:  cudaEventSynchronize of an event recorded on `stream` (in a trace, which is in
//           order, the same as waiting for the stream up to that point);
// - wait:   cudaStreamWaitEvent: `stream` waits for an event recorded on `waits_for`; no
//           host synchronisation, but `stream` now depends on all `waits_for` did so far.
enum class SyncKind : std::uint8_t { device, stream, event, wait };
struct Sync {
  SyncKind kind = SyncKind::device;
  Stream stream = 0;
  Stream waits_for = 0;  // SyncKind::wait only
  friend bool operator==(const Sync&, const Sync&) = default;
};
// A host synchronisation (device, stream, event) is where CUDA pools trim; wait is not one.
constexpr bool is_host_sync(SyncKind kind) { return kind != SyncKind::wait; }
std::string_view name_of(SyncKind kind);
std::optional<SyncKind> sync_kind_from_name(std::string_view name);

// 16 bytes: the requested size lives once per allocation in Trace::requested, not in
// every event, which keeps replay within 32 bytes per event.
struct Event {
  Nanos time;
  AllocId id;      // unused for Op::release; for Op::sync it holds the sync's kind and waits_for
  Stream stream;
  Op op;
  Tag tag;
};
static_assert(sizeof(Event) == 16);

// A sync rides in an event's id (a sync names no allocation), so Event stays 16 bytes.
constexpr AllocId sync_id(const Sync& sync) {
  return static_cast<AllocId>(static_cast<std::uint32_t>(sync.kind) << 16 | sync.waits_for);
}
constexpr Sync sync_of(const Event& event) {
  const std::uint32_t bits = index_of(event.id);
  return Sync{static_cast<SyncKind>(bits >> 16), event.stream, static_cast<Stream>(bits & 0xffff)};
}

}  // namespace allocsim
