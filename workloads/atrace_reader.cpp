// Reading .atrace: the header and trailer checked against the file's size before any
// record is touched, then the records decoded a window at a time, every field checked, so
// that a truncated or corrupted file is an Error naming the file and the byte offset.
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "sim/error.hpp"
#include "sim/slot_numbers.hpp"
#include "sim/event_source.hpp"
#include "workloads/atrace.hpp"
#include "workloads/atrace_layout.hpp"
#include "workloads/mapped_file.hpp"

namespace allocsim {
namespace {

using atrace::Header;
using atrace::Record;

[[noreturn]] void fail(std::string_view name, std::uint64_t offset, const std::string& what) {
  throw Error(std::string(name) + ": offset " + std::to_string(offset) + ": " + what);
}

// The header and the sections after the records, checked against the buffer's size.
struct Layout {
  Header header{};
  std::string_view records;
  std::string_view payload;  // records and trailer: what the checksum covers
  std::vector<std::size_t> step_starts;
  std::vector<std::string> layer_names;
  std::vector<std::uint32_t> layers;  // by allocation
};

class TrailerReader {
 public:
  TrailerReader(std::string_view bytes, std::uint64_t offset, std::string_view name)
      : bytes_(bytes), offset_(offset), name_(name) {}
  std::uint64_t word(const char* what) {
    if (bytes_.size() - at_ < 8) fail(name_, offset_ + at_, std::string("the file ends inside ") + what);
    std::uint64_t value = 0;
    std::memcpy(&value, bytes_.data() + at_, 8);
    at_ += 8;
    return value;
  }
  std::string_view take(std::uint64_t count, const char* what) {
    if (count > bytes_.size() - at_) fail(name_, offset_ + at_, std::string("the file ends inside ") + what);
    if (count > bytes_.size() - at_) fail(name_, offset_ + at_, std::string("the file ends inside ") + what);
    const std::uint64_t padded = (count + 7) / 8 * 8;
    if (padded > bytes_.size() - at_) fail(name_, offset_ + at_, std::string("the file ends inside ") + what);
    const std::string_view taken = bytes_.substr(at_, count);
    at_ += padded;
    return taken;
  }
  std::uint64_t offset() const { return offset_ + at_; }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::uint64_t offset_;
  std::string_view name_;
  std::size_t at_ = 0;
};

Layout read_layout(std::string_view file, std::string_view name) {
  Layout layout;
  if (file.size() < kAtraceHeaderBytes) {
    fail(name, file.size(), "the file ends inside the " + std::to_string(kAtraceHeaderBytes) + "-byte header");
  }
  Header& h = layout.header;
  std::memcpy(&h, file.data(), sizeof h);
  if (std::string_view(h.magic, 8) != kAtraceMagic) fail(name, 0, "not an .atrace file (its magic is wrong)");
  if (h.version != kAtraceVersion) {
    fail(name, 8, "version " + std::to_string(h.version) + "; this allocsim reads version " +
                      std::to_string(kAtraceVersion));
  }
  if (h.flags & ~atrace::kKnownFlags) fail(name, 12, "unknown flags " + std::to_string(h.flags));
  const std::uint64_t payload = file.size() - kAtraceHeaderBytes;
  if (h.payload_bytes != payload) {
    fail(name, file.size(), "the header says " + std::to_string(h.payload_bytes) + " payload bytes, the file has " +
                                std::to_string(payload) + (h.payload_bytes > payload ? " (truncated)" : ""));
  }
  if (h.events > payload / kAtraceRecordBytes) {
    fail(name, file.size(), "the header says " + std::to_string(h.events) + " events, the file has room for " +
                                std::to_string(payload / kAtraceRecordBytes) + " (truncated)");
  }
  if (h.events == 0) fail(name, 16, "no events");
  if (h.slots > h.allocations || h.allocations > h.events || h.allocations > std::numeric_limits<std::uint32_t>::max()) {
    fail(name, 24, "slot count " + std::to_string(h.slots) + " and allocation count " + std::to_string(h.allocations) +
                       " do not fit " + std::to_string(h.events) + " events");
  }
  layout.payload = file.substr(kAtraceHeaderBytes);
  layout.records = layout.payload.substr(0, h.events * kAtraceRecordBytes);
  const std::uint64_t trailer_offset = kAtraceHeaderBytes + layout.records.size();
  TrailerReader trailer(layout.payload.substr(layout.records.size()), trailer_offset, name);
  if (h.flags & atrace::kFlagSteps) {
    const std::uint64_t count = trailer.word("the step count");
    if (count > h.events) fail(name, trailer.offset() - 8, std::to_string(count) + " steps for " + std::to_string(h.events) + " events");
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t start = trailer.word("the step starts");
      if (start >= h.events || (i == 0 ? start != 0 : start <= layout.step_starts.back())) {
        fail(name, trailer.offset() - 8, "step " + std::to_string(i + 1) + " starts at event " + std::to_string(start) +
                                             ", not after the one before and inside the trace");
      }
      layout.step_starts.push_back(start);
    }
  }
  if (h.flags & atrace::kFlagLayers) {
    const std::uint64_t count = trailer.word("the layer count");
    if (count == 0 || count > h.allocations) fail(name, trailer.offset() - 8, std::to_string(count) + " layer names");
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t length = trailer.word("a layer name's length");
      layout.layer_names.emplace_back(trailer.take(length, "a layer name"));
    }
    const std::uint64_t offset = trailer.offset();
    const std::string_view raw = trailer.take(h.allocations * 4, "the layer of each allocation");
    layout.layers.resize(h.allocations);
    std::memcpy(layout.layers.data(), raw.data(), raw.size());
    for (std::size_t i = 0; i < layout.layers.size(); ++i) {
      if (layout.layers[i] >= count) fail(name, offset + 4 * i, "layer " + std::to_string(layout.layers[i]) + " of " + std::to_string(count));
    }
  }
  if (!trailer.done()) fail(name, trailer.offset(), "bytes after the last section");
  return layout;
}

