#include "workloads/catalogue.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "workloads/atrace.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/rmm_log.hpp"
#include "workloads/frag_trace.hpp"
#include "workloads/kineto_trace.hpp"
#include "workloads/tf_memory_log.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/model/spec_lowering.hpp"
#include "workloads/random_trace.hpp"
#include "workloads/snapshot_import.hpp"

namespace allocsim {
namespace {

Trace make_random(const Params& params, std::string_view spec) {
  return make_random_trace(random_trace_options(params), std::string(spec));
}
std::shared_ptr<const EventSourceFactory> stream_random(const Params& params, std::string_view spec) {
  return random_trace_stream(random_trace_options(params), std::string(spec));
}

const std::array kWorkloads{
    WorkloadInfo{"random", "seeded random requests around a target of live bytes, to exercise policies at scale",
                 kRandomTraceParams, "random:n=100000,seed=7,live=2GiB", make_random, stream_random},
    WorkloadInfo{"frag", "traces that cut free memory into holes: the seed article's case, alternating, sawtooth, "
                 "padded vs bucketed sequences",
                 kFragTraceParams, "frag:pattern=seed",
                 [](const Params& params, std::string_view spec) { return make_frag_trace(params, std::string(spec)); },
                 nullptr},
};

Trace read_csv(const std::filesystem::path& path, const LoadOptions& options) {
  if (options.cuda_device) throw Error(path.string() + ": --cuda-device is for PyTorch snapshots, not CSV traces");
  return read_csv_trace_file(path, options.progress);
}
Trace read_rmm(const std::filesystem::path& path, const LoadOptions& options) {
  if (options.cuda_device) throw Error(path.string() + ": --cuda-device is for PyTorch snapshots, not RMM logs");
  return read_rmm_log_file(path).trace;
}
Trace read_kineto(const std::filesystem::path& path, const LoadOptions& options) {
  return read_kineto_trace_file(path, options.cuda_device).trace;
}
Trace read_tf_log(const std::filesystem::path& path, const LoadOptions& options) {
  return read_tf_memory_log_file(path, options.cuda_device).trace;
}
Trace read_atrace(const std::filesystem::path& path, const LoadOptions& options) {
  if (options.cuda_device) throw Error(path.string() + ": --cuda-device is for PyTorch snapshots, not .atrace traces");
  return read_atrace_file(path, options.progress);
}
Trace read_snapshot(const std::filesystem::path& path, const LoadOptions& options) {
  return read_torch_snapshot(path, options);
}

const std::array kReaders{
    ReaderInfo{"csv", "our trace CSV: header time_ns,op,id,bytes,stream,tag (stream and tag optional); op is alloc, "
               "free, release or sync (id column: device, stream, event or wait:S); a free may leave bytes empty; ids "
               "are any text and may be reused after their free; '#' starts a comment; streams (--stream) without loading it",
               Framework::none, Holds::requests, claims_csv_trace, read_csv, csv_trace_file_stream},
    ReaderInfo{"atrace", "allocsim's binary trace (header magic \\x89ATRACE): 16 bytes per event, memory-mapped, "
               "checksummed; streams (--stream) without loading it, faster than CSV",
               Framework::none, Holds::requests, claims_atrace, read_atrace, atrace_stream},
    ReaderInfo{"torch-snapshot", "a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot pickle), read "
               "by an unpickler that takes plain data only (globals, calls, objects refused by name); or the same "
               "dict saved with json.dump",
               Framework::torch, Holds::allocator_state, claims_torch_snapshot, read_snapshot, nullptr},
    ReaderInfo{"rmm-log", "a RAPIDS RMM logging_resource_adaptor CSV (Thread,Time,Action,Pointer,Size,Stream), any "
               "version; per-thread default streams become one stream per thread; a failed allocate is a request "
               "freed at once",
               Framework::rmm, Holds::failures, claims_rmm_log, read_rmm, nullptr},
    ReaderInfo{"kineto", "a PyTorch profiler (Kineto) Chrome trace, profile_memory=True: its [memory] events of one "
               "CUDA device (--cuda-device N), paired by address; Total Allocated checked; block sizes, no streams",
               Framework::torch, Holds::requests, claims_kineto_trace, read_kineto, nullptr},
    ReaderInfo{"tf-memory-log", "TensorFlow's TF_CPP_VMODULE=log_memory=2 log: __LOG_MEMORY__ tensor and raw "
               "allocations of one GPU's allocator (--cuda-device N), paired by allocation id; requested sizes, "
               "kernel names as layers, steps",
               Framework::tf, Holds::requests, claims_tf_memory_log, read_tf_log, nullptr},
};

const std::array kWriters{
    WriterInfo{"csv", ".csv", "our trace CSV (time_ns,op,id,bytes,stream,tag): every request, stream and tag; not "
               "layers or step boundaries",
               [](const Trace& trace, const std::filesystem::path& path) { write_csv_trace_file(trace, path); }},
    WriterInfo{"atrace", ".atrace", "allocsim's binary trace: every request, stream, tag, layer and step "
               "boundary, 16 bytes per event",
               [](const Trace& trace, const std::filesystem::path& path) { write_atrace_file(trace, path); }},
};

// nullopt when the file cannot be opened. A pipe is refused: the head read here would be
// gone for the reader it chooses.
std::optional<std::string> file_head(std::string_view path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(std::string(path), error);
  if (!error && (status.type() == std::filesystem::file_type::fifo || status.type() == std::filesystem::file_type::character ||
                 status.type() == std::filesystem::file_type::socket)) {
    throw Error(std::string(path) + ": give a file: a pipe can be read once, and its first bytes are read to choose "
                                    "its reader (save it first, e.g. zcat trace.json.gz > trace.json)");
  }
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) return std::nullopt;
  std::string head(kReaderHeadBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

}  // namespace

std::span<const WorkloadInfo> all_workloads() { return kWorkloads; }
std::span<const ReaderInfo> all_readers() { return kReaders; }
std::span<const WriterInfo> all_writers() { return kWriters; }

const WriterInfo& find_writer(std::string_view path) {
  const WriterInfo* best = nullptr;
  for (const WriterInfo& writer : kWriters) {
    if (path.ends_with(writer.extension) && (!best || writer.extension.size() > best->extension.size())) best = &writer;
  }
  if (best) return *best;
  std::string valid;
  for (const WriterInfo& writer : kWriters) valid += (valid.empty() ? "" : ", ") + std::string(writer.extension);
  throw Error(std::string(path) + ": no trace writer for this extension (writers: " + valid + ")");
}

bool names_a_file(std::string_view spec) {
  if (spec.find('/') != std::string_view::npos) return true;
  return std::any_of(kReaders.begin(), kReaders.end(),
                     [&](const ReaderInfo& reader) { return reader.claims(spec, "") == Claim::by_name; });
}

namespace {

// Whether `text` opens a workload of its own: a zoo model's name (then '_', ':' or the end),
// a generator's name (then ':' or the end), or a file path.
bool starts_a_workload(std::string_view text) {
  for (const ZooModel& model : zoo()) {
    if (text.starts_with(model.name) &&
        (text.size() == model.name.size() || text[model.name.size()] == '_' || text[model.name.size()] == ':')) {
      return true;
    }
  }
  const std::string_view name = text.substr(0, text.find(':'));
  return names_a_file(text) ||
         std::any_of(kWorkloads.begin(), kWorkloads.end(), [&](const WorkloadInfo& info) { return info.name == name; });
}

}  // namespace

void refuse_workload_list(std::string_view spec) {
  if (spec.find(',') == std::string_view::npos) return;
  std::vector<std::string> pieces;  // at commas outside brackets, as parse_spec reads them
  int depth = 0;
  pieces.emplace_back();
  for (const char c : spec) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      pieces.emplace_back();
    } else {
      pieces.back() += c;
    }
  }
  if (names_a_file(spec)) {  // a path may hold commas: a list only when it is no file and each piece is one
    std::error_code error;
    const auto is_file = [&](const std::string& piece) { return std::filesystem::is_regular_file(piece, error); };
    if (std::filesystem::exists(std::string(spec), error) || !std::all_of(pieces.begin(), pieces.end(), is_file)) return;
  }
  // A piece that opens a workload starts the next; any other continues the spec before it.
  std::vector<std::string> workloads{pieces.front()};
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    if (starts_a_workload(pieces[i])) {
      workloads.push_back(pieces[i]);
    } else {
      workloads.back().append(",").append(pieces[i]);
    }
  }
  if (workloads.size() < 2) return;
  std::string example;
  for (const std::string& workload : workloads) example.append(example.empty() ? "" : " ").append("--workload ").append(workload);
  throw Error("workload '" + std::string(spec) + "' is " + std::to_string(workloads.size()) +
              " workloads joined by commas; a workload spec is one value, never a list: give each its own option, "
              "repeating it (" + example + ")");
}

