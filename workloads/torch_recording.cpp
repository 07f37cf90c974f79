#include "workloads/torch_recording.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "workloads/snapshot_import.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

RecordedSegment segment_from(const json& item) {
  RecordedSegment segment{item.at("addr").get<Addr>(), item.at("size").get<Bytes>(),
                          item.at("stream").get<Stream>(), item.at("pool").get<std::string>() == "small",
                          item.value("expandable", false), {}};
  for (const json& block : item.value("blocks", json::array())) {
    segment.blocks.push_back(
        RecordedBlock{block.at("addr").get<Addr>(), block.at("size").get<Bytes>(), block.at("allocated").get<bool>()});
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
    settings.roundup_power2_divisions.emplace_back(std::stoull(megabytes), divisions.get<std::uint64_t>());
  }
  std::sort(settings.roundup_power2_divisions.begin(), settings.roundup_power2_divisions.end());
  return settings;
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

TorchRecording parse_torch_sidecar(const std::string& text, const std::string& origin) {
  try {
    const json document = json::parse(text);
    TorchRecording recording;
    recording.device = document.value("device", 0);
    recording.format = document.value("format", std::string());
    for (const json& addr : document.value("addresses", json::array())) recording.addresses.push_back(addr.get<Addr>());
    for (const json& oom : document.value("ooms", json::array())) {
      recording.ooms.push_back(RecordedOom{oom.at("size").get<Bytes>(), oom.at("device_free").get<Bytes>(),
                                           oom.at("stream").get<Stream>(), oom.at("before_event").get<std::size_t>()});
    }
    for (const json& pool : document.value("private_pools", json::array())) {
      recording.private_pools.push_back(PrivatePool{pool.at("pool").get<std::string>(), pool.at("entry").get<std::string>()});
    }
    recording.settings = settings_from(document.at("allocator_settings"),
                                       document.value("allocator_settings_recorded", false));
    for (const json& block : document.at("preexisting")) {
      const json& size = block.at("block_size");
      recording.preexisting.push_back(
          PreexistingBlock{block.at("addr").get<Addr>(), block.at("size").get<Bytes>(), block.at("stream").get<Stream>(),
                           size.is_null() ? std::nullopt : std::optional<Bytes>(size.get<Bytes>())});
    }
    for (const json& item : document.at("segments_at_start")) recording.segments_at_start.push_back(segment_from(item));
    for (const json& item : document.at("segments_at_end")) recording.segments_at_end.push_back(segment_from(item));
    for (const json& event : document.at("segment_events")) {
      recording.segment_events.push_back(RecordedSegmentEvent{
          action_from(event.at("action").get<std::string>()), event.at("addr").get<Addr>(),
          event.at("size").get<Bytes>(), event.at("stream").get<Stream>(), event.at("during_event").get<std::size_t>()});
    }
    return recording;
  } catch (const json::exception& error) {
    throw Error(origin + ": the converter's settings are unreadable: " + error.what());
  }
}

TorchRecording read_torch_recording(const std::filesystem::path& pickle, std::optional<int> cuda_device) {
  ConvertedSnapshot converted = convert_torch_snapshot(pickle, cuda_device);
  TorchRecording recording = parse_torch_sidecar(converted.sidecar, pickle.string());
  recording.trace = std::move(converted.trace);
  return recording;
}

}  // namespace allocsim
