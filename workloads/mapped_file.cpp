#include "workloads/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "sim/error.hpp"

namespace allocsim {
namespace {

std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// How often `byte` occurs in [at, at + size). Matches are summed in a byte, 255 bytes at a
// time before it could wrap: a loop the compiler turns into wide compares and adds, where
// std::count widens each match to a 64-bit count first.
std::size_t count_byte(const char* at, std::size_t size, char byte) {
  std::size_t count = 0;
  while (size > 0) {
    const std::size_t part = std::min<std::size_t>(size, 255);
    unsigned char matches = 0;
    for (std::size_t i = 0; i < part; ++i) matches = static_cast<unsigned char>(matches + (at[i] == byte));
    count += matches;
    at += part;
    size -= part;
  }
  return count;
}

struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  struct stat info {};
  if (file.fd < 0 || ::fstat(file.fd, &info) != 0) throw Error(path.string() + ": cannot open");
  if (S_ISREG(info.st_mode)) {
    size_ = static_cast<std::size_t>(info.st_size);
    if (size_ == 0) return;
    void* const mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (mapping != MAP_FAILED) {
      ::madvise(mapping, size_, MADV_SEQUENTIAL);  // readers walk it once, front to back
      mapping_ = mapping;
      data_ = static_cast<const char*>(mapping);
      fd_ = ::dup(file.fd);  // -1 (out of descriptors) leaves copy() to the mapping
      return;
    }
    // A file system that cannot map (some FUSE ones): read it like a pipe.
  }
  char chunk[1 << 16];
  while (true) {
    const ssize_t got = ::read(file.fd, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(path.string() + ": read error (" + std::strerror(errno) + ")");
    }
    copy_.append(chunk, static_cast<std::size_t>(got));
  }
  data_ = copy_.data();
  size_ = copy_.size();
}

void MappedFile::release_before(std::size_t offset) {
  if (mapping_ == nullptr) return;
  release(released_, offset);
  released_ = std::max(released_, std::min(offset, size_) / page_size() * page_size());
}

void MappedFile::release(std::size_t begin, std::size_t end) const {
  if (mapping_ == nullptr) return;
  const std::size_t page = page_size();
  begin = (std::min(begin, size_) + page - 1) / page * page;
  end = std::min(end, size_) / page * page;
  // A private, never written file mapping: dropped pages come back from the file.
  if (end > begin) ::madvise(static_cast<char*>(mapping_) + begin, end - begin, MADV_DONTNEED);
}

std::size_t MappedFile::copy(std::size_t offset, std::span<char> into) const {
  offset = std::min(offset, size_);
  const std::size_t wanted = std::min(into.size(), size_ - offset);
  std::size_t done = 0;
  while (mapping_ != nullptr && fd_ >= 0 && done < wanted) {
    const ssize_t got = ::pread(fd_, into.data() + done, wanted - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // a read error, or the file shrank: the mapping gives the rest
    done += static_cast<std::size_t>(got);
  }
  if (done < wanted) std::memcpy(into.data() + done, data_ + offset + done, wanted - done);
  return wanted;
}

std::size_t MappedFile::count(char byte) const {
  if (mapping_ == nullptr) return count_byte(data_, size_, byte);
  std::vector<char> buffer(kCopyWindow);
  std::size_t count = 0;
  for (std::size_t at = 0; at < size_;) {
    const std::size_t got = copy(at, buffer);
    count += count_byte(buffer.data(), got, byte);
    at += got;
  }
  return count;
}

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace allocsim
