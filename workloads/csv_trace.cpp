#include "workloads/csv_trace.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "workloads/block_ring.hpp"
#include "workloads/byte_count.hpp"
#include "workloads/csv_fields.hpp"
#include "workloads/csv_plain_row.hpp"
#include "workloads/id_renumbering.hpp"
#include "workloads/line_windows.hpp"
#include "workloads/mapped_file.hpp"
#include "workloads/split_rows.hpp"
#include "workloads/text_lines.hpp"

namespace allocsim {
namespace {

enum Column { kTime, kOp, kId, kBytes, kStream, kTag, kColumnCount };
constexpr std::array<std::string_view, kColumnCount> kColumnNames{"time_ns", "op", "id", "bytes", "stream", "tag"};
constexpr int kRequiredColumns = kStream;  // stream and tag are optional

std::vector<std::string_view> split(std::string_view line) {
  const char* const end = line.data() + line.size();
  std::vector<std::string_view> fields(split_csv_fields(line, end, {}));
  split_csv_fields(line, end, fields);
  return fields;
}

// The op and tag of every row, looked up by their length and first byte: one comparison
// with the name found there before, from_name's search only for a text not seen yet. Every
// answer is from_name's.
template <class Enum, std::optional<Enum> (*from_name)(std::string_view)>
class NameCache {
 public:
  std::optional<Enum> find(std::string_view text) {
    Entry& entry = entries_[text.empty() ? 0 : (text.size() & 15) << 4 | (text.front() & 15)];
    if (!entry.name.empty() && same_short_text(entry.name, text)) return entry.value;
    const std::optional<Enum> found = from_name(text);
    if (found && entry.name.empty()) entry = Entry{std::string(text), *found};
    return found;
  }

 private:
  struct Entry {
    std::string name;  // empty: none yet
    Enum value{};
  };
  std::array<Entry, 256> entries_;
};

// A header of ours, its columns in our order: its rows may take the plain path.
bool plain_header(const std::vector<std::string_view>& fields) {
  return std::equal(fields.begin(), fields.end(), kColumnNames.begin(), kColumnNames.end());
}

using TagCache = NameCache<Tag, tag_from_name>;

// The plain path's judgement of the row at `at` (csv_plain_row.hpp), with its tag looked up:
// false leaves the line to the general path. The same for both threads of a parse.
[[gnu::always_inline]] inline bool accept_plain_row(const char* at, TagCache& tags, PlainRow& fields, Tag& tag) {
  if (!split_plain_row(at, fields) || fields.stream > 0xffff) return false;
  if (!fields.alloc) return true;
  const std::optional<Tag> found = fields.tag.empty() ? std::optional<Tag>(Tag::other) : tags.find(fields.tag);
  if (!fields.bytes || !found) return false;
  tag = *found;
  return true;
}

// The rows of one text, parsed into a Sink: a TraceBuilder (the whole trace) or a
// SlotWindow (a stream's window). Every check and every error is the same for both.
template <class Sink>
class Reader {
 public:
  // `text`: the whole input; rows are views into it.
  Reader(Sink sink, std::string_view text)
      : sink_(std::move(sink)), text_end_(text.data() + text.size()), copy_(text.data()), home_(text.data()) {}

  // The rows that follow are read from a copy of the text, `copy` (every byte of it
  // readable), whose first byte is `home` in the text: ids are kept as views into the text.
  void read_copy(std::string_view copy, const char* home) {
    text_end_ = copy.data() + copy.size();
    copy_ = copy.data();
    home_ = home;
  }

  // A line for on_line (TextLines): a comment, the header, or a row the plain path left.
  void line(std::string_view line) {
    if (line.front() == '#') return;
    if (seen_header_) {
      row(line);
    } else {
      header(line);
      seen_header_ = true;
    }
  }
  bool seen_header() const { return seen_header_; }
  Sink& sink() { return sink_; }
  const Sink& sink() const { return sink_; }

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
    plain_ = plain_header(fields);
    // One slot past the row's fields stays empty: a column the header lacks reads it.
    fields_.assign(field_count_ + 1, std::string_view{});
    for (int& position : position_) {
      if (position < 0) position = static_cast<int>(field_count_);
    }
  }

