#include "sim/atomic_file.hpp"

#include <fstream>
#include <unistd.h>

#include "sim/error.hpp"

namespace allocsim {

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  std::filesystem::path temporary = path;
  temporary += ".tmp" + std::to_string(::getpid());
  try {
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      if (!out) throw Error("cannot write " + path.string() + ": cannot create a file in its folder");
      write(out);
      out.flush();
      if (!out) throw Error("cannot write " + path.string() + ": write failed");
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) throw Error("cannot write " + path.string() + ": " + error.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

}  // namespace allocsim
