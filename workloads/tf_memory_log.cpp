#include "workloads/tf_memory_log.hpp"

#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <unordered_map>
#include <vector>

#include "sim/error.hpp"
#include "workloads/device_choice.hpp"
#include "workloads/text_lines.hpp"
#include "workloads/time_of_day.hpp"

namespace allocsim {
namespace {

constexpr std::string_view kLabel = "__LOG_MEMORY__";

// A message in protobuf's text format, one line (ShortDebugString): `name: value` and
// `name { ... }`, nested. Fields land in a flat map under dotted paths
// ("tensor.allocation_description.allocation_id"); a repeated field keeps its last value,
// which is enough here (the repeated fields are shape dims, never read).
class TextFormat {
 public:
  explicit TextFormat(std::string_view text) : text_(text) {}

  std::map<std::string, std::string> parse() && {
    fields("");
    skip_spaces();
    if (pos_ != text_.size()) throw error("unexpected '" + std::string(1, text_[pos_]) + "'");
    return std::move(values_);
  }

 private:
  Error error(const std::string& what) const {
    return Error("bad proto text at column " + std::to_string(pos_ + 1) + ": " + what);
  }

  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  // Fields until a '}' (left for the caller) or the end.
  void fields(const std::string& prefix) {
    if (++depth_ > 64) throw error("nested more than 64 deep");
    while (true) {
      skip_spaces();
      if (pos_ == text_.size() || text_[pos_] == '}') break;
      const std::string name = prefix + identifier();
      skip_spaces();
      if (pos_ < text_.size() && text_[pos_] == ':') {
        ++pos_;
        skip_spaces();
      }
      if (pos_ < text_.size() && text_[pos_] == '{') {
        ++pos_;
        fields(name + ".");
        if (pos_ == text_.size()) throw error("'{' without its '}'");
        ++pos_;
      } else {
        values_[name] = scalar();
      }
    }
    --depth_;
  }

  std::string identifier() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ == start) throw error("expected a field name");
    return std::string(text_.substr(start, pos_ - start));
  }

  // A quoted string (C escapes kept but for \" and \\), or a bare number or enum name.
  std::string scalar() {
    if (pos_ == text_.size()) throw error("a field without a value");
    const char quote = text_[pos_];
    if (quote == '"' || quote == '\'') {
      std::string value;
      for (++pos_; pos_ < text_.size() && text_[pos_] != quote; ++pos_) {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
          ++pos_;
          if (text_[pos_] != quote && text_[pos_] != '\\') value += '\\';
        }
        value += text_[pos_];
      }
      if (pos_ == text_.size()) throw error("a string without its closing quote");
      ++pos_;
      return value;
    }
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != '{' &&
           text_[pos_] != '}') {
      ++pos_;
    }
    if (pos_ == start) throw error("a field without a value");
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, std::string> values_;
};

enum class Kind : std::uint8_t { step, alloc, free };

struct Record {
  Kind kind;
  std::size_t line;
  Nanos time;
  std::string allocator;
  std::uint64_t id = 0;
  Bytes bytes = 0;
  std::string layer;
};

// log_memory.proto is proto3: a field at its default (0, "", false) is not printed.
std::uint64_t number(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto found = fields.find(key);
  return found == fields.end() ? 0 : parse_unsigned(found->second, key + " '" + found->second + "'");
}

std::string text(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto found = fields.find(key);
  return found == fields.end() ? std::string() : found->second;
}

// The time of day in the line's prefix, if it has one TensorFlow or glog writes.
std::optional<Nanos> prefix_time(std::string_view prefix) {
  std::string_view time;
  if (prefix.size() >= 26 && prefix[4] == '-' && prefix[7] == '-' && prefix[10] == ' ') {
    time = prefix.substr(11);  // 2024-05-01 10:00:00.123456: I tensorflow/...
  } else if (prefix.size() >= 21 && std::string_view("IWEF").find(prefix[0]) != std::string_view::npos &&
             prefix[5] == ' ') {
    time = prefix.substr(6);  // I0501 10:00:00.123456  1234 file.cc:28]
  } else {
    return std::nullopt;
  }
  time = time.substr(0, time.find_first_of(": ", 8));
  try {
    return parse_time_of_day(time);
  } catch (const Error&) {
    return std::nullopt;
  }
}