  // The row starting at `at` when it is an alloc or free of the plain shape our writer
  // gives (csv_plain_row.hpp), under our own header: where the next line starts. nullptr
  // leaves the line to row(), which judges it the same way and says what is wrong.
  const char* plain_row(const char* at) {
    if (!plain_ || text_end_ - at < static_cast<std::ptrdiff_t>(kPlainRowReach)) return nullptr;
    PlainRow fields;
    Tag tag = Tag::other;
    if (!accept_plain_row(at, tags_, fields, tag)) return nullptr;
    if (fields.alloc) {
      open(fields.time, fields.id, *fields.bytes, static_cast<Stream>(fields.stream), tag);
    } else {
      close(fields.time, fields.id, ids_.take(fields.id), fields.bytes);
    }
    return fields.next;
  }

  // A row of `block` as RowSplitter split it: what plain_row() or line() does with it.
  void split_row(const SplitBlock& block, const SplitRow& row) {
    switch (static_cast<SplitRow::Kind>(row.kind)) {
      case SplitRow::Kind::alloc: {
        const std::string_view id = block.id_of(row);
        ids_.open_as(id, std::string_view(block.home_of(row), id.size()), block.key_of(row), [&] {
          return sink_.alloc(row.time, row.bytes, static_cast<Stream>(row.stream), static_cast<Tag>(row.tag));
        });
        break;
      }
      case SplitRow::Kind::free: {
        const std::string_view id = block.id_of(row);
        close(row.time, id, ids_.take(id, block.key_of(row)),
              row.has_bytes ? std::optional<Bytes>(row.bytes) : std::nullopt);
        break;
      }
      case SplitRow::Kind::line: {
        read_copy(block.held_from(row), block.home_of(row));
        line(block.line_of(row));
        break;
      }
    }
  }