// Decodes records a window at a time into events with slot ids, checking each against
// the slots live so far. The trailer's checksum words are added at the end.
class Decoder {
 public:
  static constexpr std::size_t kWindow = 4096;

  Decoder(const Layout& layout, std::string_view name) : layout_(layout), name_(name) {
    const Header& h = layout.header;
    slots_.resize(h.slots);
    time_ = h.start_time;
  }

  // nullopt-free: an empty window at the end. `after_window` is told how far the records
  // were read (the stream gives the pages behind back).
  EventWindow next() {
    const std::uint64_t total = layout_.header.events;
    if (done_ == total) {
      if (!finished_) finish();
      return {};
    }
    const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, total - done_));
    const char* base = layout_.records.data() + done_ * kAtraceRecordBytes;
    checksum_.add(base, count * kAtraceRecordBytes);
    for (std::size_t i = 0; i < count; ++i) {
      Record record;
      std::memcpy(&record, base + i * kAtraceRecordBytes, sizeof record);
      decode(record, done_ + i, events_[i], bytes_[i]);
    }
    done_ += count;
    return EventWindow{std::span<const Event>(events_.data(), count), bytes_.data(), nullptr};
  }
  std::uint64_t records_read() const { return done_; }
  std::uint64_t used_slots() const { return numbers_.extent(); }

 private:
  struct Slot {
    bool live = false;
    Tag tag = Tag::other;
    Stream stream = 0;
    Bytes bytes = 0;
  };

  std::uint64_t offset_of(std::uint64_t index) const { return kAtraceHeaderBytes + index * kAtraceRecordBytes; }

  void decode(const Record& record, std::uint64_t index, Event& event, Bytes& bytes) {
    const std::uint64_t delta = atrace::delta_of(record);
    if (__builtin_add_overflow(time_, delta, &time_)) fail(name_, offset_of(index), "time passes 2^64 ns");
    if (atrace::tag_bits(record) >= kTagCount || atrace::reserved_bit(record)) {
      fail(name_, offset_of(index), "a record with an unknown tag or a reserved bit set");
    }
    const auto tag = static_cast<Tag>(atrace::tag_bits(record));
    const Stream stream = atrace::stream_of(record);
    const std::uint64_t value = atrace::value_of(record);
    const Op op = atrace::op_of(record);
    bytes = 0;
    switch (op) {
      case Op::alloc: {
        if (value > kMaxRequestBytes) fail(name_, offset_of(index), "a request of more than 2^48 bytes");
        const std::uint32_t slot = numbers_.take();
        if (slot >= slots_.size()) {
          fail(name_, offset_of(index), "more allocations live at once than the header's " +
                                            std::to_string(slots_.size()) + " slots");
        }
        if (++allocations_ > layout_.header.allocations) {
          fail(name_, offset_of(index), "more allocations than the header's " + std::to_string(layout_.header.allocations));
        }
        slots_[slot] = Slot{true, tag, stream, value};
        event = Event{time_, static_cast<AllocId>(slot), stream, op, tag};
        bytes = value;
        return;
      }
      case Op::free: {
        if (value >= numbers_.extent() || !slots_[value].live) {
          fail(name_, offset_of(index), "free of slot " + std::to_string(value) + ", which is not live");
        }
        Slot& slot = slots_[value];
        if (slot.stream != stream || slot.tag != tag) {
          fail(name_, offset_of(index), "free of slot " + std::to_string(value) + " with another stream or tag than its alloc");
        }
        slot.live = false;
        numbers_.give_back(static_cast<std::uint32_t>(value));
        event = Event{time_, static_cast<AllocId>(value), stream, op, tag};
        bytes = slot.bytes;
        return;
      }
      case Op::release:
        if (value != 0 || stream != 0) fail(name_, offset_of(index), "a release with a value or stream");
        event = Event{time_, AllocId{}, 0, op, Tag::other};
        return;
      case Op::sync: {
        const auto bits = static_cast<std::uint32_t>(value);
        if (value > std::numeric_limits<std::uint32_t>::max() || (bits >> 16) > static_cast<std::uint32_t>(SyncKind::wait)) {
          fail(name_, offset_of(index), "a sync of unknown kind");
        }
        event = Event{time_, static_cast<AllocId>(bits), stream, op, Tag::other};
        return;
      }
    }
  }

  void finish() {
    finished_ = true;
    checksum_.add(layout_.payload.data() + layout_.records.size(), layout_.payload.size() - layout_.records.size());
    checksum_.add(&layout_.header, atrace::kCheckedHeaderBytes);
    if (checksum_.value() != layout_.header.checksum) fail(name_, 64, "the checksum does not match (the file is corrupted)");
    if (allocations_ != layout_.header.allocations) {
      fail(name_, 32, "the header says " + std::to_string(layout_.header.allocations) + " allocations, the records hold " +
                          std::to_string(allocations_));
    }
  }

  const Layout& layout_;
  std::string_view name_;
  std::vector<Slot> slots_;
  SlotNumbers numbers_;  // slots taken and given back, as the writer took them
  std::uint64_t allocations_ = 0;
  std::uint64_t done_ = 0;
  Nanos time_ = 0;
  bool finished_ = false;
  atrace::Checksum checksum_;
  std::array<Event, kWindow> events_;
  std::array<Bytes, kWindow> bytes_;
};

