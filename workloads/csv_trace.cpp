#include "workloads/csv_trace.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/slot_numbers.hpp"
#include "workloads/csv_plain_row.hpp"
#include "workloads/id_renumbering.hpp"
#include "workloads/mapped_file.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {
namespace {

enum Column { kTime, kOp, kId, kBytes, kStream, kTag, kColumnCount };
constexpr std::array<std::string_view, kColumnCount> kColumnNames{"time_ns", "op", "id", "bytes", "stream", "tag"};
constexpr int kRequiredColumns = kStream;  // stream and tag are optional

// Splits `line` at its commas into `fields`, each trimmed as trim_line() does, and returns
// how many fields the line has: at most fields.size() are stored, a longer line is counted.
// No quoting: our trace CSV has none. A byte loop: fields are a few bytes long, shorter
// than what a call to memchr pays for itself.
std::size_t split_fields(std::string_view line, std::span<std::string_view> fields) {
  const char* at = line.data();
  const char* const end = at + line.size();
  for (std::size_t count = 1;; ++count, ++at) {
    const char* const start = at;
    while (at != end && *at != ',') ++at;
    if (count <= fields.size()) fields[count - 1] = trim_line(std::string_view(start, static_cast<std::size_t>(at - start)));
    if (at == end) return count;
  }
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields(split_fields(line, {}));
  split_fields(line, fields);
  return fields;
}

// The rows of one text, parsed into a Sink: a TraceBuilder (the whole trace) or a
// SlotWindow (a stream's window). Every check and every error is the same for both.
template <class Sink>
class Reader {
 public:
  explicit Reader(Sink sink) : sink_(std::move(sink)) {}

  // A line as TextLines hands it out: a comment, the header, or a row. Ids are kept as
  // views into the line's text, which must outlive the reader.
  void line(std::string_view line) {
    if (line.front() == '#') return;
    if (seen_header_) {
      row(line);
    } else {
      header(line);
      seen_header_ = true;
    }
  }
  // The line at `at` when it is a row of our writer's plain shape under our own header
  // (csv_plain_row.hpp): where the next line starts. nullptr leaves it to line(), which
  // reads it the same way and says what is wrong.
  const char* plain_row(const char* at, const char* end) {
    PlainRow row;
    const char* const next = plain_ ? read_plain_row(at, end, row) : nullptr;
    if (!next) return nullptr;
    if (row.alloc) {
      const std::optional<Tag> tag = tag_named(row.tag);
      if (!tag) return nullptr;
      open(row.time, row.id, *row.bytes, row.stream, *tag);
    } else {
      close(row.time, row.id, ids_.take(row.id), row.bytes);
    }
    return next;
  }

  bool seen_header() const { return seen_header_; }
  Sink& sink() { return sink_; }
  const Sink& sink() const { return sink_; }
  // The lines that follow are read from `copy`, whose first byte is `home` in the text
  // (the same where the text is read in place): ids are kept as views into the text.
  void read_copy(const char* copy, const char* home) {
    copy_ = copy;
    home_ = home;
  }

  void reserve(std::size_t rows) { sink_.reserve(rows); }
  void report_to(TraceProgress& progress, std::size_t rows) { sink_.report_to(progress, rows, rows); }
  Trace finish() && { return std::move(sink_).finish(); }

 private:
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
    plain_ = std::equal(fields.begin(), fields.end(), kColumnNames.begin(), kColumnNames.end());
    // One slot past the row's fields stays empty: a column the header lacks reads it.
    fields_.assign(field_count_ + 1, std::string_view{});
    for (int& position : position_) {
      if (position < 0) position = static_cast<int>(field_count_);
    }
  }

