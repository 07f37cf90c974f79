#include "workloads/model/generation.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "workloads/model/kv_cache.hpp"
#include "workloads/model/runtime_allocations.hpp"
#include "workloads/model/timed_trace.hpp"

namespace allocsim {
namespace {

using std::int64_t;

constexpr Bytes kIds = 8;    // int64 token ids, the attention mask, argmax's result
constexpr Bytes kFloat = 4;  // what RMSNorm and generate's logits compute in

TraceInfo generation_info(std::string name) {
  TraceInfo info{std::move(name), "model"};
  info.generation = true;
  return info;
}

class Generation {
 public:
  Generation(const DecoderConfig& config, const LoweringOptions& options, const GenerationOptions& generation,
             const VariableLengths& lengths, std::string name)
      : c_(config), options_(options), g_(generation), name_(name), trace_(generation_info(std::move(name))) {
    dtype_ = options.precision == Precision::fp32 ? 4 : 2;
    const auto batch = static_cast<std::size_t>(options.batch);
    steps_ = lengths.given() ? draw_lengths(lengths, batch) : std::vector<int64_t>(batch, generation.decode);
    const KvCacheShape shape{c_.layers, options.batch, c_.key_value_heads(), c_.head_dim(), dtype_,
                             generation.prefill + generation.decode, generation.block};
    cache_.emplace(generation.cache, shape, trace_);
  }

  Trace run() && {
    load_weights();
    const auto batch = static_cast<std::size_t>(options_.batch);
    const int64_t prompt = g_.prefill;
    // The tokenizer's input_ids and attention_mask, moved to the device before generate().
    input_ids_ = alloc(rows_bytes(options_.batch, prompt, kIds), Tag::input, "input_ids");
    attention_mask_ = alloc(rows_bytes(options_.batch, prompt, kIds), Tag::input, "attention_mask");
    const int64_t last = *std::max_element(steps_.begin(), steps_.end());  // generate stops when all have ended
    std::vector<bool> ended(batch, false);
    for (int64_t step = 0; step <= last; ++step) {
      trace_.begin_step();
      const int64_t query = step == 0 ? prompt : 1;
      const int64_t tokens = prompt + step;  // per row, after this forward
      std::vector<int64_t> held(batch, 0);
      int64_t rows = 0;
      for (std::size_t s = 0; s < batch; ++s) {
        if (g_.cache == KvCacheKind::paged && ended[s]) continue;
        held[s] = tokens;
        ++rows;
      }
      cache_->reserve(held);
      forward(rows, query, tokens);
      grow_inputs(rows, tokens);
      for (std::size_t s = 0; s < batch; ++s) {  // a sequence ends after its last decode step
        if (ended[s] || step < steps_[s]) continue;
        ended[s] = true;
        if (g_.cache == KvCacheKind::paged) cache_->release(s);
      }
    }
    cache_->release_all();
    return std::move(trace_).finish();
  }

 private:
  AllocId alloc(Bytes bytes, Tag tag, const std::string& layer) { return trace_.alloc(bytes, tag, layer); }
  void free(AllocId id) { trace_.free(id); }
  Bytes rows_bytes(int64_t rows, int64_t tokens, Bytes element) const {
    return static_cast<Bytes>(rows * tokens) * element;
  }

  // The parameters in the compute dtype (from_pretrained(torch_dtype=...)), in the order and
  // with the names of the decoder's graph; persistent buffers as they are.
  void load_weights() {
    const Model model = build_decoder(c_, 1, name_);
    for (const Node node : boost::make_iterator_range(boost::vertices(model.graph))) {
      const ModelOp& op = model.graph[node];
      for (const int64_t elements : op.params) alloc(static_cast<Bytes>(elements) * dtype_, Tag::weight, op.name);
      for (const Bytes buffer : op.buffers) alloc(buffer, Tag::weight, op.name);
    }
  }

  // A linear layer's output; the first one makes the main thread's cuBLAS workspace.
  AllocId linear(int64_t rows, int64_t query, int64_t out, const std::string& name) {
    if (!cublas_ && options_.runtime) {
      alloc(cublas_workspace_bytes(options_.compute_capability), Tag::runtime, "cublas_workspace");
      cublas_ = true;
    }
    return alloc(rows_bytes(rows, query, out * dtype_), Tag::activation, name);
  }

