// External allocation ids (any text, reusable after their free, as addresses are) to the
// dense ids Trace's contract asks for (sim/trace.hpp: 0..N-1, one per allocation). Every
// reader that renumbers uses this one map; the snapshot importer goes through the CSV reader.
//
// An open-addressing table (linear probing, deletion by backward shift, so no tombstones
// pile up as ids come and go) sized by the live set: a reader renumbering millions of
// allocations makes no heap allocation per id (a view-keyed one none at all), and a lookup
// takes a string_view.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "sim/types.hpp"

namespace allocsim {

// What the table keeps of an id's text beside the text: a hash and one word that, with the
// length, tells texts of up to eight bytes apart without reading them (a live id's text is
// far back in a file by the time its free comes).
struct IdKey {
  std::uint64_t word = 0;  // up to eight bytes: all of them, as two overlapping loads; longer: the first eight
  std::uint64_t hash = 0;
};

namespace detail {
constexpr std::uint64_t kIdMultiplier = 0x9e3779b97f4a7c15ULL;
// The hash's last steps: the id's last (or only) word mixed into the hash so far.
constexpr std::uint64_t finish_id_hash(std::uint64_t hash, std::uint64_t last) {
  hash = (hash ^ last) * kIdMultiplier;
  hash ^= hash >> 29;
  hash *= 0xbf58476d1ce4e5b9ULL;
  return hash ^ (hash >> 32);
}

// The word made of the `left` (at most 8) bytes at `at`: all of them, read in place.
inline std::uint64_t last_id_word(const char* at, std::size_t left) {
  if (left >= 4) {
    std::uint32_t head = 0;
    std::uint32_t tail = 0;
    std::memcpy(&head, at, 4);
    std::memcpy(&tail, at + left - 4, 4);
    return std::uint64_t{head} << 32 | tail;
  }
  if (left == 0) return 0;
  return std::uint64_t{static_cast<unsigned char>(at[0])} << 16 |
         std::uint64_t{static_cast<unsigned char>(at[left / 2])} << 8 | static_cast<unsigned char>(at[left - 1]);
}
}  // namespace detail

inline IdKey id_key(std::string_view text) {
  const char* at = text.data();
  std::size_t left = text.size();
  std::uint64_t hash = left * detail::kIdMultiplier;
  IdKey key;
  if (left > 8) std::memcpy(&key.word, at, 8);
  for (; left > 8; left -= 8, at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, at, 8);
    hash = (hash ^ word) * detail::kIdMultiplier;
    hash ^= hash >> 32;
  }
  const std::uint64_t last = detail::last_id_word(at, left);
  if (text.size() <= 8) key.word = last;
  key.hash = detail::finish_id_hash(hash, last);
  return key;
}

// Contract: an external id is live from open() to close() (or take()); open() of a live id
// and find()/close()/take() of one that is not live throw Error naming the id.
// Key is std::string (the table owns each id's text) or std::string_view (the caller keeps
// every live id's text alive, as a reader parsing one buffer does).
template <class Key>
class BasicIdRenumbering {
 public:
  void check_not_live(std::string_view external) const {
    if (!slots_.empty() && slots_[probe(external, id_key(external))].used()) already_live(external);
  }

  void open(std::string_view external, AllocId dense) {
    open_with(external, [dense] { return dense; });
  }

  // Like open(), with the dense id made by make_dense() once `external` is known not to be
  // live: a reader checks the id before the builder records the allocation.
  template <class MakeDense>
  void open_with(std::string_view external, MakeDense make_dense) {
    open_as(external, external, make_dense);
  }
  // Like open_with(), keeping `kept`, the same text elsewhere, in place of `external`: a
  // reader parsing a copy of its text keeps views into the text itself.
  template <class MakeDense>
  void open_as(std::string_view external, std::string_view kept, MakeDense make_dense) {
    if (kMaxLoad * (live_ + 1) > slots_.size()) grow();
    const IdKey key = id_key(external);
    Slot& slot = slots_[probe(external, key)];
    if (slot.used()) already_live(external);
    const AllocId dense = make_dense();
    slot = Slot{Key(kept), key.word, tag_of(key), index_of(dense)};
    ++live_;
  }

  AllocId find(std::string_view external) const {
    return AllocId{slots_[live_slot(external, id_key(external))].dense};
  }
  void close(std::string_view external) { erase(live_slot(external, id_key(external))); }

  // find() and close() in one lookup.
  AllocId take(std::string_view external) {
    const std::size_t at = live_slot(external, id_key(external));
    const AllocId dense{slots_[at].dense};
    erase(at);
    return dense;
  }

  std::size_t live() const { return live_; }

 private:
  // A quarter full at most: short probe runs, and few of the mispredicted branches that a
  // run's uncertain length costs. Memory is by the live set, not the allocation count.
  static constexpr std::size_t kMaxLoad = 4;
  static constexpr std::uint32_t kUsed = 0x8000'0000;

  struct Slot {
    Key key{};
    std::uint64_t word = 0;   // IdKey::word
    std::uint32_t tag = 0;    // kUsed | the hash's low 31 bits (its home slot, and a filter); 0: empty
    std::uint32_t dense = 0;
    bool used() const { return tag != 0; }
  };

  static std::uint32_t tag_of(const IdKey& key) { return kUsed | static_cast<std::uint32_t>(key.hash); }
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(std::uint32_t tag) const { return tag & mask(); }

  // The slot holding `external`, or the empty slot where it would go. Needs a free slot.
  std::size_t probe(std::string_view external, const IdKey& key) const {
    const std::uint32_t tag = tag_of(key);
    for (std::size_t at = home(tag);; at = (at + 1) & mask()) {
      const Slot& slot = slots_[at];
      if (!slot.used()) return at;
      if (slot.tag == tag && slot.word == key.word && slot.key.size() == external.size() &&
          (external.size() <= 8 || std::memcmp(slot.key.data(), external.data(), external.size()) == 0)) {
        return at;
      }
    }
  }

  std::size_t live_slot(std::string_view external, const IdKey& key) const {
    if (!slots_.empty()) {
      const std::size_t at = probe(external, key);
      if (slots_[at].used()) return at;
    }
    throw Error("free of id " + std::string(external) + ", which is not live");
  }

  [[noreturn]] static void already_live(std::string_view external) {
    throw Error("alloc of id " + std::string(external) + ", which is already live");
  }

  // Backward-shift deletion: later slots of the same probe run move up into the hole.
  void erase(std::size_t hole) {
    for (std::size_t at = (hole + 1) & mask(); slots_[at].used(); at = (at + 1) & mask()) {
      // The entry may fill the hole when its home is not cyclically within (hole, at].
      if (((at - home(slots_[at].tag)) & mask()) >= ((at - hole) & mask())) {
        slots_[hole] = std::move(slots_[at]);
        hole = at;
      }
    }
    slots_[hole] = Slot{};
    --live_;
  }

  void grow() {
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(std::max<std::size_t>(64, 2 * slots_.size())));
    for (Slot& slot : old) {
      if (!slot.used()) continue;
      std::size_t at = home(slot.tag);
      while (slots_[at].used()) at = (at + 1) & mask();
      slots_[at] = std::move(slot);
    }
  }

  std::vector<Slot> slots_;  // a power of two long
  std::size_t live_ = 0;
};

// For readers that reuse a line buffer: the table keeps its own copy of each id.
using IdRenumbering = BasicIdRenumbering<std::string>;
// For readers of one whole buffer (a mapped file): ids are views into it.
using IdViewRenumbering = BasicIdRenumbering<std::string_view>;

}  // namespace allocsim