  void row(std::string_view line) {
    const std::size_t count = split_fields(line, std::span(fields_).first(field_count_));
    if (count != field_count_) {
      throw Error(std::to_string(count) + " fields, the header has " + std::to_string(field_count_));
    }
    const auto field = [&](Column column) { return fields_[static_cast<std::size_t>(position_[column])]; };
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
        sink_.release(time);
        break;
      case Op::sync:
        sink_.sync(time, sync(field(kId), field(kStream)));
        break;
    }
  }

  // A number field: up to 19 plain digits (no overflow) read here, anything else by
  // parse_unsigned, which takes a 20-digit number and says what is wrong with a bad one.
  static std::uint64_t number(std::string_view text, std::string_view what) {
    std::uint64_t value = 0;
    bool digits = !text.empty() && text.size() <= 19;
    for (const char c : text) {
      digits &= c >= '0' && c <= '9';
      value = value * 10 + static_cast<unsigned char>(c - '0');
    }
    if (digits) return value;
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
    const std::optional<Tag> tag = tag_named(tag_text);
    if (!tag) {
      throw Error("unknown tag '" + std::string(tag_text) + "' (" + tag_names() + ")");
    }
    open(time, id, bytes, stream, *tag);
  }

  // An empty field is other.
  static std::optional<Tag> tag_named(std::string_view text) {
    return text.empty() ? std::optional<Tag>(Tag::other) : tag_from_name(text);
  }

  void open(Nanos time, std::string_view id, Bytes bytes, Stream stream, Tag tag) {
    const std::string_view kept(home_ + (id.data() - copy_), id.size());
    ids_.open_as(id, kept, [&] { return sink_.alloc(time, bytes, stream, tag); });
  }

  void free(Nanos time, std::string_view id, std::string_view bytes_text) {
    const AllocId dense = ids_.take(id);  // an id not live is said before a bad size
    close(time, id, dense, bytes_text.empty() ? std::nullopt : std::optional<Bytes>(number(bytes_text, "bytes")));
  }

  // The free of `id`, renumbered `dense`; `bytes`: what the row says it was, when it says.
  void close(Nanos time, std::string_view id, AllocId dense, std::optional<Bytes> bytes) {
    if (bytes && *bytes != sink_.bytes_of(dense)) {
      throw Error("free of id " + std::string(id) + " says " + std::to_string(*bytes) + " bytes, its alloc said " +
                  std::to_string(sink_.bytes_of(dense)));
    }
    sink_.free(time, dense);
  }

  Sink sink_;
  const char* copy_ = nullptr;  // what lines are read from (read_copy)
  const char* home_ = nullptr;  // where copy_ is in the text
  bool seen_header_ = false;
  bool plain_ = false;  // the header is ours, in our order: rows may take the plain path
  std::array<int, kColumnCount> position_{-1, -1, -1, -1, -1, -1};
  std::size_t field_count_ = 0;
  std::vector<std::string_view> fields_;  // of the current row, and the empty one after them
  IdViewRenumbering ids_;                 // views into the text being parsed
};

// Rows to reserve events for: the lines of the first MiB scaled to the whole text, a tenth
// over, so that the event vector rarely regrows (and copies itself) at the end. Reserved
// and never written, the excess costs address space, not memory.
std::size_t estimated_rows(std::string_view text) {
  constexpr std::size_t kSample = std::size_t{1} << 20;
  const std::string_view sample = text.substr(0, kSample);
  const auto lines = static_cast<double>(std::count(sample.begin(), sample.end(), '\n') + 1);
  if (sample.size() == text.size()) return static_cast<std::size_t>(lines);
  return static_cast<std::size_t>(lines * 1.1 * static_cast<double>(text.size()) / static_cast<double>(sample.size()));
}

