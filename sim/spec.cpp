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

std::string_view kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::bytes: return "bytes";
    case ParamKind::count: return "a count";
    case ParamKind::number: return "a number";
    case ParamKind::boolean: return "true or false";
    case ParamKind::text: return "text";
  }
  return "?";
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
  for (const ParamInfo& param : declared) {
    values_.push_back({param.key, param.kind, std::string(param.default_value), {}});
  }
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
    std::string& stored = values_[index].text;
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
  for (Value& param : values_) param.typed = read(param.key, param.kind, param.text);
}

Params::Typed Params::read(std::string_view key, ParamKind kind, std::string_view text) const {
  const auto bad_value = [&](std::string_view expected) {
    throw Error(owner_ + ": " + std::string(key) + "=" + std::string(text) + " is not " + std::string(expected));
  };
  switch (kind) {
    case ParamKind::bytes:
      try {
        return parse_bytes(text);
      } catch (const Error& error) {
        throw Error(owner_ + ": " + std::string(key) + ": " + error.what());
      }
    case ParamKind::count:
      return parse_unsigned(text, owner_ + ": " + std::string(key) + "=" + std::string(text));
    case ParamKind::number: {
      double out = 0;
      const auto [end, ec] = double_from_chars(text.data(), text.data() + text.size(), out);
      if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || !std::isfinite(out)) {
        bad_value("a number");
      }
      return out;
    }
    case ParamKind::boolean: {
      // Python's True and False too (expandable_segments:True).
      std::string value(text);
      for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
      if (value == "false" || value == "0" || value == "no" || value == "off") return false;
      bad_value("true or false");
      break;
    }
    case ParamKind::text:
      break;
  }
  return std::monostate{};
}

const Params::Value& Params::value(std::string_view key) const {
  for (const Value& param : values_) {
    if (param.key == key) return param;
  }
  throw Error(owner_ + ": parameter '" + std::string(key) + "' is read but was never declared");
}

Params::Typed Params::typed(std::string_view key, ParamKind kind) const {
  const Value& param = value(key);
  if (param.kind == kind) return param.typed;
  if (param.kind == ParamKind::text) return read(key, kind, param.text);  // a word or a size: the word was read first
  throw Error(owner_ + ": parameter '" + std::string(key) + "' is declared " + std::string(kind_name(param.kind)) +
              " but read as " + std::string(kind_name(kind)));
}

std::string_view Params::text(std::string_view key) const { return value(key).text; }

Params Params::with(const std::vector<std::pair<std::string, std::string>>& values) const {
  Params changed = *this;
  for (const auto& entry : values) {
    const std::string& key = entry.first;  // named, not bound: clang 14 (the fuzz and wasm builds) captures no bindings
    const auto found = std::find_if(changed.values_.begin(), changed.values_.end(),
                                    [&](const Value& declared) { return declared.key == key; });
    if (found == changed.values_.end()) throw Error(owner_ + ": unknown key '" + key + "'");
    found->text = entry.second;
    found->typed = read(found->key, found->kind, found->text);
  }
  return changed;
}

Bytes Params::bytes(std::string_view key) const { return std::get<std::uint64_t>(typed(key, ParamKind::bytes)); }

std::uint64_t Params::count(std::string_view key) const {
  return std::get<std::uint64_t>(typed(key, ParamKind::count));
}

double Params::number(std::string_view key) const { return std::get<double>(typed(key, ParamKind::number)); }

bool Params::boolean(std::string_view key) const { return std::get<bool>(typed(key, ParamKind::boolean)); }

}  // namespace allocsim
