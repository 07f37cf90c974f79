#include "real_gpu/host_api.hpp"

#include <cstring>
#include <iterator>
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

std::optional<Addr> HostDeviceApi::malloc(Bytes bytes) {
  if (bytes == 0) throw Error("host stand-in: allocation of 0 bytes");
  const Bytes charged = align_up(bytes, config_.page);
  if (charged > config_.total - used_) {
    ++counters_.failed_mallocs;
    return std::nullopt;
  }
  Allocation allocation{bytes, charged, false, nullptr};
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
  ++counters_.mallocs;
  return addr;
}

void HostDeviceApi::free(Addr addr) {
  const auto it = live_.find(addr);
  if (it == live_.end()) throw Error("host stand-in: free of " + hex(addr) + ", not a live malloc");
  used_ -= it->second.charged;
  live_.erase(it);
  ++counters_.frees;
}

void HostDeviceApi::check_pages(Bytes bytes, const char* what) const {
  if (bytes == 0 || bytes % config_.page != 0) {
    throw Error(std::string("host stand-in: ") + what + " of " + format_bytes(bytes) + ", not whole pages of " +
                format_bytes(config_.page));
  }
}

Addr HostDeviceApi::reserve_addresses(Bytes bytes) {
  check_pages(bytes, "reserve_addresses");
  const Addr at = next_virtual_;
  next_virtual_ += bytes + config_.page;  // a page of gap: ranges never touch
  reservations_.emplace(at, bytes);
  ++counters_.reservations;
  return at;
}

const std::pair<const Addr, Bytes>& HostDeviceApi::reservation_holding(Addr at, Bytes bytes, const char* what) const {
  auto it = reservations_.upper_bound(at);
  if (it != reservations_.begin()) {
    --it;
    if (at + bytes <= it->first + it->second) return *it;
  }
  throw Error(std::string("host stand-in: ") + what + " of " + format_bytes(bytes) + " at " + hex(at) +
              " is not inside one reservation");
}

void HostDeviceApi::release_addresses(Addr at, Bytes bytes) {
  const auto it = reservations_.find(at);
  if (it == reservations_.end() || it->second != bytes) {
    throw Error("host stand-in: release_addresses of " + format_bytes(bytes) + " at " + hex(at) +
                ", not a reservation of that size");
  }
  if (const auto mapped = mappings_.lower_bound(at); mapped != mappings_.end() && mapped->first < at + bytes) {
    throw Error("host stand-in: release_addresses at " + hex(at) + " with memory still mapped at " +
                hex(mapped->first));
  }
  reservations_.erase(it);
}

std::optional<Segment> HostDeviceApi::create_physical(Bytes bytes) {
  check_pages(bytes, "create_physical");
  if (bytes > config_.total - used_) {
    ++counters_.failed_creates;
    return std::nullopt;
  }
  const Addr handle = next_handle_++;
  used_ += bytes;
  physical_.emplace(handle, Physical{bytes});
  ++counters_.creates;
  return Segment{handle, bytes};
}

void HostDeviceApi::drop_if_gone(std::map<Addr, Physical>::iterator physical) {
  if (!physical->second.released || physical->second.mappings > 0) return;
  used_ -= physical->second.bytes;
  physical_.erase(physical);
}

void HostDeviceApi::release_physical(Segment physical) {
  const auto it = physical_.find(physical.addr);
  if (it == physical_.end() || it->second.released || it->second.bytes != physical.bytes) {
    throw Error("host stand-in: release_physical of handle " + std::to_string(physical.addr) + ", not live");
  }
  it->second.released = true;
  ++counters_.releases;
  drop_if_gone(it);
}

