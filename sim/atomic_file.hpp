// Output files appear whole or not at all: written under a temporary name beside the
// target, then renamed over it. A crash or an error leaves no partial file behind.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace allocsim {

// Calls `write` with a stream to a temporary file; on success renames it to `path`.
// If `write` throws or the stream fails, the temporary is removed and Error is thrown.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

}  // namespace allocsim
