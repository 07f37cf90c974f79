#include "workloads/model/transformer_blocks.hpp"

namespace allocsim {

Node gelu_new(ModelBuilder& b, Node x, const std::string& p) {
  const Node half = b.pointwise(x, p + ".mul_half", Pointwise::scale);
  Node inner = b.pointwise(x, p + ".pow", Pointwise::pow);
  inner = b.pointwise(inner, p + ".mul_0.044715", Pointwise::scale);
  inner = b.add(x, inner, p + ".add", false);
  inner = b.pointwise(inner, p + ".mul_sqrt_2_over_pi", Pointwise::scale);
  Node gate = b.pointwise(inner, p + ".tanh", Pointwise::tanh);
  gate = b.pointwise(gate, p + ".add_one", Pointwise::shift);
  return b.pointwise(half, gate, p + ".mul", Pointwise::mul);
}

}  // namespace allocsim