  // LlamaRMSNorm: x.to(float32), pow(2).mean(-1), rsqrt(variance + eps), x * that, then
  // weight * x.to(input_dtype). Under fp32 both casts are the tensor itself.
  AllocId rmsnorm(int64_t rows, int64_t query, const std::string& name) {
    const Bytes full = rows_bytes(rows, query, c_.d_model * kFloat);
    const Bytes per_row = rows_bytes(rows, query, kFloat);
    const bool cast = dtype_ != kFloat;
    const AllocId upcast = cast ? alloc(full, Tag::activation, name) : AllocId{};
    const AllocId squares = alloc(full, Tag::activation, name);
    const AllocId variance = alloc(per_row, Tag::activation, name);
    free(squares);
    const AllocId shifted = alloc(per_row, Tag::activation, name);
    const AllocId rstd = alloc(per_row, Tag::activation, name);
    free(shifted);
    const AllocId normed = alloc(full, Tag::activation, name);
    free(rstd);
    if (cast) free(upcast);
    const Bytes out_bytes = rows_bytes(rows, query, c_.d_model * dtype_);
    const AllocId downcast = cast ? alloc(out_bytes, Tag::activation, name) : AllocId{};
    const AllocId out = alloc(out_bytes, Tag::activation, name);
    if (cast) free(downcast);
    free(normed);
    free(variance);
    return out;
  }

  // F.layer_norm: its output and the per-row fp32 mean and rstd native_layer_norm returns.
  AllocId layernorm(int64_t rows, int64_t query, const std::string& name) {
    const AllocId out = alloc(rows_bytes(rows, query, c_.d_model * dtype_), Tag::activation, name);
    free(alloc(rows_bytes(rows, query, kFloat), Tag::activation, name));
    free(alloc(rows_bytes(rows, query, kFloat), Tag::activation, name));
    return out;
  }

  AllocId norm(int64_t rows, int64_t query, const std::string& name) {
    return c_.norm == Norm::rmsnorm ? rmsnorm(rows, query, name) : layernorm(rows, query, name);
  }

  // apply_rotary_pos_emb: (x * cos) + (rotate_half(x) * sin), rotate_half = cat((-x2, x1)).
  AllocId rope(Bytes bytes, const std::string& name) {
    const AllocId with_cos = alloc(bytes, Tag::activation, name);
    const AllocId negated = alloc(bytes / 2, Tag::activation, name);
    const AllocId rotated = alloc(bytes, Tag::activation, name);
    free(negated);
    const AllocId with_sin = alloc(bytes, Tag::activation, name);
    free(rotated);
    const AllocId out = alloc(bytes, Tag::activation, name);
    free(with_cos);
    free(with_sin);
    return out;
  }

  // The attention over the cache: the B x q x H d context, contiguous, and what stays
  // alive until the attention module returns (eager's probabilities, its attn_weights).
  std::pair<AllocId, std::optional<AllocId>> attention(int64_t rows, int64_t query, int64_t tokens,
                                                       const std::string& p) {
    const int64_t heads = c_.heads;
    const int64_t head_dim = c_.head_dim();
    const int64_t attended = cache_->attended(tokens);
    const Bytes context = rows_bytes(rows, query, heads * head_dim * dtype_);
    if (g_.cache == KvCacheKind::paged) {  // the paged kernel reads the blocks where they are
      return {alloc(context, Tag::activation, p + "paged_attention"), std::nullopt};
    }
    // repeat_kv copies keys and values to H heads unless SDPA does grouped-query itself
    // (use_gqa_in_sdpa: no mask), and eager always.
    const bool eager = c_.attention == Attention::eager;
    std::vector<AllocId> repeated;
    if (c_.key_value_heads() != heads && (eager || masked_)) {
      for (const char* what : {"key_heads", "value_heads"}) {
        repeated.push_back(alloc(rows_bytes(rows, heads * attended, head_dim * dtype_), Tag::activation, p + what));
      }
    }
    AllocId out{};
    std::optional<AllocId> weights;
    if (eager) {  // eager_attention_forward: q @ k^T, * scaling, + mask, fp32 softmax .to(dtype), @ v
      const Bytes scores = rows_bytes(rows, heads * query, attended * dtype_);
      AllocId s = alloc(scores, Tag::activation, p + "scores");
      for (const char* step : {"scale", "causal_mask"}) {
        const AllocId next = alloc(scores, Tag::activation, p + step);
        free(s);
        s = next;
      }
      const AllocId probs = alloc(rows_bytes(rows, heads * query, attended * kFloat), Tag::activation, p + "softmax");
      weights = alloc(scores, Tag::activation, p + "softmax");
      free(probs);
      free(s);
      out = alloc(context, Tag::activation, p + "context");
    } else {  // SDPA's flash or memory-efficient kernel: the output and an fp32 log-sum-exp
      out = alloc(context, Tag::activation, p + "sdpa");
      free(alloc(rows_bytes(rows, heads * query, kFloat), Tag::activation, p + "sdpa"));
    }
    const AllocId merged = alloc(context, Tag::activation, p + "merge_heads");  // transpose(1, 2).contiguous()
    free(out);
    for (const AllocId copy : repeated) free(copy);
    return {merged, weights};
  }

  // NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))), left to right.
  AllocId gelu_new(Bytes bytes, const std::string& name) {
    const AllocId half = alloc(bytes, Tag::activation, name);
    AllocId t = alloc(bytes, Tag::activation, name);  // x ** 3
    for (int op = 0; op < 5; ++op) {  // * 0.044715, x +, * sqrt(2 / pi), tanh, 1 +
      const AllocId next = alloc(bytes, Tag::activation, name);
      free(t);
      t = next;
    }
    const AllocId out = alloc(bytes, Tag::activation, name);
    free(half);
    free(t);
    return out;
  }

  // The MLP on g, the post-attention norm's output, which the layer holds until it returns.
  AllocId mlp(int64_t rows, int64_t query, const std::string& p) {
    const Bytes inner = rows_bytes(rows, query, c_.d_ff * dtype_);
    if (c_.ffn == Ffn::swiglu) {  // down_proj(act_fn(gate_proj(x)) * up_proj(x))
      const AllocId gate = linear(rows, query, c_.d_ff, p + "mlp.gate_proj");
      const AllocId act = alloc(inner, Tag::activation, p + "mlp.act_fn");
      free(gate);
      const AllocId up = linear(rows, query, c_.d_ff, p + "mlp.up_proj");
      const AllocId product = alloc(inner, Tag::activation, p + "mlp.mul");
      free(act);
      free(up);
      const AllocId f = linear(rows, query, c_.d_model, p + "mlp.down_proj");
      free(product);
      return f;
    }
    const AllocId fc = linear(rows, query, c_.d_ff, p + "mlp.c_fc");  // c_proj(gelu_new(c_fc(x)))
    const AllocId act = gelu_new(inner, p + "mlp.act");
    free(fc);
    const AllocId f = linear(rows, query, c_.d_model, p + "mlp.c_proj");
    free(act);
    return f;
  }

  // One decoder layer on the residual stream x, which the caller holds and frees. Each
  // tensor goes when its Python name is rebound or its function returns: the layer's
  // `hidden_states` keeps the norm's output until the attention (MLP) returns, the
  // attention's `query_states` the rotated q until o_proj has run.
  AllocId layer(std::size_t index, int64_t rows, int64_t query, int64_t tokens) {
    const std::string p = "model.layers." + std::to_string(index) + ".";
    const int64_t q_width = c_.heads * c_.head_dim();
    const int64_t kv_width = c_.key_value_heads() * c_.head_dim();
    const bool fused = c_.fused_qkv;
    const AllocId h = norm(rows, query, p + "input_layernorm");
    AllocId qkv{}, q{}, k{}, v{};
    if (fused) {  // GPT-2's c_attn, split into three views
      qkv = linear(rows, query, q_width + 2 * kv_width, p + "self_attn.qkv_proj");
    } else {
      q = linear(rows, query, q_width, p + "self_attn.q_proj");
      k = linear(rows, query, kv_width, p + "self_attn.k_proj");
      v = linear(rows, query, kv_width, p + "self_attn.v_proj");
    }
    std::optional<AllocId> q_rotated, k_rotated;
    if (c_.rope) {  // query_states, key_states = apply_rotary_pos_emb(...)
      q_rotated = rope(rows_bytes(rows, query, q_width * dtype_), p + "self_attn.rotary_q");
      k_rotated = rope(rows_bytes(rows, query, kv_width * dtype_), p + "self_attn.rotary_k");
      if (!fused) {
        free(q);
        free(k);
      }
    }
    cache_->update(index, tokens);  // key_states, value_states = past_key_values.update(...)
    if (k_rotated) {
      free(*k_rotated);
    } else if (!fused) {
      free(k);
    }
    if (!fused) free(v);
    const auto [context, weights] = attention(rows, query, tokens, p + "self_attn.");
    const AllocId attn = linear(rows, query, c_.d_model, p + "self_attn.o_proj");
    free(context);
    if (q_rotated) {
      free(*q_rotated);
    } else if (!fused) {
      free(q);
    }
    if (fused) free(qkv);
    if (weights) free(*weights);
    free(h);
    const Bytes hidden = rows_bytes(rows, query, c_.d_model * dtype_);
    const AllocId mid = alloc(hidden, Tag::activation, p + "add_attn");
    free(attn);
    const AllocId g = norm(rows, query, p + "post_attention_layernorm");
    const AllocId f = mlp(rows, query, p);
    free(g);
    const AllocId out = alloc(hidden, Tag::activation, p + "add_mlp");
    free(f);
    free(mid);
    return out;
  }