  void row(std::string_view line) {
    const std::size_t count = split_csv_fields(line, text_end_, std::span(fields_).first(field_count_));
    if (count != field_count_) {
      throw Error(std::to_string(count) + " fields, the header has " + std::to_string(field_count_));
    }
    const auto field = [&](Column column) { return fields_[static_cast<std::size_t>(position_[column])]; };
    const Nanos time = number(field(kTime), "time_ns");
    const std::string_view op_text = field(kOp);
    const auto op = ops_.find(op_text);
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

  void reserve(std::size_t rows) { sink_.reserve(rows); }
  void report_to(TraceProgress& progress, std::size_t rows) { sink_.report_to(progress, rows, rows); }
  Trace finish() && { return std::move(sink_).finish(); }

 private:
  // A number field: plain digits (every row's) the fast way, anything else through
  // parse_unsigned, which takes a 20-digit number and says what is wrong with a bad one.
  std::uint64_t number(std::string_view text, std::string_view what) const {
    if (const std::optional<std::uint64_t> value = csv_digits(text, text_end_)) return *value;
    return parse_unsigned(text, std::string(what) + " '" + std::string(text) + "'");
  }

  Stream stream_number(std::string_view text) const {
    const std::uint64_t stream = text.empty() ? 0 : number(text, "stream");
    if (stream > 0xffff) throw Error("stream " + std::to_string(stream) + " is over 65535");
    return static_cast<Stream>(stream);
  }

  // The id column of a sync names its kind: device, stream, event, or wait:S (the row's
  // stream waits for an event recorded on stream S).
  Sync sync(std::string_view kind_text, std::string_view stream_text) const {
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
    const auto tag = tag_text.empty() ? std::optional<Tag>(Tag::other) : tags_.find(tag_text);
    if (!tag) {
      throw Error("unknown tag '" + std::string(tag_text) + "' (" + tag_names() + ")");
    }
    open(time, id, bytes, stream, *tag);
  }

  void open(Nanos time, std::string_view id, Bytes bytes, Stream stream, Tag tag) {
    const std::string_view kept(home_ + (id.data() - copy_), id.size());
    ids_.open_as(id, kept, [&] { return sink_.alloc(time, bytes, stream, tag); });
  }

  void free(Nanos time, std::string_view id, std::string_view bytes_text) {
    const AllocId dense = ids_.take(id);
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
  const char* text_end_;  // what may be read of the rows' buffer
  const char* copy_;      // the buffer rows are read from (read_copy), or the text
  const char* home_;      // where copy_ is in the text
  bool seen_header_ = false;
  std::array<int, kColumnCount> position_{-1, -1, -1, -1, -1, -1};
  std::size_t field_count_ = 0;
  bool plain_ = false;  // the header is ours, in our order: rows may take the plain path
  std::vector<std::string_view> fields_;  // of the current row, and the empty one after them
  IdViewRenumbering ids_;                 // views into the text being parsed
  NameCache<Op, op_from_name> ops_;
  TagCache tags_;
};

// Rows to reserve events for: the lines of the first MiB scaled to the whole text, a tenth
// over, so that the event vector rarely regrows (and copies itself) at the end. Reserved
// and never written, the excess costs address space, not memory.
std::size_t estimated_rows(std::string_view text) {
  constexpr std::size_t kSample = std::size_t{1} << 20;
  const std::string_view sample = text.substr(0, kSample);
  const auto lines = static_cast<double>(count_byte(sample, '\n') + 1);
  if (sample.size() == text.size()) return static_cast<std::size_t>(lines);
  return static_cast<std::size_t>(lines * 1.1 * static_cast<double>(text.size()) / static_cast<double>(sample.size()));
}

// The lines of `text`; `file`, when the text is its mapping, counts them by reading the
// file, so that the count neither faults the mapping's pages in nor holds them.
std::size_t count_lines(std::string_view text, const MappedFile* file) {
  return 1 + (file ? file->count('\n') : count_byte(text, '\n'));
}

// The second thread of a two-thread parse: it reads the text's lines (LineWindows), splits
// every row the plain path takes (accept_plain_row) into a SplitRow and hands them on in
// blocks, every other line as its text, for the first thread to renumber and build
// (Reader::split_row). It judges nothing else: every error is the first thread's.
class RowSplitter {
 public:
  static constexpr std::size_t kBlocks = 8;

  // `rows`: a block's rows, SplitBlock::kMostRows at most.
  RowSplitter(BlockRing<SplitBlock>& ring, std::size_t rows) : ring_(ring), rows_(rows) {}

  // The lines of `text`, until the last, until the ring stops, or until the header shows
  // rows that cannot take the plain path (two threads would gain nothing); closes the ring.
  void run(std::string_view text, const MappedFile* file, const std::string& name) {
    try {
      LineWindows lines(text, file, name);
      PagesBehind behind(file);
      while (block_ && lines.next()) {
        copy_ = lines.held().data();
        copy_end_ = copy_ + lines.held().size();
        home_ = lines.home();
        lines.part().read_while([&] { return block_ != nullptr; }, [&](const char* at) { return take_row(at); },
                                [&](std::string_view line, std::size_t) { take_line(line); });
        behind.read_to(lines.offset());
      }
      if (block_ && block_->count > 0) hand_over();
      complete_ = block_ != nullptr;
    } catch (...) {  // out of memory, a line of 4 GiB: the one-thread parse meets it again
    }
    ring_.close();
  }
  // Every line handed over: false when run() stopped early, for whatever reason.
  bool complete() const { return complete_; }

 private:
  const char* take_row(const char* at) {
    if (!plain_ || copy_end_ - at < static_cast<std::ptrdiff_t>(kPlainRowReach)) return nullptr;
    PlainRow fields;
    Tag tag = Tag::other;
    if (!accept_plain_row(at, tags_, fields, tag)) return nullptr;
    SplitRow row{};
    row.time = fields.time;
    row.bytes = fields.bytes.value_or(0);
    row.has_bytes = fields.bytes.has_value();
    row.stream = static_cast<std::uint32_t>(fields.stream);
    row.size = static_cast<std::uint32_t>(fields.id.size());
    row.kind = static_cast<std::uint32_t>(fields.alloc ? SplitRow::Kind::alloc : SplitRow::Kind::free);
    row.tag = static_cast<std::uint32_t>(tag);
    if (!place(row, fields.id)) return fields.next;
    if (fields.id.size() > 8) {
      row.word = block_->text.size();
      block_->text.append(fields.id);
    } else {
      row.word = short_id_word(fields.id);
    }
    add(row);
    return fields.next;
  }

  void take_line(std::string_view line) {
    if (!seen_header_ && line.front() != '#') {  // the header, as Reader::line finds it
      seen_header_ = true;
      plain_ = plain_header(split(line));
      if (!plain_) block_ = nullptr;  // every row would be a line to parse on the other thread
    }
    if (!block_) return;
    if (line.size() > std::numeric_limits<std::uint32_t>::max() - block_->text.size()) {
      throw std::length_error("a line too long for a two-thread parse");
    }
    SplitRow row{};
    row.kind = static_cast<std::uint32_t>(SplitRow::Kind::line);
    if (!place(row, line)) return;
    row.bytes = block_->text.size() | std::uint64_t{line.size()} << 32;
    block_->text.append(line);
    add(row);
  }

  // Sets where `text` (a view into the window) lies in the text, from the block's home;
  // a block whose rows would lie too far apart for that (past a line of GiBs) is handed on
  // first. False when the ring has stopped meanwhile: no block is left to put the row in.
  bool place(SplitRow& row, std::string_view text) {
    const char* const home = home_ + (text.data() - copy_);
    if (block_->count > 0 && static_cast<std::size_t>(home - block_->home) > std::numeric_limits<std::uint32_t>::max()) {
      hand_over();
      block_ = next_block();
      if (!block_) return false;
    }
    if (block_->count == 0) block_->home = home;
    row.home = static_cast<std::uint32_t>(home - block_->home);
    return true;
  }

  // Into the block; the block handed on once full.
  void add(const SplitRow& row) {
    put_split_row(&block_->rows[block_->count++], row);
    if (!block_->full()) return;
    hand_over();
    block_ = next_block();
  }
  void hand_over() {
    publish_split_rows();
    ring_.filled();
  }

  SplitBlock* next_block() {
    SplitBlock* const block = ring_.to_fill();
    if (block) {
      block->make_room(rows_);
      block->count = 0;
      block->text.clear();
    }
    return block;
  }

  BlockRing<SplitBlock>& ring_;
  std::size_t rows_;
  SplitBlock* block_ = next_block();  // null once the ring has stopped
  const char* copy_ = nullptr;        // the window's bytes, as LineWindows holds them
  const char* copy_end_ = nullptr;
  const char* home_ = nullptr;  // where copy_ is in the text
  bool seen_header_ = false;
  bool plain_ = false;
  bool complete_ = false;
  TagCache tags_;
};

// Every block the splitter hands over, into `reader`: false at the first Error. Any
// exception stops the ring, so that the splitter stops too.
bool read_split_rows(BlockRing<SplitBlock>& ring, Reader<TraceBuilder>& reader) {
  try {
    while (const SplitBlock* block = ring.to_take()) {
      for (const SplitRow& row : block->filled()) reader.split_row(*block, row);
      ring.taken();
    }
    return true;
  } catch (const Error&) {
    ring.stop();
    return false;
  } catch (...) {
    ring.stop();
    throw;
  }
}

// The whole parse of a text on two threads: this one renumbers and builds what the other
// splits (RowSplitter). nullopt for a text with any error, and where the splitter stopped
// early or could not start: the one-thread parse then reads it, and says what is wrong as
// it always has.
std::optional<Trace> parse_on_two_threads(std::string_view text, const std::string& name, const MappedFile* file) {
  Reader<TraceBuilder> reader(TraceBuilder(TraceInfo{name, "csv"}), text);
  reader.reserve(estimated_rows(text));
  // The ring on the heap, the splitter on its own thread's stack: nothing either thread
  // writes shares a cache line with what the other reads at every row (this thread's stack
  // frames are written all the time).
  const auto ring = std::make_unique<BlockRing<SplitBlock>>(RowSplitter::kBlocks);
  bool complete = false;
  bool read = false;
  {
    std::jthread splitting;
    try {
      splitting = std::jthread([&] {
        RowSplitter splitter(*ring, std::clamp<std::size_t>(text.size() / 64, 16, SplitBlock::kMostRows));
        splitter.run(text, file, name);
        complete = splitter.complete();
      });
    } catch (const std::system_error&) {
      return std::nullopt;  // no thread to be had
    }
    read = read_split_rows(*ring, reader);
  }  // the splitter joined: what it wrote is ours to read
  if (!read || !complete || !reader.seen_header()) return std::nullopt;
  try {
    return std::move(reader).finish();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Two threads only where both are worth having: a text of some MiB, a second core.
bool two_threads_pay(std::string_view text, CsvThreads threads) {
  constexpr std::size_t kTwoThreadText = std::size_t{4} << 20;
  if (threads != CsvThreads::automatic) return threads == CsvThreads::two;
  return text.size() >= kTwoThreadText && std::thread::hardware_concurrency() >= 2;
}

// `file`, when the text is its mapping, is parsed from copies of it (LineWindows). The ids
// kept are views into the mapping, read again only where a long id is compared at its
// free; the pages behind the rows parsed are handed back as the parse goes.
Trace parse(std::string_view text, const std::string& name, const MappedFile* file, TraceProgress* progress,
            CsvThreads threads) {
  if (!progress && two_threads_pay(text, threads)) {
    if (std::optional<Trace> trace = parse_on_two_threads(text, name, file)) return std::move(*trace);
  }
  Reader<TraceBuilder> reader(TraceBuilder(TraceInfo{name, "csv"}), text);
  if (progress) {
    // Every event is a line: the lines bound the events and allocations, as report_to needs.
    reader.report_to(*progress, count_lines(text, file));
  } else {
    reader.reserve(estimated_rows(text));
  }
  LineWindows lines(text, file, name);
  PagesBehind behind(file);
  while (lines.next()) {
    reader.read_copy(lines.held(), lines.home());
    lines.part().read_while([] { return true; }, [&](const char* at) { return reader.plain_row(at); },
                            [&](std::string_view line, std::size_t) { reader.line(line); });
    behind.read_to(lines.offset());
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
    std::uint32_t slot = 0;
    if (free_slots_.empty()) {
      slot = static_cast<std::uint32_t>(by_slot_.size());
      by_slot_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
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
    free_slots_.push_back(index_of(slot));
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
  std::vector<std::uint32_t> free_slots_;
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
        lines_(text, file_.get(), name_), reader_(SlotWindow{}, text), behind_(file_.get()) {}

  EventWindow next() override {
    SlotWindow& window = reader_.sink();
    window.clear();
    if (finished_) return window.window();
    while (!window.full() && !lines_.done()) {
      if (lines_.part().done()) {
        if (!lines_.next()) break;
        reader_.read_copy(lines_.held(), lines_.home());
      }
      lines_.part().read_while([&] { return !window.full(); }, [&](const char* at) { return reader_.plain_row(at); },
                               [&](std::string_view line, std::size_t) { reader_.line(line); });
    }
    behind_.read_to(lines_.offset());
    if (lines_.done()) {  // an empty text too: its errors are the whole read's
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
  LineWindows lines_;
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

Trace parse_csv_trace(std::string_view text, const std::string& name, CsvThreads threads) {
  return parse(text, name, nullptr, nullptr, threads);
}

Trace read_csv_trace(std::istream& in, const std::string& name) { return parse_csv_trace(read_text(in, name), name); }

Trace read_csv_trace_file(const std::filesystem::path& path, TraceProgress* progress, CsvThreads threads) {
  const MappedFile file(path);
  return parse(file.bytes(), path.string(), &file, progress, threads);
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
