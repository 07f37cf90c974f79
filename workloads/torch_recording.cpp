#include "workloads/torch_recording.hpp"

#include "workloads/mapped_file.hpp"
#include "workloads/pickle_reader.hpp"
#include "workloads/python_repr.hpp"
#include "workloads/snapshot_conversion.hpp"
#include "workloads/snapshot_json.hpp"

namespace allocsim {

std::string_view to_string(RecordedSegmentEvent::Action action) {
  switch (action) {
    case RecordedSegmentEvent::Action::alloc: return "segment_alloc";
    case RecordedSegmentEvent::Action::free: return "segment_free";
    case RecordedSegmentEvent::Action::map: return "segment_map";
    case RecordedSegmentEvent::Action::unmap: return "segment_unmap";
  }
  return "?";
}

TorchRecording read_torch_recording_bytes(std::string_view pickle_bytes, const std::string& name,
                                          std::optional<int> cuda_device) {
  // A snapshot saved with json.dump is the same dict: its first byte tells which it is.
  const PickleGraph snapshot = looks_like_json(pickle_bytes) ? decode_snapshot_json(pickle_bytes, printable(name))
                                                             : decode_pickle(pickle_bytes, printable(name));
  return read_snapshot_recording(snapshot.root(), name, cuda_device);
}

TorchRecording read_torch_recording(const std::filesystem::path& pickle, std::optional<int> cuda_device) {
  const MappedFile file(pickle);
  return read_torch_recording_bytes(file.bytes(), pickle.string(), cuda_device);
}

}  // namespace allocsim
