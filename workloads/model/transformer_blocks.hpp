// Pieces that several transformer builders share (zoo.cpp's GPT-2, decoder.cpp).
#pragma once

#include <string>

#include "workloads/model/graph.hpp"

namespace allocsim {

// NewGELUActivation ("gelu_new"), a Python expression evaluated left to right:
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))). Every step is a tensor;
// autograd saves x (pow), the tanh output and both factors of the last product.
Node gelu_new(ModelBuilder& b, Node x, const std::string& p);

}  // namespace allocsim
