// Spec strings (sim/spec): the list split, one spec's parse with its round-trip contract,
// and the typed getters a policy or workload reads its values with. A bad input must be
// an Error; a broken contract aborts (a finding).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/error.hpp"
#include "sim/spec.hpp"

namespace {

using namespace allocsim;

// One key per kind, as a policy declares them; "split" also in its native spelling (MiB).
constexpr ParamInfo kDeclared[] = {
    {"size", ParamKind::bytes, "2MiB", "a size"},
    {"count", ParamKind::count, "1", "a count"},
    {"ratio", ParamKind::number, "0.5", "a real"},
    {"flag", ParamKind::boolean, "false", "a flag"},
    {"split", ParamKind::bytes, "256MiB", "a size in MiB natively", "split_mb", "MiB"},
    {"word", ParamKind::text, "none", "a word or a size"},
};

void check(bool holds) {
  if (!holds) std::abort();
}

template <class Read>
void read_or_error(Read read) {
  try {
    read();
  } catch (const Error&) {
  }
}

void one_spec(std::string_view text) {
  const Spec spec = parse_spec(text);
  // to_string(parse_spec(t)) == t, a trailing ':' aside; parse_spec(to_string(s)) == s.
  std::string_view written = text;
  if (spec.args.empty() && written.ends_with(':')) written.remove_suffix(1);
  check(to_string(spec) == written);
  check(parse_spec(to_string(spec)) == spec);
  const Params params(spec, kDeclared, "fuzz");
  // Every value was read by its kind where the Params were made: its getter cannot fail.
  try {
    params.bytes("size");
    params.count("count");
    params.number("ratio");
    params.boolean("flag");
    params.bytes("split");
  } catch (const Error&) {
    std::abort();
  }
  read_or_error([&] { params.bytes("word"); });  // a text key is read as a size when asked
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  read_or_error([&] { one_spec(text); });
  read_or_error([&] {
    for (const std::string& item : split_spec_list(text, "fuzz")) read_or_error([&] { one_spec(item); });
  });
  return 0;
}