void HostDeviceApi::map(Addr at, std::span<const Segment> pages) {
  const Bytes bytes = total_bytes(pages);
  if (at % config_.page != 0) throw Error("host stand-in: map at " + hex(at) + ", not on a page");
  check_pages(bytes, "map");
  reservation_holding(at, bytes, "map");
  if (const auto next = mappings_.lower_bound(at); next != mappings_.end() && next->first < at + bytes) {
    throw Error("host stand-in: map at " + hex(at) + " over the mapping at " + hex(next->first));
  }
  if (const auto before = mappings_.lower_bound(at); before != mappings_.begin()) {
    if (const auto& [addr, mapping] = *std::prev(before); addr + mapping.bytes > at) {
      throw Error("host stand-in: map at " + hex(at) + " over the mapping at " + hex(addr));
    }
  }
  for (const Segment& page : pages) {  // all checked before any is mapped
    const auto it = physical_.find(page.addr);
    if (it == physical_.end() || it->second.released || it->second.bytes != page.bytes) {
      throw Error("host stand-in: map of handle " + std::to_string(page.addr) + ", not live physical memory");
    }
  }
  for (const Segment& page : pages) {
    ++physical_.at(page.addr).mappings;
    mappings_.emplace(at, Mapping{page.addr, page.bytes});
    at += page.bytes;
    ++counters_.maps;
  }
}

void HostDeviceApi::unmap(Addr at, Bytes bytes) {
  check_pages(bytes, "unmap");
  reservation_holding(at, bytes, "unmap");
  // Whole mappings, one after another from `at`, ending exactly at at + bytes.
  Addr next = at;
  for (auto it = mappings_.find(at); next < at + bytes; next += it->second.bytes, ++it) {
    if (it == mappings_.end() || it->first != next) {
      throw Error("host stand-in: unmap of " + format_bytes(bytes) + " at " + hex(at) + ": nothing mapped at " +
                  hex(next));
    }
  }
  if (next != at + bytes) {
    throw Error("host stand-in: unmap of " + format_bytes(bytes) + " at " + hex(at) + " ends inside a mapping");
  }
  for (auto it = mappings_.find(at); it != mappings_.end() && it->first < at + bytes;) {
    const auto physical = physical_.find(it->second.handle);
    --physical->second.mappings;
    drop_if_gone(physical);
    it = mappings_.erase(it);
    ++counters_.unmaps;
  }
}

bool HostDeviceApi::mapped_through(Addr addr, Bytes bytes) const {
  auto it = mappings_.upper_bound(addr);
  if (it == mappings_.begin()) return false;
  --it;
  for (Addr next = it->first; next < addr + bytes; next += it->second.bytes, ++it) {
    if (it == mappings_.end() || it->first != next) return false;
  }
  return true;
}

const HostDeviceApi::Allocation* HostDeviceApi::holding(Addr addr, Bytes bytes, const char* what) const {
  auto it = live_.upper_bound(addr);
  if (it != live_.begin()) {
    --it;
    if (addr + bytes <= it->first + it->second.bytes) return &it->second;
  }
  if (mapped_through(addr, bytes)) return nullptr;
  throw Error(std::string("host stand-in: ") + what + " of " + format_bytes(bytes) + " at " + hex(addr) +
              " is not inside one live allocation or mapped memory");
}

void HostDeviceApi::touch(Addr addr, Bytes bytes) {
  const Allocation* allocation = holding(addr, bytes, "touch");
  if (config_.backed && allocation) std::memset(reinterpret_cast<void*>(addr), 0xA5, bytes);
  if (const auto it = live_.find(addr); it != live_.end() && bytes == it->second.bytes) it->second.touched_whole = true;
  counters_.bytes_touched += bytes;
}

void HostDeviceApi::copy(Addr dst, Addr src, Bytes bytes) {
  const bool dst_backed = holding(dst, bytes, "copy to") != nullptr;
  const bool src_backed = holding(src, bytes, "copy from") != nullptr;
  if (config_.backed && dst_backed && src_backed) {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  }
  ++counters_.copies;
}

bool HostDeviceApi::fully_touched(Addr addr) const {
  const auto it = live_.find(addr);
  return it != live_.end() && it->second.touched_whole;
}

}  // namespace allocsim
