#include "workloads/python_repr.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace allocsim {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string hex_escape(unsigned value, int digits, char kind) {
  std::string out = {'\\', kind};
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 15];
  return out;
}

// Appends `text` escaped as repr does inside quotes (`quote` escaped too when not 0).
void escape(std::string_view text, char quote, std::string& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += hex_escape(c, 2, 'x');
    } else if (quote != 0 && (c == '\\' || c == static_cast<unsigned char>(quote))) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      out += hex_escape(static_cast<unsigned char>(text[++i]), 2, 'x');  // C1 control, U+0080..U+009F
    } else if (c == 0xed && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0xa0) {
      const unsigned point = 0xd000u | ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) |
                             (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
      out += hex_escape(point, 4, 'u');  // a lone surrogate
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
}

void repr(const nlohmann::json& value, std::size_t limit, std::string& out) {
  if (out.size() > limit) return;
  switch (value.type()) {
    case nlohmann::json::value_t::null: out += "None"; return;
    case nlohmann::json::value_t::boolean: out += value.get<bool>() ? "True" : "False"; return;
    case nlohmann::json::value_t::number_integer: out += std::to_string(value.get<std::int64_t>()); return;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(value.get<std::uint64_t>()); return;
    case nlohmann::json::value_t::number_float: out += python_float(value.get<double>()); return;
    case nlohmann::json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      const char quote = text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
      out += quote;
      escape(text, quote, out);
      out += quote;
      return;
    }
    case nlohmann::json::value_t::binary: {
      out += "b'";
      for (const std::uint8_t byte : value.get_binary()) {
        if (byte >= 0x20 && byte < 0x7f && byte != '\\' && byte != '\'') {
          out += static_cast<char>(byte);
        } else {
          out += hex_escape(byte, 2, 'x');
        }
      }
      out += '\'';
      return;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (out.size() > limit) return;
        if (!first) out += ", ";
        first = false;
        repr(item, limit, out);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (out.size() > limit) return;
        if (!first) out += ", ";
        first = false;
        repr(nlohmann::json(key), limit, out);
        out += ": ";
        repr(item, limit, out);
      }
      out += '}';
      return;
    }
    case nlohmann::json::value_t::discarded: return;
  }
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  escape(text, 0, out);
  return out;
}

std::string python_repr(const nlohmann::json& value, std::size_t limit) {
  std::string out;
  repr(value, limit, out);
  return out;
}

std::string python_str(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : python_repr(value);
}

std::string shown(const nlohmann::json& value, std::size_t limit) {
  const std::string text = printable(python_repr(value, 4 * limit + 16));
  std::size_t characters = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) continue;  // a UTF-8 continuation byte
    if (characters++ == limit) return text.substr(0, i) + "...";
  }
  return text;
}

std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // The shortest digits that read back as the same double, as repr picks them.
  char buffer[40];
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*e", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  const std::string scientific = buffer;
  const std::size_t e = scientific.find('e');
  const bool negative = scientific[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (scientific[i] != '.') digits += scientific[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exponent = std::atoi(scientific.c_str() + e + 1);
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {  // fixed notation, as repr uses from 1e-4 to 1e16
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<std::size_t>(exponent) + 1 >= digits.size()) {
      out += digits;
      out.append(static_cast<std::size_t>(exponent) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(exponent) + 1);
      out += '.';
      out += digits.substr(static_cast<std::size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  const int magnitude = exponent < 0 ? -exponent : exponent;
  out += exponent < 0 ? "e-" : "e+";
  if (magnitude < 10) out += '0';
  out += std::to_string(magnitude);
  return out;
}

}  // namespace allocsim
