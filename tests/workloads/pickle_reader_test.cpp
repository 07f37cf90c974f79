// The plain-data unpickler: what Python's pickle.dumps writes in protocols 2 to 5 reads
// back as the same values; every opcode that could run code or make an object is refused
// by name at its byte; broken input is a one-line error, never a crash.
#include "workloads/pickle_reader.hpp"

#include <initializer_list>
#include <string>

#include <catch2/catch.hpp>

#include "sim/error.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

std::string bytes(std::initializer_list<int> codes) {
  std::string out;
  for (const int code : codes) out += static_cast<char>(code);
  return out;
}

// pickle.dumps({"a": [1, 2.5, "x", None, True, (3, 4)], "b": {"c": -1 << 62, "d": (1 << 64) - 1,
// "e": "é☃"}, "f": False, "g": ()}, protocol=P), from Python 3.11.
constexpr char kProtocol2Bytes[] =
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x47\x40\x04\x00\x00\x00\x00\x00"
    "\x00\x58\x01\x00\x00\x00\x78\x71\x03\x4e\x88\x4b\x03\x4b\x04\x86\x71\x04\x65\x58\x01\x00\x00\x00\x62\x71\x05\x7d"
    "\x71\x06\x28\x58\x01\x00\x00\x00\x63\x71\x07\x8a\x08\x00\x00\x00\x00\x00\x00\x00\xc0\x58\x01\x00\x00\x00\x64\x71"
    "\x08\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x58\x01\x00\x00\x00\x65\x71\x09\x58\x05\x00\x00\x00\xc3\xa9\xe2"
    "\x98\x83\x71\x0a\x75\x58\x01\x00\x00\x00\x66\x71\x0b\x89\x58\x01\x00\x00\x00\x67\x71\x0c\x29\x75\x2e";
constexpr char kProtocol4Bytes[] =
    "\x80\x04\x95\x5f\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x5d\x94\x28\x4b\x01\x47\x40\x04\x00\x00"
    "\x00\x00\x00\x00\x8c\x01\x78\x94\x4e\x88\x4b\x03\x4b\x04\x86\x94\x65\x8c\x01\x62\x94\x7d\x94\x28\x8c\x01\x63\x94"
    "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\xc0\x8c\x01\x64\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x01\x65"
    "\x94\x8c\x05\xc3\xa9\xe2\x98\x83\x94\x75\x8c\x01\x66\x94\x89\x8c\x01\x67\x94\x29\x75\x2e";

// The literals hold NUL bytes: their whole size, not up to the first NUL.
const std::string kProtocol2(kProtocol2Bytes, sizeof kProtocol2Bytes - 1);
const std::string kProtocol4(kProtocol4Bytes, sizeof kProtocol4Bytes - 1);

std::string with_protocol(std::string pickle, int protocol) {
  pickle[1] = static_cast<char>(protocol);  // protocols 3 and 5 write these same opcodes
  return pickle;
}

