#include "workloads/model/kv_cache.hpp"

#include <string>

namespace allocsim {
namespace {

std::string layer_name(std::size_t layer, const char* what) {
  return "model.layers." + std::to_string(layer) + ".self_attn." + what;
}

}  // namespace

KvCache::KvCache(KvCacheKind kind, const KvCacheShape& shape, TimedTrace& trace)
    : kind_(kind), shape_(shape), trace_(trace) {
  const auto layers = static_cast<std::size_t>(shape.layers);
  keys_.assign(layers, std::nullopt);
  values_.assign(layers, std::nullopt);
  blocks_.assign(static_cast<std::size_t>(shape.batch), {});
  blocks_held_.assign(static_cast<std::size_t>(shape.batch), 0);
}

Bytes KvCache::bytes(std::int64_t rows, std::int64_t tokens) const {
  return static_cast<Bytes>(rows * shape_.kv_heads * tokens * shape_.head_dim) * shape_.dtype;
}

void KvCache::reserve(std::span<const std::int64_t> tokens) {
  if (kind_ != KvCacheKind::paged) return;
  const Bytes block = bytes(1, shape_.block);
  for (std::size_t sequence = 0; sequence < tokens.size(); ++sequence) {
    const std::int64_t needed = (tokens[sequence] + shape_.block - 1) / shape_.block;
    for (; blocks_held_[sequence] < needed; ++blocks_held_[sequence]) {
      for (std::size_t layer = 0; layer < keys_.size(); ++layer) {
        blocks_[sequence].push_back(trace_.alloc(block, Tag::kv_cache, layer_name(layer, "k_cache")));
        blocks_[sequence].push_back(trace_.alloc(block, Tag::kv_cache, layer_name(layer, "v_cache")));
      }
    }
  }
}

void KvCache::update(std::size_t layer, std::int64_t tokens) {
  switch (kind_) {
    case KvCacheKind::dynamic: {  // keys cat'ed and the old keys freed, then the values
      const Bytes size = bytes(shape_.batch, tokens);
      for (auto* held : {&keys_[layer], &values_[layer]}) {
        const AllocId grown = trace_.alloc(size, Tag::kv_cache, layer_name(layer, held == &keys_[layer] ? "k_cache" : "v_cache"));
        if (*held) trace_.free(**held);
        *held = grown;
      }
      break;
    }
    case KvCacheKind::fixed:  // lazy_initialization at the first update, index_copy_ after
      if (keys_[layer]) break;
      keys_[layer] = trace_.alloc(bytes(shape_.batch, shape_.max_tokens), Tag::kv_cache, layer_name(layer, "k_cache"));
      values_[layer] = trace_.alloc(bytes(shape_.batch, shape_.max_tokens), Tag::kv_cache, layer_name(layer, "v_cache"));
      break;
    case KvCacheKind::paged:  // written into the blocks reserve() gave
      break;
  }
}

void KvCache::release(std::size_t sequence) {
  for (const AllocId block : blocks_[sequence]) trace_.free(block);
  blocks_[sequence].clear();
  blocks_held_[sequence] = 0;
}

void KvCache::free_layer(std::size_t layer) {
  for (auto* held : {&keys_[layer], &values_[layer]}) {
    if (*held) trace_.free(**held);
    held->reset();
  }
}

void KvCache::release_all() {
  for (std::size_t layer = 0; layer < keys_.size(); ++layer) free_layer(layer);
  for (std::size_t sequence = 0; sequence < blocks_.size(); ++sequence) release(sequence);
}

}  // namespace allocsim
