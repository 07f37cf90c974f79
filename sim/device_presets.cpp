#include "sim/device_presets.hpp"

#include <array>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kContextEstimate = 500_MiB;
constexpr Bytes kPage = 2_MiB;

// A total as PyTorch prints it, in hundredths of a GiB ("79.14 GiB" is 7914), rounded down
// to a whole MiB: the driver's figure was within 0.005 GiB (5.12 MiB) of it.
constexpr Bytes printed_gib(Bytes hundredths) { return hundredths * 1_GiB / 100 / 1_MiB * 1_MiB; }

// Each capacity is the "total capacity" a real PyTorch OOM message printed on that card (a
// newer or older driver may keep a few hundred MiB more or less; --capacity overrides it).
constexpr std::array kDevices{
    DevicePreset{"t4", "NVIDIA T4, 16 GB GDDR6", printed_gib(1474),
                 "PyTorch OOM on a Colab T4, '14.74 GiB': github.com/zai-org/CogVideo/issues/741", kContextEstimate, 75},
    DevicePreset{"v100-16gb", "NVIDIA V100 16 GB", printed_gib(1578),
                 "PyTorch OOM on a 16 GB V100, '15.78 GiB': github.com/kchengiva/Shift-GCN/issues/34", kContextEstimate,
                 70},
    DevicePreset{"v100-32gb", "NVIDIA V100 32 GB", printed_gib(3174),
                 "PyTorch OOM on a 32 GB V100, '31.74 GiB': github.com/liucongg/ChatGLM-Finetuning/issues/73",
                 kContextEstimate, 70},
    DevicePreset{"rtx3090", "NVIDIA GeForce RTX 3090, 24 GB", printed_gib(2370),
                 "PyTorch OOM on an RTX 3090, '23.70 GiB': github.com/GaoLii/DSP/issues/10", kContextEstimate, 86},
    DevicePreset{"rtx4090", "NVIDIA GeForce RTX 4090, 24 GB", printed_gib(2364),
                 "PyTorch OOM on an RTX 4090, '23.64 GiB': github.com/3DTopia/Phidias-Diffusion/issues/8",
                 kContextEstimate, 89},
    DevicePreset{"rtx-a6000", "NVIDIA RTX A6000, 48 GB GDDR6", printed_gib(4754),
                 "PyTorch OOM on an RTX A6000 (nvidia-smi 49140MiB), '47.54 GiB': github.com/vllm-project/vllm/issues/1201",
                 kContextEstimate, 86},
    DevicePreset{"l40s", "NVIDIA L40S, 48 GB GDDR6", printed_gib(4442),
                 "PyTorch OOM on 8 L40S, '44.42 GiB': github.com/stepfun-ai/Step-Video-T2V/issues/8", kContextEstimate,
                 89},
    DevicePreset{"a100-40gb", "NVIDIA A100 40 GB", printed_gib(3959),
                 "PyTorch OOM on a 40 GB A100, '39.59 GiB': github.com/raoyongming/DenseCLIP/issues/52",
                 kContextEstimate, 80},
    DevicePreset{"a100-80gb", "NVIDIA A100 80 GB", printed_gib(7914),
                 "PyTorch OOM on an 80 GB A100, '79.14 GiB': github.com/lianqi1008/Control-GIC/issues/6",
                 kContextEstimate, 80},
    DevicePreset{"h100-80gb", "NVIDIA H100 SXM5 80 GB HBM3", printed_gib(7911),
                 "PyTorch OOM on an H100 80GB HBM3, '79.11 GiB': github.com/vllm-project/vllm/issues/27508",
                 kContextEstimate, 90},
    DevicePreset{"h200", "NVIDIA H200 141 GB HBM3e", printed_gib(13981),
                 "PyTorch OOM on an H200, '139.81 GiB': github.com/sungwon-chae/arxiv_confi, etu_logging.md",
                 kContextEstimate, 90},
};

}  // namespace

std::span<const DevicePreset> all_devices() { return kDevices; }

DeviceSpec device_spec(std::string_view preset_name) {
  for (const DevicePreset& preset : kDevices) {
    if (preset.name != preset_name) continue;
    DeviceSpec spec;
    spec.name = std::string(preset.name);
    spec.capacity = preset.capacity;
    spec.context_overhead = preset.context_overhead;
    spec.granularity = kPage;
    spec.compute_capability = preset.compute_capability;
    return spec;
  }
  std::string valid;
  for (const DevicePreset& preset : kDevices) valid += (valid.empty() ? "" : ", ") + std::string(preset.name);
  throw Error("unknown device '" + std::string(preset_name) + "'; valid devices: " + valid);
}

}  // namespace allocsim
