#include "workloads/pickle_writer.hpp"

#include <cstring>
#include <limits>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// Opcodes of pickle protocol 2 (Python's Lib/pickle.py names).
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kMark = '(';
constexpr char kEmptyDict = '}';
constexpr char kSetItems = 'u';
constexpr char kEmptyList = ']';
constexpr char kAppends = 'e';
constexpr char kBinInt1 = 'K';
constexpr char kBinInt2 = 'M';
constexpr char kBinInt = 'J';
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kBinUnicode = 'X';
constexpr char kNone = 'N';
constexpr char kTrue = '\x88';
constexpr char kFalse = '\x89';

// CPython batches SETITEMS/APPENDS by this many items; a reader's stack stays small.
constexpr std::size_t kBatch = 1000;

}  // namespace

PickleWriter::PickleWriter(std::ostream& out) : out_(out) {
  buffer_.reserve(kFlushAt + 64);
  put(kProto);
  put('\x02');
}

void PickleWriter::flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void PickleWriter::put_le(std::uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) put(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PickleWriter::before_value() {
  if (done_) throw Error("pickle writer: a second value after the top-level one");
  if (open_.empty()) return;
  Open& top = open_.back();
  if (top.dict && !top.key_given) throw Error("pickle writer: a dict value without a key");
  if (!top.dict && top.items % kBatch == 0) put(kMark);
}

void PickleWriter::after_value() {
  if (open_.empty()) {
    done_ = true;
    return;
  }
  Open& top = open_.back();
  top.key_given = false;
  if (++top.items % kBatch == 0) put(top.dict ? kSetItems : kAppends);
}

void PickleWriter::key(std::string_view name) {
  if (open_.empty() || !open_.back().dict || open_.back().key_given) {
    throw Error("pickle writer: a key outside a dict or after another key");
  }
  if (open_.back().items % kBatch == 0) put(kMark);
  raw_string(name);
  open_.back().key_given = true;
}

void PickleWriter::begin_dict() {
  before_value();
  put(kEmptyDict);
  open_.push_back(Open{true});
}

void PickleWriter::begin_list() {
  before_value();
  put(kEmptyList);
  open_.push_back(Open{false});
}

void PickleWriter::end_dict() {
  if (open_.empty() || !open_.back().dict || open_.back().key_given) throw Error("pickle writer: end_dict without an open dict");
  if (open_.back().items % kBatch != 0) put(kSetItems);
  open_.pop_back();
  after_value();
}

void PickleWriter::end_list() {
  if (open_.empty() || open_.back().dict) throw Error("pickle writer: end_list without an open list");
  if (open_.back().items % kBatch != 0) put(kAppends);
  open_.pop_back();
  after_value();
}

void PickleWriter::value(std::int64_t number) {
  before_value();
  if (number >= 0 && number < 0x100) {
    put(kBinInt1);
    put_le(static_cast<std::uint64_t>(number), 1);
  } else if (number >= 0 && number < 0x10000) {
    put(kBinInt2);
    put_le(static_cast<std::uint64_t>(number), 2);
  } else if (number >= std::numeric_limits<std::int32_t>::min() && number <= std::numeric_limits<std::int32_t>::max()) {
    put(kBinInt);
    put_le(static_cast<std::uint32_t>(static_cast<std::int32_t>(number)), 4);
  } else {
    put(kLong1);  // two's complement, little-endian, 8 bytes: exact for any int64
    put('\x08');
    put_le(static_cast<std::uint64_t>(number), 8);
  }
  after_value();
}

void PickleWriter::value(std::uint64_t number) {
  if (number <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    value(static_cast<std::int64_t>(number));
    return;
  }
  before_value();
  put(kLong1);  // a ninth, zero byte keeps it positive
  put('\x09');
  put_le(number, 8);
  put('\x00');
  after_value();
}

void PickleWriter::value(double number) {
  before_value();
  put(kBinFloat);
  std::uint64_t bits = 0;  // std::bit_cast, which LLVM 14's libc++ (the wasm build's) lacks
  std::memcpy(&bits, &number, sizeof bits);
  for (int i = 7; i >= 0; --i) put(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
  after_value();
}

void PickleWriter::raw_string(std::string_view text) {
  if (text.size() > std::numeric_limits<std::uint32_t>::max()) throw Error("pickle writer: a string over 4 GiB");
  put(kBinUnicode);
  put_le(text.size(), 4);
  buffer_.append(text);
  if (buffer_.size() >= kFlushAt) flush();
}

void PickleWriter::value(std::string_view text) {
  before_value();
  raw_string(text);
  after_value();
}

void PickleWriter::value(bool flag) {
  before_value();
  put(flag ? kTrue : kFalse);
  after_value();
}

void PickleWriter::none() {
  before_value();
  put(kNone);
  after_value();
}

void PickleWriter::finish() {
  if (!done_ || !open_.empty()) throw Error("pickle writer: finish() before the top-level value is complete");
  put(kStop);
  flush();
}

}  // namespace allocsim
