// The one exception type for bad input and misuse. Expected outcomes (an OOM) are
// values, never exceptions; `main` prints an Error as one line and exits 2.
#pragma once

#include <stdexcept>
#include <string>

namespace allocsim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace allocsim