class TfLogReader {
 public:
  void line(std::string_view line, std::size_t line_number) {
    const auto label = line.find(kLabel);
    if (label == std::string_view::npos) return;
    if (const auto of_day = prefix_time(line.substr(0, label))) time_ = clock_.next(*of_day);
    std::string_view rest = line.substr(label + kLabel.size());
    const auto open = rest.find('{');
    const auto close = rest.rfind('}');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      throw Error("a __LOG_MEMORY__ line without a { proto }");
    }
    const std::string_view type = trim_line(rest.substr(0, open));
    const auto fields = TextFormat(rest.substr(open + 1, close - open - 1)).parse();
    Record record{Kind::step, line_number, time_, {}, 0, 0, {}};
    if (type == "MemoryLogStep") {
      records_.push_back(std::move(record));
    } else if (type == "MemoryLogTensorAllocation") {
      const std::string prefix = "tensor.allocation_description.";
      record.kind = Kind::alloc;
      record.allocator = text(fields, prefix + "allocator_name");
      record.id = number(fields, prefix + "allocation_id");
      record.bytes = number(fields, prefix + "requested_bytes");
      record.layer = text(fields, "kernel_name");
      records_.push_back(std::move(record));
    } else if (type == "MemoryLogRawAllocation") {
      record.kind = Kind::alloc;
      record.allocator = text(fields, "allocator_name");
      record.id = number(fields, "allocation_id");
      record.bytes = number(fields, "num_bytes");
      record.layer = text(fields, "operation");
      records_.push_back(std::move(record));
    } else if (type == "MemoryLogTensorDeallocation" || type == "MemoryLogRawDeallocation") {
      record.kind = Kind::free;
      record.allocator = text(fields, "allocator_name");
      record.id = number(fields, "allocation_id");
      records_.push_back(std::move(record));
    } else if (type != "MemoryLogTensorOutput") {
      throw Error("unknown record '" + std::string(type) +
                  "' (MemoryLogStep, MemoryLogTensorAllocation, MemoryLogTensorDeallocation, MemoryLogTensorOutput, "
                  "MemoryLogRawAllocation, MemoryLogRawDeallocation)");
    }
  }

  TfMemoryLog finish(const std::string& name, std::optional<int> cuda_device) && {
    if (records_.empty()) throw Error(name + ": no __LOG_MEMORY__ lines (run with TF_CPP_VMODULE=log_memory=2)");
    std::map<int, std::size_t> counts;
    std::map<int, std::string> allocator_of;
    std::string others;
    for (const Record& record : records_) {
      if (record.kind != Kind::alloc) continue;
      const auto device = gpu_of(record.allocator);
      if (!device) {
        if (others.find(record.allocator) == std::string::npos) others += (others.empty() ? "" : ", ") + record.allocator;
        continue;
      }
      const auto [it, added] = allocator_of.try_emplace(*device, record.allocator);
      if (!added && it->second != record.allocator) {
        throw Error(name + ":" + std::to_string(record.line) + ": GPU " + std::to_string(*device) + " has two allocators, " +
                    it->second + " and " + record.allocator);
      }
      ++counts[*device];
    }
    if (counts.empty()) {
      throw Error(name + ": no allocations of a GPU allocator (GPU_N_bfc)" + (others.empty() ? "" : "; allocators: " + others));
    }
    const int device = choose_device(counts, cuda_device, name, "allocations");
    TfMemoryLog log;
    log.allocator = allocator_of.at(device);
    TraceBuilder builder(TraceInfo{name, "tf-memory-log"});
    std::unordered_map<std::uint64_t, AllocId> live;
    bool step_pending = false;  // a step began; its first event is the next one kept
    for (const Record& record : records_) {
      try {
        if (record.kind == Kind::step) {
          step_pending = true;
          continue;
        }
        if (record.allocator != log.allocator) {
          ++log.other_allocators;
          continue;
        }
        if (record.id == 0) {
          throw Error("allocation id 0: " + log.allocator +
                      " numbers no allocations (only allocators that track sizes do, as BFC does)");
        }
        const auto found = live.find(record.id);
        const bool adds_event = record.kind == Kind::free ? found != live.end() : found == live.end();
        if (adds_event && step_pending) {
          builder.begin_step();
          step_pending = false;
        }
        if (record.kind == Kind::free) {
          if (found == live.end()) {
            ++log.unmatched_frees;
            continue;
          }
          builder.free(record.time, found->second);
          live.erase(found);
          continue;
        }
        if (found != live.end()) {
          if (builder.bytes_of(found->second) != record.bytes) {
            throw Error("allocation id " + std::to_string(record.id) + " of " + std::to_string(record.bytes) +
                        " B while it is live with " + std::to_string(builder.bytes_of(found->second)) + " B");
          }
          ++log.repeated_allocations;
          continue;
        }
        live.emplace(record.id, builder.alloc(record.time, record.bytes, 0, Tag::other, record.layer));
      } catch (const Error& error) {
        throw Error(name + ":" + std::to_string(record.line) + ": " + error.what());
      }
    }
    if (builder.size() == 0) throw Error(name + ": " + log.allocator + " has no allocations");
    log.trace = std::move(builder).finish();
    return log;
  }

 private:
  // GPU_0_bfc -> 0; the CPU's and pinned host allocators are none.
  static std::optional<int> gpu_of(std::string_view allocator) {
    if (!allocator.starts_with("GPU_")) return std::nullopt;
    allocator.remove_prefix(4);
    int device = 0;
    const auto [end, ec] = std::from_chars(allocator.data(), allocator.data() + allocator.size(), device);
    if (ec != std::errc{} || end == allocator.data() || device < 0) return std::nullopt;
    return device;
  }

  std::vector<Record> records_;
  DayClock clock_;
  Nanos time_ = 0;
};

}  // namespace

TfMemoryLog parse_tf_memory_log(std::string_view text, const std::string& name, std::optional<int> cuda_device) {
  TfLogReader reader;
  for_each_line(text, name, [&](std::string_view line, std::size_t line_number) { reader.line(line, line_number); });
  return std::move(reader).finish(name, cuda_device);
}

TfMemoryLog read_tf_memory_log(std::istream& in, const std::string& name, std::optional<int> cuda_device) {
  return parse_tf_memory_log(read_text(in, name), name, cuda_device);
}

TfMemoryLog read_tf_memory_log_file(const std::filesystem::path& path, std::optional<int> cuda_device) {
  return parse_tf_memory_log(read_text_file(path), path.string(), cuda_device);
}

Claim claims_tf_memory_log(std::string_view spec, std::string_view head) {
  if (head.find(kLabel) != std::string_view::npos) return Claim::by_content;
  return spec.ends_with(".log") ? Claim::by_name : Claim::no;
}

}  // namespace allocsim