// The lines of `text`; `file`, when the text is its mapping, counts them by reading the
// file, so that the count neither faults the mapping's pages in nor holds them.
std::size_t count_lines(std::string_view text, const MappedFile* file) {
  return 1 + (file ? file->count('\n') : static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
}

// The lines of a text, a window at a time: a text in memory is one window, itself; a mapped
// file is copied into a buffer (MappedFile::copy, within a core's L2 cache) a window of
// whole lines at a time, and read there: reading the mapping itself cost more CPU time in a
// load (docs/bench.md), and a stream held the pages it read. Lines are numbered from the
// text's first, so errors name the line in the file.
class Windows {
 public:
  Windows(std::string_view text, const MappedFile* file, const std::string& name)
      : text_(text), file_(file && file->mapped() ? file : nullptr), name_(name),
        buffer_(file_ ? std::min(kCopyWindow, text.size()) : 0), lines_(std::string_view(), name) {}

  // Moves to the next window, its lines in lines(): false at the text's end. Call it once
  // lines() is done; the window's bytes stay valid until the next call.
  bool next() {
    const std::size_t lines_before = lines_.lines();
    start_ += whole_;
    if (start_ == text_.size()) {
      whole_ = 0;
      return false;
    }
    if (!file_) {
      whole_ = text_.size();
      lines_ = TextLines(text_, name_);
      return true;
    }
    held_ -= whole_;
    std::memmove(buffer_.data(), buffer_.data() + whole_, held_);  // the start of the line after the last
    while (true) {
      held_ += file_->copy(start_ + held_, std::span(buffer_).subspan(held_));
      // The whole lines held: up to the last newline, or all of them at the text's end.
      whole_ = start_ + held_ == text_.size() ? held_ : std::string_view(buffer_.data(), held_).rfind('\n') + 1;
      if (whole_ != 0) break;
      buffer_.resize(2 * buffer_.size());  // a line longer than the buffer
    }
    const std::string_view window(buffer_.data(), whole_);
    lines_ = start_ == 0 ? TextLines(window, name_) : TextLines(window, name_, lines_before);
    return true;
  }

  TextLines& lines() { return lines_; }
  // Where the window's bytes are read from, and where the first of them is in the text.
  const char* copy() const { return file_ ? buffer_.data() : text_.data(); }
  const char* home() const { return text_.data() + start_; }
  std::size_t offset() const { return start_; }
  bool done() const { return lines_.done() && start_ + whole_ == text_.size(); }

 private:
  std::string_view text_;
  const MappedFile* file_;  // null: the text is read in place
  std::string name_;
  std::vector<char> buffer_;
  std::size_t start_ = 0;  // where the window's first byte is in the text
  std::size_t held_ = 0;   // bytes in the buffer
  std::size_t whole_ = 0;  // of them, the window's whole lines
  TextLines lines_;
};

// `file`, when the text is its mapping, is read from copies (Windows); the pages behind
// the rows parsed are handed back.
Trace parse(std::string_view text, const std::string& name, const MappedFile* file, TraceProgress* progress) {
  Reader<TraceBuilder> reader(TraceBuilder(TraceInfo{name, "csv"}));
  if (progress) {
    // Every event is a line: the lines bound the events and allocations, as report_to needs.
    reader.report_to(*progress, count_lines(text, file));
  } else {
    reader.reserve(estimated_rows(text));
  }
  Windows windows(text, file, name);
  PagesBehind behind(file);
  while (windows.next()) {
    reader.read_copy(windows.copy(), windows.home());
    windows.lines().read_while(
        [] { return true; }, [&](const char* at, const char* end) { return reader.plain_row(at, end); },
        [&](std::string_view line, std::size_t) { reader.line(line); });
    behind.read_to(windows.offset());
  }
  if (!reader.seen_header()) throw Error(name + ": empty trace: no header and no events");
  try {
    return std::move(reader).finish();
  } catch (const Error& error) {
    throw Error(name + ": " + error.what());
  }
}

// Where a stream's rows go: a window of events whose ids are slots, a freed one taken
// again first, so that what it keeps is sized by the live allocations. It checks what
// TraceBuilder checks (the reader checks the rest), with the same errors.
class SlotWindow {
 public:
  static constexpr std::size_t kCapacity = 4096;

  AllocId alloc(Nanos time, Bytes bytes, Stream stream, Tag tag) {
    check_time(time);
    check_request(events_, bytes, live_bytes_);
    const std::uint32_t slot = slots_.take();
    if (slot == by_slot_.size()) by_slot_.emplace_back();
    by_slot_[slot] = Live{bytes, stream, tag};
    live_bytes_ += bytes;
    live_lower_bound_ = std::max(live_lower_bound_, live_bytes_);
    const auto id = static_cast<AllocId>(slot);
    append(Event{time, id, stream, Op::alloc, tag}, bytes);
    return id;
  }
  void free(Nanos time, AllocId slot) {
    check_time(time);
    const Live& live = by_slot_[index_of(slot)];
    live_bytes_ -= live.bytes;
    slots_.give_back(index_of(slot));
    append(Event{time, slot, live.stream, Op::free, live.tag}, live.bytes);
  }
  void release(Nanos time) {
    check_time(time);
    append(Event{time, AllocId{}, 0, Op::release, Tag::other}, 0);
  }
  void sync(Nanos time, const Sync& sync) {
    check_time(time);
    append(Event{time, sync_id(sync), sync.stream, Op::sync, Tag::other}, 0);
  }
  Bytes bytes_of(AllocId slot) const { return by_slot_[index_of(slot)].bytes; }

  void clear() { count_ = 0; }
  bool full() const { return count_ == kCapacity; }
  EventWindow window() const { return EventWindow{std::span<const Event>(events_in_.data(), count_), bytes_in_.data()}; }
  std::uint64_t events() const { return events_; }  // so far
  std::size_t slots() const { return by_slot_.size(); }
  Bytes live_lower_bound() const { return live_lower_bound_; }  // so far

 private:
  struct Live {
    Bytes bytes = 0;
    Stream stream = 0;
    Tag tag = Tag::other;
  };

  void check_time(Nanos time) const {
    if (events_ > 0) check_event_time(events_, last_time_, time);
  }
  void append(const Event& event, Bytes bytes) {
    events_in_[count_] = event;
    bytes_in_[count_++] = bytes;
    ++events_;
    last_time_ = event.time;
  }

  std::vector<Live> by_slot_;
  SlotNumbers slots_;
  Bytes live_bytes_ = 0;
  Bytes live_lower_bound_ = 0;
  std::uint64_t events_ = 0;
  Nanos last_time_ = 0;
  std::size_t count_ = 0;  // in the window
  std::array<Event, kCapacity> events_in_;
  std::array<Bytes, kCapacity> bytes_in_;
};

// A CSV text as an event source: a window of rows parsed at each next(). `file`, when the
// text is its mapping, is given the pages behind the rows read (and kept open for reopen()).
class CsvStream final : public EventSource {
 public:
  CsvStream(std::string_view text, std::string name, std::shared_ptr<const MappedFile> file)
      : text_(text), name_(std::move(name)), file_(std::move(file)), info_(name_, "csv"),
        windows_(text, file_.get(), name_), reader_(SlotWindow{}), behind_(file_.get()) {}

  EventWindow next() override {
    SlotWindow& window = reader_.sink();
    window.clear();
    if (finished_) return window.window();
    while (!window.full() && !windows_.done()) {
      if (windows_.lines().done()) {
        if (!windows_.next()) break;
        reader_.read_copy(windows_.copy(), windows_.home());
      }
      windows_.lines().read_while([&] { return !window.full(); },
                                  [&](const char* at, const char* end) { return reader_.plain_row(at, end); },
                                  [&](std::string_view line, std::size_t) { reader_.line(line); });
    }
    behind_.read_to(windows_.offset());
    if (windows_.done()) {  // an empty text too: its errors are the whole read's
      if (!reader_.seen_header()) throw Error(name_ + ": empty trace: no header and no events");
      if (window.events() == 0) throw Error(name_ + ": empty trace: no events");
      finished_ = true;
    }
    return window.window();
  }
  std::size_t slots() const override { return reader_.sink().slots(); }  // a hint: they grow as it goes
  // Known at the end; before it (a replay stopped early), counted by reading the rest again.
  std::uint64_t events() const override {
    if (finished_) return reader_.sink().events();
    const std::unique_ptr<EventSource> again = reopen();
    while (!again->next().events.empty()) {
    }
    return again->events();
  }
  const TraceInfo& info() const override { return info_; }
  std::optional<Bytes> live_lower_bound() const override {
    if (!finished_) return std::nullopt;
    return reader_.sink().live_lower_bound();
  }
  std::unique_ptr<EventSource> reopen() const override { return std::make_unique<CsvStream>(text_, name_, file_); }

 private:
  std::string_view text_;
  std::string name_;
  std::shared_ptr<const MappedFile> file_;
  TraceInfo info_;
  Windows windows_;
  Reader<SlotWindow> reader_;
  PagesBehind behind_;
  bool finished_ = false;  // every line read, and the trace found not empty
};

class CsvStreamFactory final : public EventSourceFactory {
 public:
  explicit CsvStreamFactory(const std::filesystem::path& path)
      : file_(std::make_shared<const MappedFile>(path)), name_(path.string()) {
    open()->next();  // a bad header, or a bad row in the first window, is an error before the run
  }
  std::unique_ptr<EventSource> open() const override { return std::make_unique<CsvStream>(file_->bytes(), name_, file_); }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::string name_;
};

}  // namespace

std::unique_ptr<EventSource> csv_trace_stream(std::string_view text, const std::string& name) {
  return std::make_unique<CsvStream>(text, name, nullptr);
}

std::shared_ptr<const EventSourceFactory> csv_trace_file_stream(const std::filesystem::path& path) {
  return std::make_shared<const CsvStreamFactory>(path);
}

Trace parse_csv_trace(std::string_view text, const std::string& name) { return parse(text, name, nullptr, nullptr); }

Trace read_csv_trace(std::istream& in, const std::string& name) { return parse_csv_trace(read_text(in, name), name); }

Trace read_csv_trace_file(const std::filesystem::path& path, TraceProgress* progress) {
  const MappedFile file(path);
  return parse(file.bytes(), path.string(), &file, progress);
}

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
