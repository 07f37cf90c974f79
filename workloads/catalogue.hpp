// The workload catalogue: spec strings to generators, file paths to readers, output
// extensions to writers, each a row of a table. Other workloads (the model zoo) add a line
// to its table.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "sim/background_trace.hpp"
#include "sim/event_source.hpp"
#include "sim/spec.hpp"
#include "sim/trace.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/reader.hpp"
#include "workloads/writer.hpp"

namespace allocsim {

struct WorkloadInfo {
  std::string_view name;
  std::string_view summary;
  std::span<const ParamInfo> params;
  std::string_view example;
  Trace (*make)(const Params& params, std::string_view spec);
  // The same events streamed into a replay, never held whole; null when it cannot stream.
  std::shared_ptr<const EventSourceFactory> (*stream)(const Params& params, std::string_view spec);
};

std::span<const WorkloadInfo> all_workloads();
std::span<const ReaderInfo> all_readers();
std::span<const WriterInfo> all_writers();

// Whether a spec is a file path: it holds a '/' or a reader claims it by name (.csv,
// .atrace, .pickle, .json, .log, ...).
bool names_a_file(std::string_view spec);

// A workload spec is one value, never a list: Error when `spec` reads as several workloads
// joined by commas (`resnet50,bert_base`, `tinyllama_1b:lora=16,gpt2_b4`, `a.csv,b.csv`),
// saying to give each its own option (--workload A --workload B). A comma inside one spec (`random:n=10,seed=7`,
// `llama2_7b_bf16:qlora=64,ckpt,lora_targets=all`) is its own and passes.
void refuse_workload_list(std::string_view spec);

// The reader of a file: the first that claims it by content, else the first by name.
// Throws Error listing the readers when none does.
const ReaderInfo& find_reader(std::string_view path);

// The writer for an output path: the row whose extension ends it (the longest, so `.x.y`
// beats `.y`). Throws Error naming the path and listing the extensions when none does.
const WriterInfo& find_writer(std::string_view path);

// A generator of the table with its parameters, checked, and the spec as written (whose
// order of keys a changed parameter keeps: with_param).
struct GeneratorChoice {
  const WorkloadInfo* row;
  Params params;
  Spec spec;
};

// A trace file and the reader that claims it (find_reader).
struct FileChoice {
  const ReaderInfo* reader;
  std::string path;
};

// A trace already in memory (the Python package's allocsim.Trace, a capture's): loading
// gives a copy of it.
struct HeldTrace {
  std::shared_ptr<const Trace> trace;
};

// A workload spec as a command reads it, parsed once: the text as the user spelled it
// (shown in outputs, the key of a trace loaded once) and what it names.
struct WorkloadSpec {
  std::string text;
  std::variant<ModelSpec, GeneratorChoice, FileChoice, HeldTrace> what;

  const ModelSpec* model() const { return std::get_if<ModelSpec>(&what); }
  const FileChoice* file() const { return std::get_if<FileChoice>(&what); }
  const HeldTrace* held() const { return std::get_if<HeldTrace>(&what); }
};

// A model spec ("resnet50_b64"), a generator spec ("random:n=1000,seed=7") or a trace
// file (see names_a_file). Error on a list (refuse_workload_list), a bad model token, a
// generator's unknown parameter, an unknown name (listing the valid ones), a file no reader
// knows. A file's own load says what is wrong inside it.
WorkloadSpec parse_workload_spec(std::string_view text);

// The workload of `given` (made in code: held traces) whose text is `text`, else
// parse_workload_spec's.
WorkloadSpec parse_workload_spec(std::string_view text, std::span<const WorkloadSpec> given);

// A trace in memory as a workload named `name` (what outputs show).
WorkloadSpec held_workload(std::string name, std::shared_ptr<const Trace> trace);

// A model spec made or edited in code (a sweep's axes, advise's changes) as a workload:
// its canonical spelling (to_string) and the spec itself, checked as a spelling is
// (check_model_spec).
WorkloadSpec model_workload(ModelSpec model);

// A generator's spec with `key` set to `value`, replacing the spec's own (a sweep's
// --param), checked as parse_workload_spec checks it. Error when `generator` is a model or
// a file, naming `what` (the option that asked).
WorkloadSpec with_param(const WorkloadSpec& generator, const std::string& key, const std::string& value,
                        std::string_view what);

// Its trace. `options` go to a file's reader; a model or generator refuses a CUDA device.
Trace load_workload(const WorkloadSpec& spec, const LoadOptions& options = {});

// The same, shared: a held trace itself (no copy), any other a new load.
std::shared_ptr<const Trace> load_shared_workload(const WorkloadSpec& spec, const LoadOptions& options = {});

// The same for a spec's text: parse_workload_spec, then load.
Trace load_workload(std::string_view spec, const LoadOptions& options = {});

// A model spec already parsed (and changed: a command's --batch), loaded as its text would be.
Trace load_workload(const ModelSpec& model, const LoadOptions& options = {});

// A trace file read on a thread of its own while a replay runs the events read so far
// (sim/background_trace.hpp): the same trace and errors as load_workload's. The reader is
// found, or the file refused, at once.
std::shared_ptr<const BackgroundTrace> load_in_background(const FileChoice& file, const LoadOptions& options = {});
std::shared_ptr<const BackgroundTrace> load_in_background(std::string_view path, const LoadOptions& options = {});

// The same workload as a stream (a .atrace or CSV file, the random generator), for a replay that
// holds only the live allocations. Throws Error naming what can stream when it cannot.
std::shared_ptr<const EventSourceFactory> stream_workload(const WorkloadSpec& spec);
std::shared_ptr<const EventSourceFactory> stream_workload(std::string_view spec);
std::shared_ptr<const EventSourceFactory> stream_workload(const ModelSpec& model);  // no model streams: Error

}  // namespace allocsim
