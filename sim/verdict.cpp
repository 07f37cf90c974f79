#include "sim/verdict.hpp"

#include <algorithm>
#include <array>

namespace allocsim {
namespace {

HolderKind holder_of(LimitKind kind) {
  switch (kind) {
    case LimitKind::fraction:
      return HolderKind::fraction;
    case LimitKind::system_reserve:
      return HolderKind::system_reserve;
    case LimitKind::device:  // a limit a policy did not explain is a limit all the same
    case LimitKind::memory_limit:
      break;
  }
  return HolderKind::memory_limit;
}

std::string holder_text(const Holder& holder) {
  switch (holder.kind) {
    case HolderKind::other_tenant:
      return "tenant " + std::to_string(holder.tenant) + " " + format_bytes(holder.bytes);
    case HolderKind::own_cache:
      return "this policy's cache " + format_bytes(holder.bytes) + " (empty_cache() would free it)";
    case HolderKind::system_reserve:
      return "TensorFlow's MinSystemMemory reserve " + format_bytes(holder.bytes);
    case HolderKind::memory_limit:
      return "the policy's memory_limit, " + format_bytes(holder.bytes) + " below what the device gives";
    case HolderKind::fraction:
      return "the policy's memory fraction, " + format_bytes(holder.bytes) + " below what the device gives";
    case HolderKind::contexts:
      return "CUDA contexts " + format_bytes(holder.bytes);
  }
  return {};
}

// How the device's total came down to what it gives: "15.8 GiB less 500 MiB of CUDA contexts".
std::string gives_detail(const Verdict& v, Bytes contexts, Bytes others) {
  std::string out = format_bytes(v.capacity);
  if (contexts > 0) out += " less " + format_bytes(contexts) + " of CUDA contexts";
  if (others > 0) out += (contexts > 0 ? ", less " : " less ") + format_bytes(others) + " held by other tenants";
  return out == format_bytes(v.capacity) ? std::string() : " (" + out + ")";
}

}  // namespace

std::string_view name_of(HolderKind kind) {
  static constexpr std::array<std::string_view, 6> kNames{"tenant",   "own_cache", "system_reserve",
                                                          "memory_limit", "fraction", "contexts"};
  return kNames[static_cast<std::size_t>(kind)];
}

std::vector<Holder> holders_at(const OomContext& c) {
  std::vector<Holder> holders;
  for (const TenantHolding& other : c.share.others) {
    if (other.reserved > 0) holders.push_back(Holder{HolderKind::other_tenant, other.reserved, other.tenant});
  }
  if (c.releasable > 0) holders.push_back(Holder{HolderKind::own_cache, c.releasable});
  const Bytes gives = c.share.gives();
  if (c.policy.limit != 0 && c.policy.limit < gives) {
    const HolderKind kind = holder_of(c.policy.limit_kind);
    Bytes kept = gives - c.policy.limit;
    if (kind == HolderKind::system_reserve && c.policy.withheld != 0) kept = std::min(kept, c.policy.withheld);
    holders.push_back(Holder{kind, kept});
  }
  if (c.share.contexts > 0) holders.push_back(Holder{HolderKind::contexts, c.share.contexts});
  std::stable_sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) { return a.bytes > b.bytes; });
  return holders;
}

Verdict verdict_of(const RunResult& run, const TenantResult& tenant) {
  Verdict v;
  v.tenant = tenant.index;
  v.capacity = run.device.capacity;
  v.peak_allocated = tenant.peak_allocated;
  v.peak_reserved = tenant.peak_reserved;
  v.reserved_unused = tenant.reserved_unused_at_peak();
  v.never_touched = tenant.never_touched_at_peak;
  v.planned_reserve = tenant.planned_reserve;
  v.needs = std::max(tenant.needs, tenant.live_lower_bound);
  v.gives = run.device.capacity - std::min(run.device.capacity, run.before_start + tenant.context);
  v.could_give = v.gives;
  v.peak_step = tenant.peak_step;
  if (tenant.hang_event) {
    v.fits = false;
    v.hang = true;
    v.oom_event = *tenant.hang_event;
  }
  if (const OomRecord* oom = tenant.first_oom()) {
    v.fits = false;
    v.hang = false;
    v.kind = oom->kind;
    v.request_kind = oom->request_kind;
    v.context_failed = oom->at_start;
    v.oom_event = oom->event;
    v.oom_bytes = oom->bytes;
    v.gives = oom->context.share.gives();
    v.could_give = oom->context.share.could_give();
    v.holders = holders_at(oom->context);
  } else if (tenant.context > 0) {
    v.holders.push_back(Holder{HolderKind::contexts, tenant.context});
  }
  return v;
}

