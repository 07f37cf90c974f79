#include "python/python_policy.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "python/bindings.hpp"
#include "sim/error.hpp"
#include "sim/policy.hpp"
#include "sim/units.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace allocsim::python {
namespace {

// allocsim.PolicyError (a RuntimeError): a Python policy raised, or broke the contract.
py::handle policy_error;

// [addr, addr + bytes) inside one range of `ranges` (address -> bytes, none overlapping).
bool inside(const std::map<Addr, Bytes>& ranges, Addr addr, Bytes bytes) {
  auto after = ranges.upper_bound(addr);
  if (after == ranges.begin()) return false;
  const auto& [base, size] = *std::prev(after);
  return addr + bytes >= addr && addr + bytes <= base + size;
}

// The device as a Python policy sees it: every call passes through to the run's device,
// and what the policy holds is kept, so that blocks are checked against it and whatever the
// policy still holds at the end goes back (the Policy contract's destructor).
class PolicyDevice {
 public:
  explicit PolicyDevice(Device& device) : device_(&device) {}

  std::optional<Segment> malloc(Bytes bytes) {
    if (bytes == 0) throw Error("malloc of 0 bytes: a segment has at least one byte");
    const std::optional<Segment> segment = live().malloc(bytes);
    if (segment) {
      segments_.emplace(segment->addr, segment->bytes);
      reserved_ += segment->bytes;
    }
    return segment;
  }
  void free(const Segment& segment) {
    const auto found = segments_.find(segment.addr);
    if (found == segments_.end() || found->second != segment.bytes) {
      throw Error("free of " + describe(segment) + ", which is no segment this policy holds from malloc");
    }
    live().free(segment);
    segments_.erase(found);
    reserved_ -= segment.bytes;
  }
  Addr reserve_addresses(Bytes bytes) {
    const Addr at = live().reserve_addresses(bytes);
    ranges_.emplace(at, bytes);
    return at;
  }
  void release_addresses(Addr at, Bytes bytes) {
    const auto found = ranges_.find(at);
    if (found == ranges_.end() || found->second != bytes) throw Error("release_addresses of a range never reserved");
    live().release_addresses(at, bytes);
    ranges_.erase(found);
  }
  std::optional<Segment> create_physical(Bytes bytes) {
    const std::optional<Segment> physical = live().create_physical(bytes);
    if (physical) {
      physical_.emplace(physical->addr, physical->bytes);
      reserved_ += physical->bytes;
    }
    return physical;
  }
  void release_physical(const Segment& physical) {
    const auto found = physical_.find(physical.addr);
    if (found == physical_.end() || found->second != physical.bytes) {
      throw Error("release_physical of " + describe(physical) + ", which create_physical did not make");
    }
    live().release_physical(physical);
    physical_.erase(found);
    reserved_ -= physical.bytes;
  }
  void map(Addr at, const std::vector<Segment>& pages) {
    const Bytes bytes = total_bytes(pages);
    if (!inside(ranges_, at, bytes)) throw Error("map at " + format_address(at) + ": outside every reserved range");
    live().map(at, pages);
    mapped_.emplace(at, bytes);
  }
  void unmap(Addr at, Bytes bytes) {
    live().unmap(at, bytes);
    // Whole mappings covering [at, at + bytes) go, as cuMemUnmap takes them.
    for (auto it = mapped_.lower_bound(at); it != mapped_.end() && it->first < at + bytes;) it = mapped_.erase(it);
  }

  Device& live() const {
    if (device_ == nullptr) throw Error("this device belongs to a run that has ended");
    return *device_;
  }
  Bytes reserved() const { return reserved_; }
  // Where a block may lie: a malloc'd segment, or a mapped piece of a reserved range.
  bool covers(Addr addr, Bytes bytes) const {
    if (inside(segments_, addr, bytes)) return true;
    // Mappings placed one after another make one readable range.
    auto after = mapped_.upper_bound(addr);
    if (after == mapped_.begin()) return false;
    auto piece = std::prev(after);
    Addr end = piece->first + piece->second;
    if (addr >= end) return false;
    while (end < addr + bytes) {
      const auto next = mapped_.find(end);
      if (next == mapped_.end()) return false;
      end += next->second;
    }
    return true;
  }
  // What the policy left behind, given back; then every call refuses.
  void give_back_and_detach() {
    if (device_ != nullptr) {
      for (const auto& [at, bytes] : mapped_) device_->unmap(at, bytes);
      for (const auto& [addr, bytes] : physical_) device_->release_physical(Segment{addr, bytes});
      for (const auto& [at, bytes] : ranges_) device_->release_addresses(at, bytes);
      for (const auto& [addr, bytes] : segments_) device_->free(Segment{addr, bytes});
    }
    mapped_.clear();
    physical_.clear();
    ranges_.clear();
    segments_.clear();
    reserved_ = 0;
    device_ = nullptr;
  }

