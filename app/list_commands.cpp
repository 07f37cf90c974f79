// `allocsim policies`, `workloads` and `devices`: the catalogues, read from their tables.
#include "app/commands.hpp"
#include "policies/registry.hpp"
#include "sim/device_presets.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {

namespace {

void list_params(std::ostream& out, std::span<const ParamInfo> params) {
  for (const ParamInfo& param : params) {
    out << "      " << param.key << "=" << param.default_value << "  " << param.help;
    if (!param.native.empty()) {
      out << " (also " << param.native << (param.native_unit.empty() ? "" : ", in ") << param.native_unit << ")";
    }
    out << '\n';
  }
}

}  // namespace

int policies_command(std::ostream& out) {
  out << "Policies (use as --policy NAME or NAME:key=value,...):\n";
  for (const PolicyInfo& info : all_policies()) {
    out << "\n  " << info.name;
    if (!info.alias.empty()) out << " (alias " << info.alias << ")";
    out << ": " << info.summary << "\n    models: " << info.models << '\n';
    if (!info.params.empty()) out << "    options:\n";
    list_params(out, info.params);
  }
  return 0;
}

int workloads_command(std::ostream& out) {
  out << "Workloads (use as --workload NAME or NAME:key=value,...):\n";
  for (const WorkloadInfo& info : all_workloads()) {
    out << "\n  " << info.name << ": " << info.summary << "\n    example: " << info.example << "\n    options:\n";
    list_params(out, info.params);
  }
  out << "\n  models, as MODEL[_token...] (e.g. resnet50_b64, resnet50_b256_amp_adam, seed_cnn_dw_b8_infer):\n";
  for (const ZooModel& model : zoo()) {
    if (model.is_decoder() && *model.decoder->problem() != '\0') {  // `decoder`: its spec gives the dimensions
      out << "    " << model.name << ": " << model.summary << "\n";
      continue;
    }
    const Model built = model.build();
    out << "    " << model.name << ": " << model.summary << ", " << built.parameter_count() << " parameters in "
        << built.parameter_tensors() << " tensors\n";
  }
  out << "    tokens: " << model_spec_tokens() << "\n";
  out << "    A model workload replays two training steps unless stepsN says otherwise: the warm-up, in which\n"
         "    the optimizer makes its state, and one in the steady state, where a training job's memory peaks.\n"
         "    The run says which step its peak (peak_step) and its first OOM are in; maxbatch, sweep and advise\n"
         "    search the same two steps. steps1 asks for the first step alone.\n"
         "    A generation, MODEL_infer_prefillP_decodeT_bB[:cache=dynamic|static|paged] on a decoder (e.g.\n"
         "    llama2_7b_infer_prefill512_decode256_b8_bf16:cache=paged), replays Hugging Face generate(): the\n"
         "    weights in the compute dtype, the prefill (step 1), then T decode steps of one token each; its\n"
         "    KV cache grows as the cache= row says (docs/llm.md).\n"
         "    Under torch, the trace holds what PyTorch allocates besides the model, tagged runtime: a cuBLAS\n"
         "    workspace for the forward thread's handle and one for autograd's backward thread (8.1 MiB each, or\n"
         "    32 MiB on sm_90: the device's architecture picks it; noruntime leaves them out), and with ddp or\n"
         "    benchmark what those add. Under tf none: TensorFlow's cuBLAS and cuDNN handles allocate outside\n"
         "    its allocator, from the memory it leaves to the system.\n";
  out << "\n  a trace file: any path with a '/' or a name a reader knows (.csv, .pickle, .json, .log, .devN),\n"
         "  read by the first reader that knows its content (else its extension):\n";
  for (const ReaderInfo& reader : all_readers()) out << "    " << reader.name << ": " << reader.summary << '\n';
  out << "\n  trace writers (allocsim trace convert IN OUT picks one by OUT's extension):\n";
  for (const WriterInfo& writer : all_writers()) {
    out << "    " << writer.extension << " " << writer.name << ": " << writer.summary << '\n';
  }
  return 0;
}

int devices_command(std::ostream& out) {
  out << "Devices (use as --device NAME; --capacity, --context, --granularity override):\n\n";
  for (const DevicePreset& preset : all_devices()) {
    out << "  " << preset.name << ": " << preset.summary << ", " << format_bytes_exact(preset.capacity) << ", sm_"
        << preset.compute_capability << ", context ~" << format_bytes(preset.context_overhead)
        << " (estimate), 2 MiB pages\n"
        << "    capacity: what cudaMemGetInfo reports, from " << preset.capacity_source << '\n';
  }
  out << "\n  without --device: 'sim', 16 GiB or --capacity, no context, charged to the byte, sm_90\n";
  return 0;
}

}  // namespace allocsim
