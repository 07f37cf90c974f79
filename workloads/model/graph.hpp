// A model as a graph of forward ops on Boost.Graph: each vertex is an op with its output
// shape and parameters, each edge a tensor it reads. Lowering (lower.hpp) walks it to
// get the allocations of a training step; liveness comes from the edges.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/units.hpp"

namespace allocsim {

enum class OpKind : std::uint8_t {
  input,      // the batch
  conv,       // Conv2d (groups = channels for depthwise)
  batchnorm,  // BatchNorm2d, training mode
  relu,       // ReLU / ReLU6, in place
  maxpool,    // MaxPool2d: saves int64 indices
  avgpool,    // adaptive average pooling to a given output size
  dropout,    // saves a byte mask
  flatten,    // a view
  linear,     // Linear
  add,        // x + other: in place into x (out += identity) or a new tensor
  loss,       // cross entropy: log_softmax + nll_loss
  // transformers (per-sample shapes are {S, H}, {heads, S, S}...)
  embedding,   // a gather from its table by int64 ids (its input), or by position (no input)
  layernorm,   // LayerNorm over the last dim: saves its input and per-row mean and rstd (fp32)
  matmul,      // a batched product of two activations (Q.K^T, probs.V): saves both
  softmax,     // over the last dim: saves its output
  pointwise,   // an elementwise op, out of place; which one says what it saves (Pointwise)
  contiguous,  // a copy in a new layout (permute(...).contiguous(), matmul's reshape of a
               // permuted view) or of a part (logits[:, :-1]); backward of a part allocates
  view,        // a view of its input or of a part of it (hidden[:, 0]): no allocation
  split,       // one of the parts Tensor.split gives: a view; backward gathers the parts' grads
  // decoders (decoder.hpp)
  rmsnorm,     // HF LlamaRMSNorm in fp32: saves its input, x * rstd (fp32) and rstd per row
  rope,        // rotary embedding, q * cos + rotate_half(q) * sin: full-size temporaries, saves nothing
  attention,   // SDPA's flash / memory-efficient kernel over q, k, v: saves them, its output and the
               // fp32 log-sum-exp per row and head (`heads`)
};
// A new kind goes last and moves this; lowering's table (lower.cpp) wants a row for it.
constexpr std::size_t kOpKinds = static_cast<std::size_t>(OpKind::attention) + 1;

// What a pointwise op saves for backward and whether its backward makes a new gradient.
enum class Pointwise : std::uint8_t {
  scale,  // x * c or x / c: saves nothing
  shift,  // x + c, or x + a mask (second input): saves nothing, the gradient passes on
  where,  // where(mask, x, c) with a mask buffer: saves the mask (a view of the buffer)
  pow,    // x ** 3: saves x
  tanh,   // saves its output
  gelu,   // erf GELU: saves x
  mul,    // x * y of two tensors: saves both
  silu,   // F.silu: saves x
};

struct ModelOp {
  std::string name;                  // the layer, as the framework names it: "layer1.0.conv1"
  OpKind kind = OpKind::input;
  std::vector<std::int64_t> shape;   // output per sample: {C, H, W} or {F}
  std::vector<std::int64_t> params;  // elements of each parameter tensor: weight, bias...
  std::int64_t kernel = 1;           // conv: k for a k x k kernel
  bool in_place = false;             // writes into its first input's storage (or views it)
  bool batched = true;               // false: one tensor for the whole batch (position embeddings)
  bool returned = false;             // the model's output holds it until forward returns
  Bytes element_bytes = 4;           // input: bytes per element (int64 ids: 8)
  std::int64_t labels = 1;           // loss: int64 targets per sample (GPT-2: one per token)
  Pointwise pointwise = Pointwise::scale;
  std::optional<std::size_t> tied_to;  // uses that op's parameters, has none of its own
  std::vector<Bytes> buffers;        // persistent tensors that are not parameters
  std::int64_t heads = 0;            // attention: query heads (the log-sum-exp's rows per token)
  int unit = -1;                     // the checkpoint unit (a decoder layer) it belongs to, or -1
  bool frozen = false;               // its parameters get no gradient (requires_grad=False)
  bool nf4 = false;                  // linear: its weight in bitsandbytes' 4-bit NF4 (QLoRA's base; bitsandbytes.hpp)