 private:
  static std::string describe(const Segment& segment) {
    return "the segment at " + format_address(segment.addr) + " of " + std::to_string(segment.bytes) + " bytes";
  }

  Device* device_;
  std::map<Addr, Bytes> segments_;  // from malloc
  std::map<Addr, Bytes> physical_;  // from create_physical, by handle
  std::map<Addr, Bytes> ranges_;    // from reserve_addresses
  std::map<Addr, Bytes> mapped_;    // one entry per map call
  Bytes reserved_ = 0;
};

class PythonPolicy final : public Policy {
 public:
  PythonPolicy(py::object instance, std::shared_ptr<PolicyDevice> device, std::string name,
               std::shared_ptr<const Trace> trace)
      : instance_(std::move(instance)),
        allocate_(instance_.attr("allocate")),
        deallocate_(instance_.attr("deallocate")),
        device_(std::move(device)),
        name_(std::move(name)),
        trace_(std::move(trace)) {}

  // Each call takes the GIL: a compare or sweep from Python runs its policies without it,
  // on its own threads (python/study_binding.cpp); in allocsim.run it is held already.
  ~PythonPolicy() override {
    const py::gil_scoped_acquire locked;
    device_->give_back_and_detach();
    instance_.attr("device") = py::none();
    allocate_ = py::object();  // the references dropped while the GIL is held
    deallocate_ = py::object();
    instance_ = py::object();
  }

  // Without a trace given (a command's run), an error asks the engine for it.
  void prepare(const ReplaySetup& setup) override {
    if (!trace_) whole_trace_ = setup.whole_trace;
  }

  Allocation allocate(const Request& request) override {
    const py::gil_scoped_acquire locked;
    py::object result;
    try {
      result = allocate_(request);
    } catch (py::error_already_set& error) {
      rethrow(error, "allocate", request.id, request.bytes);
    }
    if (result.is_none()) return std::nullopt;
    if (!py::isinstance<Block>(result)) {
      fail("allocate", request.id, request.bytes,
           "returned " + std::string(py::str(py::type::of(result).attr("__name__"))) +
               ", not an allocsim.Block or None");
    }
    const Block block = result.cast<Block>();
    const auto refuse = [&](const std::string& why) { fail("allocate", request.id, request.bytes, "the block " + describe(block) + " " + why); };
    if (block.id != request.id) refuse("was built for another request (allocation " + std::to_string(index_of(block.id)) + ")");
    if (block.size < request.bytes) refuse("is smaller than the " + std::to_string(request.bytes) + " bytes asked for");
    if (block.addr % kBlockAlignment != 0) refuse("is not aligned to " + std::to_string(kBlockAlignment) + " bytes");
    if (!device_->covers(block.addr, block.size)) refuse("lies outside every segment the policy holds from its device");
    if (block.size > 0) {
      const auto next = live_.lower_bound(block.addr);
      if (next != live_.end() && next->first < block.addr + block.size) refuse("overlaps the live block at " + format_address(next->first));
      if (next != live_.begin()) {
        const auto before = std::prev(next);
        if (before->first + before->second > block.addr) refuse("overlaps the live block at " + format_address(before->first));
      }
      live_.emplace(block.addr, block.size);
    }
    allocated_ += block.size;
    return block;
  }

  void deallocate(const Block& block, Nanos) override {
    const py::gil_scoped_acquire locked;
    if (block.size > 0) live_.erase(block.addr);
    allocated_ -= block.size;
    try {
      deallocate_(block);
    } catch (py::error_already_set& error) {
      rethrow(error, "deallocate", block.id, block.requested);
    }
  }

