// A streaming writer of Python pickles (protocol 2) holding plain data only: dicts,
// lists, str, int, float, bool and None. What a PyTorch memory snapshot is made of, and
// all that pytorch.org/memory_viz's own unpickler reads. No memo, no globals.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace allocsim {

// Contract:
// - values go into the open container in order; inside a dict, key() comes before each value;
// - the whole output is one value (a container usually): finish() checks that it is complete
//   and writes STOP; output is buffered, so nothing is complete in `out` before finish().
//   Misuse (a value without a key, a container left open) throws Error.
// - integers are exact in 64 bits (LONG1 beyond 32 bits); floats are IEEE doubles.
class PickleWriter {
 public:
  explicit PickleWriter(std::ostream& out);

  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  void key(std::string_view name);
  void value(std::int64_t number);
  void value(std::uint64_t number);
  void value(int number) { value(static_cast<std::int64_t>(number)); }
  void value(double number);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(bool flag);
  void none();
  // key(name) then value(v): the common case in a dict.
  template <typename T>
  void item(std::string_view name, const T& v) {
    key(name);
    value(v);
  }
  void finish();

 private:
  struct Open {
    bool dict;
    std::size_t items = 0;  // complete items (dict: key and value pairs)
    bool key_given = false;
  };
  void before_value();
  void after_value();
  void put(char byte) {
    buffer_.push_back(byte);
    if (buffer_.size() >= kFlushAt) flush();
  }
  void flush();
  void put_le(std::uint64_t bits, int bytes);
  void raw_string(std::string_view text);

  static constexpr std::size_t kFlushAt = 1 << 20;  // bytes buffered before a write: ostream::put per byte is slow
  std::ostream& out_;
  std::string buffer_;
  std::vector<Open> open_;
  bool done_ = false;  // the one top-level value is complete
};

}  // namespace allocsim
