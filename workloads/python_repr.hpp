// Values from a pickle shown in messages as Python shows them, so that an error names a
// stranger's value the way the user's own Python would print it, on one printable line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace allocsim {

// The text as one printable line: control characters (a NUL byte, a newline, C1 codes)
// and lone surrogates are escaped as Python's repr escapes them.
std::string printable(std::string_view text);

// repr(value): strings quoted, None, True, floats in their shortest form; arrays as lists.
// Stops soon after `limit` characters (what is cut is never shown).
std::string python_repr(const nlohmann::json& value, std::size_t limit = 1 << 20);

// str(value): a string as it is, anything else as its repr.
std::string python_str(const nlohmann::json& value);

// A value for a message: printable(repr(value)), cut at `limit` characters with "...".
std::string shown(const nlohmann::json& value, std::size_t limit = 80);

// Python's float repr: "0.5", "1e-05", "1e+16", "123.0", "inf", "nan".
std::string python_float(double value);

}  // namespace allocsim
