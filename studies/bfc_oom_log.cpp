#include "studies/bfc_oom_log.hpp"

#include <cctype>
#include <charconv>

namespace allocsim {
namespace {

constexpr std::string_view kRanOut = "ranoutofmemorytryingtoallocate";
constexpr std::string_view kShapes[] = {"oomwhenallocatingtensorwithshape[", "oomwhenallocatingtensorofshape["};
constexpr std::string_view kDriverFailed = "failedtoallocate";

struct TypeSize {
  std::string_view name;
  Bytes size;
};
// Longest names first: a name is matched as a prefix of the text run together.
constexpr TypeSize kTypeSizes[] = {
    {"complex128", 16}, {"complex64", 8}, {"bfloat16", 2}, {"uint16", 2}, {"uint32", 4}, {"uint64", 8},
    {"double", 8},      {"int16", 2},     {"int32", 4},    {"int64", 8},  {"uint8", 1},  {"float", 4},
    {"int8", 1},        {"half", 2},      {"bool", 1},
};

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// `shape[64,3,512,512]andtypehalf` run together (lower case), from after `shape[`.
void read_tensor(std::string_view low, BfcOomLog& log) {
  const std::size_t close = low.find(']');
  if (close == std::string_view::npos || close > 200) return;
  Bytes elements = 1;
  bool fits = true;
  std::string_view dims = low.substr(0, close);
  while (!dims.empty()) {
    const std::size_t comma = dims.find(',');
    const std::string_view dim = dims.substr(0, comma);
    Bytes value = 0;
    const auto [end, error] = std::from_chars(dim.data(), dim.data() + dim.size(), value);
    if (error != std::errc{} || end != dim.data() + dim.size()) return;
    if (value != 0 && elements > ~Bytes{0} / value) fits = false;
    if (fits) elements *= value;
    dims = comma == std::string_view::npos ? std::string_view() : dims.substr(comma + 1);
    if (comma != std::string_view::npos && dims.empty()) return;
  }
  log.tensor = "shape[" + std::string(low.substr(0, close)) + "]";
  std::string_view rest = low.substr(close + 1);
  if (!rest.starts_with("andtype")) return;
  rest.remove_prefix(7);
  for (const TypeSize& type : kTypeSizes) {
    if (!rest.starts_with(type.name)) continue;
    const std::string_view after = rest.substr(type.name.size());
    if (!after.empty() && (std::isalnum(static_cast<unsigned char>(after.front())) != 0 || after.front() == '_') &&
        !after.starts_with("on")) {
      continue;
    }
    log.tensor += " and type " + std::string(type.name);
    if (fits && (elements == 0 || elements <= ~Bytes{0} / type.size)) log.tensor_bytes = elements * type.size;
    return;
  }
}

// `failedtoallocate10.50g(11274289152bytes)fromdevice:cuda_error_out_of_memory` run together.
std::optional<Bytes> read_driver_refusal(std::string_view low) {
  const std::size_t open = low.find('(');
  if (open == std::string_view::npos || open > 16) return std::nullopt;
  Bytes bytes = 0;
  const char* first = low.data() + open + 1;
  const auto [end, error] = std::from_chars(first, low.data() + low.size(), bytes);
  if (error != std::errc{} || end == first) return std::nullopt;
  const std::string_view rest = low.substr(static_cast<std::size_t>(end - low.data()));
  if (!rest.starts_with("bytes)fromdevice")) return std::nullopt;
  if (rest.substr(0, 60).find("out_of_memory") == std::string_view::npos) return std::nullopt;
  return bytes;
}

// The whole number at the start of `text` (after spaces); nothing when there is none.
std::optional<Bytes> number_at(std::string_view text) {
  text = skip_spaces(text);
  Bytes value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end == text.data()) return std::nullopt;
  return value;
}

std::optional<Bytes> number_after(std::string_view line, std::string_view label) {
  const std::size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  return number_at(line.substr(at + label.size()));
}

std::optional<PrintedSize> size_after(std::string_view line, std::string_view label) {
  const std::size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  const std::optional<SizeAt> size = printed_size_at(skip_spaces(line.substr(at + label.size())));
  if (!size) return std::nullopt;
  return size->size;
}

std::optional<BfcChunk> read_chunk(std::string_view line) {
  BfcChunk chunk;
  std::string_view rest;
  if (line.starts_with("InUse at ") || line.starts_with("Chunk at ")) {
    chunk.in_use = true;
    rest = line.substr(9);
  } else if (line.starts_with("Free ")) {
    rest = skip_spaces(line.substr(5));
    if (!rest.starts_with("at ")) return std::nullopt;
    rest.remove_prefix(3);
  } else {
    return std::nullopt;
  }
  rest = skip_spaces(rest);
  if (rest.starts_with("0x") || rest.starts_with("0X")) rest.remove_prefix(2);
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), chunk.addr, 16);
  if (error != std::errc{}) return std::nullopt;
  const std::optional<Bytes> size = number_after(rest.substr(static_cast<std::size_t>(end - rest.data())), "of size");
  if (!size) return std::nullopt;
  chunk.size = *size;
  return chunk;
}

