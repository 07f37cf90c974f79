#include "workloads/csv_trace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "workloads/id_renumbering.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {
namespace {

enum Column { kTime, kOp, kId, kBytes, kStream, kTag, kColumnCount };
constexpr std::array<std::string_view, kColumnCount> kColumnNames{"time_ns", "op", "id", "bytes", "stream", "tag"};
constexpr int kRequiredColumns = kStream;  // stream and tag are optional

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    const auto comma = line.find(',');
    fields.push_back(trim_line(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

class Reader {
 public:
  explicit Reader(const std::string& name) : builder_(TraceInfo{name, "csv"}) {}

  void header(std::string_view line) {
    const auto fields = split(line);
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (int column = 0; column < kColumnCount; ++column) {
        if (fields[i] == kColumnNames[column]) position_[column] = static_cast<int>(i);
      }
    }
    for (int column = 0; column < kRequiredColumns; ++column) {
      if (position_[column] < 0) {
        throw Error("header lacks column '" + std::string(kColumnNames[column]) +
                    "' (expected time_ns,op,id,bytes,stream,tag)");
      }
    }
    field_count_ = fields.size();
  }

  void row(std::string_view line) {
    const auto fields = split(line);
    if (fields.size() != field_count_) {
      throw Error(std::to_string(fields.size()) + " fields, the header has " + std::to_string(field_count_));
    }
    const auto field = [&](Column column) -> std::string_view {
      return position_[column] < 0 ? std::string_view{} : fields[position_[column]];
    };
    const Nanos time = number(field(kTime), "time_ns");
    const std::string_view op_text = field(kOp);
    const auto op = op_from_name(op_text);
    if (!op) throw Error("unknown op '" + std::string(op_text) + "' (alloc, free, release, sync)");
    switch (*op) {
      case Op::alloc:
        alloc(time, field(kId), field(kBytes), field(kStream), field(kTag));
        break;
      case Op::free:
        free(time, field(kId), field(kBytes));
        break;
      case Op::release:
        builder_.release(time);
        break;
      case Op::sync:
        builder_.sync(time, sync(field(kId), field(kStream)));
        break;
    }
  }

  Trace finish() && { return std::move(builder_).finish(); }

 private:
  static std::uint64_t number(std::string_view text, std::string_view what) {
    return parse_unsigned(text, std::string(what) + " '" + std::string(text) + "'");
  }

  static Stream stream_number(std::string_view text) {
    const std::uint64_t stream = text.empty() ? 0 : number(text, "stream");
    if (stream > 0xffff) throw Error("stream " + std::to_string(stream) + " is over 65535");
    return static_cast<Stream>(stream);
  }

  // The id column of a sync names its kind: device, stream, event, or wait:S (the row's
  // stream waits for an event recorded on stream S).
  static Sync sync(std::string_view kind_text, std::string_view stream_text) {
    const auto colon = kind_text.find(':');
    const auto kind = sync_kind_from_name(kind_text.substr(0, colon));
    if (!kind || (*kind == SyncKind::wait) != (colon != std::string_view::npos)) {
      throw Error("sync kind '" + std::string(kind_text) + "' is not device, stream, event or wait:STREAM");
    }
    Sync sync{*kind, stream_number(stream_text), 0};
    if (*kind == SyncKind::wait) sync.waits_for = stream_number(kind_text.substr(colon + 1));
    return sync;
  }

  void alloc(Nanos time, std::string_view id, std::string_view bytes_text, std::string_view stream_text,
             std::string_view tag_text) {
    if (id.empty()) throw Error("alloc without an id");
    const Bytes bytes = number(bytes_text, "bytes");
    const Stream stream = stream_number(stream_text);
    const auto tag = tag_text.empty() ? std::optional<Tag>(Tag::other) : tag_from_name(tag_text);
    if (!tag) {
      throw Error("unknown tag '" + std::string(tag_text) + "' (" + tag_names() + ")");
    }
    ids_.check_not_live(id);
    ids_.open(id, builder_.alloc(time, bytes, stream, *tag));
  }

  void free(Nanos time, std::string_view id, std::string_view bytes_text) {
    const AllocId dense = ids_.find(id);
    if (!bytes_text.empty()) {
      const Bytes bytes = number(bytes_text, "bytes");
      const Bytes allocated = builder_.bytes_of(dense);
      if (bytes != allocated) {
        throw Error("free of id " + std::string(id) + " says " + std::to_string(bytes) + " bytes, its alloc said " +
                    std::to_string(allocated));
      }
    }
    builder_.free(time, dense);
    ids_.close(id);
  }

  TraceBuilder builder_;
  std::array<int, kColumnCount> position_{-1, -1, -1, -1, -1, -1};
  std::size_t field_count_ = 0;
  IdRenumbering ids_;
};

}  // namespace

Trace parse_csv_trace(std::string_view text, const std::string& name) {
  Reader reader(name);
  bool seen_header = false;
  for_each_line(text, name, [&](std::string_view text, std::size_t) {
    if (text.front() == '#') return;
    if (seen_header) {
      reader.row(text);
    } else {
      reader.header(text);
      seen_header = true;
    }
  });
  if (!seen_header) throw Error(name + ": empty trace: no header and no events");
  try {
    return std::move(reader).finish();
  } catch (const Error& error) {
    throw Error(name + ": " + error.what());
  }
}

Trace read_csv_trace(std::istream& in, const std::string& name) { return parse_csv_trace(read_text(in, name), name); }

Trace read_csv_trace_file(const std::filesystem::path& path) { return parse_csv_trace(read_text_file(path), path.string()); }

Claim claims_csv_trace(std::string_view spec, std::string_view head) {
  if (head.starts_with(kUtf8Bom)) head.remove_prefix(kUtf8Bom.size());
  while (!head.empty()) {
    const auto end = head.find('\n');
    const std::string_view line = trim_line(head.substr(0, end));
    head.remove_prefix(end == std::string_view::npos ? head.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    const auto fields = split(line);
    const auto has = [&](std::string_view name) { return std::find(fields.begin(), fields.end(), name) != fields.end(); };
    if (has(kColumnNames[kTime]) && has(kColumnNames[kOp])) return Claim::by_content;
    break;
  }
  return spec.ends_with(".csv") ? Claim::by_name : Claim::no;
}

void write_csv_trace(const Trace& trace, std::ostream& out) {
  out << "time_ns,op,id,bytes,stream,tag\n";
  for (const Event& event : trace.events) {
    out << event.time << ',' << name_of(event.op) << ',';
    if (event.op == Op::release) {
      out << ",,,\n";
      continue;
    }
    if (event.op == Op::sync) {
      const Sync sync = sync_of(event);
      out << name_of(sync.kind);
      if (sync.kind == SyncKind::wait) out << ':' << sync.waits_for;
      out << ",," << sync.stream << ",\n";
      continue;
    }
    out << index_of(event.id) << ',' << trace.bytes_of(event.id) << ',' << event.stream << ',' << name_of(event.tag)
        << '\n';
  }
}

void write_csv_trace_file(const Trace& trace, const std::filesystem::path& path) {
  write_file_atomically(path, [&](std::ostream& out) { write_csv_trace(trace, out); });
}

}  // namespace allocsim
