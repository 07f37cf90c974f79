// A whole input file's bytes as one read-only buffer: memory-mapped when it is a regular
// file (no copy: pages come in as a reader walks them), read into memory when it is not (a
// pipe, /dev/stdin, a FIFO), so a reader parses one std::string_view either way.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace allocsim {

// The buffer a reader copies a mapped file into (MappedFile::copy), a window at a time:
// within a core's L2 cache.
inline constexpr std::size_t kCopyWindow = std::size_t{256} << 10;

// Contract: bytes() is the file as it was when opened; it stays valid while the object
// lives. A regular file must not shrink meanwhile (the mapping would fault, as any mmap
// reader does).
class MappedFile {
 public:
  // Throws Error "PATH: cannot open" or "PATH: read error (REASON)".
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {data_, size_}; }
  // The reader is done with the bytes before `offset`: their pages may leave memory. Views
  // into them stay valid (touched again, a page is read back from the file).
  void release_before(std::size_t offset);
  // The same for the whole pages inside [begin, end), whatever was released before: for a
  // reader that walks the bytes again from the start (a stream reopened), each pass saying
  // what it is done with.
  void release(std::size_t begin, std::size_t end) const;
  bool mapped() const { return mapping_ != nullptr; }  // false: read into memory

  // The bytes from `offset` on copied into `into`, as many as fit and the file has: how
  // many. A mapped file is read with pread, not through the mapping: a reader that looks
  // at each byte once goes faster with the kernel's copy than with a first touch of every
  // page of the mapping (which costs on the VMs this project is measured on), and the
  // mapping's pages stay as they were.
  std::size_t copy(std::size_t offset, std::span<char> into) const;
  // How often `byte` occurs in the file, read through copy().
  std::size_t count(char byte) const;

 private:
  void* mapping_ = nullptr;
  int fd_ = -1;  // of a mapped file, kept open for copy()
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t released_ = 0;  // bytes handed back so far, whole pages
  std::string copy_;  // what a non-regular file held
};

// Pages of a mapped file given back behind a reader every so often. A file may be walked
// by several passes at once (a stream reopened): each gives back what it is done with,
// whatever another pass did.
class PagesBehind {
 public:
  explicit PagesBehind(const MappedFile* file) : file_(file) {}
  void read_to(std::size_t offset) {
    if (file_ && offset - released_ >= kReleaseEvery) {
      file_->release(released_, offset);
      released_ = offset;
    }
  }

 private:
  static constexpr std::size_t kReleaseEvery = 64u << 20;
  const MappedFile* file_;
  std::size_t released_ = 0;
};

}  // namespace allocsim
