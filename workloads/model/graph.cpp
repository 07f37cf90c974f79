#include "workloads/model/graph.hpp"

#include <functional>
#include <numeric>

#include "sim/error.hpp"

namespace allocsim {

std::int64_t ModelOp::elements() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

std::int64_t Model::parameter_count() const {
  std::int64_t total = 0;
  for (const Node node : boost::make_iterator_range(boost::vertices(graph))) {
    for (const std::int64_t params : graph[node].params) total += params;
  }
  return total;
}

std::size_t Model::parameter_tensors() const {
  std::size_t total = 0;
  for (const Node node : boost::make_iterator_range(boost::vertices(graph))) total += graph[node].params.size();
  return total;
}

namespace {

ModelOp make_op(std::string name, OpKind kind, std::vector<std::int64_t> shape, bool in_place = false) {
  ModelOp op;
  op.name = std::move(name);
  op.kind = kind;
  op.shape = std::move(shape);
  op.in_place = in_place;
  return op;
}

ModelOp with_params(ModelOp op, std::vector<std::int64_t> params) {
  op.params = std::move(params);
  return op;
}

}  // namespace

ModelBuilder::ModelBuilder(std::string model_name) { model_.name = std::move(model_name); }

Node ModelBuilder::add_op(ModelOp new_op, std::initializer_list<Node> inputs) {
  new_op.unit = unit_;
  new_op.frozen = freeze_;
  new_op.nf4 = nf4_ && new_op.kind == OpKind::linear;
  const Node node = boost::add_vertex(std::move(new_op), model_.graph);
  for (const Node input : inputs) boost::add_edge(input, node, model_.graph);
  return node;
}

Node ModelBuilder::input(std::vector<std::int64_t> shape, std::string name, Bytes element_bytes) {
  ModelOp input_op = make_op(std::move(name), OpKind::input, std::move(shape));
  input_op.element_bytes = element_bytes;
  return add_op(std::move(input_op), {});
}

Node ModelBuilder::conv(Node x, std::string name, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
                        std::int64_t padding, bool bias, std::int64_t groups) {
  const auto& in = op(x).shape;
  if (in.size() != 3 || in[0] % groups != 0) throw Error("model " + model_.name + ": bad input to " + name);
  const auto out_size = [&](std::int64_t size) { return (size + 2 * padding - kernel) / stride + 1; };
  ModelOp conv_op = make_op(std::move(name), OpKind::conv, {out_channels, out_size(in[1]), out_size(in[2])});
  conv_op.params.push_back(out_channels * (in[0] / groups) * kernel * kernel);
  if (bias) conv_op.params.push_back(out_channels);
  conv_op.kernel = kernel;
  return add_op(std::move(conv_op), {x});
}

Node ModelBuilder::batchnorm(Node x, std::string name) {
  const std::int64_t channels = op(x).channels();
  return add_op(with_params(make_op(std::move(name), OpKind::batchnorm, op(x).shape), {channels, channels}),
                {x});
}

Node ModelBuilder::relu(Node x, std::string name) {
  return add_op(make_op(std::move(name), OpKind::relu, op(x).shape, true), {x});
}

Node ModelBuilder::maxpool(Node x, std::string name, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  const auto& in = op(x).shape;
  const auto out_size = [&](std::int64_t size) { return (size + 2 * padding - kernel) / stride + 1; };
  return add_op(make_op(std::move(name), OpKind::maxpool, {in[0], out_size(in[1]), out_size(in[2])}),
                {x});
}

Node ModelBuilder::avgpool(Node x, std::string name, std::int64_t out_size) {
  return add_op(make_op(std::move(name), OpKind::avgpool, {op(x).channels(), out_size, out_size}),
                {x});
}

Node ModelBuilder::dropout(Node x, std::string name) {
  return add_op(make_op(std::move(name), OpKind::dropout, op(x).shape), {x});
}

Node ModelBuilder::flatten(Node x, std::string name) {
  return add_op(make_op(std::move(name), OpKind::flatten, {op(x).elements()}, true), {x});
}

Node ModelBuilder::linear(Node x, std::string name, std::int64_t out_features, bool bias,
                          std::optional<Node> tied_to) {
  // flatten gives rank 1, so a CNN's classifier sees all its input's elements here.
  std::vector<std::int64_t> shape = op(x).shape;
  const std::int64_t in_features = shape.back();
  shape.back() = out_features;
  ModelOp linear_op = make_op(std::move(name), OpKind::linear, std::move(shape));
  if (tied_to) {
    if (bias) throw Error("model " + model_.name + ": " + linear_op.name + " shares a weight and has a bias");
    const auto& tied = op(*tied_to).params;
    if (tied.empty() || tied.front() != out_features * in_features) {
      throw Error("model " + model_.name + ": " + linear_op.name + " cannot share the weight of " + op(*tied_to).name);
    }
    linear_op.tied_to = *tied_to;
  } else {
    linear_op.params.push_back(out_features * in_features);
  }
  if (bias) linear_op.params.push_back(out_features);
  return add_op(std::move(linear_op), {x});
}

Node ModelBuilder::add(Node x, Node other, std::string name, bool in_place) {
  if (op(x).shape != op(other).shape) throw Error("model " + model_.name + ": shapes differ at " + name);
  return add_op(make_op(std::move(name), OpKind::add, op(x).shape, in_place),
                {x, other});
}

Node ModelBuilder::loss(Node logits, std::string name, std::int64_t labels) {
  ModelOp loss_op = make_op(std::move(name), OpKind::loss, {1});
  loss_op.labels = labels;
  return add_op(std::move(loss_op), {logits});
}

Node ModelBuilder::embedding(Node ids, std::string name, std::int64_t rows, std::int64_t dim) {
  if (op(ids).kind != OpKind::input) throw Error("model " + model_.name + ": " + name + " needs ids from an input");
  std::vector<std::int64_t> shape = op(ids).shape;
  shape.push_back(dim);
  return add_op(with_params(make_op(std::move(name), OpKind::embedding, std::move(shape)), {rows * dim}), {ids});
}

Node ModelBuilder::position_embedding(std::string name, std::int64_t rows, std::int64_t used, std::int64_t dim) {
  if (used > rows) throw Error("model " + model_.name + ": " + std::to_string(used) + " positions, " + name +
                               " has " + std::to_string(rows));
  ModelOp embedding_op = with_params(make_op(std::move(name), OpKind::embedding, {used, dim}), {rows * dim});
  embedding_op.batched = false;
  return add_op(std::move(embedding_op), {});
}

Node ModelBuilder::layernorm(Node x, std::string name) {
  const std::int64_t features = op(x).shape.back();
  return add_op(with_params(make_op(std::move(name), OpKind::layernorm, op(x).shape), {features, features}), {x});
}

Node ModelBuilder::matmul(Node a, Node b, std::string name, std::vector<std::int64_t> shape) {
  return add_op(make_op(std::move(name), OpKind::matmul, std::move(shape)), {a, b});
}

Node ModelBuilder::softmax(Node x, std::string name) {
  return add_op(make_op(std::move(name), OpKind::softmax, op(x).shape), {x});
}

Node ModelBuilder::pointwise(Node x, std::string name, Pointwise kind) {
  ModelOp pointwise_op = make_op(std::move(name), OpKind::pointwise, op(x).shape);
  pointwise_op.pointwise = kind;
  return add_op(std::move(pointwise_op), {x});
}

Node ModelBuilder::pointwise(Node x, Node other, std::string name, Pointwise kind) {
  ModelOp pointwise_op = make_op(std::move(name), OpKind::pointwise, op(x).shape);
  pointwise_op.pointwise = kind;
  return add_op(std::move(pointwise_op), {x, other});
}

namespace {

ModelOp part_of(const ModelOp& whole, std::string name, OpKind kind, std::vector<std::int64_t> shape,
                const std::string& model) {
  ModelOp part = make_op(std::move(name), kind, std::move(shape), kind != OpKind::contiguous);
  if (part.elements() > whole.elements()) {
    throw Error("model " + model + ": " + part.name + " is larger than its input");
  }
  return part;
}

}  // namespace

Node ModelBuilder::contiguous(Node x, std::string name, std::vector<std::int64_t> shape) {
  return add_op(part_of(op(x), std::move(name), OpKind::contiguous, std::move(shape), model_.name), {x});
}

Node ModelBuilder::view(Node x, std::string name, std::vector<std::int64_t> shape) {
  return add_op(part_of(op(x), std::move(name), OpKind::view, std::move(shape), model_.name), {x});
}

Node ModelBuilder::split(Node x, std::string name, std::vector<std::int64_t> shape) {
  return add_op(part_of(op(x), std::move(name), OpKind::split, std::move(shape), model_.name), {x});
}

Node ModelBuilder::repeat(Node x, std::string name, std::vector<std::int64_t> shape) {
  return add_op(make_op(std::move(name), OpKind::contiguous, std::move(shape)), {x});
}

Node ModelBuilder::rmsnorm(Node x, std::string name) {
  const std::int64_t features = op(x).shape.back();
  return add_op(with_params(make_op(std::move(name), OpKind::rmsnorm, op(x).shape), {features}), {x});
}

Node ModelBuilder::rope(Node x, std::string name) {
  return add_op(make_op(std::move(name), OpKind::rope, op(x).shape), {x});
}

Node ModelBuilder::attention(Node q, Node k, Node v, std::string name, std::int64_t heads) {
  ModelOp attention_op = make_op(std::move(name), OpKind::attention, op(q).shape);
  attention_op.heads = heads;
  return add_op(std::move(attention_op), {q, k, v});
}

void ModelBuilder::add_buffer(Node node, Bytes bytes) { model_.graph[node].buffers.push_back(bytes); }

void ModelBuilder::set_returned(Node node) { model_.graph[node].returned = true; }

Model ModelBuilder::finish() && { return std::move(model_); }

}  // namespace allocsim