std::string error_of(const std::string& pickle) {
  try {
    static_cast<void>(read_pickle(pickle, "x.pickle"));
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST_CASE("pickle reader: Python's own pickles in protocols 2 to 5 read back as the same values", "[pickle]") {
  const json expected = json::parse(R"({"a": [1, 2.5, "x", null, true, [3, 4]],
      "b": {"c": -4611686018427387904, "d": 18446744073709551615, "e": "é☃"}, "f": false, "g": []})");
  for (const std::string& pickle : {kProtocol2, with_protocol(kProtocol2, 3), kProtocol4, with_protocol(kProtocol4, 5)}) {
    const json value = read_pickle(pickle, "x.pickle");
    CHECK(value == expected);
    CHECK(value["b"]["d"].is_number_unsigned());
  }
}

TEST_CASE("pickle reader: ints at the edges of 64 bits; beyond them an error", "[pickle]") {
  CHECK(read_pickle(bytes({0x80, 2, 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, '.'}), "x") ==
        json(std::numeric_limits<std::int64_t>::min()));
  CHECK(read_pickle(bytes({0x80, 2, 0x8a, 0, '.'}), "x") == json(0));
  CHECK(read_pickle(bytes({0x80, 2, 'J', 0xff, 0xff, 0xff, 0xff, '.'}), "x") == json(-1));
  CHECK(read_pickle(bytes({0x80, 2, 'M', 0xff, 0xff, '.'}), "x") == json(65535));
  // 2**64 and -(2**63) - 1: nine significant bytes.
  CHECK(error_of(bytes({0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'})) ==
        "x.pickle: byte 2: an int of 9 bytes (LONG1) does not fit 64 bits: a snapshot's numbers do");
  CHECK_THAT(error_of(bytes({0x80, 2, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, '.'})),
             Catch::Contains("does not fit 64 bits"));
  CHECK_THAT(error_of(bytes({0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0xff, '.'})), Catch::Contains("LONG4 with a negative length"));
}

TEST_CASE("pickle reader: memo gets share a container filled after it was memoized", "[pickle]") {
  // pickle.dumps([[s] * 2] * 2) with s = [1]: the inner lists are memo gets.
  const std::string shared = bytes({0x80, 2, ']', 'q', 0, ']', 'q', 1, ']', 'q', 2, 'K', 1, 'a', 'a', 'h', 2, 'a', 'a',
                                    'h', 1, 'a', '.'});
  CHECK(read_pickle(shared, "x") == json::parse("[[[1], [1]], [[1], [1]]]"));
  CHECK(error_of(bytes({0x80, 2, 'h', 7, '.'})) == "x.pickle: byte 2: not a pickle: memo 7 was never put");
  // A list inside itself: l = []; l.append(l).
  CHECK(error_of(bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'})) ==
        "x.pickle: byte 8: a container inside itself: a snapshot is a tree");
}

TEST_CASE("pickle reader: a memo index past the input's size reads as a near one; MEMOIZE takes the memo's length", "[pickle]") {
  // [a, b, a, b, b] with a = [1] put at 1000000 (past these 30 bytes) and b = [2] memoized
  // after it, so at 1: the memo's length, as Python's MEMOIZE counts it.
  const std::string far = bytes({0x80, 4, ']', '(', ']', 'r', 0x40, 0x42, 0x0f, 0x00, 'K', 1, 'a', ']', 0x94, 'K', 2, 'a',
                                 'j', 0x40, 0x42, 0x0f, 0x00, 'h', 1, 'h', 1, 'e', '.'});
  CHECK(read_pickle(far, "x") == json::parse("[[1], [2], [1], [2], [2]]"));
  // Put twice at one index: the memo's length counts it once, so the next MEMOIZE is at 1.
  const std::string again = bytes({0x80, 4, ']', '(', 'K', 1, 'q', 0, 'q', 0, 'K', 2, 0x94, 'h', 1, 'h', 0, 'e', '.'});
  CHECK(read_pickle(again, "x") == json::parse("[1, 2, 2, 1]"));
  CHECK(error_of(bytes({0x80, 4, 'K', 1, 'r', 0x40, 0x42, 0x0f, 0x00, 'j', 0x41, 0x42, 0x0f, 0x00, '.'})) ==
        "x.pickle: byte 9: not a pickle: memo 1000001 was never put");
}

TEST_CASE("pickle reader: dict keys are names; an int key becomes its decimal text", "[pickle]") {
  // {1: "a", "b": 2} and {(1, 2): "a"}.
  CHECK(read_pickle(bytes({0x80, 2, '}', '(', 'K', 1, 'X', 1, 0, 0, 0, 'a', 'X', 1, 0, 0, 0, 'b', 'K', 2, 'u', '.'}), "x") ==
        json::parse(R"({"1": "a", "b": 2})"));
  CHECK(error_of(bytes({0x80, 2, '}', 'K', 1, 'K', 2, 0x86, 'X', 1, 0, 0, 0, 'a', 's', '.'})) ==
        "x.pickle: byte 14: a dict key that is not a str or an int (SETITEM): a snapshot's keys are names");
}

TEST_CASE("pickle reader: every opcode that makes more than plain data is refused by name at its byte", "[pickle]") {
  // pickle.dumps(os.system, protocol=4): STACK_GLOBAL after two strings.
  const std::string stack_global = bytes({0x80, 4, 0x95, 0x14, 0, 0, 0, 0, 0, 0, 0, 0x8c, 5, 'p', 'o', 's', 'i', 'x',
                                          0x94, 0x8c, 6, 's', 'y', 's', 't', 'e', 'm', 0x94, 0x93, 0x94, '.'});
  CHECK(error_of(stack_global) ==
        "x.pickle: byte 28: opcode STACK_GLOBAL: refused global posix.system: a memory snapshot is plain data");
  CHECK(error_of("cos\nsystem\n(S'echo pwned'\ntR.") ==
        "x.pickle: byte 0: opcode GLOBAL: refused global os.system: a memory snapshot is plain data");
  CHECK(error_of(bytes({0x80, 2, 'X', 3, 0, 0, 0, 'a', 0, 'b', 'Q', '.'})) ==
        "x.pickle: byte 10: opcode BINPERSID: refused persistent id 'a\\x00b': a memory snapshot is plain data");
  const std::pair<std::string, std::string> refused[] = {
      {bytes({0x80, 2, 'N', ')', 'R', '.'}), "byte 4: opcode REDUCE: refused a call"},
      {bytes({0x80, 2, '}', '}', 'b', '.'}), "byte 4: opcode BUILD: refused an object's state"},
      {bytes({0x80, 2, 'N', ')', 0x81, '.'}), "byte 4: opcode NEWOBJ: refused an object"},
      {bytes({0x80, 4, 'N', ')', '}', 0x92, '.'}), "byte 5: opcode NEWOBJ_EX: refused an object"},
      {bytes({0x80, 2, '(', 'o', '.'}), "byte 3: opcode OBJ: refused an object"},
      {bytes({0x80, 2, 'i', 'o', 's', '\n', '.'}), "byte 2: opcode INST: refused an object"},
      {bytes({0x80, 2, 'P', '1', '\n', '.'}), "byte 2: opcode PERSID: refused persistent id '1'"},
      {bytes({0x80, 2, 'N', 'Q', '.'}), "byte 3: opcode BINPERSID: refused persistent id None"},
      {bytes({0x80, 2, 0x82, 1, '.'}), "byte 2: opcode EXT1: refused an extension"},
      {bytes({0x80, 2, 0x83, 1, 0, '.'}), "byte 2: opcode EXT2: refused an extension"},
      {bytes({0x80, 2, 0x84, 1, 0, 0, 0, '.'}), "byte 2: opcode EXT4: refused an extension"},
      {bytes({0x80, 4, 0x8f, '.'}), "byte 2: opcode EMPTY_SET: refused a set"},
      {bytes({0x80, 4, '(', 0x91, '.'}), "byte 3: opcode FROZENSET: refused a set"},
      {bytes({0x80, 5, 0x97, '.'}), "byte 2: opcode NEXT_BUFFER: refused an out-of-band buffer"},
      {bytes({0x80, 5, 0x96, 0, 0, 0, 0, 0, 0, 0, 0, '.'}), "byte 2: opcode BYTEARRAY8: refused a bytearray"},
  };
  for (const auto& [pickle, message] : refused) {
    CHECK(error_of(pickle) == "x.pickle: " + message + ": a memory snapshot is plain data");
  }
  CHECK(error_of(bytes({0x80, 2, 'I', '1', '\n', '.'})) ==
        "x.pickle: byte 2: opcode INT (protocol 0 text) is not read: a snapshot is written with protocol 2 or later");
  CHECK(error_of(bytes({0x80, 2, 0xff})) == "x.pickle: byte 2: not a pickle: unknown opcode 0xff");
  CHECK(error_of(bytes({0x80, 6, '.'})) == "x.pickle: byte 0: pickle protocol 6 is not supported (2 to 5 are)");
}

TEST_CASE("pickle reader: truncation, underflow and lengths past the end are one-line errors", "[pickle]") {
  // Every head of a good pickle fails cleanly (or, cut inside nothing, reads the same).
  for (std::size_t size = 0; size < kProtocol4.size(); ++size) {
    const std::string message = error_of(kProtocol4.substr(0, size));
    CHECK(message.starts_with("x.pickle: byte "));
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK(error_of("") == "x.pickle: byte 0: not a pickle: truncated: an opcode needs 1 bytes, 0 left");
  CHECK(error_of(bytes({0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a', '.'})) ==
        "x.pickle: byte 2: not a pickle: truncated: BINUNICODE needs 2147483647 bytes, 2 left");
  CHECK(error_of(bytes({0x80, 4, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '.'})) ==
        "x.pickle: byte 2: not a pickle: truncated: BINUNICODE8 needs 18446744073709551615 bytes, 1 left");
  CHECK(error_of(bytes({0x80, 2, 's', '.'})) == "x.pickle: byte 2: not a pickle: stack underflow at SETITEM");
  CHECK(error_of(bytes({0x80, 2, 'K', 1, 'e', '.'})) == "x.pickle: byte 4: not a pickle: APPENDS without a MARK");
  // The items of a MARK with nothing below it to go into.
  CHECK(error_of(bytes({0x80, 2, '(', 'K', 1, 'e', '.'})) == "x.pickle: byte 5: not a pickle: stack underflow at APPENDS");
  CHECK(error_of(bytes({0x80, 2, '(', 'K', 1, 'K', 2, 'u', '.'})) ==
        "x.pickle: byte 7: not a pickle: stack underflow at SETITEMS");
  CHECK(error_of(bytes({0x80, 2, 'K', 1, '(', 'K', 2, 'K', 3, 'u', '.'})) ==
        "x.pickle: byte 9: not a pickle: SETITEMS into something that is not a dict");
  CHECK(error_of(bytes({0x80, 2, 'K', 1, '(', 'K', 2, 'a', '.'})) ==
        "x.pickle: byte 7: not a pickle: stack underflow at APPEND");  // a MARK fences the stack below it
  CHECK(error_of(bytes({0x80, 2, 'K', 1, 'K', 2, 'a', '.'})) ==
        "x.pickle: byte 6: not a pickle: APPEND into something that is not a list");
  CHECK(error_of(bytes({0x80, 2, '.'})) == "x.pickle: byte 2: not a pickle: STOP with nothing on the stack");
  CHECK(error_of(bytes({0x80, 2, 'X', 1, 0, 0, 0, 0xff, '.'})) == "x.pickle: byte 2: not a pickle: BINUNICODE is not UTF-8");
  CHECK(error_of("time_ns,op\n").starts_with("x.pickle: byte 0: not a pickle"));
}

TEST_CASE("pickle reader: deep nesting and expanding references are bounded, without recursion", "[pickle]") {
  // A million nested lists: the decoder's loop is flat; the tree is refused past its depth.
  std::string deep = bytes({0x80, 4});
  deep += std::string(1'000'000, ']');
  deep += std::string(999'999, 'a');
  deep += '.';
  CHECK(error_of(deep) ==
        "x.pickle: byte " + std::to_string(deep.size() - 1) + ": nested deeper than 256 levels: a snapshot is shallow");
  std::string shallow = bytes({0x80, 4}) + std::string(200, ']') + std::string(199, 'a') + ".";
  CHECK(read_pickle(shallow, "x").is_array());
  // Each list holds the one before twice: 2**40 leaves from a few hundred bytes.
  std::string doubling = bytes({0x80, 2, 'N'});
  for (int i = 0; i < 40; ++i) doubling += bytes({'q', 0, ']', 'h', 0, 'a', 'h', 0, 'a'});
  doubling += '.';
  CHECK_THAT(error_of(doubling), Catch::Contains("shared references expand beyond"));
}

}  // namespace
}  // namespace allocsim
