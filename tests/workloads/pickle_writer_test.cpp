#include "workloads/pickle_writer.hpp"

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

// Python's own unpickler reads the file and compares it with `expected` (a Python
// expression); true when they are equal.
bool python_reads(const test::TempDir& dir, const std::string& pickle, const std::string& expected) {
  const std::string script = dir.file("check.py", "import pickle, sys\n"
                                                  "data = pickle.load(open(sys.argv[1], 'rb'))\n"
                                                  "expected = " + expected + "\n"
                                                  "sys.exit(0 if data == expected and repr(data) == repr(expected) else 1)\n");
  return std::system(("python3 '" + script + "' '" + pickle + "'").c_str()) == 0;
}

TEST_CASE("pickle writer: Python reads back every kind of value, integers at each width's edge", "[pickle]") {
  test::TempDir dir;
  const std::string path = dir.file("values.pickle");
  {
    std::ofstream out(path, std::ios::binary);
    PickleWriter pickle(out);
    pickle.begin_dict();
    pickle.key("ints");
    pickle.begin_list();
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{255}, std::int64_t{256}, std::int64_t{65535},
                                 std::int64_t{65536}, std::int64_t{-1}, std::int64_t{2147483647},
                                 std::int64_t{2147483648}, std::int64_t{-2147483648}, std::int64_t{-2147483649},
                                 (std::int64_t{1} << 53) - 1, std::numeric_limits<std::int64_t>::min()}) {
      pickle.value(n);
    }
    pickle.value(std::numeric_limits<std::uint64_t>::max());
    pickle.end_list();
    pickle.item("float", 1.5e-3);
    pickle.item("text", "segment_alloc \xc3\xa9");  // UTF-8 passes through
    pickle.item("yes", true);
    pickle.item("no", false);
    pickle.key("nothing");
    pickle.none();
    pickle.key("empty");
    pickle.begin_list();
    pickle.end_list();
    pickle.key("empty_dict");
    pickle.begin_dict();
    pickle.end_dict();
    pickle.end_dict();
    pickle.finish();
  }
  CHECK(python_reads(dir, path,
                     "{'ints': [0, 255, 256, 65535, 65536, -1, 2147483647, 2147483648, -2147483648, -2147483649, "
                     "2**53 - 1, -2**63, 2**64 - 1], 'float': 1.5e-3, 'text': 'segment_alloc \\u00e9', "
                     "'yes': True, 'no': False, 'nothing': None, 'empty': [], 'empty_dict': {}}"));
}

TEST_CASE("pickle writer: containers past one batch (1000 items) and around it stay whole", "[pickle]") {
  test::TempDir dir;
  for (const int count : {999, 1000, 1001, 2500}) {
    CAPTURE(count);
    std::string name = "batch";
    name += std::to_string(count);
    const std::string path = dir.file(name + ".pickle");
    {
      std::ofstream out(path, std::ios::binary);
      PickleWriter pickle(out);
      pickle.begin_dict();
      pickle.key("list");
      pickle.begin_list();
      for (int i = 0; i < count; ++i) {
        pickle.begin_dict();
        pickle.item("i", i);
        pickle.end_dict();
      }
      pickle.end_list();
      for (int i = 0; i < count; ++i) {
        std::string key = "k";  // not "k" + ...: GCC 12 warns falsely (-Wrestrict) on that
        key += std::to_string(i);
        pickle.item(key, i);
      }
      pickle.end_dict();
      pickle.finish();
    }
    const std::string n = std::to_string(count);
    CHECK(python_reads(dir, path, "dict([('list', [{'i': i} for i in range(" + n + ")])] + [('k%d' % i, i) for i in range(" +
                                      n + ")])"));
  }
}

TEST_CASE("pickle writer: misuse throws instead of writing a broken pickle", "[pickle]") {
  std::ostringstream out;
  PickleWriter pickle(out);
  pickle.begin_dict();
  CHECK_THROWS_AS(pickle.value(1), Error);        // a value without its key
  CHECK_THROWS_AS(pickle.end_list(), Error);      // the open container is a dict
  CHECK_THROWS_AS(pickle.finish(), Error);        // still open
  pickle.key("a");
  CHECK_THROWS_AS(pickle.key("b"), Error);        // two keys in a row
  pickle.value(1);
  pickle.end_dict();
  CHECK_THROWS_AS(pickle.begin_list(), Error);    // a second top-level value
  pickle.finish();
}

}  // namespace
}  // namespace allocsim
