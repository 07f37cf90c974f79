// The lines of a text, a window of whole lines at a time, for a reader that parses them
// where they are held: a text in memory is one window, itself; a mapped file is copied
// into a buffer (MappedFile::copy, faster than faulting the mapping in page by page) a
// window at a time, and the buffer reused. Each window's lines come as TextLines hands
// them out, numbered from the text's first line, so errors name the line in the file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/mapped_file.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {

class LineWindows {
 public:
  // `text`: the whole input; `file`, when it is mapped, is `text`'s file and is copied.
  LineWindows(std::string_view text, const MappedFile* file, std::string name)
      : text_(text), file_(file && file->mapped() ? file : nullptr), name_(std::move(name)),
        buffer_(file_ ? std::min(kCopyWindow, text.size()) : 0),  // a smaller file takes no more than its size
        part_(held().substr(0, 0), name_, 0) {}  // done, at the text's start

  // Moves to the next window, its lines in part(): false at the text's end. Call it once
  // part() is done; the window's bytes stay valid until the next call.
  bool next() {
    if (start_ + whole_ == text_.size() && whole_ != 0) return false;
    if (!file_) {  // the text itself, once
      whole_ = text_.size();
      part_ = TextLines(text_, name_);
      return whole_ != 0;
    }
    std::memmove(buffer_.data(), buffer_.data() + whole_, held_ - whole_);  // the start of the line after the last
    start_ += whole_;
    held_ -= whole_;
    while (true) {
      held_ += file_->copy(start_ + held_, std::span(buffer_).subspan(held_));
      const std::string_view copy(buffer_.data(), held_);
      // The whole lines held: up to the last newline, or all of them at the text's end.
      whole_ = start_ + held_ == text_.size() ? held_ : copy.rfind('\n') + 1;
      if (whole_ != 0) break;
      buffer_.resize(2 * buffer_.size());  // a line longer than the buffer
    }
    const std::string_view lines(buffer_.data(), whole_);
    part_ = start_ == 0 ? TextLines(lines, name_) : TextLines(lines, name_, part_.lines());
    return true;
  }

  TextLines& part() { return part_; }
  // Every byte of the text held with the window (readable, though past its lines), and
  // where the first of them is in the text: a reader keeps views into the text itself.
  std::string_view held() const { return file_ ? std::string_view(buffer_.data(), held_) : text_; }
  const char* home() const { return text_.data() + start_; }
  // Where in the text the next line part() hands out begins.
  std::size_t offset() const { return start_ + static_cast<std::size_t>(part_.position() - held().data()); }
  bool done() const { return part_.done() && start_ + whole_ == text_.size(); }

 private:
  std::string_view text_;
  const MappedFile* file_;  // null: the text is read in place
  std::string name_;
  std::vector<char> buffer_;
  std::size_t start_ = 0;  // where the buffer's first byte is in the text
  std::size_t held_ = 0;   // bytes in the buffer
  std::size_t whole_ = 0;  // of them, the window's whole lines
  TextLines part_;
};

}  // namespace allocsim