const ReaderInfo& find_reader(std::string_view path) {
  const std::optional<std::string> head = file_head(path);
  const ReaderInfo* by_name = nullptr;
  for (const ReaderInfo& reader : kReaders) {
    const Claim claim = reader.claims(path, head.value_or(""));
    if (claim == Claim::by_content) return reader;
    if (claim == Claim::by_name && !by_name) by_name = &reader;
  }
  if (by_name) return *by_name;  // its own load says what is wrong, a missing file included
  if (!head) throw Error(std::string(path) + ": cannot open");
  std::string valid;
  for (const ReaderInfo& reader : kReaders) valid += (valid.empty() ? "" : ", ") + std::string(reader.name);
  throw Error(std::string(path) + ": no reader knows this file (readers: " + valid + "; see `allocsim workloads`)");
}

namespace {

void refuse_cuda_device(const LoadOptions& options, std::string_view spec_text) {
  if (options.cuda_device) throw Error("--cuda-device is for PyTorch snapshots, profiler traces and TensorFlow logs, not the workload '" + std::string(spec_text) + "'");
}

Trace lower_model(ModelSpec model, const LoadOptions& options, std::string name) {
  model.options.compute_capability = options.compute_capability;
  return lower_spec(model, std::move(name));
}

}  // namespace

