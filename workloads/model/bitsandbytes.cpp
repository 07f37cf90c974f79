#include "workloads/model/bitsandbytes.hpp"

namespace allocsim {
namespace {

Bytes ceil_div(std::int64_t n, std::int64_t d) { return static_cast<Bytes>((n + d - 1) / d); }

}  // namespace

Nf4Layout nf4_layout(std::int64_t elements) {
  Nf4Layout layout;
  const Bytes blocks = ceil_div(elements, kNf4Blocksize);
  layout.packed = static_cast<Bytes>(elements + 1) / 2;  // torch.zeros(((n + 1) // 2, 1), uint8)
  layout.absmax_fp32 = blocks * 4;
  layout.absmax_8bit = blocks;
  layout.absmax2 = ceil_div(static_cast<std::int64_t>(blocks), kNf4NestedBlocksize) * 4;
  return layout;
}

OptimizerStateLayout bnb_adam_state(std::int64_t elements, bool eight_bit, bool paged) {
  OptimizerStateLayout layout;
  const bool small = elements < kMin8bitSize;
  if (eight_bit && !small) {
    layout.state = static_cast<Bytes>(elements);
    layout.absmax = ceil_div(elements, kOptimizer8bitBlocksize) * 4;
  } else {
    layout.state = static_cast<Bytes>(elements) * 4;
  }
  layout.paged = paged && elements >= kPagedMinElements;
  return layout;
}

}  // namespace allocsim
