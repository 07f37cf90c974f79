#include "workloads/rmm_log.hpp"

#include <array>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

#include "sim/error.hpp"
#include "workloads/id_renumbering.hpp"
#include "workloads/text_lines.hpp"
#include "workloads/time_of_day.hpp"

namespace allocsim {
namespace {

constexpr std::string_view kHeader = "Thread,Time,Action,Pointer,Size,Stream";
std::optional<std::uint64_t> parse_number(std::string_view text, int base = 10) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A pointer or stream handle as a number: hex with 0x, or as the version printed it
// (`base`: 16 at HEAD, where streams have no prefix; 10 for v0.15's decimal streams).
std::optional<std::uint64_t> parse_handle(std::string_view text, int base) {
  if (text == "(nil)" || text == "(null)" || text == "nullptr") return 0;
  if (text.starts_with("0x") || text.starts_with("0X")) return parse_number(text.substr(2), 16);
  return parse_number(text, base);
}

class RmmLogReader {
 public:
  explicit RmmLogReader(const std::string& name) : builder_(TraceInfo{name, "rmm-log"}) {}

  void row(std::string_view line, std::size_t line_number) {
    std::array<std::string_view, 6> fields;
    std::size_t count = 0;
    while (true) {
      const auto comma = line.find(',');
      if (count == fields.size()) throw Error("more than 6 fields (Thread,Time,Action,Pointer,Size,Stream)");
      fields[count++] = trim_line(line.substr(0, comma));
      if (comma == std::string_view::npos) break;
      line.remove_prefix(comma + 1);
    }
    if (count != fields.size()) throw Error(std::to_string(count) + " fields, the header has 6");
    const std::string_view thread = fields[0];
    if (!parse_number(thread)) throw Error("thread '" + std::string(thread) + "' is not a thread id");
    const Nanos time = clock_.next(parse_time_of_day(fields[1]));
    const std::string_view action = fields[2];
    const auto size = parse_number(fields[4]);
    if (!size) throw Error("size '" + std::string(fields[4]) + "' is not a non-negative integer");
    const Stream stream = stream_of(thread, fields[5]);
    if (action == "allocate") {
      const std::string pointer = pointer_key(fields[3]);
      ids_.check_not_live(pointer);
      ids_.open(pointer, builder_.alloc(time, *size, stream));
    } else if (action == "free") {
      const std::string pointer = pointer_key(fields[3]);
      const AllocId id = ids_.find(pointer);
      if (builder_.bytes_of(id) != *size) {
        throw Error("free of " + std::string(fields[3]) + " says " + std::to_string(*size) + " bytes, its allocate said " +
                    std::to_string(builder_.bytes_of(id)));
      }
      builder_.free(time, id);
      ids_.close(pointer);
    } else if (action == "allocate failure") {
      failures_.push_back(RmmFailure{builder_.size(), line_number, *size});
      builder_.free(time, builder_.alloc(time, *size, stream));
    } else {
      throw Error("unknown action '" + std::string(action) + "' (allocate, free, allocate failure)");
    }
  }

  RmmLog finish() && {
    RmmLog log{std::move(builder_).finish(), std::move(failures_), threads_.size()};
    return log;
  }

 private:
  std::string pointer_key(std::string_view text) const {
    const auto value = parse_handle(text, 16);
    if (!value || *value == 0) throw Error("pointer '" + std::string(text) + "' is not a device address");
    return format_address(*value);
  }

  Stream stream_of(std::string_view thread, std::string_view text) {
    threads_.try_emplace(std::string(thread), threads_.size());
    // A prefix-less stream is hex at HEAD and decimal in v0.15; the default (0), legacy (1)
    // and per-thread (2) handles read the same either way, and others are identities.
    const auto value = parse_handle(text, 16);
    if (!value) throw Error("stream '" + std::string(text) + "' is not a stream handle");
    if (*value <= 1) return 0;
    const std::string key = *value == 2 ? "thread " + std::string(thread) : "stream " + std::to_string(*value);
    const auto [it, added] = streams_.try_emplace(key, static_cast<Stream>(streams_.size() + 1));
    if (added && streams_.size() > 0xffff) throw Error("more than 65535 streams");
    return it->second;
  }

  TraceBuilder builder_;
  IdRenumbering ids_;
  std::vector<RmmFailure> failures_;
  std::map<std::string, std::size_t> threads_;
  std::unordered_map<std::string, Stream> streams_;
  DayClock clock_;  // the first row's time is 0
};

}  // namespace

RmmLog parse_rmm_log(std::string_view text, const std::string& name) {
  RmmLogReader reader(name);
  bool seen_header = false;
  for_each_line(text, name, [&](std::string_view text, std::size_t line_number) {
    if (seen_header) {
      reader.row(text, line_number);
    } else {
      if (text != kHeader) throw Error("header is not " + std::string(kHeader));
      seen_header = true;
    }
  });
  if (!seen_header) throw Error(name + ": empty RMM log: no header and no rows");
  try {
    return std::move(reader).finish();
  } catch (const Error& error) {
    throw Error(name + ": " + error.what());
  }
}

RmmLog read_rmm_log(std::istream& in, const std::string& name) { return parse_rmm_log(read_text(in, name), name); }

RmmLog read_rmm_log_file(const std::filesystem::path& path) { return parse_rmm_log(read_text_file(path), path.string()); }

Claim claims_rmm_log(std::string_view spec, std::string_view head) {
  if (head.starts_with(kUtf8Bom)) head.remove_prefix(kUtf8Bom.size());
  const std::string_view first = trim_line(head.substr(0, head.find('\n')));
  if (first == kHeader) return Claim::by_content;
  // RMM's Python names each device's log NAME.devN.EXT (rmm.mr._append_id), or NAME.devN.
  const auto dev = spec.rfind(".dev");
  if (dev == std::string_view::npos) return Claim::no;
  std::string_view device = spec.substr(dev + 4);
  device = device.substr(0, device.find('.'));
  const bool only_an_extension_after = spec.substr(dev + 4 + device.size()).find('/') == std::string_view::npos;
  return parse_number(device) && only_an_extension_after ? Claim::by_name : Claim::no;
}

}  // namespace allocsim
