// The vocabulary of a trace: requests, their ids, streams and tags.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/units.hpp"

namespace allocsim {

// Dense per trace: readers renumber, so replay indexes vectors by id.
enum class AllocId : std::uint32_t {};
constexpr std::uint32_t index_of(AllocId id) { return static_cast<std::uint32_t>(id); }

using Stream = std::uint16_t;

enum class Op : std::uint8_t { alloc, free, release };
enum class Tag : std::uint8_t { weight, activation, gradient, optimizer, workspace, input, temp, other };
constexpr int kTagCount = 8;

std::string_view name_of(Op op);
std::string_view name_of(Tag tag);
std::optional<Op> op_from_name(std::string_view name);
std::optional<Tag> tag_from_name(std::string_view name);

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
