// The keys and values a decoder keeps between the forwards of a generation, per layer:
// - dynamic: transformers' DynamicCache (DynamicLayer.update in cache_utils.py), the
//   default: `self.keys = torch.cat([self.keys, key_states], dim=-2)`, then the values:
//   each forward makes every layer's keys and values anew, one forward's tokens longer
//   (B x kv_heads x tokens x head_dim), and the old pair is freed; the prefill's cat copies
//   the prompt's keys into the cache's first tensor;
// - fixed (cache=static): StaticCache (StaticLayer): the first update allocates keys and
//   values of the whole B x kv_heads x (P + T) x head_dim (torch.zeros) and index_copy_'s
//   into them from then on; the attention reads all P + T slots under a mask;
// - paged: vLLM's block table: before each forward the scheduler gives every sequence the
//   blocks of `block` tokens its next tokens need, in every layer a key block and a value
//   block of block x kv_heads x head_dim, each its own allocation here (vLLM carves them
//   from one preallocated tensor; as separate requests the policy decides how they come
//   from the device); a finished sequence's blocks are freed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "workloads/model/generation.hpp"
#include "workloads/model/timed_trace.hpp"

namespace allocsim {

struct KvCacheShape {
  std::int64_t layers = 0;
  std::int64_t batch = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  Bytes dtype = 2;
  std::int64_t max_tokens = 0;  // P + T: what a static cache holds
  std::int64_t block = 16;
};

class KvCache {
 public:
  KvCache(KvCacheKind kind, const KvCacheShape& shape, TimedTrace& trace);

  // Before a forward: the tokens each sequence holds after it (0: it has left the batch).
  // Paged allocates the blocks they need.
  void reserve(std::span<const std::int64_t> tokens);
  // A layer's past_key_values.update: each row of the batch now holds `tokens` tokens.
  void update(std::size_t layer, std::int64_t tokens);
  // After a forward: sequence `sequence` has ended. Paged frees its blocks.
  void release(std::size_t sequence);
  // At the end of generate(): the cache goes with its last reference.
  void release_all();

  // The keys per row that a forward's attention reads when the rows hold `tokens`.
  std::int64_t attended(std::int64_t tokens) const { return kind_ == KvCacheKind::fixed ? shape_.max_tokens : tokens; }
  // Whether the attention needs a mask over the slots (a static cache's unused ones).
  bool masks_slots() const { return kind_ == KvCacheKind::fixed; }
  // Bytes of one layer's keys (or values) for `rows` rows of `tokens` tokens.
  Bytes bytes(std::int64_t rows, std::int64_t tokens) const;

 private:
  void free_layer(std::size_t layer);

  KvCacheKind kind_;
  KvCacheShape shape_;
  TimedTrace& trace_;
  std::vector<std::optional<AllocId>> keys_;    // by layer (dynamic, fixed)
  std::vector<std::optional<AllocId>> values_;
  // paged: by sequence, the key and value blocks of every layer, block after block
  std::vector<std::vector<AllocId>> blocks_;
  std::vector<std::int64_t> blocks_held_;       // paged: by sequence, blocks per layer
};

}  // namespace allocsim
