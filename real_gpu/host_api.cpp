#include "real_gpu/host_api.hpp"

#include <cstring>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// Backed storage is aligned as cudaMalloc's is (256 B on every GPU, 512 B promised here).
constexpr Bytes kHostAlignment = 512;

std::string hex(Addr addr) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(addr));
  return text;
}

}  // namespace

HostDeviceApi::HostDeviceApi(HostDeviceConfig config) : config_(config), used_(config.context) {
  if (config_.page == 0) throw Error("host stand-in: page must be at least 1 byte");
  if (config_.context > config_.total) throw Error("host stand-in: context exceeds total memory");
}

HostDeviceApi::~HostDeviceApi() = default;

std::optional<Addr> HostDeviceApi::make(Bytes bytes, bool mapped) {
  if (bytes == 0) throw Error("host stand-in: allocation of 0 bytes");
  const Bytes charged = align_up(bytes, config_.page);
  if (charged > config_.total - used_) {
    ++counters_.failed_mallocs;
    return std::nullopt;
  }
  Allocation allocation{bytes, charged, mapped, false, nullptr};
  Addr addr = 0;
  if (config_.backed) {
    // operator new[] of std::byte aligns to 16 only: over-allocate and align by hand.
    allocation.storage = std::make_unique<std::byte[]>(bytes + kHostAlignment);
    addr = align_up(reinterpret_cast<Addr>(allocation.storage.get()), kHostAlignment);
  } else {
    addr = next_addr_;
    next_addr_ += align_up(charged, kHostAlignment);
  }
  used_ += charged;
  live_.emplace(addr, std::move(allocation));
  return addr;
}

std::optional<Addr> HostDeviceApi::malloc(Bytes bytes) {
  auto addr = make(bytes, false);
  if (addr) ++counters_.mallocs;
  return addr;
}

std::optional<Addr> HostDeviceApi::map(Bytes bytes) {
  if (bytes % config_.page != 0) {
    throw Error("host stand-in: map of " + format_bytes(bytes) + ", not a multiple of the page " +
                format_bytes(config_.page));
  }
  auto addr = make(bytes, true);
  if (addr) ++counters_.maps;
  return addr;
}

void HostDeviceApi::release(Addr addr, bool mapped, Bytes bytes) {
  const auto it = live_.find(addr);
  const char* what = mapped ? "unmap" : "free";
  if (it == live_.end()) throw Error(std::string("host stand-in: ") + what + " of " + hex(addr) + ", not live");
  if (it->second.mapped != mapped) {
    throw Error(std::string("host stand-in: ") + what + " of " + hex(addr) + ", made by " +
                (it->second.mapped ? "map" : "malloc"));
  }
  if (mapped && it->second.bytes != bytes) {
    throw Error("host stand-in: unmap of " + format_bytes(bytes) + " at " + hex(addr) + ", mapped " +
                format_bytes(it->second.bytes));
  }
  used_ -= it->second.charged;
  live_.erase(it);
}

void HostDeviceApi::free(Addr addr) {
  release(addr, false, 0);
  ++counters_.frees;
}

void HostDeviceApi::unmap(Addr addr, Bytes bytes) {
  release(addr, true, bytes);
  ++counters_.unmaps;
}

const HostDeviceApi::Allocation& HostDeviceApi::holding(Addr addr, Bytes bytes, const char* what) const {
  auto it = live_.upper_bound(addr);
  if (it != live_.begin()) {
    --it;
    if (addr + bytes <= it->first + it->second.bytes) return it->second;
  }
  throw Error(std::string("host stand-in: ") + what + " of " + format_bytes(bytes) + " at " + hex(addr) +
              " is not inside one live allocation");
}

void HostDeviceApi::touch(Addr addr, Bytes bytes) {
  holding(addr, bytes, "touch");
  if (config_.backed) std::memset(reinterpret_cast<void*>(addr), 0xA5, bytes);
  if (const auto it = live_.find(addr); it != live_.end() && bytes == it->second.bytes) it->second.touched_whole = true;
  counters_.bytes_touched += bytes;
}

void HostDeviceApi::copy(Addr dst, Addr src, Bytes bytes) {
  holding(dst, bytes, "copy to");
  holding(src, bytes, "copy from");
  if (config_.backed) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  ++counters_.copies;
}

bool HostDeviceApi::fully_touched(Addr addr) const {
  const auto it = live_.find(addr);
  return it != live_.end() && it->second.touched_whole;
}

}  // namespace allocsim
