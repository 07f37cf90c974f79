// The device API on a GPU through the CUDA runtime. The VMM calls (cuMemCreate and
// friends) belong to the driver API: their addresses come from cudaGetDriverEntryPoint*
// at run time, so allocsim never links libcuda.so and starts on machines without a
// driver (it then says so instead of failing to load).
#include <map>
#include <set>
#include <span>

#include "real_gpu/cuda_api.hpp"
#include "real_gpu/cuda_check.hpp"

namespace allocsim {
namespace {

// The driver-API calls the VMM path needs, with the prototypes cuda.h declares.
struct DriverVmm {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
};

template <typename F>
void entry_point(const char* symbol, F& function) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  ALLOCSIM_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found));
#else
  ALLOCSIM_CUDA_CHECK(cudaGetDriverEntryPoint(symbol, &address, cudaEnableDefault, &found));
#endif
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    throw Error(std::string("the CUDA driver has no ") + symbol + " (driver too old for the VMM API)");
  }
  function = reinterpret_cast<F>(address);
}

class CudaApi final : public DeviceApi {
 public:
  explicit CudaApi(int ordinal) : ordinal_(ordinal) {
    ALLOCSIM_CUDA_CHECK(cudaSetDevice(ordinal_));
    cudaDeviceProp properties{};
    ALLOCSIM_CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal_));
    name_ = properties.name;
    compute_capability_ = properties.major * 10 + properties.minor;
    entry_point("cuGetErrorName", cuda_detail::driver_error_name);
    // The runtime has no attribute for VMM support; the driver does.
    decltype(&cuDeviceGet) device_get = nullptr;
    decltype(&cuDeviceGetAttribute) device_attribute = nullptr;
    entry_point("cuDeviceGet", device_get);
    entry_point("cuDeviceGetAttribute", device_attribute);
    CUdevice device = 0;
    ALLOCSIM_CUDA_CHECK(device_get(&device, ordinal_));
    int vmm = 0;
    ALLOCSIM_CUDA_CHECK(device_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
    vmm_supported_ = vmm != 0;
    warm_up();
  }

  ~CudaApi() override {
    // A replay gives back what it took; a throw halfway may not have: undo the rest, in
    // the driver's order (unmap, release, free the addresses). Errors are ignored here.
    for (const auto& [addr, bytes] : mappings_) vmm_.unmap(addr, bytes);
    for (const CUmemGenericAllocationHandle handle : handles_) vmm_.release(handle);
    for (const auto& [addr, bytes] : reservations_) vmm_.address_free(addr, bytes);
  }

  std::string name() const override { return name_; }
  std::string backend() const override { return "cuda"; }
  int compute_capability() const override { return compute_capability_; }

  MemInfo mem_get_info() override {
    std::size_t free = 0;
    std::size_t total = 0;
    ALLOCSIM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {free, total};
  }

  std::optional<Addr> malloc(Bytes bytes) override {
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // an OOM is an answer, not a sticky error
      return std::nullopt;
    }
    ALLOCSIM_CUDA_CHECK(status);
    return reinterpret_cast<Addr>(pointer);
  }

  void free(Addr addr) override { ALLOCSIM_CUDA_CHECK(cudaFree(reinterpret_cast<void*>(addr))); }

  void touch(Addr addr, Bytes bytes) override {
    ALLOCSIM_CUDA_CHECK(cudaMemset(reinterpret_cast<void*>(addr), 0xA5, bytes));
  }

  void copy(Addr dst, Addr src, Bytes bytes) override {
    ALLOCSIM_CUDA_CHECK(cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                                   cudaMemcpyDeviceToDevice));
  }

  void synchronize() override { ALLOCSIM_CUDA_CHECK(cudaDeviceSynchronize()); }

  Bytes map_granularity() override {
    if (!vmm_supported_) return 0;
    load_vmm();
    std::size_t granularity = 0;
    const CUmemAllocationProp properties = allocation_properties();
    ALLOCSIM_CUDA_CHECK(vmm_.granularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return granularity;
  }

  Addr reserve_addresses(Bytes bytes) override {
    need_vmm();
    CUdeviceptr addr = 0;
    ALLOCSIM_CUDA_CHECK(vmm_.reserve(&addr, bytes, 0, 0, 0));
    reservations_.emplace(static_cast<Addr>(addr), bytes);
    return static_cast<Addr>(addr);
  }

  void release_addresses(Addr at, Bytes bytes) override {
    const auto it = reservations_.find(at);
    if (it == reservations_.end() || it->second != bytes) throw Error("release of addresses that were not reserved");
    ALLOCSIM_CUDA_CHECK(vmm_.address_free(static_cast<CUdeviceptr>(at), bytes));
    reservations_.erase(it);
  }

  std::optional<Segment> create_physical(Bytes bytes) override {
    need_vmm();
    const CUmemAllocationProp properties = allocation_properties();
    CUmemGenericAllocationHandle handle = 0;
    const CUresult created = vmm_.create(&handle, bytes, &properties, 0);
    if (created == CUDA_ERROR_OUT_OF_MEMORY) return std::nullopt;
    ALLOCSIM_CUDA_CHECK(created);
    handles_.insert(handle);
    return Segment{static_cast<Addr>(handle), bytes};
  }

  void release_physical(Segment physical) override {
    const auto handle = static_cast<CUmemGenericAllocationHandle>(physical.addr);
    if (handles_.erase(handle) == 0) throw Error("release of physical memory that was not created");
    // The memory itself goes once its last mapping is unmapped.
    ALLOCSIM_CUDA_CHECK(vmm_.release(handle));
  }

  // One cuMemMap per page, then one cuMemSetAccess over the range, as PyTorch's
  // expandable segments do.
  void map(Addr at, std::span<const Segment> pages) override {
    need_vmm();
    Addr next = at;
    for (const Segment& page : pages) {
      ALLOCSIM_CUDA_CHECK(vmm_.map(static_cast<CUdeviceptr>(next), page.bytes, 0,
                                   static_cast<CUmemGenericAllocationHandle>(page.addr), 0));
      mappings_.emplace(next, page.bytes);
      next += page.bytes;
    }
    CUmemAccessDesc access{};
    access.location = allocation_properties().location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ALLOCSIM_CUDA_CHECK(vmm_.set_access(static_cast<CUdeviceptr>(at), next - at, &access, 1));
  }

  // One cuMemUnmap per mapping: the driver unmaps no part of one, nor several at once.
  void unmap(Addr at, Bytes bytes) override {
    const auto first = mappings_.find(at);
    Addr end = at;
    for (auto it = first; it != mappings_.end() && it->first == end && end < at + bytes; ++it) end += it->second;
    if (first == mappings_.end() || end != at + bytes) throw Error("unmap of a range that is not whole mappings");
    synchronize();  // work may still use the pages
    for (auto it = first; it != mappings_.end() && it->first < at + bytes;) {
      ALLOCSIM_CUDA_CHECK(vmm_.unmap(static_cast<CUdeviceptr>(it->first), it->second));
      it = mappings_.erase(it);
    }
  }

 private:
  void need_vmm() {
    if (!vmm_supported_) throw Error(name_ + " does not support the CUDA VMM API");
    load_vmm();
  }

  CUmemAllocationProp allocation_properties() const {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = ordinal_;
    return properties;
  }

  void load_vmm() {
    if (vmm_.create) return;
    entry_point("cuMemGetAllocationGranularity", vmm_.granularity);
    entry_point("cuMemAddressReserve", vmm_.reserve);
    entry_point("cuMemAddressFree", vmm_.address_free);
    entry_point("cuMemRelease", vmm_.release);
    entry_point("cuMemMap", vmm_.map);
    entry_point("cuMemUnmap", vmm_.unmap);
    entry_point("cuMemSetAccess", vmm_.set_access);
    entry_point("cuMemCreate", vmm_.create);
  }

  // The first cudaMalloc, cudaMemset and cudaMemcpy load modules and grow the context;
  // doing them once here keeps that out of every later measurement.
  void warm_up() {
    ALLOCSIM_CUDA_CHECK(cudaFree(nullptr));
    const auto a = malloc(4_MiB);
    const auto b = malloc(4_MiB);
    if (!a || !b) throw Error(name_ + " has no 8 MiB free to warm up");
    touch(*a, 4_MiB);
    copy(*b, *a, 4_MiB);
    synchronize();
    free(*a);
    free(*b);
  }

  int ordinal_;
  std::string name_;
  int compute_capability_ = 0;
  bool vmm_supported_ = false;
  DriverVmm vmm_;
  std::map<Addr, Bytes> reservations_;
  std::set<CUmemGenericAllocationHandle> handles_;  // created, not yet released
  std::map<Addr, Bytes> mappings_;                  // one per mapped page
};

}  // namespace

bool built_with_cuda() { return true; }

std::unique_ptr<DeviceApi> open_cuda_device(int ordinal) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(describe_cuda_unavailable(static_cast<int>(status), cudaGetErrorName(status),
                                          cudaGetErrorString(status)));
  }
  if (count == 0) throw Error("no CUDA GPU on this machine: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count) {
    throw Error("no GPU " + std::to_string(ordinal) + ": this machine has " + std::to_string(count));
  }
  return std::make_unique<CudaApi>(ordinal);
}

}  // namespace allocsim