std::string_view verdict_word(const Verdict& verdict) {
  if (verdict.kind) return name_of(*verdict.kind);
  return verdict.hang ? "hang" : "fits";
}

std::string describe_request_kinds(const TenantResult& tenant) {
  const OomRecord* first_oom = tenant.first_oom();
  if (first_oom == nullptr) return "none";
  const int first = static_cast<int>(first_oom->request_kind);
  std::string kinds;
  for (int k = 0; k < kOomKindCount; ++k) {
    const int kind = (first + k) % kOomKindCount;
    const std::uint64_t count = tenant.ooms_by_request_kind[kind];
    if (count == 0) continue;
    kinds += (kinds.empty() ? "" : ", ") + std::string(name_of(static_cast<OomKind>(kind))) + " (" +
             std::to_string(count) + ")";
  }
  return kinds;
}

std::string describe_holders(const std::vector<Holder>& holders) {
  std::string out;
  for (const Holder& holder : holders) {
    if (!out.empty()) out += "; ";
    out += holder_text(holder);
  }
  return out;
}

std::string describe_verdict(const Verdict& v, std::string_view device_name) {
  const std::string who = "tenant " + std::to_string(v.tenant);
  const std::string step = v.peak_step ? " (peak in step " + std::to_string(*v.peak_step) + ")" : std::string();
  Bytes contexts = 0;
  for (const Holder& holder : v.holders) {
    if (holder.kind == HolderKind::contexts) contexts = holder.bytes;
  }
  std::string out;
  if (v.fits) {
    out = who + " fits: peak " + format_bytes(v.peak_allocated) + " allocated, " + format_bytes(v.peak_reserved) +
          " reserved" + step + "; needs at least " + format_bytes(v.needs) + " live; the device " +
          std::string(device_name) + " gives this process " + format_bytes(v.gives) + gives_detail(v, contexts, 0) + "\n";
  } else if (v.hang) {
    out = who + " does not fit (hang): the real allocator would loop forever at event " + std::to_string(v.oom_event) +
          "; peak " + format_bytes(v.peak_allocated) + " allocated, " + format_bytes(v.peak_reserved) + " reserved" +
          step + "\n";
  } else {
    const Bytes others_held = v.capacity - std::min(v.capacity, v.gives + contexts);
    const Bytes others_live = v.capacity - std::min(v.capacity, v.could_give + contexts);
    out = who + " does not fit (" + std::string(name_of(*v.kind)) + "): needs at least " + format_bytes(v.needs) +
          " live; ";
    switch (*v.kind) {
      case OomKind::capacity:
        out += "the device " + std::string(device_name) + " gives this process " + format_bytes(v.could_give) +
               gives_detail(v, contexts, others_live) + "; no allocator fits this";
        break;
      case OomKind::reservation:
        out += "the device " + std::string(device_name) + " gives this process " + format_bytes(v.gives) +
               gives_detail(v, contexts, others_held) + "; held: " + describe_holders(v.holders);
        break;
      case OomKind::fragmentation:
        out += "the device " + std::string(device_name) + " gives this process " + format_bytes(v.gives) +
               gives_detail(v, contexts, others_held) +
               "; the bytes are there, but no free block was large enough: another placement could fit it";
        break;
    }
    out += "\n  detail: ";
    if (v.context_failed) {
      out += "the process could not create its CUDA context (" + format_bytes(v.oom_bytes) + ")";
    } else {
      out += "the first OOM, " + format_bytes(v.oom_bytes) + " at event " + std::to_string(v.oom_event) +
             ", was " + std::string(name_of(*v.request_kind)) + " " + std::string(kAtRequest);
    }
    out += "; peak " + format_bytes(v.peak_allocated) + " allocated, " + format_bytes(v.peak_reserved) + " reserved" +
           step + "\n";
  }
  if (v.reserved_unused > 0) {
    out += "  at the peak, " + format_bytes(v.reserved_unused) + " reserved, unused: " +
           format_bytes(v.never_touched) + " never touched, " + format_bytes(v.reserved_unused - v.never_touched) +
           " cached free\n";
  }
  if (v.planned_reserve > 0) out += "  the offline plan needs an arena of " + format_bytes(v.planned_reserve) + "\n";
  return out;
}

}  // namespace allocsim
