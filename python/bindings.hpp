// The pieces of the module allocsim._core, one file each; module.cpp calls them in order.
// The module is thin: every function here calls the libraries (engine, registry,
// catalogue, studies) or a command, and turns their values into Python ones.
#pragma once

#include <pybind11/pybind11.h>

namespace allocsim::python {

void bind_trace(pybind11::module_& module);       // trace_binding.cpp: Trace, load, from_arrays
void bind_policy(pybind11::module_& module);      // python_policy.cpp: Request, Block, Segment, Device
void bind_run(pybind11::module_& module);         // run_binding.cpp: run, replay, replay_check, Run
void bind_catalogues(pybind11::module_& module);  // catalogue_binding.cpp: policies, workloads, devices, explain
void bind_studies(pybind11::module_& module);     // study_binding.cpp: sweep, maxbatch, advise, compare
void bind_capture(pybind11::module_& module);     // capture_binding.cpp: what allocsim.capture() builds and asks

}  // namespace allocsim::python
