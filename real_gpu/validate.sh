#!/usr/bin/env bash
# Every hardware check of allocsim in one run on one GPU, in under 8 minutes (about 4 expected):
#   1. calibrate: cudaMalloc/cudaFree latency against size, VMM map/unmap, copy bandwidth
#      -> DIR/device_profile.json
#   2. real_gpu/record_torch.py: torchvision resnet50, 3 steps at batch 32, 64, 128, fp32
#      and amp, snapshots + memory_stats; the largest batch under a 16 GiB memory fraction;
#      one run with PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 to prove settings take
#      effect -> DIR/torch/
#   3. allocsim validate: resnet50_b64 under each policy on CudaDevice (vmm and expandable
#      through its VMM calls), with the measured cost profile; resnet50_b256 under a 16 GiB
#      cap (ballast) for the OOM event; direct and expandable on VMM pages -> DIR/*.csv,
#      DIR/*.calls.csv
#   4. real_gpu/summarize.py: the summary table -> DIR/summary.md, DIR/summary.csv
#
# Usage:
#   real_gpu/validate.sh [DIR]          run everything (default DIR: results/validation)
#   real_gpu/validate.sh --build-only   build build/portable/allocsim here and stop
#
# allocsim: $ALLOCSIM if set, else build/portable/allocsim, else build/release/allocsim, else
# it is built with cmake. The GPU machine of this project has the CUDA toolkit, CMake and
# PyTorch but no Boost or nlohmann-json, so build the portable binary (static libstdc++,
# Boost and cudart) on the development machine first and carry it:
#   real_gpu/validate.sh --build-only                  # here, about two minutes
#   device run: command "real_gpu/validate.sh", carry ["build/portable/allocsim"]
# When $OUT is set (the device tool), the results also go to $OUT/validation.tar.gz and
# the summary to $OUT/summary.md.
#
# VALIDATE_BACKEND=host runs the same steps on allocsim's host stand-in (no GPU; the
# PyTorch steps then fail for want of a GPU): a dry run of this script.
#
# A failing step is reported and the script goes on, so one run yields every check it can;
# the exit status is 1 when any step failed, 2 when allocsim or a GPU is missing.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$root"

build_portable() {
  cmake -S . -B build/portable -G Ninja -DCMAKE_BUILD_TYPE=Release -DALLOCSIM_PORTABLE=ON \
    -DALLOCSIM_TESTS=OFF -DALLOCSIM_BENCH=OFF >/dev/null &&
    cmake --build build/portable --target allocsim
}

if [[ "${1:-}" == "--build-only" ]]; then
  build_portable || exit 1
  if ! grep -q cudart_static build/portable/build.ninja; then
    echo "validate.sh: built without CUDA (no toolkit found): validate would only run --backend host" >&2
    exit 2
  fi
  echo "validate.sh: built build/portable/allocsim; carry it to the GPU machine"
  exit 0
fi

dir="${1:-results/validation}"
mkdir -p "$dir/torch"
log="$dir/validate.log"
: >"$log"
start=$SECONDS
failed=()

say() { echo "=== validate.sh [$((SECONDS - start))s] $*" | tee -a "$log"; }

# Every step but the summary must end by this many seconds after the start, so that the
# whole run stays under 8 minutes whatever hangs (the summary has its own 90 s after it).
deadline="${VALIDATE_DEADLINE:-360}"

# step NAME SECONDS COMMAND...: runs with a time limit, logs, and records a failure.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((deadline - (SECONDS - start)))
  if [[ "$name" != summarize ]] && ((left < limit)); then
    limit=$left
  fi
  if ((limit < 5)); then
    say "$name SKIPPED: out of time"
    failed+=("$name")
    return 0
  fi
  say "$name: $*"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  local status=${PIPESTATUS[0]}
  if ((status != 0)); then
    say "$name FAILED (exit $status$( ((status == 124)) && echo ", over ${limit}s"))"
    failed+=("$name")
  fi
  return 0
}

allocsim="${ALLOCSIM:-}"
for candidate in build/portable/allocsim build/release/allocsim; do
  [[ -z "$allocsim" && -x "$candidate" ]] && allocsim="$candidate"
done
if [[ -z "$allocsim" ]]; then
  say "no allocsim binary: building one"
  build_portable 2>&1 | tail -20 | tee -a "$log"
  allocsim=build/portable/allocsim
fi
if [[ ! -x "$allocsim" ]]; then
  say "no allocsim: build one with real_gpu/validate.sh --build-only where its libraries are, and carry it"
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1 | tee -a "$log"
python=python3
backend="${VALIDATE_BACKEND:-cuda}"

# 1. The cost profile, first: validate uses it.
profile="$dir/device_profile.json"
step calibrate 120 "$allocsim" calibrate --backend "$backend" --out "$profile"
if [[ ! -f "$profile" ]]; then
  say "calibrate wrote no profile: stopping (is there a GPU? see the line above)"
  exit 2
fi

# 2. PyTorch's own allocator on the same card.
step record_torch 300 env PYTHONUNBUFFERED=1 "$python" real_gpu/record_torch.py --out "$dir/torch" \
  --batches 32,64,128 --precisions fp32,amp --steps 3 --cap 16GiB
step record_torch_settings 90 env PYTHONUNBUFFERED=1 "$python" real_gpu/record_torch.py --out "$dir/torch" \
  --batches 64 --precisions fp32 --steps 3 --alloc-conf max_split_size_mb:256 --tag _split256

# 3. Every policy on CudaDevice against its simulation (vmm and expandable through the
#    device's own VMM calls: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemUnmap).
for policy in bfc growth caching direct bestfit buddy jax vmm expandable; do
  step "validate_$policy" 90 "$allocsim" validate --backend "$backend" --workload resnet50_b64 --policy "$policy" \
    --device-profile "$profile" --out "$dir"
done
for policy in caching bfc; do
  step "validate_${policy}_cap" 90 "$allocsim" validate --backend "$backend" --workload resnet50_b256 --policy "$policy" --cap 16GiB \
    --device-profile "$profile" --out "$dir"
done
# Page-mapped: every segment is cuMemCreate + cuMemMap (expandable maps 2/20 MiB pages).
for policy in direct expandable; do
  step "validate_${policy}_vmm" 90 "$allocsim" validate --backend "$backend" --workload resnet50_b64 --policy "$policy" \
    --segments vmm --device-profile "$profile" --out "$dir"
done

# 4. The table.
step summarize 90 "$python" real_gpu/summarize.py --allocsim "$allocsim" --dir "$dir" --backend "$backend"

say "done in $((SECONDS - start))s; failed steps: ${failed[*]:-none}"
if [[ -n "${OUT:-}" ]]; then
  tar -czf "$OUT/validation.tar.gz" "$dir" && cp "$dir/summary.md" "$OUT/summary.md" 2>/dev/null
  cp "$log" "$OUT/validate.log"
fi
((${#failed[@]} == 0)) || exit 1
