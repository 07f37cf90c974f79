// allocsim._core: the C++ side of `import allocsim` (python/allocsim/ is the Python side).
#include <pybind11/pybind11.h>

#include "python/bindings.hpp"
#include "sim/error.hpp"

PYBIND11_MODULE(_core, module) {
  module.doc() = "allocsim's engine, registry, catalogue and studies; use the allocsim package, not this module";
  // Bad input in the libraries is allocsim::Error: a ValueError naming the input.
  pybind11::register_exception<allocsim::Error>(module, "Error", PyExc_ValueError);
  allocsim::python::bind_trace(module);
  allocsim::python::bind_policy(module);
  allocsim::python::bind_run(module);
  allocsim::python::bind_catalogues(module);
  allocsim::python::bind_studies(module);
  allocsim::python::bind_capture(module);
}