Trace load_workload(const ModelSpec& model, const LoadOptions& options) {
  std::string text = to_string(model);
  refuse_cuda_device(options, text);
  return lower_model(model, options, std::move(text));
}

WorkloadSpec parse_workload_spec(std::string_view text) {
  refuse_workload_list(text);
  if (names_a_file(text)) return {std::string(text), FileChoice{&find_reader(text), std::string(text)}};
  if (auto model = parse_model_spec(text)) return {std::string(text), std::move(*model)};
  const Spec spec = parse_spec(text);
  for (const WorkloadInfo& info : kWorkloads) {
    if (info.name == spec.name) {
      return {std::string(text), GeneratorChoice{&info, Params(spec, info.params, "workload " + spec.name), spec}};
    }
  }
  std::string valid;
  for (const WorkloadInfo& info : kWorkloads) valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  for (const ZooModel& model : zoo()) valid += ", " + std::string(model.name) + "_bN...";
  throw Error("unknown workload '" + spec.name + "'; valid workloads: " + valid + ", or a path to a .csv trace");
}

WorkloadSpec parse_workload_spec(std::string_view text, std::span<const WorkloadSpec> given) {
  const auto found = std::find_if(given.begin(), given.end(), [&](const WorkloadSpec& spec) { return spec.text == text; });
  return found != given.end() ? *found : parse_workload_spec(text);
}

WorkloadSpec held_workload(std::string name, std::shared_ptr<const Trace> trace) {
  if (!trace) throw Error("workload " + name + ": no trace");
  return {std::move(name), HeldTrace{std::move(trace)}};
}

