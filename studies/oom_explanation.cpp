#include "studies/oom_explanation.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <sstream>

#include <nlohmann/json.hpp>

#include "policies/caching.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "sim/device_presets.hpp"
#include "studies/bfc_oom_log.hpp"
#include "studies/pasted_text.hpp"
#include "studies/torch_oom_message.hpp"

namespace allocsim {
namespace {

Bytes minus(Bytes a, Bytes b) { return a > b ? a - b : 0; }
Bytes distance(Bytes a, Bytes b) { return a > b ? a - b : b - a; }

std::string torch_size(Bytes bytes) { return format_printed(bytes, SizeStyle::torch); }
std::string tf_size(Bytes bytes) { return format_printed(bytes, SizeStyle::tensorflow); }

void add(OomExplanation& out, std::string key, std::string label, Bytes bytes, std::string shown, std::string how) {
  out.figures.push_back({std::move(key), std::move(label), bytes, std::move(shown), std::move(how)});
}

void close_call(OomExplanation& out, const std::string& what, Bytes error, std::string_view other) {
  out.certain = false;
  out.notes.push_back("close call: " + what + " differ by less than the message's rounding (" +
                      torch_size(error) + "); the kind could be " + std::string(other));
}

// ---- PyTorch ----------------------------------------------------------------------------

// What is outside PyTorch less than this (beyond the figures' rounding) is no other process:
// any process that touched CUDA holds a context of a few hundred MiB.
constexpr Bytes kNoProcess = 64_MiB;
// A process's own CUDA context with cuBLAS/cuDNN loaded, when the card is no preset.
constexpr Bytes kContextBand = 512_MiB;

// The context band for a card of total `total`: a preset's estimate when the total is one
// a preset holds (as PyTorch prints it), else kContextBand.
std::pair<Bytes, std::string> context_band(const PrintedSize& total) {
  for (const DevicePreset& preset : all_devices()) {
    if (distance(preset.capacity, total.bytes) <= total.error) {
      return {preset.context_overhead,
              "the context of preset " + std::string(preset.name) + ", " + torch_size(preset.context_overhead)};
    }
  }
  return {kContextBand, "about " + format_gib(kContextBand) + ", a CUDA context with cuBLAS/cuDNN loaded"};
}

// Who holds what PyTorch's cache does not: this process outside PyTorch (its CUDA context,
// other libraries) and other processes.
struct Holders {
  Bytes own = 0;
  Bytes others = 0;        // counted: 0 when about nothing
  Bytes others_error = 0;  // the rounding of `others`
  // No P and the rest of `outside` inside the context band: read as this process's own, it
  // could be another process's too. Then `in_band` is that part, and the other reading's others.
  Bytes in_band = 0;
  std::optional<Bytes> others_if_not_own;
  std::string band_how;
  std::string own_how;     // where each figure comes from
  std::string others_how;
};

Holders holders_of(const TorchOomMessage& message, const PrintedSize& total, const PrintedSize& free, Bytes reserved_all,
                   Bytes reserved_error, Bytes outside, OomExplanation& out) {
  Holders holders;
  std::optional<PrintedSize> process = message.process_in_use;
  std::string process_how = "P, this process's whole use, its CUDA context included";
  std::vector<OtherProcess> listed;
  for (const OtherProcess& each : message.processes) {
    if (each.memory.bytes > total.bytes + total.error) {
      out.notes.push_back("process " + each.pid + " is said to hold " + each.memory.text +
                          ", more than the card: NVML could not measure it, and it is left out");
    } else {
      listed.push_back(each);
    }
  }
  if (process && process->bytes > total.bytes + total.error) {
    out.notes.push_back("this process is said to hold " + process->text +
                        ", more than the card: NVML could not measure it, and P is left out");
    process.reset();
  }
  const Bytes used = minus(total.bytes, free.bytes);
  const Bytes used_error = total.error + free.error;
  if (!process && !listed.empty()) {
    // Inside a container NVML lists this process under another id. It is among the listed when
    // they leave no room beside them for its own reservation (A + cache free); it is then the
    // smallest of those that hold at least that.
    Bytes listed_sum = 0;
    for (const OtherProcess& each : listed) listed_sum += each.memory.bytes;
    if (listed_sum + reserved_all > used + used_error + reserved_error + kNoProcess) {
      std::optional<std::size_t> self;
      for (std::size_t i = 0; i < listed.size(); ++i) {
        if (listed[i].memory.bytes + listed[i].memory.error + reserved_error < reserved_all) continue;
        if (!self || listed[i].memory.bytes < listed[*self].memory.bytes) self = i;
      }
      if (self) {
        process = listed[*self].memory;
        process_how = "P, process " + listed[*self].pid + ": this process under another id (a container's)";
        const bool all = minus(used, listed[*self].memory.bytes) <= used_error + listed[*self].memory.error + kNoProcess;
        out.notes.push_back("process " + listed[*self].pid + " is this process (under another id, as in a container): " +
                            (all ? std::string("it holds all that is not free (T - F - P about 0)")
                                 : std::string("the listed processes leave no room beside them for this one's reservation "
                                               "(A + cache free), and it is the smallest that holds that")));
        listed.erase(listed.begin() + static_cast<std::ptrdiff_t>(*self));
      }
    }
  }
  if (process) {
    add(out, "process_in_use", "this process", process->bytes, process->text, process_how);
    if (process->bytes + process->error + reserved_error < reserved_all) {
      out.notes.push_back("P (" + process->text + ") is below A + cache free: the message disagrees with itself");
    }
    holders.own = minus(process->bytes, reserved_all);
    holders.others = minus(used, process->bytes);
    holders.others_error = used_error + process->error;
    holders.own_how = "P - A - cache free: its CUDA context and libraries";
    holders.others_how = "T - F - P";
  } else {
    // No P: what the listed processes hold is others'; of the rest, up to the context band is
    // this process's own context, the remainder another holder's.
    Bytes listed_sum = 0;
    for (const OtherProcess& each : listed) listed_sum += each.memory.bytes;
    const Bytes known_others = std::min(listed_sum, outside);
    const Bytes rest = outside - known_others;
    const auto [band, band_how] = context_band(*message.total);
    holders.own = std::min(rest, band);
    holders.others = known_others + (rest - holders.own);
    holders.others_error = used_error + reserved_error;
    holders.own_how = "what is outside PyTorch up to the context band (" + band_how + ")";
    holders.others_how = listed.empty() ? "the rest of what is outside PyTorch"
                                        : "the listed processes and the rest of what is outside PyTorch";
    if (rest > kNoProcess && rest <= band) {
      holders.in_band = rest;
      holders.others_if_not_own = known_others + rest;
      holders.band_how = band_how;
    }
  }
  if (!listed.empty()) {
    std::string names = "processes on the card:";
    for (const OtherProcess& each : listed) names += " " + each.pid + " holds " + each.memory.text + ";";
    out.notes.push_back(names.substr(0, names.size() - 1));
  }
  if (holders.others > 0 && holders.others <= holders.others_error + kNoProcess) {
    out.notes.push_back("other processes: " + torch_size(holders.others) + " is about nothing (less than a CUDA context " +
                        "beyond the rounding): no other process is counted");
    holders.others = 0;
  }
  add(out, "own_outside", "this process outside PyTorch", holders.own, format_gib(holders.own), holders.own_how);
  add(out, "other_processes", "other processes", holders.others, format_gib(holders.others), holders.others_how);
  return holders;
}

// One comparison in the order the kinds are judged: the kind when `have` holds `need`.
struct Step {
  Bytes have;
  Bytes need;
  Bytes error;
  ExplainedKind kind;
  std::string what;
};

std::vector<Step> torch_steps(const PrintedSize& free, Bytes cache_free, Bytes cache_error, const PrintedSize& request,
                              Bytes segment, Bytes others, Bytes others_error) {
  const Bytes request_error = request.error;
  return {
      {free.bytes, segment, free.error + request_error, ExplainedKind::inconsistent,
       "the device's free bytes and the request's new segment"},
      {cache_free, request.bytes, cache_error + request_error, ExplainedKind::fragmentation,
       "the cache's free bytes and the request"},
      {free.bytes + cache_free, request.bytes, free.error + cache_error + request_error, ExplainedKind::fragmentation,
       "the device's and the cache's free bytes together and the request"},
      {free.bytes + cache_free + others, request.bytes, free.error + cache_error + request_error + others_error,
       ExplainedKind::reservation, "the free bytes with what other processes hold and the request"},
  };
}

ExplainedKind kind_from(const std::vector<Step>& steps) {
  for (const Step& step : steps) {
    if (step.have >= step.need) return step.kind;
  }
  return ExplainedKind::capacity;
}

// The kind were step `i`, which holds, to fail by a hair: a later step decides only if it
// holds by more than step `i` does (their figures overlap: the later adds to the earlier).
ExplainedKind kind_past(const std::vector<Step>& steps, std::size_t i) {
  for (std::size_t j = i + 1; j < steps.size(); ++j) {
    if (steps[j].have + steps[i].need > steps[i].have + steps[j].need) return steps[j].kind;
  }
  return ExplainedKind::capacity;
}

// The kind, and a close call for each comparison up to the deciding one that lies within
// the message's rounding and would give another kind.
ExplainedKind judge(const std::vector<Step>& steps, OomExplanation& out) {
  const ExplainedKind kind = kind_from(steps);
  std::vector<ExplainedKind> said;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const bool holds = step.have >= step.need;
    if (distance(step.have, step.need) <= step.error) {
      const ExplainedKind other = holds ? kind_past(steps, i) : step.kind;
      if (other != kind && std::find(said.begin(), said.end(), other) == said.end()) {
        close_call(out, step.what, step.error, name_of(other));
        said.push_back(other);
      }
    }
    if (holds) break;
  }
  return kind;
}

void explain_torch(const TorchOomMessage& message, OomExplanation& out) {
  out.source = "pytorch";
  out.wording = std::string(name_of(message.wording)) +
                (message.gpu ? ", GPU " + std::to_string(*message.gpu) : std::string());
  if (message.messages > 1) {
    out.notes.push_back(std::to_string(message.messages) + " OOM messages in the text; the first is explained");
  }
  const char* cache_word = message.wording == TorchWording::cached      ? "`C cached`"
                           : message.wording == TorchWording::reserved  ? "`R reserved in total by PyTorch`"
                                                                        : "`R is reserved by PyTorch but unallocated`";
  if (message.request) add(out, "request", "request", message.request->bytes, message.request->text, "Tried to allocate");
  if (message.total) add(out, "total", "device total", message.total->bytes, message.total->text, "T, total capacity");
  if (message.free) add(out, "device_free", "device free", message.free->bytes, message.free->text, "F, free on the device (cudaMemGetInfo)");
  if (message.allocated) add(out, "allocated", "allocated", message.allocated->bytes, message.allocated->text, "A, allocated by PyTorch");
  if (!message.request) out.missing.push_back("the request (`Tried to allocate X`)");
  if (!message.total) out.missing.push_back("the device's total (`T total capacity`)");
  if (!message.free) out.missing.push_back("the device's free bytes (`F free` / `of which F is free`)");
  if (!message.allocated) out.missing.push_back("what PyTorch allocated (`A already allocated` / `A is allocated by PyTorch`)");
  const std::optional<PrintedSize>& cache_figure = message.wording == TorchWording::cached     ? message.cached
                                                   : message.wording == TorchWording::reserved ? message.reserved_total
                                                                                                : message.unallocated;
  if (!cache_figure) out.missing.push_back(std::string("the cache's figure (") + cache_word + ")");
  if (!out.missing.empty()) return;

  const PrintedSize& request = *message.request;
  const PrintedSize& total = *message.total;
  const PrintedSize& free = *message.free;
  const PrintedSize& allocated = *message.allocated;
  Bytes cache_free = cache_figure->bytes;
  Bytes cache_error = cache_figure->error;
  std::string cache_how;
  if (message.wording == TorchWording::reserved) {
    add(out, "reserved", "reserved", cache_figure->bytes, cache_figure->text, "R, reserved in total by PyTorch (A included)");
    if (cache_figure->bytes < allocated.bytes) {
      out.notes.push_back("R (" + cache_figure->text + ") is below A (" + allocated.text + "): the message disagrees with itself");
    }
    cache_free = minus(cache_figure->bytes, allocated.bytes);
    cache_error += allocated.error;
    cache_how = "R - A = " + cache_figure->text + " - " + allocated.text;
  } else {
    cache_how = message.wording == TorchWording::cached ? "C, cached (the cache's free bytes)"
                                                        : "R, reserved by PyTorch but unallocated";
  }
  const std::string cache_shown = message.wording == TorchWording::reserved ? torch_size(cache_free) : cache_figure->text;
  add(out, "cache_free", "cache free", cache_free, cache_shown, cache_how);
  // The new segment the allocator asked the device for, as PyTorch rounds one.
  const Bytes segment = torch_allocation_size(torch_round_size(request.bytes, 0));
  if (segment != request.bytes) {
    add(out, "segment", "new segment", segment, torch_size(segment), "the request as PyTorch rounds a new segment");
  }

  const Bytes reserved_all = allocated.bytes + cache_free;
  const Bytes reserved_error = allocated.error + cache_error;
  const Bytes outside = minus(total.bytes, free.bytes + reserved_all);
  std::string outside_how = message.wording == TorchWording::reserved
                                ? "T - F - R = " + total.text + " - " + free.text + " - " + cache_figure->text
                                : "T - F - A - R = " + total.text + " - " + free.text + " - " + allocated.text + " - " +
                                      cache_figure->text;
  if (message.wording == TorchWording::cached) {
    outside_how = "T - F - A - C = " + total.text + " - " + free.text + " - " + allocated.text + " - " + cache_figure->text;
  }
  if (total.bytes + total.error + free.error + reserved_error < free.bytes + reserved_all) {
    out.notes.push_back("F + A + the cache exceed T: the message disagrees with itself");
  }
  add(out, "outside", "outside PyTorch", outside, format_gib(outside), outside_how);
  const Holders holders = holders_of(message, total, free, reserved_all, reserved_error, outside, out);

  const std::string expandable = *alloc_conf_line(Spec{"expandable", {}}, "");
  const std::string fragmentation_hint =
      message.wording == TorchWording::unallocated
          ? expandable
          : expandable + " (PyTorch 2.1 or later; before it, PYTORCH_CUDA_ALLOC_CONF=" +
                std::string(alloc_conf_key("max_split_size")) + ":N with N below the request in MiB)";
  const std::string own_libraries = "less memory for this process's other libraries (cuDNN/cuBLAS workspaces, NCCL buffers, "
                                    "another framework): it holds " + format_gib(holders.own) + " outside PyTorch";
  const bool own_large = holders.own > kContextBand + kNoProcess;
  const Bytes more_free = minus(segment, free.bytes);  // for a new segment

  // `L allowed`: the allocator refuses a segment that would take its reservation (A + cache
  // free, once its wholly free segments are released) past L, whatever the device has.
  if (message.allowed) {
    add(out, "allowed", "allowed", message.allowed->bytes, message.allowed->text, "L, set_per_process_memory_fraction's limit");
  }
  const std::vector<Step> steps =
      torch_steps(free, cache_free, cache_error, request, segment, holders.others, holders.others_error);
  if (message.allowed && cache_free < request.bytes && reserved_all + segment > message.allowed->bytes) {
    const Bytes needed = reserved_all + segment;
    const ExplainedKind card = kind_from(steps);
    if (card != ExplainedKind::capacity) {
      out.kind = ExplainedKind::reservation;
      out.why = "the card would hold the request, but A + cache free + the new segment (" + torch_size(needed) +
                ") exceed the " + message.allowed->text + " this process is allowed";
      out.to_fit = "a limit of at least " + torch_size(needed);
      out.tries.push_back("torch.cuda.set_per_process_memory_fraction(f) with f at least " + torch_size(needed) + " / " +
                          total.text);
      out.tries.push_back("a smaller batch");
      return;
    }
  }

  const ExplainedKind kind = judge(steps, out);
  out.kind = kind;
  switch (kind) {
    case ExplainedKind::inconsistent:
      out.why = "the device's free bytes alone (" + free.text + ") would hold a new segment for the request (" +
                torch_size(segment) + "): the message shows no shortage that PyTorch could see";
      out.to_fit = "nothing that this message shows: by its figures the request fits";
      out.tries.push_back("running it again while watching nvidia-smi: a process that comes and goes on the card");
      out.tries.push_back("on Windows, a smaller batch: the WDDM driver keeps part of the card back");
      out.notes.push_back("usual causes: on Windows the WDDM driver keeps back memory that cudaMemGetInfo counts as free; "
                          "another process let go of memory between the failure and the measurement of F; the message is "
                          "stale (from another run) or was edited");
      break;
    case ExplainedKind::fragmentation:
      if (cache_free >= request.bytes) {
        out.why = "the cache's free bytes alone (" + cache_shown + ") would hold the request (" + request.text +
                  "), but PyTorch had already released its wholly free segments and retried: they lie in partly used "
                  "segments, and no free block was " + request.text + " large";
        out.to_fit = "one free block of " + request.text + ": the cache's " + cache_shown +
                     " joined where it is split, or " + torch_size(more_free) + " more free on the device for a new segment";
      } else if (free.bytes >= request.bytes) {
        out.why = "the device's free bytes (" + free.text + ") hold the request (" + request.text +
                  ") but not the new segment PyTorch rounds it to (" + torch_size(segment) + ")" +
                  (cache_free > 0 ? ", and the cache's (" + cache_shown + ") lie in partly used segments" : std::string());
        out.to_fit = torch_size(more_free) + " more free on the device for a new segment";
      } else {
        out.why = "the device's free bytes (" + free.text + ") and the cache's (" + cache_shown +
                  ") together would hold the request (" + request.text + "), but they are apart: the device's are fewer "
                  "than a new segment (" + torch_size(segment) + "), the cache's lie in partly used segments";
        out.to_fit = "the device's " + free.text + " and the cache's " + cache_shown + " joined (expandable segments map "
                     "the device's free bytes onto the cache's), or " + torch_size(more_free) +
                     " more free on the device for a new segment";
      }
      out.tries.push_back(fragmentation_hint);
      out.tries.push_back("a smaller batch");
      break;
    case ExplainedKind::reservation: {
      out.why = "the device's free bytes (" + free.text + ") plus the cache's (" + cache_shown + ") plus what other "
                "processes hold (" + format_gib(holders.others) + ") would hold the request (" + request.text +
                "): another process stands in the way";
      if (more_free <= holders.others) {
        out.to_fit = torch_size(more_free) + " more free on the device for a new segment (" + torch_size(segment) +
                     " - F), from what other processes hold (" + format_gib(holders.others) + ")";
      } else {
        const Bytes joined_need = minus(request.bytes, free.bytes + cache_free);
        out.to_fit = torch_size(joined_need) + " from what other processes hold (" + format_gib(holders.others) +
                     "), with the free bytes joined (expandable segments): a new segment needs " + torch_size(more_free) +
                     " more than F, beyond what they hold";
      }
      out.tries.push_back("stopping the other process on the card (nvidia-smi names it), or limiting it");
      if (free.bytes + cache_free + holders.others >= request.bytes && more_free > holders.others) {
        out.tries.push_back(fragmentation_hint);
      }
      if (own_large) out.tries.push_back(own_libraries);
      out.tries.push_back("a smaller batch");
      break;
    }
    case ExplainedKind::capacity: {
      const Bytes short_by = minus(request.bytes, free.bytes + cache_free + holders.others);
      out.why = "the request (" + request.text + ") does not fit in the device's free bytes (" + free.text +
                ") plus the cache's (" + cache_shown + ")" +
                (holders.others > 0 ? " plus what other processes hold (" + format_gib(holders.others) + ")" : std::string()) +
                ": beside this process's live data (A " + allocated.text + ") and its own CUDA context and libraries (" +
                format_gib(holders.own) + "), the card is too small";
      if (short_by <= allocated.bytes) {
        out.to_fit = "this process's live data smaller by at least " + torch_size(short_by) + ", or a card with more memory";
      } else {
        out.to_fit = "a card with more memory: the request alone exceeds what the card leaves this process beside its "
                     "context" + std::string(holders.others > 0 ? " and the other processes" : "") + " (" +
                     torch_size(minus(total.bytes, holders.own + holders.others)) + ")";
      }
      out.tries.push_back("a smaller batch (or activation checkpointing, mixed precision)");
      if (own_large) out.tries.push_back(own_libraries);
      break;
    }
  }
  if (holders.others_if_not_own) {
    const std::vector<Step> other_reading =
        torch_steps(free, cache_free, cache_error, request, segment, *holders.others_if_not_own, holders.others_error);
    const ExplainedKind other_kind = kind_from(other_reading);
    const std::string reading = "two readings: " + format_gib(holders.in_band) + " outside PyTorch" +
                                (holders.in_band == outside ? std::string() : std::string(" (beside the listed processes)")) +
                                " is within a process's own CUDA context (" + holders.band_how +
                                "), read as this process's own";
    if (other_kind == kind) {
      out.notes.push_back(reading + "; were it another process's, the kind would be the same");
    } else {
      out.certain = false;
      out.notes.push_back(reading + " (" + std::string(name_of(kind)) + "); were it another process's, the kind would be " +
                          std::string(name_of(other_kind)));
    }
  }
}

// ---- TensorFlow -------------------------------------------------------------------------

void explain_bfc(const BfcOomLog& log, OomExplanation& out) {
  out.source = "tensorflow";
  out.wording = "TensorFlow/XLA BFC allocator log" + (log.allocator.empty() ? std::string() : " (" + log.allocator + ")");
  if (log.warning_only && !log.request) {
    out.missing.push_back("an OOM: the text holds only BFC's `freed_by_count` warning, which is not a failure");
    return;
  }
  // The chunk dump: regions rebuilt in address order.
  Bytes dump_in_use = 0;
  Bytes dump_free = 0;
  Bytes largest_free = 0;
  std::size_t holes = 0;
  std::map<Bytes, std::size_t> pinning;  // live chunk sizes beside a hole
  Bytes dump_total = 0;
  for (const BfcRegion& region : log.regions) {
    Bytes region_sum = 0;
    for (std::size_t i = 0; i < region.chunks.size(); ++i) {
      const BfcChunk& chunk = region.chunks[i];
      region_sum += chunk.size;
      if (chunk.in_use) {
        dump_in_use += chunk.size;
        continue;
      }
      dump_free += chunk.size;
      ++holes;
      largest_free = std::max(largest_free, chunk.size);
      // A live chunk between two holes pins both: counted once, with the hole before it.
      if (i > 0 && region.chunks[i - 1].in_use && !(i >= 2 && !region.chunks[i - 2].in_use)) ++pinning[region.chunks[i - 1].size];
      if (i + 1 < region.chunks.size() && region.chunks[i + 1].in_use) ++pinning[region.chunks[i + 1].size];
    }
    dump_total += region_sum;
    if (region.size && *region.size != region_sum) {
      out.notes.push_back("a region of " + std::to_string(*region.size) + " bytes holds chunks summing to " +
                          std::to_string(region_sum) + ": the dump is cut or disagrees with itself");
    }
  }
  const bool dump = log.has_chunks();
  bool dump_agrees = true;
  if (dump && log.stats_in_use && *log.stats_in_use != dump_in_use) {
    dump_agrees = false;
    out.notes.push_back("the chunk dump disagrees with the totals: its in-use chunks sum to " + std::to_string(dump_in_use) +
                        " bytes, Stats InUse says " + std::to_string(*log.stats_in_use) + " bytes (the InUse figure is used)");
  }
  if (dump && log.summary_in_use && *log.summary_in_use != dump_in_use) {
    dump_agrees = false;
    out.notes.push_back("the chunk dump disagrees with the totals: its in-use chunks sum to " + std::to_string(dump_in_use) +
                        " bytes, the `Chunks of size` lines to " + std::to_string(*log.summary_in_use) + " bytes");
  }
  if (dump && log.sum_total_in_use && distance(log.sum_total_in_use->bytes, dump_in_use) > log.sum_total_in_use->error) {
    dump_agrees = false;
    out.notes.push_back("the chunk dump disagrees with the totals: its in-use chunks sum to " + tf_size(dump_in_use) +
                        ", `Sum Total of in-use chunks` says " + log.sum_total_in_use->text);
  }

  std::optional<Bytes> limit = log.stats_limit ? log.stats_limit : log.memory_limit;
  std::optional<Bytes> in_use;
  Bytes in_use_error = 0;
  std::string in_use_how;
  if (log.stats_in_use) {
    in_use = log.stats_in_use;
    in_use_how = "Stats InUse";
  } else if (log.summary_in_use) {
    in_use = log.summary_in_use;
    in_use_how = "the `Chunks of size` lines";
  } else if (dump) {
    in_use = dump_in_use;
    in_use_how = "the in-use chunks of the dump";
  } else if (log.sum_total_in_use) {
    in_use = log.sum_total_in_use->bytes;
    in_use_error = log.sum_total_in_use->error;
    in_use_how = "Sum Total of in-use chunks";
  }
  std::optional<Bytes> pool = log.pool;
  std::string pool_how = "total_region_allocated_bytes_ (Total bytes in pool)";
  if (!pool) {
    Bytes regions = 0;
    bool sized = !log.regions.empty();
    for (const BfcRegion& region : log.regions) {
      if (!region.size) sized = false;
      regions += region.size.value_or(0);
    }
    if (sized) {
      pool = regions;
      pool_how = "the regions' sizes";
    } else if (dump && dump_agrees) {
      pool = dump_total;
      pool_how = "every chunk of the dump";
    }
  }

  std::optional<PrintedSize> request = log.request;
  if (log.request) {
    add(out, "request", "request", log.request->bytes, log.request->error == 0 ? tf_size(log.request->bytes) + " (" + std::to_string(log.request->bytes) + " bytes)" : log.request->text,
        log.request->error == 0 ? "rounded to" : "ran out of memory trying to allocate");
  } else if (log.tensor_bytes) {
    request = PrintedSize{*log.tensor_bytes, 0, tf_size(*log.tensor_bytes)};
    add(out, "request", "request", *log.tensor_bytes, tf_size(*log.tensor_bytes) + " (" + std::to_string(*log.tensor_bytes) + " bytes)",
        log.tensor + ": the shape's product times the type's size");
  } else if (!log.tensor.empty()) {
    out.notes.push_back("the op's tensor (" + log.tensor + "): its bytes are not known here (a type of unknown size, "
                        "or more than 64 bits hold)");
  }
  std::optional<Bytes> refused;
  if (!log.device_refused.empty()) {
    refused = *std::min_element(log.device_refused.begin(), log.device_refused.end());
    add(out, "device_refused", "device refused", *refused, tf_size(*refused) + " (" + std::to_string(*refused) + " bytes)",
        "the smallest of " + std::to_string(log.device_refused.size()) +
            " `failed to allocate ... from device: CUDA_ERROR_OUT_OF_MEMORY` lines");
  }
  if (limit) add(out, "limit", "limit", *limit, tf_size(*limit), log.stats_limit ? "Stats Limit" : "memory_limit_");
  if (in_use) add(out, "in_use", "in use", *in_use, tf_size(*in_use), in_use_how);
  if (pool) {
    add(out, "pool", "pool", *pool, tf_size(*pool), pool_how);
    if (in_use) add(out, "free_in_pool", "free in the pool", minus(*pool, *in_use), tf_size(minus(*pool, *in_use)), "pool - in use");
    if (limit) add(out, "new_region_allowed", "limit still allows", minus(*limit, *pool), tf_size(minus(*limit, *pool)), "limit - pool, as a new region");
  }
  if (dump) {
    add(out, "holes", "holes", holes, std::to_string(holes) + " free chunks", "the dump's free chunks");
    add(out, "largest_free", "largest free chunk", largest_free, tf_size(largest_free), "the dump");
    add(out, "dump_free", "free in the dump", dump_free, tf_size(dump_free), "the dump's free chunks, summed");
  } else {
    std::size_t bin_holes = 0;
    for (const BfcBin& bin : log.bins) bin_holes += bin.chunks > bin.in_use ? bin.chunks - bin.in_use : 0;
    if (!log.bins.empty()) add(out, "holes", "holes", bin_holes, std::to_string(bin_holes) + " free chunks", "the bins");
    if (log.stats_largest_free) {
      largest_free = *log.stats_largest_free;
      add(out, "largest_free", "largest free chunk", largest_free, tf_size(largest_free), "Stats LargestFreeBlock");
    }
  }
  if (!pinning.empty()) {
    std::vector<std::pair<Bytes, std::size_t>> sizes(pinning.begin(), pinning.end());
    std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string pins = "live chunks beside the holes:";
    for (std::size_t i = 0; i < sizes.size() && i < 6; ++i) {
      pins += (i == 0 ? " " : ", ") + std::to_string(sizes[i].second) + " of " + tf_size(sizes[i].first);
    }
    out.notes.push_back(pins + " (these pin the holes in place)");
  }
  if (!log.op_error.empty()) out.notes.push_back("the op: " + log.op_error);

  if (!request) out.missing.push_back("the request (`ran out of memory trying to allocate X` or the op's tensor shape and type)");
  if (!limit) out.missing.push_back("the limit (Stats `Limit:` or `memory_limit_:`)");
  if (!in_use) out.missing.push_back("the bytes in use (Stats `InUse:`, `Sum Total of in-use chunks` or the chunk dump)");
  const bool over_limit = request && limit && in_use && *in_use + request->bytes > *limit;
  if (refused && !over_limit && !pool) {
    // The device refused a region that the allocator's limit let it ask for. With the pool's
    // size known, the limit's allowance below decides: the refusals may be older (at start).
    out.missing.clear();
    out.kind = ExplainedKind::reservation;
    out.why = "the device refused a new region of " + tf_size(*refused) + " (CUDA_ERROR_OUT_OF_MEMORY) that the allocator's "
              "limit let it ask for: another process, or another allocator in this one, holds that memory";
    out.to_fit = "a region of " + tf_size(request ? std::min(request->bytes, *refused) : *refused) +
                 (request ? " (the request)" : " (the region refused)") +
                 " free on the device, from whoever holds the memory outside this allocator";
    out.tries.push_back("stopping the other process on the card, or giving it a memory_limit");
    out.tries.push_back("tf.config.experimental.set_memory_growth(gpu, True) in every TensorFlow process sharing the card");
    out.tries.push_back("a smaller batch");
    if (!limit || !in_use) {
      out.certain = false;
      out.notes.push_back("the allocation summary after the driver's lines is cut off: read from them alone; were this "
                          "process's own tensors to fill the card (in use + request over the limit), it would be capacity");
    }
    return;
  }
  if (!out.missing.empty()) return;

  const Bytes request_bytes = request->bytes;
  const Bytes error = request->error + in_use_error;
  if (over_limit) {
    out.kind = ExplainedKind::capacity;
    out.why = "in use (" + tf_size(*in_use) + ") plus the request (" + tf_size(request_bytes) + ") exceed the limit (" + tf_size(*limit) + ")";
    out.to_fit = "the live tensors smaller by at least " + tf_size(*in_use + request_bytes - *limit) + ", or a higher limit";
    out.tries.push_back("a smaller batch");
    out.tries.push_back("memory_limit: if you set one (tf.config.set_logical_device_configuration), raise it; TensorFlow's "
                        "own limit is the card's free memory when it started, less its reserve: another process then lowers it");
    if (distance(*in_use + request_bytes, *limit) <= error) {
      close_call(out, "in use + request and the limit", error, "fragmentation or reservation");
    }
    return;
  }
  if (!pool) {
    out.missing.push_back("the pool's size (`total_region_allocated_bytes_`, `Total bytes in pool`, or the chunk dump with "
                          "its `Next region of size` lines)");
    return;
  }
  const Bytes allowance = minus(*limit, *pool);
  if (largest_free >= request_bytes) {
    out.notes.push_back("the dump shows a free chunk of " + tf_size(largest_free) +
                        ", at least the request: the dump is not of the moment of the failure");
  }
  if (allowance >= request_bytes) {
    out.kind = ExplainedKind::reservation;
    out.why = "the limit still allowed a new region of " + tf_size(allowance) + ", at least the request (" + tf_size(request_bytes) +
              "), and the device itself refused it: another process or the driver holds that memory";
    out.to_fit = tf_size(request_bytes) + " more free on the device, from whoever holds it outside this allocator";
    out.tries.push_back("stopping the other process on the card, or giving it a memory_limit");
    out.tries.push_back("tf.config.experimental.set_memory_growth(gpu, True) in every TensorFlow process sharing the card");
    out.tries.push_back("a smaller batch");
    return;
  }
  if (refused) {
    out.notes.push_back("the driver's refusals came before this failure (a region asked earlier, as at start): the limit "
                        "allowed no new region for this request, so the pool decides");
  }
  out.kind = ExplainedKind::fragmentation;
  out.why = "the free bytes in the pool (" + tf_size(minus(*pool, *in_use)) + ") plus what the limit still allows as a new region (" +
            tf_size(allowance) + ") would hold the request (" + tf_size(request_bytes) + "), but no free chunk" +
            (dump || log.stats_largest_free ? " (the largest: " + tf_size(largest_free) + ")" : std::string()) +
            " and no new region can";
  out.to_fit = "one free chunk of " + tf_size(request_bytes) + ": the live chunks that split the pool moved or freed together";
  out.tries.push_back("TF_GPU_ALLOCATOR=cuda_malloc_async");
  out.tries.push_back("a smaller batch");
}

}  // namespace