// The checksum of a layout's payload and header; `file`, when the bytes are its mapping,
// is given each window back once summed, so the file never sits in memory whole.
std::uint64_t checksum_of(const Layout& layout, std::string_view bytes, const MappedFile* file) {
  constexpr std::size_t kWindow = std::size_t{64} << 20;
  atrace::Checksum checksum;
  PagesBehind behind(file);
  const std::size_t start = static_cast<std::size_t>(layout.payload.data() - bytes.data());
  for (std::size_t at = 0; at < layout.payload.size(); at += kWindow) {
    const std::string_view window = layout.payload.substr(at, kWindow);  // whole words: kWindow is a multiple of 8
    checksum.add(window.data(), window.size());
    behind.read_to(start + at + window.size());
  }
  checksum.add(&layout.header, atrace::kCheckedHeaderBytes);
  return checksum.value();
}

// The records of one .atrace buffer as an event source: its layout checked when made,
// each window decoded and checked as it is handed out, the checksum at the end. `file`,
// when the buffer is its mapping, is given the pages behind the records read.
class AtraceRecords final : public EventSource {
 public:
  AtraceRecords(std::string_view bytes, std::string_view name, const MappedFile* file = nullptr)
      : bytes_(bytes), name_(name), file_(file), layout_(read_layout(bytes, name)), decoder_(layout_, name),
        info_(std::string(name), "atrace"), behind_(file) {
    info_.step_starts = layout_.step_starts;
  }
  AtraceRecords(const AtraceRecords&) = delete;  // the decoder reads this object's layout
  AtraceRecords& operator=(const AtraceRecords&) = delete;

