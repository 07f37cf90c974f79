// A model as a graph of forward ops on Boost.Graph: each vertex is an op with its output
// shape and parameters, each edge a tensor it reads. Lowering (lower.hpp) walks it to
// get the allocations of a training step; liveness comes from the edges.
#pragma once

#include <cstdint>
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
};

struct ModelOp {
  std::string name;                  // the layer, as the framework names it: "layer1.0.conv1"
  OpKind kind = OpKind::input;
  std::vector<std::int64_t> shape;   // output per sample: {C, H, W} or {F}
  std::vector<std::int64_t> params;  // elements of each parameter tensor: weight, bias...
  std::int64_t kernel = 1;           // conv: k for a k x k kernel
  bool in_place = false;             // writes into its first input's storage (or views it)

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

  Node input(std::vector<std::int64_t> shape);
  Node conv(Node x, std::string name, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
            std::int64_t padding, bool bias = false, std::int64_t groups = 1);
  Node batchnorm(Node x, std::string name);
  Node relu(Node x, std::string name);
  Node maxpool(Node x, std::string name, std::int64_t kernel, std::int64_t stride, std::int64_t padding);
  Node avgpool(Node x, std::string name, std::int64_t out_size = 1);  // adaptive: to C x out x out
  Node dropout(Node x, std::string name);
  Node flatten(Node x, std::string name);
  Node linear(Node x, std::string name, std::int64_t out_features, bool bias = true);
  Node add(Node x, Node other, std::string name, bool in_place = true);
  Node loss(Node logits, std::string name);

  Model finish() &&;

 private:
  Node add_op(ModelOp op, std::initializer_list<Node> inputs);
  const ModelOp& op(Node node) const { return model_.graph[node]; }

  Model model_;
};

}  // namespace allocsim
