#include "workloads/model/decoder.hpp"

#include <string>

#include "sim/error.hpp"
#include "workloads/model/transformer_blocks.hpp"

namespace allocsim {
namespace {

using std::int64_t;

bool has_qkv_bias(const DecoderConfig& c) { return c.bias != Bias::none; }
bool has_bias(const DecoderConfig& c) { return c.bias == Bias::all; }

Node norm(ModelBuilder& b, const DecoderConfig& c, Node x, const std::string& name) {
  return c.norm == Norm::rmsnorm ? b.rmsnorm(x, name) : b.layernorm(x, name);
}

Node maybe_dropout(ModelBuilder& b, const DecoderConfig& c, Node x, const std::string& name) {
  return c.dropout ? b.dropout(x, name) : x;
}

// transformers' eager_attention_forward on q {S, H d}, k and v {S, K d}: matmul's reshape
// copies q and k (their layout after the head transpose is not a batch of matrices), and
// repeat_kv's expand(...).reshape copies k and v to H heads (a copy either way); the
// scores get `* scaling` and `+ causal_mask` (fp32: the mask has the embeddings' dtype),
// softmax(dtype=float32), then `.to(q.dtype)` as matmul's autocast copy; the context
// goes back to {S, H d} with transpose(1, 2).contiguous().
Node eager_attention(ModelBuilder& b, const DecoderConfig& c, const std::string& p, Node q, Node k, Node v,
                     Node mask, int64_t sequence) {
  const int64_t heads = c.heads;
  const int64_t head_dim = c.head_dim();
  const Node q_heads = b.contiguous(q, p + "query_heads", {heads, sequence, head_dim});
  const Node k_heads = b.repeat(k, p + "key_heads", {heads, head_dim, sequence});
  Node scores = b.matmul(q_heads, k_heads, p + "scores", {heads, sequence, sequence});
  scores = b.pointwise(scores, p + "scale", Pointwise::scale);
  scores = b.pointwise(scores, mask, p + "causal_mask", Pointwise::shift);
  Node probs = b.softmax(scores, p + "softmax");
  probs = maybe_dropout(b, c, probs, p + "attn_dropout");
  const Node v_heads = b.repeat(v, p + "value_heads", {heads, sequence, head_dim});
  const Node context = b.matmul(probs, v_heads, p + "context", {heads, sequence, head_dim});
  return b.contiguous(context, p + "merge_heads", {sequence, heads * head_dim});
}

// A projection, with PEFT's LoRA beside it when `targeted`: result = base(x) +
// lora_B(lora_A(x)) * scaling (lora_dropout 0: nn.Identity). Only the adapters train.
Node projection(ModelBuilder& b, const DecoderConfig& c, Node x, const std::string& name, int64_t out, bool bias,
                bool targeted) {
  b.quantize_new(c.nf4);
  const Node base = b.linear(x, name, out, bias);
  b.quantize_new(false);
  if (c.lora == 0 || !targeted) return base;
  b.freeze_new(false);
  const Node down = b.linear(x, name + ".lora_A", c.lora, false);
  const Node up = b.linear(down, name + ".lora_B", out, false);
  b.freeze_new(true);
  const Node scaled = b.pointwise(up, name + ".lora_scaling", Pointwise::scale);
  return b.add(base, scaled, name + ".lora_add", false);
}

}  // namespace

const char* DecoderConfig::problem() const {
  if (layers < 1 || d_model < 1 || heads < 1 || d_ff < 1 || vocab < 1) {
    return "layers, d_model, heads, d_ff and vocab must each be given and at least 1";
  }
  if (d_model % heads != 0) return "d_model must be a multiple of heads";
  if (key_value_heads() > heads || heads % key_value_heads() != 0) return "heads must be a multiple of kv_heads";
  if (!rope && positions < 1) return "without rope, positions (the learned table's rows) must be given";
  if (fused_qkv && key_value_heads() != heads) return "a fused q, k, v projection has kv_heads = heads";
  return "";
}

int64_t DecoderConfig::parameter_count() const {
  const int64_t hd = head_dim();
  const int64_t q = heads * hd;
  const int64_t kv = key_value_heads() * hd;
  const int64_t norm_params = norm == Norm::rmsnorm ? d_model : 2 * d_model;
  int64_t layer = 2 * norm_params;
  layer += d_model * (q + 2 * kv) + (has_qkv_bias(*this) ? q + 2 * kv : 0);
  layer += q * d_model + (has_bias(*this) ? d_model : 0);
  if (ffn == Ffn::swiglu) {
    layer += 3 * d_model * d_ff + (has_bias(*this) ? 2 * d_ff + d_model : 0);
  } else {
    layer += 2 * d_model * d_ff + (has_bias(*this) ? d_ff + d_model : 0);
  }
  if (lora > 0) {  // an adapter beside an in x out projection: lora_A (r x in) and lora_B (out x r)
    const auto adapter = [&](int64_t in, int64_t out) { return lora * (in + out); };
    if (fused_qkv) {
      layer += adapter(d_model, q + 2 * kv);
    } else {
      layer += adapter(d_model, q) + adapter(d_model, kv);
      if (lora_all) layer += adapter(d_model, kv) + adapter(q, d_model);
    }
    if (lora_all) {
      layer += (ffn == Ffn::swiglu ? 2 : 1) * adapter(d_model, d_ff) + adapter(d_ff, d_model);
    }
  }
  int64_t total = vocab * d_model + layers * layer + norm_params;
  if (!rope) total += positions * d_model;
  if (!tied) total += vocab * d_model;
  return total;
}

// Per layer, pre-norm: x + attention(norm(x)), then x + mlp(norm(x)), the residual stream
// in fp32 under autocast (the embedding's dtype; fp32 + half promotes). The labels are
// the input ids (B x S int64); the loss is transformers' ForCausalLMLoss, which shifts the
// labels, not the logits: logits.float() and cross entropy over all S positions.
Model build_decoder(const DecoderConfig& c, int64_t sequence, const std::string& name) {
  if (const std::string problem = c.problem(); !problem.empty()) {
    throw Error(name + ": " + problem);
  }
  if (sequence < 1 || (!c.rope && sequence > c.positions)) {
    throw Error(name + ": a sequence of " + std::to_string(sequence) + " tokens; it takes 1 to " +
                std::to_string(c.positions));
  }
  const int64_t d = c.d_model;
  const int64_t q_width = c.heads * c.head_dim();
  const int64_t kv_width = c.key_value_heads() * c.head_dim();
  ModelBuilder b(name);
  b.freeze_new(c.lora > 0);  // LoRA trains its adapters alone
  const bool all = c.lora_all;
  const Node ids = b.input({sequence}, "input_ids", 8);
  const Node embedded = b.embedding(ids, "model.embed_tokens", c.vocab, d);
  Node x = embedded;
  if (!c.rope) {
    const Node positions = b.position_embedding("model.embed_positions", c.positions, sequence, d);
    x = b.add(x, positions, "model.add_positions", false);
  }
  x = maybe_dropout(b, c, x, "model.drop");
  // The 4-D causal mask, B x 1 x S x S in the embeddings' dtype, made once per forward.
  const bool eager = c.attention == Attention::eager;
  const Node mask = eager ? b.repeat(ids, "model.causal_mask", {1, sequence, sequence}) : ids;  // ids: unread

  for (int64_t layer = 0; layer < c.layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    b.begin_unit(static_cast<int>(layer));  // what gradient checkpointing wraps
    const Node h = norm(b, c, x, p + "input_layernorm");
    Node q, k, v;
    if (c.fused_qkv) {
      const Node qkv = projection(b, c, h, p + "self_attn.qkv_proj", q_width + 2 * kv_width, has_qkv_bias(c), true);
      q = b.split(qkv, p + "self_attn.q", {sequence, q_width});
      k = b.split(qkv, p + "self_attn.k", {sequence, kv_width});
      v = b.split(qkv, p + "self_attn.v", {sequence, kv_width});
      b.add_buffer(qkv, static_cast<Bytes>(c.positions * c.positions));  // GPT-2's attn.bias, a bool causal mask
    } else {
      q = projection(b, c, h, p + "self_attn.q_proj", q_width, has_qkv_bias(c), true);
      k = projection(b, c, h, p + "self_attn.k_proj", kv_width, has_qkv_bias(c), all);
      v = projection(b, c, h, p + "self_attn.v_proj", kv_width, has_qkv_bias(c), true);
    }
    if (c.rope) {
      q = b.rope(q, p + "self_attn.rotary_q");
      k = b.rope(k, p + "self_attn.rotary_k");
    }
    Node a = eager ? eager_attention(b, c, p + "self_attn.", q, k, v, mask, sequence)
                   : b.attention(q, k, v, p + "self_attn.sdpa", c.heads);
    a = projection(b, c, a, p + "self_attn.o_proj", d, has_bias(c), all);
    a = maybe_dropout(b, c, a, p + "resid_dropout");
    x = b.add(x, a, p + "add_attn", false);
    const Node g = norm(b, c, x, p + "post_attention_layernorm");
    Node f;
    if (c.ffn == Ffn::swiglu) {
      const Node gate = b.pointwise(projection(b, c, g, p + "mlp.gate_proj", c.d_ff, has_bias(c), all),
                                    p + "mlp.act_fn", Pointwise::silu);
      const Node up = projection(b, c, g, p + "mlp.up_proj", c.d_ff, has_bias(c), all);
      f = b.pointwise(gate, up, p + "mlp.mul", Pointwise::mul);
      f = projection(b, c, f, p + "mlp.down_proj", d, has_bias(c), all);
    } else {
      f = projection(b, c, g, p + "mlp.c_fc", c.d_ff, has_bias(c), all);
      f = gelu_new(b, f, p + "mlp.act");
      f = projection(b, c, f, p + "mlp.c_proj", d, has_bias(c), all);
    }
    f = maybe_dropout(b, c, f, p + "mlp.dropout");
    x = b.add(x, f, p + "add_mlp", false);
    b.end_unit();
  }
  x = norm(b, c, x, "model.norm");
  const Node logits = c.tied ? b.linear(x, "lm_head", c.vocab, false, embedded) : b.linear(x, "lm_head", c.vocab, false);
  b.set_returned(logits);
  b.loss(logits, "loss", sequence);
  return std::move(b).finish();
}

}  // namespace allocsim