  EventWindow next() override {
    const EventWindow window = decoder_.next();
    behind_.read_to(kAtraceHeaderBytes + decoder_.records_read() * kAtraceRecordBytes);
    return window;
  }
  std::size_t slots() const override { return layout_.header.slots; }
  std::uint64_t events() const override { return layout_.header.events; }
  const TraceInfo& info() const override { return info_; }
  std::optional<Bytes> live_lower_bound() const override { return layout_.header.live_lower_bound; }
  std::unique_ptr<EventSource> reopen() const override {
    return std::make_unique<AtraceRecords>(bytes_, name_, file_);
  }

  const Layout& layout() const { return layout_; }

 private:
  std::string_view bytes_;
  std::string_view name_;
  const MappedFile* file_;
  Layout layout_;
  Decoder decoder_;
  TraceInfo info_;
  PagesBehind behind_;
};

// A file's records streamed: the pages read are given back as the stream moves on (a
// replay walks the stream again from the start, for the live breakdown at the peak).
class AtraceStream final : public EventSource {
 public:
  AtraceStream(std::shared_ptr<const MappedFile> file, std::string name)
      : file_(std::move(file)), name_(std::move(name)), records_(file_->bytes(), name_, file_.get()) {}
  EventWindow next() override { return records_.next(); }
  std::size_t slots() const override { return records_.slots(); }
  std::uint64_t events() const override { return records_.events(); }
  const TraceInfo& info() const override { return records_.info(); }
  std::optional<Bytes> live_lower_bound() const override { return records_.live_lower_bound(); }
  std::unique_ptr<EventSource> reopen() const override { return std::make_unique<AtraceStream>(file_, name_); }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::string name_;
  AtraceRecords records_;
};

class AtraceStreamFactory final : public EventSourceFactory {
 public:
  explicit AtraceStreamFactory(const std::filesystem::path& path)
      : file_(std::make_shared<const MappedFile>(path)), name_(path.string()) {
    read_layout(file_->bytes(), name_);  // a bad header is an error before the run
  }
  std::unique_ptr<EventSource> open() const override { return std::make_unique<AtraceStream>(file_, name_); }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::string name_;
};

// `file`: the mapping `bytes` is, if any, given its pages back as they are read.
Trace decode_atrace(std::string_view bytes, std::string_view name, TraceProgress* progress, const MappedFile* file) {
  AtraceRecords records(bytes, name, file);
  const Layout& layout = records.layout();
  MaterialiseHooks hooks;
  if (!layout.layers.empty()) {
    hooks.layer = [&](std::size_t allocation) { return std::string_view(layout.layer_names[layout.layers[allocation]]); };
  }
  hooks.progress = progress;
  hooks.failed = [&](std::uint64_t index, const Error& error) {
    fail(name, kAtraceHeaderBytes + index * kAtraceRecordBytes, error.what());
  };
  hooks.check_whole = [&](const TraceBuilder& built) {
    if (built.live_lower_bound() != layout.header.live_lower_bound) {
      fail(name, 48, "the header's live lower bound " + format_bytes(layout.header.live_lower_bound) +
                         " is not the records' " + format_bytes(built.live_lower_bound()));
    }
  };
  // The checksum is summed as the records are decoded, so that a replay may start on the
  // first ones; it is checked at the end. A record a corruption garbled may fail first:
  // the corruption is then what the error says.
  try {
    return materialise(records, hooks);
  } catch (const Error&) {
    if (checksum_of(layout, bytes, file) != layout.header.checksum) {
      fail(name, 64, "the checksum does not match (the file is corrupted)");
    }
    throw;
  }
}

}  // namespace

Trace parse_atrace(std::string_view bytes, std::string_view name, TraceProgress* progress) {
  return decode_atrace(bytes, name, progress, nullptr);
}

Trace read_atrace_file(const std::filesystem::path& path, TraceProgress* progress) {
  const MappedFile file(path);
  return decode_atrace(file.bytes(), path.string(), progress, &file);
}

Claim claims_atrace(std::string_view spec, std::string_view head) {
  if (head.starts_with(kAtraceMagic)) return Claim::by_content;
  return spec.ends_with(".atrace") ? Claim::by_name : Claim::no;
}

std::shared_ptr<const EventSourceFactory> atrace_stream(const std::filesystem::path& path) {
  return std::make_shared<const AtraceStreamFactory>(path);
}

}  // namespace allocsim
