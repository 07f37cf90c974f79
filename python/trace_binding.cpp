// allocsim.Trace: a trace held in memory, from a file or spec (the catalogue), from arrays
// (TraceBuilder, which validates every event), written through the catalogue's writers.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/bindings.hpp"
#include "sim/error.hpp"
#include "sim/trace.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/trace_summary.hpp"

namespace py = pybind11;

namespace allocsim::python {
namespace {

template <typename T>
using Column = py::array_t<T, py::array::c_style | py::array::forcecast>;

// Arrays of equal length (the Python layer checked them and named the argument); `op` as
// codes 0 alloc, 1 free, 2 release. User ids may be any integers, reused after their free.
std::shared_ptr<Trace> trace_from_arrays(const Column<std::uint64_t>& time, const Column<std::uint8_t>& op,
                                         const Column<std::int64_t>& id, const Column<std::uint64_t>& bytes,
                                         const Column<std::uint16_t>& stream, const Column<std::uint8_t>& tag,
                                         const std::string& name) {
  const auto t = time.unchecked<1>();
  const auto o = op.unchecked<1>();
  const auto i = id.unchecked<1>();
  const auto b = bytes.unchecked<1>();
  const auto s = stream.unchecked<1>();
  const auto g = tag.unchecked<1>();
  TraceBuilder builder(TraceInfo(name, "arrays"));
  builder.reserve(static_cast<std::size_t>(t.shape(0)));
  std::unordered_map<std::int64_t, AllocId> live;
  for (py::ssize_t n = 0; n < t.shape(0); ++n) {
    const std::string at = "event " + std::to_string(n) + ": ";
    try {
      switch (o(n)) {
        case 0: {
          if (g(n) >= kTagCount) throw Error("tag code " + std::to_string(g(n)) + " is not a tag");
          if (live.contains(i(n))) throw Error("alloc of id " + std::to_string(i(n)) + ", which is live");
          live.emplace(i(n), builder.alloc(t(n), b(n), s(n), static_cast<Tag>(g(n))));
          break;
        }
        case 1: {
          const auto found = live.find(i(n));
          if (found == live.end()) throw Error("free of id " + std::to_string(i(n)) + ", which is not live");
          const Bytes allocated = builder.bytes_of(found->second);
          if (b(n) != 0 && b(n) != allocated) {
            throw Error("free of id " + std::to_string(i(n)) + " says " + std::to_string(b(n)) +
                        " bytes, its alloc " + std::to_string(allocated) + " (0 takes the alloc's)");
          }
          builder.free(t(n), found->second);
          live.erase(found);
          break;
        }
        case 2: builder.release(t(n)); break;
        default: throw Error("op code " + std::to_string(o(n)) + " (0 alloc, 1 free, 2 release)");
      }
    } catch (const Error& error) {
      const std::string what = error.what();
      throw Error(what.starts_with("event ") ? what : at + what);
    }
  }
  return std::make_shared<Trace>(std::move(builder).finish());
}

// Columns of the events: what from_arrays takes, so that to_arrays -> from_arrays is the same trace.
py::dict trace_to_arrays(const Trace& trace) {
  const auto n = static_cast<py::ssize_t>(trace.events.size());
  Column<std::uint64_t> time(n), bytes(n);
  Column<std::uint8_t> op(n), tag(n);
  Column<std::int64_t> id(n);
  Column<std::uint16_t> stream(n);
  auto t = time.mutable_unchecked<1>();
  auto b = bytes.mutable_unchecked<1>();
  auto o = op.mutable_unchecked<1>();
  auto g = tag.mutable_unchecked<1>();
  auto i = id.mutable_unchecked<1>();
  auto s = stream.mutable_unchecked<1>();
  for (py::ssize_t k = 0; k < n; ++k) {
    const Event& event = trace.events[static_cast<std::size_t>(k)];
    const bool names_allocation = event.op == Op::alloc || event.op == Op::free;
    t(k) = event.time;
    o(k) = static_cast<std::uint8_t>(event.op);
    i(k) = names_allocation ? static_cast<std::int64_t>(index_of(event.id)) : -1;
    b(k) = names_allocation ? trace.bytes_of(event.id) : 0;
    s(k) = event.stream;
    g(k) = static_cast<std::uint8_t>(event.tag);
  }
  py::dict columns;
  columns["time_ns"] = time;
  columns["op"] = op;
  columns["id"] = id;
  columns["bytes"] = bytes;
  columns["stream"] = stream;
  columns["tag"] = tag;
  return columns;
}

py::dict trace_info(const Trace& trace) {
  const TraceSummary summary = summarize(trace);
  py::dict info;
  info["name"] = trace.info.name;
  info["source"] = trace.info.source;
  info["events"] = summary.events;
  info["allocations"] = summary.allocations;
  info["frees"] = summary.frees;
  info["releases"] = summary.releases;
  info["syncs"] = summary.syncs;
  info["live_at_end"] = summary.live_at_end;
  info["live_bytes_at_end"] = summary.live_bytes_at_end;
  info["first_time_ns"] = summary.first_time;
  info["last_time_ns"] = summary.last_time;
  info["live_lower_bound_bytes"] = summary.live_lower_bound;
  info["lower_bound_event"] = summary.lower_bound_event;
  info["largest_allocation_bytes"] = summary.largest_allocation;
  info["steps"] = summary.steps;
  info["layers"] = summary.layers;
  py::dict tags;
  for (int k = 0; k < kTagCount; ++k) {
    const RequestCount& count = summary.tags[static_cast<std::size_t>(k)];
    if (count.allocations == 0) continue;
    tags[py::str(std::string(name_of(static_cast<Tag>(k))))] = py::make_tuple(count.allocations, count.bytes);
  }
  info["tags"] = tags;
  py::dict streams;
  for (const auto& [stream, count] : summary.streams) streams[py::int_(stream)] = py::make_tuple(count.allocations, count.bytes);
  info["streams"] = streams;
  return info;
}

}  // namespace

void bind_trace(py::module_& module) {
  py::class_<Trace, std::shared_ptr<Trace>>(module, "Trace")
      .def_static("_from_arrays", &trace_from_arrays)
      .def("_to_arrays", &trace_to_arrays)
      .def("_info", &trace_info)
      .def("__len__", [](const Trace& trace) { return trace.events.size(); })
      .def_property_readonly("name", [](const Trace& trace) { return trace.info.name; })
      .def("_save", [](const Trace& trace, const std::string& path) {
        const WriterInfo& writer = find_writer(path);
        py::gil_scoped_release unlocked;
        writer.write(trace, path);
      });
  module.def("_load", [](const std::string& spec, std::optional<int> cuda_device) {
    LoadOptions options;
    options.cuda_device = cuda_device;
    py::gil_scoped_release unlocked;
    return std::make_shared<Trace>(load_workload(spec, options));
  });
  module.def("_tag_names", [] {
    py::list names;
    for (int k = 0; k < kTagCount; ++k) names.append(std::string(name_of(static_cast<Tag>(k))));
    return names;
  });
}

}  // namespace allocsim::python
