// Policies written in Python (allocsim.Policy subclasses) run by the C++ engine: an adapter
// that is a C++ Policy calling the Python object, and checks each block it returns against
// the policy contract (sim/policy.hpp) before the engine sees it.
#pragma once

#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "sim/device.hpp"
#include "sim/made_policy.hpp"
#include "sim/trace.hpp"

namespace allocsim::python {

// The Python policy `policy` (an allocsim.Policy subclass, called with no arguments to make
// an instance, or an instance, used once) on `device`, named `name` in results. `trace`,
// when given, lets an error name the event a call served. Needs the GIL for the whole run.
MadePolicy make_python_policy(const pybind11::object& policy, Device& device, const std::string& name,
                              std::shared_ptr<const Trace> trace);

}  // namespace allocsim::python
