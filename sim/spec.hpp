// Spec strings, the way users name a policy or a workload: `name:key=value,key=value`.
// Parameters are declared once, where they are used, with a default and a help line;
// an unknown key is an error that lists the valid ones.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sim/units.hpp"

namespace allocsim {

// What a parameter's value is, read once when a spec's Params are made. A key whose value
// may be a word or a size ("auto", "half", "none") is text: its settings function reads the
// word, and else the size or count, by the getter of that kind.
enum class ParamKind { bytes, count, number, boolean, text };

struct ParamInfo {
  std::string_view key;
  ParamKind kind;
  std::string_view default_value;  // as the user would type it: "256", "2MiB", "true"
  std::string_view help;
  // The framework's own spelling of the key, accepted as well ("max_split_size_mb"), and
  // the unit a bare number in that spelling means ("MiB": max_split_size_mb=128 is 128 MiB).
  std::string_view native = "";
  std::string_view native_unit = "";
};

struct Spec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args;  // in the order written

  friend bool operator==(const Spec&, const Spec&) = default;
};

// Commas inside [...] belong to the value. Throws Error on an empty name, an argument
// without '=', or an empty key.
Spec parse_spec(std::string_view text);

// A comma-separated list of specs, split the way parse_spec reads one: commas inside
// [...] belong to the value, and an item that is key=value (its first '=' before any ':')
// continues the spec before it. `bfc:growth=true,limit=4GiB,caching` is two specs;
// `caching:conf=max_split_size_mb:128,roundup_power2_divisions=[256:1,>:4],bfc` is two.
// Items are trimmed of spaces; Error naming `what` on an empty one.
std::vector<std::string> split_spec_list(std::string_view text, std::string_view what);

// The inverse of parse_spec: `name` alone, or `name:key=value,...` in the order of args.
// Contract: parse_spec(to_string(s)) == s for every s with a non-empty name and keys, and
// to_string(parse_spec(t)) == t for every t that parses (a trailing ':' aside).
std::string to_string(const Spec& spec);

// Sets `key` to `value` where the spec has it (spelled `key`, or `native` when that is not
// empty: the framework's spelling, which the new value replaces), else appends it.
void set_arg(Spec& spec, std::string_view key, std::string value, std::string_view native = "");

// A spec's arguments checked against declared parameters, each value (the default or the
// given one) read once by its kind. `owner` names the thing in messages ("policy bestfit").
// Contract: an unknown key, a key given twice (in either spelling), and a value that is not
// of its key's kind are errors when the Params are made. A getter returns the value read;
// asking a key for a kind it was not declared as is an Error (a program's mistake), except
// that a text key may be read as any kind, parsed then (after its settings read the word).
class Params {
 public:
  Params() = default;  // none declared: a value to assign a read one to
  Params(const Spec& spec, std::span<const ParamInfo> declared, std::string owner);

  std::string_view text(std::string_view key) const;  // as written, whatever the kind
  Bytes bytes(std::string_view key) const;           // "2MiB", "4096"
  std::uint64_t count(std::string_view key) const;   // a non-negative integer
  double number(std::string_view key) const;         // a finite real
  bool boolean(std::string_view key) const;          // true/false, 1/0, yes/no, on/off
  const std::string& owner() const { return owner_; }  // "policy bestfit"
  // A copy with these values (declared key, value as the key spells it) in place of the given,
  // each read by its key's kind.
  Params with(const std::vector<std::pair<std::string, std::string>>& values) const;

 private:
  using Typed = std::variant<std::monostate, std::uint64_t, double, bool>;  // text; bytes or count; number; boolean
  struct Value {
    std::string_view key;
    ParamKind kind;
    std::string text;  // as written (a native spelling's number with its unit)
    Typed typed;
  };

  Typed read(std::string_view key, ParamKind kind, std::string_view text) const;
  const Value& value(std::string_view key) const;
  Typed typed(std::string_view key, ParamKind kind) const;

  std::string owner_;
  std::vector<Value> values_;  // every declared key, in declared order
};

// "alignment=256, region=0" style listing, for help texts and error messages.
std::string list_keys(std::span<const ParamInfo> declared);

}  // namespace allocsim
