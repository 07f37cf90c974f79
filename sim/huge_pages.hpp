// A hint for the large arrays a reader fills once (a trace's events and sizes): back them
// with 2 MiB pages where the kernel can (Linux's transparent huge pages, which Debian
// leaves to madvise). Filling a reserved array of hundreds of MiB then takes one page fault
// per 2 MiB, not one per 4 KiB; in bench/'s CSV parse the 4 KiB faults were a fifth of the
// time. Elsewhere, or when the kernel declines, nothing changes.
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
