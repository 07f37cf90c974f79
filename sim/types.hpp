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

enum class Op : std::uint8_t { alloc, free, release };
// Appended, never reordered: a tag's number is its meaning in traces already written.
// runtime: what the framework allocates besides the model (cuBLAS workspaces, cuDNN
// benchmark trials, DDP buckets), through the same allocator.
enum class Tag : std::uint8_t { weight, activation, gradient, optimizer, workspace, input, temp, other, runtime };
constexpr int kTagCount = 9;

std::string_view name_of(Op op);
std::string_view name_of(Tag tag);
std::optional<Op> op_from_name(std::string_view name);
std::optional<Tag> tag_from_name(std::string_view name);
// "weight, activation, ...": every tag's name in order, for messages and help.
std::string tag_names();

// 16 bytes: the requested size lives once per allocation in Trace::requested, not in
// every event, which keeps replay within 32 bytes per event.
struct Event {
  Nanos time;
  AllocId id;      // unused for Op::release
  Stream stream;
  Op op;
  Tag tag;
};
static_assert(sizeof(Event) == 16);

}  // namespace allocsim