std::string_view name_of(ExplainedKind kind) {
  switch (kind) {
    case ExplainedKind::capacity: return "capacity";
    case ExplainedKind::fragmentation: return "fragmentation";
    case ExplainedKind::reservation: return "reservation";
    case ExplainedKind::inconsistent: return "inconsistent";
  }
  return "undecided";
}

OomExplanation explain_oom(std::string_view text) {
  OomExplanation out;
  if (const std::optional<TorchOomMessage> message = read_torch_oom_message(text)) {
    explain_torch(*message, out);
  } else if (const std::optional<BfcOomLog> log = read_bfc_oom_log(text)) {
    explain_bfc(*log, out);
  } else {
    out.missing.push_back("an OOM message: PyTorch's `CUDA out of memory. Tried to allocate X ...` or TensorFlow's BFC log "
                          "(`ran out of memory trying to allocate X`, the chunk dump, `Stats:`, `OOM when allocating tensor with shape[...]`, "
                          "the driver's `failed to allocate ... CUDA_ERROR_OUT_OF_MEMORY`)");
  }
  if (!out.missing.empty()) out.kind.reset();
  return out;
}

std::string describe_explanation(const OomExplanation& explanation) {
  std::ostringstream out;
  out << "kind: " << (explanation.kind ? name_of(*explanation.kind) : "undecided") << "\n";
  if (!explanation.wording.empty()) out << "read: " << explanation.wording << "\n";
  std::size_t width = 0;
  for (const ExplainFigure& figure : explanation.figures) width = std::max(width, figure.label.size());
  for (const ExplainFigure& figure : explanation.figures) {
    out << "  " << figure.label << ":" << std::string(width - figure.label.size() + 1, ' ') << figure.shown;
    if (!figure.how.empty()) out << "  (" << figure.how << ")";
    out << "\n";
  }
  for (const std::string& missing : explanation.missing) out << "missing: " << missing << "\n";
  if (!explanation.why.empty()) out << "why: " << explanation.why << "\n";
  if (!explanation.to_fit.empty()) out << "to fit: " << explanation.to_fit << "\n";
  for (const std::string& change : explanation.tries) out << "try: " << change << "\n";
  for (const std::string& note : explanation.notes) out << "note: " << note << "\n";
  return out.str();
}

std::string explanation_json(const OomExplanation& explanation) {
  nlohmann::ordered_json document;
  document["kind"] = explanation.kind ? nlohmann::ordered_json(std::string(name_of(*explanation.kind))) : nlohmann::ordered_json();
  document["certain"] = explanation.kind ? nlohmann::ordered_json(explanation.certain) : nlohmann::ordered_json();
  document["source"] = explanation.source.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(explanation.source);
  document["read"] = explanation.wording;
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();
  for (const ExplainFigure& figure : explanation.figures) {
    figures[figure.key] = {{"bytes", figure.bytes}, {"text", figure.shown}, {"how", figure.how}};
  }
  document["figures"] = figures;
  document["why"] = explanation.why;
  document["to_fit"] = explanation.to_fit;
  document["try"] = explanation.tries;
  document["notes"] = explanation.notes;
  document["missing"] = explanation.missing;
  // A pasted text may hold bytes that are not UTF-8: they are shown replaced, not refused.
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace allocsim
