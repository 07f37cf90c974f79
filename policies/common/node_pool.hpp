// Node-based containers whose nodes come from one pool that reuses them
// (std::pmr::unsynchronized_pool_resource), so that a policy's steady state allocates
// nothing. LLVM 14's libc++, the one emscripten's wasm build uses, has no <memory_resource>:
// there the same containers take their nodes from the default allocator. Contents and
// order are the same either way; only what a node costs differs.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#if __has_include(<memory_resource>)
#include <memory_resource>

namespace allocsim::pooled {
using NodePool = std::pmr::unsynchronized_pool_resource;
template <class T>
using Allocator = std::pmr::polymorphic_allocator<T>;
}  // namespace allocsim::pooled

#else

namespace allocsim::pooled {
struct NodePool {};

// Takes a NodePool as polymorphic_allocator takes its resource, and ignores it.
template <class T>
struct Allocator {
  using value_type = T;
  Allocator(NodePool*) noexcept {}  // NOLINT(google-explicit-constructor): as polymorphic_allocator
  template <class U>
  Allocator(const Allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const Allocator&, const Allocator&) noexcept { return true; }
};
}  // namespace allocsim::pooled

#endif

namespace allocsim::pooled {
// std::pmr's container aliases, over whichever Allocator the library allows.
template <class K, class V>
using map = std::map<K, V, std::less<K>, Allocator<std::pair<const K, V>>>;
template <class K, class V>
using multimap = std::multimap<K, V, std::less<K>, Allocator<std::pair<const K, V>>>;
template <class K>
using set = std::set<K, std::less<K>, Allocator<K>>;
template <class K, class V>
using unordered_map = std::unordered_map<K, V, std::hash<K>, std::equal_to<K>, Allocator<std::pair<const K, V>>>;
template <class T>
using vector = std::vector<T, Allocator<T>>;
}  // namespace allocsim::pooled