WorkloadSpec model_workload(ModelSpec model) {
  std::string text = to_string(model);
  check_model_spec(model, text);
  return {std::move(text), std::move(model)};
}

WorkloadSpec with_param(const WorkloadSpec& generator, const std::string& key, const std::string& value,
                        std::string_view what) {
  const auto* choice = std::get_if<GeneratorChoice>(&generator.what);
  if (!choice) {
    throw Error(std::string(what) + ": workload " + generator.text + " is " +
                (generator.model() ? "a model; its options are --batch, --precision, ..." : "a trace; it has no parameters"));
  }
  Spec spec = choice->spec;
  set_arg(spec, key, value);
  return {to_string(spec), GeneratorChoice{choice->row, Params(spec, choice->row->params, "workload " + spec.name), spec}};
}

Trace load_workload(const WorkloadSpec& spec, const LoadOptions& options) {
  if (const FileChoice* file = spec.file()) return file->reader->load(file->path, options);
  refuse_cuda_device(options, spec.text);
  if (const HeldTrace* held = spec.held()) return *held->trace;
  if (const ModelSpec* model = spec.model()) return lower_model(*model, options, spec.text);
  const auto& generator = std::get<GeneratorChoice>(spec.what);
  return generator.row->make(generator.params, spec.text);
}

std::shared_ptr<const Trace> load_shared_workload(const WorkloadSpec& spec, const LoadOptions& options) {
  if (const HeldTrace* held = spec.held()) {
    refuse_cuda_device(options, spec.text);
    return held->trace;
  }
  return std::make_shared<const Trace>(load_workload(spec, options));
}

Trace load_workload(std::string_view spec_text, const LoadOptions& options) {
  return load_workload(parse_workload_spec(spec_text), options);
}

std::shared_ptr<const BackgroundTrace> load_in_background(const FileChoice& file, const LoadOptions& options) {
  return std::make_shared<const BackgroundTrace>(
      file.path, [reader = file.reader, path = file.path, options](TraceProgress& progress) {
        LoadOptions reporting = options;
        reporting.progress = &progress;
        return reader->load(path, reporting);
      });
}

std::shared_ptr<const BackgroundTrace> load_in_background(std::string_view path, const LoadOptions& options) {
  return load_in_background(FileChoice{&find_reader(path), std::string(path)}, options);
}

namespace {

std::string what_streams() {
  std::string streamable;
  for (const ReaderInfo& reader : kReaders) {
    if (reader.stream) streamable += std::string(streamable.empty() ? "" : ", ") + std::string(reader.name) + " files";
  }
  for (const WorkloadInfo& info : kWorkloads) {
    if (info.stream) streamable += ", " + std::string(info.name) + ":...";
  }
  return streamable;
}

}  // namespace

std::shared_ptr<const EventSourceFactory> stream_workload(const ModelSpec& model) {
  throw Error("workload '" + to_string(model) + "' cannot stream; what streams: " + what_streams());
}

std::shared_ptr<const EventSourceFactory> stream_workload(const WorkloadSpec& spec) {
  const std::string streamable = what_streams();
  if (const FileChoice* file = spec.file()) {
    if (!file->reader->stream) {
      throw Error(file->path + ": a " + std::string(file->reader->name) + " file is read whole; what streams: " +
                  streamable + " (convert it to .atrace first: --save-trace FILE.atrace)");
    }
    return file->reader->stream(file->path);
  }
  if (spec.model() || spec.held()) throw Error("workload '" + spec.text + "' cannot stream; what streams: " + streamable);
  const auto& generator = std::get<GeneratorChoice>(spec.what);
  if (!generator.row->stream) {
    throw Error("workload " + std::string(generator.row->name) + " cannot stream; what streams: " + streamable);
  }
  return generator.row->stream(generator.params, spec.text);
}

std::shared_ptr<const EventSourceFactory> stream_workload(std::string_view spec_text) {
  return stream_workload(parse_workload_spec(spec_text));
}

}  // namespace allocsim
