// A hint for the large arrays a reader fills once (a trace's events and sizes): back them
// with 2 MiB pages where the kernel can (Linux's transparent huge pages, which many
// kernels give only to memory that asks). Filling a reserved array of hundreds of MiB then
// takes a page fault per 2 MiB, not per 4 KiB (docs/bench.md has the measured gain).
// Elsewhere, or when the kernel declines, nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace allocsim {

// The whole 2 MiB pages inside [data, data + bytes).
void advise_huge_pages(const void* data, std::size_t bytes);

// A vector's reserved capacity, once reserve() has made it.
template <typename T>
void advise_huge_pages(const std::vector<T>& reserved) {
  advise_huge_pages(reserved.data(), reserved.capacity() * sizeof(T));
}

}  // namespace allocsim