  std::int64_t elements() const;     // of the output, per sample
  std::int64_t channels() const { return shape.front(); }
};

using ModelGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, ModelOp>;
using Node = ModelGraph::vertex_descriptor;

struct Model {
  std::string name;
  ModelGraph graph;  // vertices in a topological order: builders add ops as forward runs them

  std::int64_t parameter_count() const;
  std::size_t parameter_tensors() const;
};

// Builds a model op by op, in forward order, computing output shapes like PyTorch.
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string model_name);

  Node input(std::vector<std::int64_t> shape, std::string name = "input", Bytes element_bytes = 4);
  Node conv(Node x, std::string name, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
            std::int64_t padding, bool bias = false, std::int64_t groups = 1);
  Node batchnorm(Node x, std::string name);
  Node relu(Node x, std::string name);
  Node maxpool(Node x, std::string name, std::int64_t kernel, std::int64_t stride, std::int64_t padding);
  Node avgpool(Node x, std::string name, std::int64_t out_size = 1);  // adaptive: to C x out x out
  Node dropout(Node x, std::string name);
  Node flatten(Node x, std::string name);
  // Applies to the last dimension: {S, H} -> {S, out}. tied_to: an op whose weight this
  // one uses (GPT-2's LM head and wte), so it adds no parameters.
  Node linear(Node x, std::string name, std::int64_t out_features, bool bias = true,
              std::optional<Node> tied_to = std::nullopt);
  Node add(Node x, Node other, std::string name, bool in_place = true);
  Node loss(Node logits, std::string name, std::int64_t labels = 1);

  // Transformers. An embedding without ids gathers rows 0..S-1 (positions): one tensor
  // for the batch, {rows_used, dim}.
  Node embedding(Node ids, std::string name, std::int64_t rows, std::int64_t dim);
  Node position_embedding(std::string name, std::int64_t rows, std::int64_t used, std::int64_t dim);
  Node layernorm(Node x, std::string name);
  Node matmul(Node a, Node b, std::string name, std::vector<std::int64_t> shape);
  Node softmax(Node x, std::string name);
  Node pointwise(Node x, std::string name, Pointwise kind);
  Node pointwise(Node x, Node other, std::string name, Pointwise kind);  // shift by a mask, mul
  Node contiguous(Node x, std::string name, std::vector<std::int64_t> shape);
  Node view(Node x, std::string name, std::vector<std::int64_t> shape);
  Node split(Node x, std::string name, std::vector<std::int64_t> shape);
  // A copy that may be larger than its input: expand(...).reshape(...) (repeat_kv of
  // grouped-query attention, a mask broadcast to S x S); backward sums into a new gradient.
  Node repeat(Node x, std::string name, std::vector<std::int64_t> shape);
  Node rmsnorm(Node x, std::string name);
  Node rope(Node x, std::string name);
  Node attention(Node q, Node k, Node v, std::string name, std::int64_t heads);
  void add_buffer(Node node, Bytes bytes);   // a persistent buffer the op's module owns
  void set_returned(Node node);              // the model's output keeps it until forward returns
  void freeze_new(bool freeze) { freeze_ = freeze; }  // the ops added next have frozen parameters
  void quantize_new(bool nf4) { nf4_ = nf4; }  // the linears added next keep their weight in NF4
  void begin_unit(int unit) { unit_ = unit; }  // the ops added next form checkpoint unit `unit`
  void end_unit() { unit_ = -1; }

  Model finish() &&;

 private:
  Node add_op(ModelOp op, std::initializer_list<Node> inputs);
  const ModelOp& op(Node node) const { return model_.graph[node]; }

  Model model_;
  int unit_ = -1;
  bool freeze_ = false;
  bool nf4_ = false;
};

}  // namespace allocsim
