#include "workloads/torch_recording.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/units.hpp"
#include "workloads/snapshot_import.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// A field the converter writes as a whole number that fits T. nlohmann's get<T> would cast
// a float or a negative number (undefined behaviour for a float out of range), so check.
template <class T>
T whole(const json& value, std::string_view key) {
  constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > most) {
    throw Error("'" + std::string(key) + "' is not a whole number from 0 to " +
                std::to_string(most));
  }
  return static_cast<T>(value.get<std::uint64_t>());
}
template <class T>
T whole_at(const json& item, std::string_view key) {
  return whole<T>(item.at(key), key);
}

RecordedSegment segment_from(const json& item) {
  RecordedSegment segment{whole_at<Addr>(item, "addr"), whole_at<Bytes>(item, "size"), whole_at<Stream>(item, "stream"),
                          item.at("pool").get<std::string>() == "small", item.value("expandable", false), {}};
  for (const json& block : item.value("blocks", json::array())) {
    segment.blocks.push_back(
        RecordedBlock{whole_at<Addr>(block, "addr"), whole_at<Bytes>(block, "size"), block.at("allocated").get<bool>()});
  }
  return segment;
}

RecordedSegmentEvent::Action action_from(const std::string& name) {
  using Action = RecordedSegmentEvent::Action;
  if (name == "segment_alloc") return Action::alloc;
  if (name == "segment_free") return Action::free;
  if (name == "segment_map") return Action::map;
  if (name == "segment_unmap") return Action::unmap;
  throw Error("unknown segment action '" + name + "'");
}

TorchAllocatorSettings settings_from(const json& item, bool recorded) {
  TorchAllocatorSettings settings;
  settings.recorded = recorded;
  // PyTorch reports an unlimited max_split_size as SIZE_MAX, which older builds printed as -1.
  const json max_split = item.value("max_split_size", json(-1));
  if (max_split.is_number_unsigned() && max_split.get<std::uint64_t>() < (std::uint64_t{1} << 62)) {
    settings.max_split_size = max_split.get<Bytes>();
  }
  settings.garbage_collection_threshold = item.value("garbage_collection_threshold", 0.0);
  settings.expandable_segments = item.value("expandable_segments", false);
  settings.conf = item.value("PYTORCH_CUDA_ALLOC_CONF", std::string());
  const json divisions_by_interval = item.value("roundup_power2_divisions", json::object());
  for (const auto& [megabytes, divisions] : divisions_by_interval.items()) {
    settings.roundup_power2_divisions.emplace_back(
        parse_unsigned(megabytes, "roundup_power2_divisions interval '" + megabytes + "'"),
        whole<std::uint64_t>(divisions, "roundup_power2_divisions"));
  }
  std::sort(settings.roundup_power2_divisions.begin(), settings.roundup_power2_divisions.end());
  return settings;
}

// The recording's frames as its trace's layers; nothing when the snapshot recorded none.
void name_layers(TorchRecording& recording) {
  Trace& trace = recording.trace;
  if (recording.alloc_frames.empty()) return;
  if (recording.alloc_frames.size() != trace.allocations()) {
    throw Error("'alloc_frames' has " + std::to_string(recording.alloc_frames.size()) + " entries for " +
                std::to_string(trace.allocations()) + " allocations");
  }
  trace.layer_names = recording.frames;
  const auto none = static_cast<std::uint32_t>(trace.layer_names.size());
  trace.layer.assign(trace.allocations(), none);
  bool unnamed = false;
  for (std::size_t i = 0; i < recording.alloc_frames.size(); ++i) {
    const std::int64_t frame = recording.alloc_frames[i];
    if (frame == -1) {
      unnamed = true;
    } else if (frame < 0 || frame >= static_cast<std::int64_t>(none)) {
      throw Error("'alloc_frames' names frame " + std::to_string(frame) + " of " + std::to_string(none));
    } else {
      trace.layer[i] = static_cast<std::uint32_t>(frame);
    }
  }
  if (unnamed) trace.layer_names.emplace_back(TorchRecording::kNoFrame);
}

}  // namespace

