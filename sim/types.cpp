#include "sim/types.hpp"

#include <array>

namespace allocsim {
namespace {

constexpr std::array<std::string_view, 4> kOpNames{"alloc", "free", "release", "sync"};
constexpr std::array<std::string_view, 4> kSyncKindNames{"device", "stream", "event", "wait"};
constexpr std::array<std::string_view, kTagCount> kTagNames{
    "weight", "activation", "gradient", "optimizer", "workspace", "input", "temp", "other", "runtime", "kv_cache"};

template <typename Enum, std::size_t N>
std::optional<Enum> find_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view name_of(Op op) { return kOpNames[static_cast<std::size_t>(op)]; }
std::string_view name_of(Tag tag) { return kTagNames[static_cast<std::size_t>(tag)]; }
std::optional<Op> op_from_name(std::string_view name) { return find_name<Op>(kOpNames, name); }
std::optional<Tag> tag_from_name(std::string_view name) { return find_name<Tag>(kTagNames, name); }
std::string_view name_of(SyncKind kind) { return kSyncKindNames[static_cast<std::size_t>(kind)]; }
std::optional<SyncKind> sync_kind_from_name(std::string_view name) {
  return find_name<SyncKind>(kSyncKindNames, name);
}

std::string tag_names() {
  std::string text;
  for (const std::string_view name : kTagNames) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

}  // namespace allocsim
