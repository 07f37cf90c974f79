#include "policies/direct.hpp"

namespace allocsim {

DirectPolicy::DirectPolicy(const Params&, Device& device) : device_(device), granularity_(device.granularity()) {}

Allocation DirectPolicy::allocate(const Request& request) {
  if (request.bytes == 0) return Block{0, 0, 0, request.id, request.stream};
  const Bytes size = align_up(request.bytes, granularity_);
  const auto segment = device_.malloc(size);
  if (!segment) return std::nullopt;
  allocated_ += size;
  return Block{segment->addr, size, request.bytes, request.id, request.stream};
}

void DirectPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  device_.free(Segment{block.addr, block.size});
  allocated_ -= block.size;
}

PolicyStats DirectPolicy::stats() const {
  return PolicyStats{.allocated = allocated_, .reserved = allocated_};
}

}  // namespace allocsim