std::string_view to_string(RecordedSegmentEvent::Action action) {
  switch (action) {
    case RecordedSegmentEvent::Action::alloc: return "segment_alloc";
    case RecordedSegmentEvent::Action::free: return "segment_free";
    case RecordedSegmentEvent::Action::map: return "segment_map";
    case RecordedSegmentEvent::Action::unmap: return "segment_unmap";
  }
  return "?";
}

TorchRecording parse_torch_sidecar(std::string_view text, const std::string& origin) {
  try {
    const json document = json::parse(text);
    TorchRecording recording;
    recording.device = whole<int>(document.value("device", json(0)), "device");
    recording.format = document.value("format", std::string());
    for (const json& addr : document.value("addresses", json::array())) recording.addresses.push_back(whole<Addr>(addr, "addresses"));
    for (const json& oom : document.value("ooms", json::array())) {
      recording.ooms.push_back(RecordedOom{whole_at<Bytes>(oom, "size"), whole_at<Bytes>(oom, "device_free"),
                                           whole_at<Stream>(oom, "stream"), whole_at<std::size_t>(oom, "before_event")});
    }
    for (const json& frame : document.value("frames", json::array())) recording.frames.push_back(frame.get<std::string>());
    for (const json& frame : document.value("alloc_frames", json::array())) {
      recording.alloc_frames.push_back(frame.is_number_integer() && frame.get<std::int64_t>() == -1
                                           ? -1
                                           : static_cast<std::int64_t>(whole<std::uint32_t>(frame, "alloc_frames")));
    }
    for (const json& pool : document.value("private_pools", json::array())) {
      recording.private_pools.push_back(PrivatePool{pool.at("pool").get<std::string>(), pool.at("entry").get<std::string>()});
    }
    recording.settings = settings_from(document.at("allocator_settings"),
                                       document.value("allocator_settings_recorded", false));
    for (const json& block : document.at("preexisting")) {
      const json& size = block.at("block_size");
      recording.preexisting.push_back(
          PreexistingBlock{whole_at<Addr>(block, "addr"), whole_at<Bytes>(block, "size"), whole_at<Stream>(block, "stream"),
                           size.is_null() ? std::nullopt : std::optional<Bytes>(whole<Bytes>(size, "block_size"))});
    }
    for (const json& item : document.at("segments_at_start")) recording.segments_at_start.push_back(segment_from(item));
    for (const json& item : document.at("segments_at_end")) recording.segments_at_end.push_back(segment_from(item));
    for (const json& event : document.at("segment_events")) {
      recording.segment_events.push_back(RecordedSegmentEvent{
          action_from(event.at("action").get<std::string>()), whole_at<Addr>(event, "addr"), whole_at<Bytes>(event, "size"),
          whole_at<Stream>(event, "stream"), whole_at<std::size_t>(event, "during_event")});
    }
    return recording;
  } catch (const json::exception& error) {
    throw Error(origin + ": the converter's settings are unreadable: " + error.what());
  } catch (const Error& error) {
    throw Error(origin + ": the converter's settings are unreadable: " + error.what());
  }
}

TorchRecording parse_torch_recording(std::string_view csv, std::string_view sidecar, const std::string& pickle) {
  Trace trace = parse_converted_trace(csv, pickle);  // the trace's errors first, as they always came
  TorchRecording recording = parse_torch_sidecar(sidecar, pickle);
  recording.trace = std::move(trace);
  try {
    name_layers(recording);
  } catch (const Error& error) {
    throw Error(pickle + ": the converter's frames are unreadable: " + error.what());
  }
  return recording;
}

TorchRecording read_torch_recording(const std::filesystem::path& pickle, std::optional<int> cuda_device) {
  const ConverterOutput output = convert_snapshot_file(pickle, cuda_device);
  return parse_torch_recording(output.csv, output.sidecar, pickle.string());
}

TorchRecording read_torch_recording_bytes(std::string_view pickle_bytes, const std::string& name,
                                          std::optional<int> cuda_device) {
  const ConverterOutput output = convert_snapshot_bytes(pickle_bytes, name, cuda_device);
  return parse_torch_recording(output.csv, output.sidecar, name);
}

}  // namespace allocsim
