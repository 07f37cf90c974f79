#include "policies/rmm_arena.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kSuperblockMinimum = 1_MiB;

bool handled_by_global(Bytes size) { return size > kSuperblockMinimum; }

}  // namespace

RmmArenaPolicy::Settings RmmArenaPolicy::settings(const Params& params) {
  const std::string_view size = params.text("arena_size");
  if (size == "free") return Settings{Settings::Size::free, 0};
  if (size == "half") return Settings{Settings::Size::half, 0};
  const Bytes bytes = align_down(params.bytes("arena_size"), kBlockAlignment);
  if (bytes < kSuperblockMinimum) {
    throw Error("policy rmm-arena: arena_size " + format_bytes_exact(bytes) + " is smaller than the 1 MiB minimum superblock");
  }
  return Settings{Settings::Size::bytes, bytes};
}

RmmArenaPolicy::RmmArenaPolicy(const Settings& settings, Device& device)
    : device_(device), whole_device_(settings.size == Settings::Size::free) {
  const Bytes bytes = whole_device_                           ? device.available()
                      : settings.size == Settings::Size::half ? device.available() / 2
                                                              : settings.bytes;
  arena_size_ = align_down(bytes, kBlockAlignment);
  // Half of a device with under 2 MiB free is found only here, where the device is.
  if (!whole_device_ && arena_size_ < kSuperblockMinimum) {
    throw Error("policy rmm-arena: arena_size " + format_bytes_exact(arena_size_) +
                " is smaller than the 1 MiB minimum superblock");
  }
}

RmmArenaPolicy::~RmmArenaPolicy() {
  if (upstream_) device_.free(*upstream_);
}

void RmmArenaPolicy::Superblock::reset(Addr start, Bytes bytes) {
  size = bytes;
  free.clear();  // keeps its storage
  free.insert(Range{start, bytes});
}

// Superblocks split and merge all the time: their map nodes (and the storage of their free
// lists) are kept and reused, so that steady state allocates nothing.
RmmArenaPolicy::Superblocks::node_type RmmArenaPolicy::new_superblock(Addr start, Bytes size) {
  if (spare_.empty()) {
    Superblocks made;
    made.emplace(start, Superblock{});
    spare_.push_back(made.extract(made.begin()));
  }
  Superblocks::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = start;
  node.mapped().reset(start, size);
  return node;
}

void RmmArenaPolicy::retire(Superblocks& set, Superblocks::iterator it) { spare_.push_back(set.extract(it)); }

bool RmmArenaPolicy::fits(const Superblock& superblock, Bytes size) {
  return !superblock.free.empty() && superblock.free.largest() >= size;
}

Allocation RmmArenaPolicy::allocate(const Request& request) {
  if (!upstream_) {
    if (whole_device_) arena_size_ = align_down(device_.available(), kBlockAlignment);  // free memory now
    if (arena_size_ < kSuperblockMinimum) return std::nullopt;
    upstream_ = device_.malloc(arena_size_);
    if (!upstream_) return std::nullopt;
    global_.insert(new_superblock(upstream_->addr, arena_size_));
    note_free(Range{upstream_->addr, arena_size_});
  }
  const Bytes size = align_up(request.bytes, kBlockAlignment);
  if (size == 0) return Block{0, 0, 0, request.id, request.stream};
  auto addr = try_allocate(size, request.stream);
  if (!addr) {
    defragment();
    addr = try_allocate(size, request.stream);
  }
  if (!addr) return std::nullopt;
  allocated_ += size;
  return Block{*addr, size, request.bytes, request.id, request.stream};
}

std::optional<Addr> RmmArenaPolicy::try_allocate(Bytes size, Stream stream) {
  if (handled_by_global(size)) {
    auto node = global_first_fit(size);
    if (!node) return std::nullopt;
    const Addr addr = take_first_fit(node->mapped(), size);
    global_.insert(std::move(*node));
    return addr;
  }
  Superblocks& arena = arenas_[stream];
  for (auto& [start, superblock] : arena) {
    if (fits(superblock, size)) return take_first_fit(superblock, size);
  }
  auto node = global_first_fit(size);  // global_arena::acquire
  if (!node) return std::nullopt;
  const Addr addr = take_first_fit(node->mapped(), size);
  arena.insert(std::move(*node));
  return addr;
}

// The first superblock that fits, taken out of the global set; an empty one big enough to
// leave a superblock behind is split, its tail put back.
std::optional<RmmArenaPolicy::Superblocks::node_type> RmmArenaPolicy::global_first_fit(Bytes size) {
  const auto it = std::find_if(global_.begin(), global_.end(), [&](const auto& entry) { return fits(entry.second, size); });
  if (it == global_.end()) return std::nullopt;
  auto node = global_.extract(it);
  const Bytes min_size = std::max(kSuperblockMinimum, size);
  Superblock& superblock = node.mapped();
  if (empty(superblock) && superblock.size >= min_size + kSuperblockMinimum) {
    const Addr start = node.key();
    const Bytes tail = superblock.size - min_size;
    forget_free(Range{start, superblock.size});
    superblock.reset(start, min_size);
    note_free(Range{start, min_size});
    global_.insert(new_superblock(start + min_size, tail));
    note_free(Range{start + min_size, tail});
  }
  return node;
}

Addr RmmArenaPolicy::take_first_fit(Superblock& superblock, Bytes size) {
  const AddressRanges::Pos at = superblock.free.first_fit_at(size, 0);
  const Range block = superblock.free[at];
  forget_free(block);
  if (block.size > size) {
    const Range rest{block.addr + size, block.size - size};
    superblock.free.set(at, rest);
    note_free(rest);
  } else {
    superblock.free.erase(at);
  }
  return block.addr;
}