  void forward(int64_t rows, int64_t query, int64_t tokens) {
    const Bytes hidden = rows_bytes(rows, query, c_.d_model * dtype_);
    // The causal mask, made once per forward: eager's in the dtype, B x 1 x q x kv; SDPA's
    // boolean only over a static cache's slots (else is_causal, and none at q = 1).
    masked_ = g_.cache != KvCacheKind::paged && (c_.attention == Attention::eager || cache_->masks_slots());
    std::optional<AllocId> mask;
    if (masked_) {
      const Bytes element = c_.attention == Attention::eager ? dtype_ : 1;
      mask = alloc(rows_bytes(rows, query, cache_->attended(tokens) * element), Tag::activation, "model.causal_mask");
    }
    AllocId x = alloc(hidden, Tag::activation, "model.embed_tokens");
    if (!c_.rope) {  // GPT-2: inputs_embeds + wpe(position_ids)
      const AllocId positions = alloc(hidden, Tag::activation, "model.embed_positions");
      const AllocId sum = alloc(hidden, Tag::activation, "model.add_positions");
      free(x);
      free(positions);
      x = sum;
    }
    for (std::size_t index = 0; index < static_cast<std::size_t>(c_.layers); ++index) {
      const AllocId out = layer(index, rows, query, tokens);
      free(x);  // the loop's `hidden_states = decoder_layer(hidden_states)` held it
      x = out;
    }
    const AllocId normed = norm(rows, query, "model.norm");
    free(x);
    if (mask) free(*mask);
    // lm_head(hidden_states[:, -1:, :]) (logits_to_keep=1), then generate's
    // outputs.logits[:, -1, :].to(copy=True, dtype=float32) and the greedy argmax.
    const AllocId logits = linear(rows, 1, c_.vocab, "lm_head");
    free(normed);
    const AllocId scores = alloc(rows_bytes(rows, 1, c_.vocab * kFloat), Tag::activation, "generate.next_token_logits");
    free(logits);
    next_tokens_ = alloc(rows_bytes(rows, 1, kIds), Tag::activation, "generate.next_tokens");
    free(scores);
  }

  // input_ids = cat([input_ids, next_tokens[:, None]]) and the attention mask one column
  // longer, each a new tensor, the old freed.
  void grow_inputs(int64_t rows, int64_t tokens) {
    for (AllocId* held : {&input_ids_, &attention_mask_}) {
      const AllocId grown = alloc(rows_bytes(rows, tokens + 1, kIds), Tag::input, held == &input_ids_ ? "input_ids" : "attention_mask");
      free(*held);
      *held = grown;
    }
    free(next_tokens_);
  }

  const DecoderConfig& c_;
  const LoweringOptions& options_;
  const GenerationOptions& g_;
  std::string name_;
  TimedTrace trace_;
  Bytes dtype_ = 2;
  std::vector<int64_t> steps_;  // by sequence: the decode steps it runs
  std::optional<KvCache> cache_;
  bool cublas_ = false;
  bool masked_ = false;  // this forward's attention reads a mask
  AllocId input_ids_{};
  AllocId attention_mask_{};
  AllocId next_tokens_{};
};

}  // namespace

Trace lower_generation(const DecoderConfig& config, const LoweringOptions& options, const GenerationOptions& generation,
                       const VariableLengths& lengths, std::string name) {
  if (generation.prefill < 1 || generation.decode < 1 || generation.block < 1 || options.batch < 1) {
    throw Error("workload " + name + ": a generation needs prefill, decode, block and batch of at least 1");
  }
  if (lengths.given() && (lengths.min < 1 || lengths.max > generation.decode)) {
    throw Error("workload " + name + ": len= draws each sequence's decode steps, 1 to decode (" +
                std::to_string(generation.decode) + ")");
  }
  return Generation(config, options, generation, lengths, std::move(name)).run();
}

}  // namespace allocsim