  PolicyStats stats() const override {
    PolicyStats stats;
    stats.allocated = allocated_;
    stats.reserved = device_->reserved();
    if (!has_stats_) return stats;
    const py::gil_scoped_acquire locked;
    py::object own;
    try {
      own = instance_.attr("stats")();
    } catch (py::error_already_set& error) {
      if (!error.matches(PyExc_Exception)) throw;
      py::raise_from(error, policy_error.ptr(), ("policy " + name_ + ": stats() raised").c_str());
      throw py::error_already_set();
    }
    if (own.is_none()) {
      has_stats_ = false;
      return stats;
    }
    const py::dict figures = own.cast<py::dict>();
    const auto take = [&](const char* key, Bytes& into) {
      if (figures.contains(key)) into = figures[key].cast<Bytes>();
    };
    take("largest_free", stats.largest_free);
    take("limit", stats.limit);
    return stats;
  }

  void release_cached() override {
    const py::gil_scoped_acquire locked;
    try {
      instance_.attr("release_cached")();
    } catch (py::error_already_set& error) {
      if (!error.matches(PyExc_Exception)) throw;
      py::raise_from(error, policy_error.ptr(), ("policy " + name_ + ": release_cached() raised").c_str());
      throw py::error_already_set();
    }
  }

 private:
  static std::string describe(const Block& block) {
    return "[" + format_address(block.addr) + ", +" + std::to_string(block.size) + " bytes)";
  }

  // "event 17 (alloc of allocation 5, 1024 bytes)": the trace's event a call served.
  std::string event_of(std::string_view call, AllocId id, Bytes bytes) const {
    const Op op = call == "allocate" ? Op::alloc : Op::free;
    std::string where;
    const Trace* trace = trace_ ? trace_.get() : whole_trace_ ? whole_trace_() : nullptr;
    if (trace) {
      for (std::size_t n = 0; n < trace->events.size(); ++n) {
        const Event& event = trace->events[n];
        if (event.op == op && event.id == id) {
          where = "event " + std::to_string(n) + " (";
          break;
        }
      }
    }
    where += where.empty() ? "(" : "";
    return where + (op == Op::alloc ? "alloc" : "free") + " of allocation " + std::to_string(index_of(id)) + ", " +
           std::to_string(bytes) + " bytes)";
  }

  [[noreturn]] void fail(std::string_view call, AllocId id, Bytes bytes, const std::string& what) const {
    const std::string message = "policy " + name_ + ", " + std::string(call) + " at " + event_of(call, id, bytes) + ": " + what;
    PyErr_SetString(policy_error.ptr(), message.c_str());
    throw py::error_already_set();
  }

  // A Python exception from the policy: a PolicyError naming the event, the original as its
  // cause. KeyboardInterrupt and SystemExit pass as they are.
  [[noreturn]] void rethrow(py::error_already_set& error, std::string_view call, AllocId id, Bytes bytes) const {
    if (!error.matches(PyExc_Exception)) throw;
    const std::string message = "policy " + name_ + " raised " + std::string(py::str(error.type().attr("__name__"))) +
                                " in " + std::string(call) + " at " + event_of(call, id, bytes) + ": " +
                                std::string(py::str(error.value()));
    py::raise_from(error, policy_error.ptr(), message.c_str());
    throw py::error_already_set();
  }

  py::object instance_;
  py::object allocate_;
  py::object deallocate_;
  std::shared_ptr<PolicyDevice> device_;
  std::string name_;
  std::shared_ptr<const Trace> trace_;
  std::function<const Trace*()> whole_trace_;
  std::map<Addr, Bytes> live_;  // live blocks of more than zero bytes, by address
  Bytes allocated_ = 0;
  mutable bool has_stats_ = true;  // until stats() returns None
};

}  // namespace

MadePolicy make_python_policy(const py::object& policy, Device& device, const std::string& name,
                              std::shared_ptr<const Trace> trace) {
  py::object instance = py::isinstance<py::type>(policy) ? policy() : policy;
  auto handle = std::make_shared<PolicyDevice>(device);
  instance.attr("device") = py::cast(handle);
  return MadePolicy(std::make_unique<PythonPolicy>(std::move(instance), std::move(handle), name, std::move(trace)));
}

