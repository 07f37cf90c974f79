// Writing .atrace: ids renumbered to slots (the slot freed last is taken first), each
// event one record, the header written last, when the checksum and counts are known.
#include <limits>
#include <ostream>
#include <vector>

#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/slot_numbers.hpp"
#include "workloads/atrace.hpp"
#include "workloads/atrace_layout.hpp"

namespace allocsim {
namespace {

using atrace::Header;
using atrace::Record;

class PayloadWriter {
 public:
  explicit PayloadWriter(std::ostream& out) : out_(out) {}
  void write(const void* data, std::size_t bytes) {
    checksum_.add(data, bytes);
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    written_ += bytes;
  }
  void word(std::uint64_t value) { write(&value, 8); }
  // Text padded with zeros to whole words, after its length.
  void text(std::string_view text) {
    word(text.size());
    std::string padded(text);
    padded.resize((text.size() + 7) / 8 * 8, '\0');
    write(padded.data(), padded.size());
  }
  std::uint64_t written() const { return written_; }
  const atrace::Checksum& checksum() const { return checksum_; }

 private:
  std::ostream& out_;
  atrace::Checksum checksum_;
  std::uint64_t written_ = 0;
};

void write_atrace(EventSource& source, const Trace* layers_from, std::ostream& out, const std::string& name) {
  Header header{};
  out.write(reinterpret_cast<const char*>(&header), sizeof header);  // a placeholder until the end
  PayloadWriter payload(out);
  constexpr auto kNone = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> slot_of(source.slots(), kNone);  // by the source's id
  SlotNumbers slots;
  std::uint64_t allocations = 0;
  std::uint64_t events = 0;
  Nanos previous = 0;
  bool first = true;
  std::vector<Record> buffer;
  for (EventWindow window = source.next(); !window.events.empty(); window = source.next()) {
    buffer.clear();
    for (std::size_t i = 0; i < window.events.size(); ++i, ++events) {
      const Event& event = window.events[i];
      if (first) {
        header.start_time = previous = event.time;
        first = false;
      }
      const Nanos delta = event.time - previous;
      if (delta > atrace::kMaxDelta) {
        throw Error(name + ": event " + std::to_string(events) + " comes " + format_nanos(delta) +
                    " after the one before: .atrace holds gaps up to 2^56 ns");
      }
      previous = event.time;
      std::uint64_t value = 0;
      if (event.op == Op::alloc) {
        const std::uint32_t slot = slots.take();
        grow_to_hold(slot_of, index_of(event.id), kNone);
        slot_of[index_of(event.id)] = slot;
        value = window.bytes_at(i);
        ++allocations;
      } else if (event.op == Op::free) {
        const std::uint32_t slot = slot_of[index_of(event.id)];
        slots.give_back(slot);
        value = slot;
      } else if (event.op == Op::sync) {
        value = index_of(event.id);
      }
      buffer.push_back(atrace::pack(event.op, event.tag, event.stream, value, delta));
    }
    payload.write(buffer.data(), buffer.size() * sizeof(Record));
  }
  const TraceInfo& info = source.info();
  if (!info.step_starts.empty()) {
    header.flags |= atrace::kFlagSteps;
    payload.word(info.step_starts.size());
    for (const std::size_t start : info.step_starts) payload.word(start);
  }
  if (layers_from && !layers_from->layer.empty()) {
    header.flags |= atrace::kFlagLayers;
    payload.word(layers_from->layer_names.size());
    for (const std::string& layer : layers_from->layer_names) payload.text(layer);
    std::vector<std::uint32_t> layers(layers_from->layer);
    if (layers.size() % 2) layers.push_back(0);
    payload.write(layers.data(), layers.size() * sizeof(std::uint32_t));
  }
  std::memcpy(header.magic, kAtraceMagic.data(), sizeof header.magic);
  header.version = kAtraceVersion;
  header.events = events;
  header.slots = slots.extent();
  header.allocations = allocations;
  const std::optional<Bytes> lower_bound = source.live_lower_bound();
  if (!lower_bound) throw Error(name + ": the source did not say its live lower bound at its end");
  header.live_lower_bound = *lower_bound;
  header.payload_bytes = payload.written();
  atrace::Checksum checksum = payload.checksum();
  checksum.add(&header, atrace::kCheckedHeaderBytes);
  header.checksum = checksum.value();
  out.seekp(0);
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
}

}  // namespace

void write_atrace_file(EventSource& source, const std::filesystem::path& path) {
  write_file_atomically(path, [&](std::ostream& out) { write_atrace(source, source.trace(), out, path.string()); });
}

void write_atrace_file(const Trace& trace, const std::filesystem::path& path) {
  TraceSource source(std::shared_ptr<const Trace>(&trace, [](const Trace*) {}));  // borrowed for the write
  write_atrace_file(source, path);
}

}  // namespace allocsim