void read_ran_out(const std::string& joined, const std::string& low, BfcOomLog& log) {
  bool any = false;
  for (std::size_t at = low.find(kRanOut); at != std::string::npos; at = low.find(kRanOut, at + 1)) {
    any = true;
    const std::size_t size_at = at + kRanOut.size();
    const std::optional<SizeAt> size = printed_size_at(std::string_view(joined).substr(size_at));
    if (!size) continue;
    const std::string_view after = std::string_view(low).substr(size_at + size->length, 40);
    if (after.find("freed_by_count") != std::string_view::npos) continue;
    log.request = size->size;
    if (after.starts_with("(roundedto")) {
      if (const std::optional<Bytes> rounded = number_at(after.substr(10))) {
        log.request->bytes = *rounded;
        log.request->error = 0;
      }
    }
    const std::size_t open = low.rfind("allocator(", at);
    if (open != std::string::npos && at - open < 80) {
      const std::size_t close = low.find(')', open);
      if (close != std::string::npos && close < at) log.allocator = joined.substr(open + 10, close - open - 10);
    }
    return;
  }
  log.warning_only = any;
}

}  // namespace

std::optional<Bytes> tf_type_size(std::string_view name) {
  for (const TypeSize& type : kTypeSizes) {
    if (type.name == name) return type.size;
  }
  return std::nullopt;
}

bool BfcOomLog::has_chunks() const {
  for (const BfcRegion& region : regions) {
    if (!region.chunks.empty()) return true;
  }
  return false;
}

std::optional<BfcOomLog> read_bfc_oom_log(std::string_view text) {
  const std::vector<std::string_view> lines = pasted_lines(text);
  BfcOomLog log;
  const std::string joined = joined_without_spaces(lines);
  const std::string low = lower(joined);
  read_ran_out(joined, low, log);
  for (std::string_view shape : kShapes) {
    if (const std::size_t at = low.find(shape); at != std::string::npos && log.tensor.empty()) {
      read_tensor(std::string_view(low).substr(at + shape.size()), log);
    }
  }
  for (std::size_t at = low.find(kDriverFailed); at != std::string::npos; at = low.find(kDriverFailed, at + 1)) {
    if (const std::optional<Bytes> bytes = read_driver_refusal(std::string_view(low).substr(at + kDriverFailed.size()))) {
      log.device_refused.push_back(*bytes);
    }
  }
  bool stats = false;
  for (std::string_view line : lines) {
    if (std::optional<BfcChunk> chunk = read_chunk(line)) {
      if (log.regions.empty()) log.regions.emplace_back();
      log.regions.back().chunks.push_back(*chunk);
    } else if (line.starts_with("Next region of size")) {
      log.regions.push_back({number_after(line, "of size"), {}});
    } else if (line.starts_with("Bin (")) {
      BfcBin bin;
      bin.bin_size = number_at(line.substr(5)).value_or(0);
      bin.chunks = static_cast<std::size_t>(number_after(line, "Total Chunks:").value_or(0));
      bin.in_use = static_cast<std::size_t>(number_after(line, "Chunks in use:").value_or(0));
      const std::size_t in_use_at = line.find("Chunks in use:");
      if (in_use_at != std::string_view::npos) {
        const std::size_t dot = line.find('.', in_use_at);
        if (dot != std::string_view::npos) {
          if (const std::optional<SizeAt> size = printed_size_at(skip_spaces(line.substr(dot + 1)))) {
            bin.allocated_for_chunks = size->size;
          }
        }
      }
      bin.in_use_in_bin = size_after(line, "allocated for chunks.");
      log.bins.push_back(bin);
    } else if (line.find("Chunks of size") != std::string_view::npos && line.find("totalling") != std::string_view::npos) {
      const std::optional<Bytes> count = number_at(line);
      const std::optional<Bytes> size = number_after(line, "Chunks of size");
      if (count && size && (*size == 0 || *count <= ~Bytes{0} / *size)) {
        log.summary_in_use = log.summary_in_use.value_or(0) + *count * *size;
      }
    } else if (line.starts_with("Sum Total of in-use chunks:")) {
      log.sum_total_in_use = size_after(line, "chunks:");
    } else if (line.find("memory_limit_:") != std::string_view::npos) {
      log.memory_limit = number_after(line, "memory_limit_:");
      log.pool = number_after(line, "total_region_allocated_bytes_:");
      if (!log.pool) log.pool = number_after(line, "Total bytes in pool:");
    } else if (line.starts_with("Stats:")) {
      stats = true;
    } else if (line.starts_with("Limit:")) {
      log.stats_limit = number_after(line, "Limit:");
    } else if (line.starts_with("InUse:")) {
      log.stats_in_use = number_after(line, "InUse:");
    } else if (line.starts_with("Reserved:")) {
      log.stats_reserved = number_after(line, "Reserved:");
    } else if (line.starts_with("LargestFreeBlock:")) {
      log.stats_largest_free = number_after(line, "LargestFreeBlock:");
    } else if (log.op_error.empty() && (line.find("OOM when allocating tensor") != std::string_view::npos ||
                                        line.find("Dst tensor is not initialized") != std::string_view::npos)) {
      log.op_error = std::string(line.substr(0, 300));
    }
  }
  const bool anything = log.request || log.warning_only || log.has_chunks() || stats || log.stats_limit ||
                        log.memory_limit || !log.bins.empty() || !log.tensor.empty() || !log.device_refused.empty();
  if (!anything) return std::nullopt;
  return log;
}

}  // namespace allocsim