void bind_policy(py::module_& module) {
  policy_error = PyErr_NewException("allocsim._core.PolicyError", PyExc_RuntimeError, nullptr);
  module.attr("PolicyError") = policy_error;

  py::class_<Request>(module, "Request", "one alloc the program makes of its allocator")
      .def_property_readonly("id", [](const Request& r) { return index_of(r.id); })
      .def_readonly("bytes", &Request::bytes)
      .def_readonly("stream", &Request::stream)
      .def_readonly("now", &Request::now)
      .def("__repr__", [](const Request& r) {
        return "Request(id=" + std::to_string(index_of(r.id)) + ", bytes=" + std::to_string(r.bytes) +
               ", stream=" + std::to_string(r.stream) + ", now=" + std::to_string(r.now) + ")";
      });
  py::class_<Block>(module, "Block", "what allocate returns: `size` bytes at `addr` for `request`")
      .def(py::init([](Addr addr, Bytes size, const Request& request) {
             return Block{addr, size, request.bytes, request.id, request.stream};
           }),
           "addr"_a, "size"_a, "request"_a)
      .def_readonly("addr", &Block::addr)
      .def_readonly("size", &Block::size)
      .def_readonly("requested", &Block::requested)
      .def_property_readonly("id", [](const Block& b) { return index_of(b.id); })
      .def_readonly("stream", &Block::stream)
      .def("__repr__", [](const Block& b) {
        return "Block(addr=" + std::to_string(b.addr) + ", size=" + std::to_string(b.size) +
               ", id=" + std::to_string(index_of(b.id)) + ")";
      });
  py::class_<Segment>(module, "Segment", "memory from the device: `bytes` at `addr`")
      .def(py::init([](Addr addr, Bytes bytes) { return Segment{addr, bytes}; }), "addr"_a, "bytes"_a)
      .def_readonly("addr", &Segment::addr)
      .def_readonly("bytes", &Segment::bytes)
      .def("__eq__", [](const Segment& a, const Segment& b) { return a.addr == b.addr && a.bytes == b.bytes; })
      .def("__hash__", [](const Segment& s) { return std::hash<Addr>()(s.addr) ^ std::hash<Bytes>()(s.bytes); })
      .def("__repr__", [](const Segment& s) {
        return "Segment(addr=" + std::to_string(s.addr) + ", bytes=" + std::to_string(s.bytes) + ")";
      });
  py::class_<PolicyDevice, std::shared_ptr<PolicyDevice>>(module, "Device",
                                                          "the simulated device a Python policy allocates from")
      .def("malloc", &PolicyDevice::malloc, "bytes"_a, "cudaMalloc: a Segment, or None when it does not fit")
      .def("free", &PolicyDevice::free, "segment"_a, "cudaFree of a segment malloc returned")
      .def("reserve_addresses", &PolicyDevice::reserve_addresses, "bytes"_a, "cuMemAddressReserve")
      .def("release_addresses", &PolicyDevice::release_addresses, "at"_a, "bytes"_a, "cuMemAddressFree")
      .def("create_physical", &PolicyDevice::create_physical, "bytes"_a, "cuMemCreate: a Segment (a handle) or None")
      .def("release_physical", &PolicyDevice::release_physical, "segment"_a, "cuMemRelease")
      .def("map", &PolicyDevice::map, "at"_a, "pages"_a, "cuMemMap of the pages one after another at `at`")
      .def("unmap", &PolicyDevice::unmap, "at"_a, "bytes"_a, "cuMemUnmap")
      .def_property_readonly("capacity", [](const PolicyDevice& d) { return d.live().capacity(); })
      .def_property_readonly("used", [](const PolicyDevice& d) { return d.live().used(); })
      .def_property_readonly("available", [](const PolicyDevice& d) { return d.live().available(); })
      .def_property_readonly("granularity", [](const PolicyDevice& d) { return d.live().granularity(); })
      .def_property_readonly("reserved", &PolicyDevice::reserved, "bytes this policy holds from the device");
}

}  // namespace allocsim::python
