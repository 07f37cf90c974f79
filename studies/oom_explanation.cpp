#include "studies/oom_explanation.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

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

  const Bytes reserved_all = allocated.bytes + cache_free;
  const Bytes outside = minus(total.bytes, free.bytes + reserved_all);
  const std::string r_name = message.wording == TorchWording::reserved ? "R" : message.wording == TorchWording::cached ? "A - C" : "A - R";
  std::string outside_how = message.wording == TorchWording::reserved
                                ? "T - F - R = " + total.text + " - " + free.text + " - " + cache_figure->text
                                : "T - F - " + r_name + " = " + total.text + " - " + free.text + " - " + allocated.text +
                                      " - " + cache_figure->text;
  if (message.wording == TorchWording::cached) {
    outside_how = "T - F - A - C = " + total.text + " - " + free.text + " - " + allocated.text + " - " + cache_figure->text;
  }
  if (total.bytes + total.error + free.error + allocated.error + cache_error < free.bytes + reserved_all) {
    out.notes.push_back("F + A + the cache exceed T: the message disagrees with itself");
  }
  // The split of what is outside: this process's own non-PyTorch memory and other processes.
  std::string split;
  Bytes other_processes = 0;
  if (message.process_in_use) {
    const Bytes own = minus(message.process_in_use->bytes, reserved_all);
    other_processes = minus(total.bytes, free.bytes + message.process_in_use->bytes);
    split = "this process outside PyTorch (CUDA context, other libraries) P - A - cache free = " + torch_size(own) +
            ", other processes T - F - P = " + torch_size(other_processes);
    add(out, "process_in_use", "this process", message.process_in_use->bytes, message.process_in_use->text,
        "P, this process's whole use, its CUDA context included");
  } else if (!message.processes.empty()) {
    split = "processes on the card:";
    for (const OtherProcess& process : message.processes) {
      split += " " + process.pid + " holds " + process.memory.text + ";";
      other_processes += process.memory.bytes;
    }
    split += " (this process is likely among them: PyTorch did not match its own id)";
  }
  add(out, "outside", "outside PyTorch", outside, format_gib(outside), outside_how);
  if (!split.empty()) out.notes.push_back("of what is outside PyTorch: " + split);

  const Bytes rounding_cache = cache_error + request.error;
  const Bytes limit_error = total.error + allocated.error + request.error;
  const std::string fragmentation_hint = message.wording == TorchWording::unallocated
                                             ? "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                                             : "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or later; "
                                               "before it, PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N with N below the request in MiB)";
  const Bytes headroom = free.bytes + cache_free + outside;  // T - A
  const std::optional<Bytes> allowed = message.allowed ? std::optional<Bytes>(message.allowed->bytes) : std::nullopt;
  if (allowed) add(out, "allowed", "allowed", *allowed, message.allowed->text, "L, set_per_process_memory_fraction's limit");
  if (cache_free >= request.bytes) {
    out.kind = OomKind::fragmentation;
    out.why = "the cache's free bytes alone (" + cache_shown + ") would hold the request (" + request.text +
              "), but PyTorch had already released its wholly free segments and retried: they lie in partly used "
              "segments, and no free block was " + request.text + " large";
    out.to_fit = "one free block of " + request.text + ": the cache's " + cache_shown +
                 " joined where it is split, or " + torch_size(minus(request.bytes, free.bytes)) +
                 " more free on the device for a new segment";
    out.tries.push_back(fragmentation_hint);
    out.tries.push_back("a smaller batch");
    if (distance(cache_free, request.bytes) <= rounding_cache) {
      close_call(out, "the cache's free bytes and the request", rounding_cache, headroom >= request.bytes ? "reservation" : "capacity");
    }
    return;
  }
  const bool limited = allowed && allocated.bytes + request.bytes > *allowed;
  if (headroom >= request.bytes) {
    out.kind = OomKind::reservation;
    if (limited) {
      out.why = "the request would fit on the card, but A + the request (" + torch_size(allocated.bytes + request.bytes) +
                ") exceed the " + message.allowed->text + " this process is allowed";
      out.to_fit = "a limit of at least " + torch_size(allocated.bytes + request.bytes);
      out.tries.push_back("torch.cuda.set_per_process_memory_fraction(f) with f at least " +
                          torch_size(allocated.bytes + request.bytes) + " / " + total.text);
    } else {
      out.why = "the device's free bytes (" + free.text + ") plus the cache's (" + cache_shown +
                ") plus what is held outside this process's PyTorch (" + format_gib(outside) + ") would hold the request (" +
                request.text + "): another holder stands in the way";
      out.to_fit = torch_size(minus(request.bytes, free.bytes)) +
                   " more free on the device (request - F), from what is held outside PyTorch (" + format_gib(outside) + ")";
      if (other_processes > 0 || !message.process_in_use) {
        out.tries.push_back("stopping the other process on the card (nvidia-smi names it), or limiting it");
      }
      if (message.process_in_use) {
        out.tries.push_back("less memory for this process's other libraries (cuDNN/cuBLAS workspaces, NCCL buffers, another framework)");
      }
      if (free.bytes + cache_free >= request.bytes) out.tries.push_back(fragmentation_hint);
    }
    out.tries.push_back("a smaller batch");
    if (distance(headroom, request.bytes) <= limit_error + free.error) {
      close_call(out, "T - A and the request", limit_error + free.error, "capacity");
    }
    if (distance(cache_free, request.bytes) <= rounding_cache) {
      close_call(out, "the cache's free bytes and the request", rounding_cache, "fragmentation");
    }
    return;
  }
  out.kind = OomKind::capacity;
  const Bytes short_by = minus(allocated.bytes + request.bytes, total.bytes);
  out.why = "the request (" + request.text + ") and this process's live data (A " + allocated.text + ") exceed the card (" +
            total.text + "): with every other holder gone and the cache packed, it still would not fit";
  out.to_fit = "this process's live data smaller by at least " + torch_size(short_by) + ", or a card with more memory";
  out.tries.push_back("a smaller batch (or activation checkpointing, mixed precision)");
  if (distance(headroom, request.bytes) <= limit_error + free.error) {
    close_call(out, "T - A and the request", limit_error + free.error, "reservation");
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

  if (log.request) {
    add(out, "request", "request", log.request->bytes, log.request->error == 0 ? tf_size(log.request->bytes) + " (" + std::to_string(log.request->bytes) + " bytes)" : log.request->text,
        log.request->error == 0 ? "rounded to" : "ran out of memory trying to allocate");
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

  if (!log.request) out.missing.push_back("the request (`ran out of memory trying to allocate X`)");
  if (!limit) out.missing.push_back("the limit (Stats `Limit:` or `memory_limit_:`)");
  if (!in_use) out.missing.push_back("the bytes in use (Stats `InUse:`, `Sum Total of in-use chunks` or the chunk dump)");
  if (!out.missing.empty()) return;

  const Bytes request = log.request->bytes;
  const Bytes error = log.request->error + in_use_error;
  if (*in_use + request > *limit) {
    out.kind = OomKind::capacity;
    out.why = "in use (" + tf_size(*in_use) + ") plus the request (" + tf_size(request) + ") exceed the limit (" + tf_size(*limit) + ")";
    out.to_fit = "the live tensors smaller by at least " + tf_size(*in_use + request - *limit) + ", or a higher limit";
    out.tries.push_back("a smaller batch");
    out.tries.push_back("memory_limit: if you set one (tf.config.set_logical_device_configuration), raise it; TensorFlow's "
                        "own limit is the card's free memory when it started, less its reserve: another process then lowers it");
    if (distance(*in_use + request, *limit) <= error) {
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
  if (largest_free >= request) {
    out.notes.push_back("the dump shows a free chunk of " + tf_size(largest_free) +
                        ", at least the request: the dump is not of the moment of the failure");
  }
  if (allowance >= request) {
    out.kind = OomKind::reservation;
    out.why = "the limit still allowed a new region of " + tf_size(allowance) + ", at least the request (" + tf_size(request) +
              "), and the device itself refused it: another process or the driver holds that memory";
    out.to_fit = tf_size(request) + " more free on the device, from whoever holds it outside this allocator";
    out.tries.push_back("stopping the other process on the card, or giving it a memory_limit");
    out.tries.push_back("tf.config.experimental.set_memory_growth(gpu, True) in every TensorFlow process sharing the card");
    out.tries.push_back("a smaller batch");
    return;
  }
  out.kind = OomKind::fragmentation;
  out.why = "the free bytes in the pool (" + tf_size(minus(*pool, *in_use)) + ") plus what the limit still allows as a new region (" +
            tf_size(allowance) + ") would hold the request (" + tf_size(request) + "), but no free chunk" +
            (dump || log.stats_largest_free ? " (the largest: " + tf_size(largest_free) + ")" : std::string()) +
            " and no new region can";
  out.to_fit = "one free chunk of " + tf_size(request) + ": the live chunks that split the pool moved or freed together";
  out.tries.push_back("TF_GPU_ALLOCATOR=cuda_malloc_async");
  out.tries.push_back("a smaller batch");
}

}  // namespace

OomExplanation explain_oom(std::string_view text) {
  OomExplanation out;
  if (const std::optional<TorchOomMessage> message = read_torch_oom_message(text)) {
    explain_torch(*message, out);
  } else if (const std::optional<BfcOomLog> log = read_bfc_oom_log(text)) {
    explain_bfc(*log, out);
  } else {
    out.missing.push_back("an OOM message: PyTorch's `CUDA out of memory. Tried to allocate X ...` or TensorFlow's BFC log "
                          "(`ran out of memory trying to allocate X`, the chunk dump, `Stats:`)");
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