void RmmArenaPolicy::give_back(Superblock& superblock, Addr addr, Bytes size) {
  note_free(superblock.free.add_merging(
      Range{addr, size}, [](Range) { return true; }, [&](Range neighbour) { forget_free(neighbour); }));
}

// global_arena::coalesce: an empty superblock merges with contiguous empty neighbours.
void RmmArenaPolicy::coalesce_global(Superblocks::node_type node) {
  Addr start = node.key();
  Superblock& merged = node.mapped();
  if (empty(merged)) {
    const auto next = global_.lower_bound(start);
    if (next != global_.end() && empty(next->second) && start + merged.size == next->first) {
      forget_free(Range{next->first, next->second.size});
      forget_free(Range{start, merged.size});
      merged.reset(start, merged.size + next->second.size);
      note_free(Range{start, merged.size});
      retire(global_, next);
    }
    const auto after = global_.lower_bound(start);
    if (after != global_.begin()) {
      const auto before = std::prev(after);
      if (empty(before->second) && before->first + before->second.size == start) {
        forget_free(Range{before->first, before->second.size});
        forget_free(Range{start, merged.size});
        const Bytes total = before->second.size + merged.size;
        start = before->first;
        merged.reset(start, total);
        note_free(Range{start, total});
        retire(global_, before);
      }
    }
  }
  node.key() = start;
  global_.insert(std::move(node));
}

bool RmmArenaPolicy::deallocate_from(Superblocks& set, Addr addr, Bytes size, bool global) {
  auto it = set.upper_bound(addr);
  if (it == set.begin()) return false;
  --it;
  if (addr + size > it->first + it->second.size) return false;
  give_back(it->second, addr, size);
  if (global && empty(it->second)) coalesce_global(global_.extract(it));
  return true;
}

void RmmArenaPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  allocated_ -= block.size;
  if (handled_by_global(block.size) && deallocate_from(global_, block.addr, block.size, true)) return;
  if (deallocate_from(arenas_[block.stream], block.addr, block.size, false)) return;
  for (auto& [stream, arena] : arenas_) {  // deallocate_from_other_arena
    if (stream != block.stream && deallocate_from(arena, block.addr, block.size, false)) return;
  }
  if (deallocate_from(global_, block.addr, block.size, true)) return;
  throw Error("policy rmm-arena: free of a block in no superblock");
}

void RmmArenaPolicy::defragment() {
  ++defragments_;
  for (auto& [stream, arena] : arenas_) {
    while (!arena.empty()) coalesce_global(arena.extract(arena.begin()));
  }
}

void RmmArenaPolicy::release_cached() {
  if (!upstream_ || allocated_ != 0) return;
  global_.clear();
  arenas_.clear();
  free_sizes_.clear();
  device_.free(*upstream_);
  upstream_.reset();
}

PolicyStats RmmArenaPolicy::stats() const {
  return PolicyStats{.allocated = allocated_,
                     .reserved = upstream_ ? upstream_->bytes : 0,
                     .largest_free = free_sizes_.empty() ? 0 : free_sizes_.back().size,
                     .limit = arena_size_};
}

PolicyInspection RmmArenaPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  if (upstream_ && allocated_ == 0) inspection.releasable = upstream_->bytes;
  std::size_t held = 0;
  for (const auto& [stream, arena] : arenas_) held += arena.size();
  inspection.extra = {{"global_superblocks", global_.size(), Unit::count},
                      {"stream_superblocks", held, Unit::count},
                      {"defragments", defragments_, Unit::count}};
  if (detail == Detail::full) {
    inspection.state = "RMM arena: " + format_bytes(arena_size_) + ", " + std::to_string(global_.size()) +
                       " global superblocks, " + std::to_string(held) + " held by " + std::to_string(arenas_.size()) +
                       " stream arenas, largest free block " + format_bytes(stats().largest_free);
  }
  return inspection;
}

void RmmArenaPolicy::check() const {
  if (!upstream_) {
    if (!global_.empty() || allocated_ != 0) throw Error("policy rmm-arena: blocks without an arena");
    return;
  }
  std::map<Addr, const Superblock*> all;
  for (const auto& [addr, superblock] : global_) all.emplace(addr, &superblock);
  for (const auto& [stream, arena] : arenas_) {
    for (const auto& [addr, superblock] : arena) {
      if (!all.emplace(addr, &superblock).second) throw Error("policy rmm-arena: a superblock held twice");
    }
  }
  Addr expected = upstream_->addr;
  Bytes free = 0;
  std::size_t blocks = 0;
  for (const auto& [addr, superblock] : all) {
    if (addr != expected) throw Error("policy rmm-arena: superblocks do not tile the arena");
    expected = addr + superblock->size;
    const Addr start = addr;  // a lambda may not capture a structured binding (clang 14)
    const Addr stop = expected;
    Addr end = addr;
    superblock->free.check();
    superblock->free.for_each([&](Range block) {
      if (block.addr < end || block.end() > stop) throw Error("policy rmm-arena: a free block out of place");
      if (block.addr == end && end != start) throw Error("policy rmm-arena: two free blocks touch");
      if (!free_sizes_.contains(block.size, block.addr)) throw Error("policy rmm-arena: size index lacks a free block");
      end = block.end();
      free += block.size;
      ++blocks;
    });
  }
  if (expected != upstream_->addr + upstream_->bytes) throw Error("policy rmm-arena: superblocks do not cover the arena");
  if (free + allocated_ != upstream_->bytes) throw Error("policy rmm-arena: free + allocated != arena size");
  if (blocks != free_sizes_.size()) throw Error("policy rmm-arena: size index out of step");
}

}  // namespace allocsim
