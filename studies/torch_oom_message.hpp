// PyTorch's CUDA out-of-memory message (c10/cuda/CUDACachingAllocator.cpp), in each version's
// wording, read from a pasted text (../shared/reference/oom_messages.md):
// - cached (up to about 1.3): `Tried to allocate X (GPU d; T total capacity; A already
//   allocated; F free; C cached)`, C the cache's free bytes (cached less allocated);
// - reserved (about 1.4 to 2.0): `... F free; [L allowed;] R reserved in total by PyTorch)`,
//   R the whole reservation, A included;
// - unallocated (2.1 on; 2.1 printed `capacty`): `GPU d has a total capacity of T of which F
//   is free. [Process N has M memory in use.]... [Including non-PyTorch memory, this process
//   has P memory in use.] [L allowed; ]Of the allocated memory A is allocated by PyTorch,
//   [with N allocated in private pools (e.g., CUDA Graphs), ]and R is reserved by PyTorch
//   but unallocated.`, R the cache's free bytes.
// Any line prefix, any wrapping (the text is read without its spaces) and the hints after
// the message are allowed; `CUDA`, `HIP` or no device word before `out of memory`. A
// figure the text lacks stays empty: the verdict says what is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "studies/pasted_text.hpp"

namespace allocsim {

enum class TorchWording : std::uint8_t { cached, reserved, unallocated };
std::string_view name_of(TorchWording wording);

struct OtherProcess {
  std::string pid;
  PrintedSize memory;
};

struct TorchOomMessage {
  TorchWording wording = TorchWording::unallocated;
  std::optional<int> gpu;
  std::optional<PrintedSize> request;          // Tried to allocate X
  std::optional<PrintedSize> total;            // T total capacity
  std::optional<PrintedSize> free;             // F free (cudaMemGetInfo)
  std::optional<PrintedSize> allocated;        // A allocated by PyTorch
  std::optional<PrintedSize> cached;           // cached: C (the cache's free bytes)
  std::optional<PrintedSize> reserved_total;   // reserved: R (A included)
  std::optional<PrintedSize> unallocated;      // unallocated: R (the cache's free bytes)
  std::optional<PrintedSize> allowed;          // L allowed (set_per_process_memory_fraction)
  std::optional<PrintedSize> process_in_use;   // P: this process, CUDA context included
  std::optional<PrintedSize> private_pools;    // N in private pools (a part of A)
  std::vector<OtherProcess> processes;         // `Process N has M memory in use`
  std::size_t messages = 0;                    // OOM messages in the text; the first is read
};

// The first OOM message in `text`; nothing when the text holds none.
std::optional<TorchOomMessage> read_torch_oom_message(std::string_view text);

}  // namespace allocsim
