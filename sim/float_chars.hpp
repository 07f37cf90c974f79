// Doubles to and from text exactly as std::to_chars (shortest round trip) and
// std::from_chars do, in every build. LLVM 14's libc++, the one emscripten's wasm build
// uses, has only their integer overloads; where the library has the double ones these
// are them, elsewhere the portable versions below, which the tests hold to the std ones.
#pragma once

#include <charconv>
#include <string>

namespace allocsim {

// std::from_chars(first, last, value) for a double in the general format: no leading
// space or '+', "0x..." read as its "0", value left as it was on an error.
std::from_chars_result double_from_chars(const char* first, const char* last, double& value);

// std::to_chars(first, last, value) without a format: the shortest text that reads back
// as `value`, fixed or scientific, whichever is shorter (fixed on a tie).
std::string double_to_shortest(double value);

namespace portable {
// The same two, built from strtod and snprintf (the C locale: allocsim never sets another).
std::from_chars_result double_from_chars(const char* first, const char* last, double& value);
std::string double_to_shortest(double value);
}  // namespace portable

}  // namespace allocsim
