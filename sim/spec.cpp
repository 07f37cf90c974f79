#include "sim/spec.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>

#include "sim/error.hpp"
#include "sim/float_chars.hpp"

namespace allocsim {

namespace {

// A value may hold a bracketed list ("[256:1,>:4]") whose commas are its own.
std::size_t next_comma_outside_brackets(std::string_view text) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && depth > 0) --depth;
    if (text[i] == ',' && depth == 0) return i;
  }
  return std::string_view::npos;
}

std::string_view trim_spaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

}  // namespace

std::vector<std::string> split_spec_list(std::string_view text, std::string_view what) {
  std::vector<std::string> items;
  std::string_view rest = text;
  while (true) {
    const auto comma = next_comma_outside_brackets(rest);
    const std::string_view item = trim_spaces(rest.substr(0, comma));
    if (item.empty()) throw Error(std::string(what) + ": empty item in '" + std::string(text) + "'");
    const auto equals = item.find('=');
    const bool continues = equals != std::string_view::npos && equals < item.find(':');
    if (continues && !items.empty()) {
      items.back().append(",").append(item);
    } else {
      items.emplace_back(item);
    }
    if (comma == std::string_view::npos) return items;
    rest.remove_prefix(comma + 1);
  }
}

Spec parse_spec(std::string_view text) {
  Spec spec;
  const auto colon = text.find(':');
  spec.name = std::string(text.substr(0, colon));
  if (spec.name.empty()) throw Error("bad spec '" + std::string(text) + "': no name before ':'");
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  if (rest.empty()) return spec;  // "direct:" is "direct"
  while (true) {  // every item after a comma too: "bfc:growth=true," has an empty one
    const auto comma = next_comma_outside_brackets(rest);
    const std::string_view item = rest.substr(0, comma);
    const auto equals = item.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      throw Error("bad spec '" + std::string(text) + "': '" + std::string(item) + "' is not key=value");
    }
    spec.args.emplace_back(std::string(item.substr(0, equals)), std::string(item.substr(equals + 1)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

std::string to_string(const Spec& spec) {
  std::string text = spec.name;
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    text += i == 0 ? ':' : ',';
    text += spec.args[i].first;
    text += '=';
    text += spec.args[i].second;
  }
  return text;
}

void set_arg(Spec& spec, std::string_view key, std::string value, std::string_view native) {
  const auto names_key = [&](const auto& arg) { return arg.first == key || (!native.empty() && arg.first == native); };
  const auto found = std::find_if(spec.args.begin(), spec.args.end(), names_key);
  if (found != spec.args.end()) {
    *found = {std::string(key), std::move(value)};
  } else {
    spec.args.emplace_back(std::string(key), std::move(value));
  }
}

std::string list_keys(std::span<const ParamInfo> declared) {
  if (declared.empty()) return "(none)";
  std::string out;
  for (const ParamInfo& param : declared) {
    if (!out.empty()) out += ", ";
    out += std::string(param.key) + "=" + std::string(param.default_value);
  }
  return out;
}

Params::Params(const Spec& spec, std::span<const ParamInfo> declared, std::string owner)
    : owner_(std::move(owner)) {
  for (const ParamInfo& param : declared) values_.emplace_back(param.key, std::string(param.default_value));
  std::vector<std::string> given(declared.size());  // as written, for the message on a repeat
  for (const auto& arg : spec.args) {
    const std::string& key = arg.first;  // named, not bound: clang 14 (the fuzz build) captures no bindings
    const std::string& value = arg.second;
    const auto found = std::find_if(declared.begin(), declared.end(), [&](const ParamInfo& param) {
      return param.key == key || (!param.native.empty() && param.native == key);
    });
    if (found == declared.end()) {
      throw Error(owner_ + ": unknown key '" + key + "'; valid keys: " + list_keys(declared));
    }
    const auto index = static_cast<std::size_t>(found - declared.begin());
    const std::string written = key + "=" + value;
    if (!given[index].empty()) {
      throw Error(owner_ + ": " + std::string(found->key) + " is given twice (" + given[index] + " and " + written + ")");
    }
    given[index] = written;
    std::string& stored = values_[index].second;
    stored = value;
    if (key != found->key && !found->native_unit.empty()) {
      // The native spelling counts in its unit: a plain number, as the framework takes it.
      const bool plain = !value.empty() && value.find_first_not_of("0123456789.") == std::string::npos;
      if (!plain) {
        throw Error(owner_ + ": " + written + " is not a number of " + std::string(found->native_unit) + " (" + key +
                    " counts in " + std::string(found->native_unit) + "; or write " + std::string(found->key) + "=" +
                    value + ")");
      }
      stored += found->native_unit;
    }
  }
}

std::string_view Params::text(std::string_view key) const {
  for (const auto& [name, value] : values_) {
    if (name == key) return value;
  }
  throw Error(owner_ + ": parameter '" + std::string(key) + "' is read but was never declared");
}

Params Params::with(const std::vector<std::pair<std::string, std::string>>& values) const {
  Params changed = *this;
  for (const auto& entry : values) {
    const std::string& key = entry.first;  // named, not bound: clang 14 (the fuzz and wasm builds) captures no bindings
    const auto found = std::find_if(changed.values_.begin(), changed.values_.end(),
                                    [&](const auto& declared) { return declared.first == key; });
    if (found == changed.values_.end()) throw Error(owner_ + ": unknown key '" + key + "'");
    found->second = entry.second;
  }
  return changed;
}

void Params::bad_value(std::string_view key, std::string_view expected) const {
  throw Error(owner_ + ": " + std::string(key) + "=" + std::string(text(key)) + " is not " +
              std::string(expected));
}

Bytes Params::bytes(std::string_view key) const {
  try {
    return parse_bytes(text(key));
  } catch (const Error& error) {
    throw Error(owner_ + ": " + std::string(key) + ": " + error.what());
  }
}

std::uint64_t Params::count(std::string_view key) const {
  return parse_unsigned(text(key), owner_ + ": " + std::string(key) + "=" + std::string(text(key)));
}

double Params::number(std::string_view key) const {
  const std::string_view value = text(key);
  double out = 0;
  const auto [end, ec] = double_from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc{} || end != value.data() + value.size() || value.empty() || !std::isfinite(out)) {
    bad_value(key, "a number");
  }
  return out;
}

bool Params::boolean(std::string_view key) const {
  // Python's True and False too (expandable_segments:True).
  std::string value(text(key));
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  bad_value(key, "true or false");
}

}  // namespace allocsim
