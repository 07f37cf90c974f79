#!/usr/bin/env bash
# Every hardware check of allocsim in one run on one GPU, in under 8 minutes (about 4 expected).
# A GPU machine is lent for one try, so the order puts what cannot hang first, every step has
# its own time limit, and whatever was done comes back even when a step fails or hangs:
#   1. calibrate: cudaMalloc/cudaFree latency against size, VMM map/unmap, copy bandwidth
#      -> DIR/device_profile.json (when it fails, validate runs on the built-in cost model)
#   2. allocsim validate: resnet50_b64 under each policy on CudaDevice (vmm and expandable
#      through its VMM calls), resnet50_b256 under a 16 GiB cap (ballast) for the OOM event,
#      direct and expandable on VMM pages -> DIR/*.csv, DIR/*.calls.csv
#   3. real_gpu/record_torch.py: torchvision resnet50, 3 steps at batch 32, 64, 128, fp32 and
#      amp, snapshots + memory_stats; the largest batch under a 16 GiB memory fraction; one
#      run with PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 -> DIR/torch/ (saved after
#      every run and probe, so a kill keeps the rows already done)
#   4. real_gpu/summarize.py: the summary table -> DIR/summary.md, DIR/summary.csv
#
# Usage:
#   real_gpu/validate.sh [DIR]          run everything (default DIR: results/validation)
#   real_gpu/validate.sh --build-only   build build/release/portable/allocsim here, check it needs
#                                       nothing beyond glibc, and stop
#
# allocsim: $ALLOCSIM if set, else build/release/portable/allocsim, else build/release/allocsim, else
# it is built with cmake. The GPU machine has the CUDA driver, CMake and PyTorch but no Boost,
# no nlohmann-json and none of Debian's shared libraries, so build the portable binary (static
# libstdc++, Boost and cudart; no MPI) on the development machine and carry it:
#   real_gpu/validate.sh --build-only
#   device run: command "real_gpu/validate.sh", carry ["build/release/portable/allocsim"], timeout_s 540
#
# Results: when $OUT is set (the device tool), DIR's small files go to $OUT/validation.tar.gz
# after every step and again on exit (an EXIT trap, so an early exit or a TERM still returns
# them), with $OUT/summary.md and $OUT/validate.log; the snapshots go to
# $OUT/snapshots.tar.gz.NN in at most 3 parts of 15 MiB (the tool returns 8 files of 16 MiB).
#
# VALIDATE_BACKEND=host runs the same steps on allocsim's host stand-in (no GPU): a dry run. It
# writes to a fresh temporary folder unless DIR is given, so that no dry-run file is left in
# results/validation to travel to the GPU machine and stand in for a missing result there.
# VALIDATE_WORKLOAD, VALIDATE_CAP_WORKLOAD and VALIDATE_CAP replace resnet50_b64, resnet50_b256
# and 16GiB (the cap of the capped runs and of the largest-batch search): the tests' dry runs
# use small ones.
#
# The exit status is 1 when any step failed, 2 when allocsim is missing or does not start.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$root" || exit 2

# The portable binary is a target of the release build (app/CMakeLists.txt), linked from the
# same objects as build/release/allocsim, so CI compiles them once.
portable=build/release/portable/allocsim
build_portable() {
  { [[ -f build/release/build.ninja ]] || cmake --preset release >/dev/null; } &&
    cmake --build --preset release --target allocsim_portable
}

# The shared libraries BIN names beyond glibc's libc, libm and loader, one a line (none: empty).
foreign_libraries() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' |
    grep -vxE 'libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1'
}

if [[ "${1:-}" == "--build-only" ]]; then
  build_portable || exit 1
  foreign="$(foreign_libraries "$portable")"
  if [[ -n "$foreign" ]]; then
    echo "validate.sh: $portable needs libraries the GPU machine lacks: $(echo $foreign)" >&2
    exit 1
  fi
  if ! grep -q cudart_static build/release/build.ninja; then
    echo "validate.sh: built without CUDA (no toolkit found): validate would only run --backend host" >&2
    exit 2
  fi
  echo "validate.sh: built $portable (needs only libc, libm and the loader); carry it to the GPU machine"
  exit 0
fi

backend="${VALIDATE_BACKEND:-cuda}"
if [[ -n "${1:-}" ]]; then
  dir="$1"
elif [[ "$backend" == host ]]; then
  dir="$(mktemp -d "${TMPDIR:-/tmp}/allocsim-dry-run.XXXXXX")"
else
  dir=results/validation
fi
workload="${VALIDATE_WORKLOAD:-resnet50_b64}"
cap_workload="${VALIDATE_CAP_WORKLOAD:-resnet50_b256}"
cap="${VALIDATE_CAP:-16GiB}"

# Only this script's own outputs go, so a DIR holding anything else keeps it (the README).
rm -rf "$dir/torch" "$dir/device_profile.json" "$dir"/*.csv "$dir/summary.md" "$dir/validate.log"
mkdir -p "$dir/torch"
log="$dir/validate.log"
: >"$log"
start=$SECONDS
failed=()

say() { echo "=== validate.sh [$((SECONDS - start))s] $*" | tee -a "$log"; }

# Everything small in DIR (CSV, JSON, log, summary) to $OUT; cheap, so it runs after every step.
send_results() {
  [[ -n "${OUT:-}" ]] || return 0
  tar -czf "$OUT/validation.tar.gz.tmp" --exclude='*.pickle' -C "$(dirname "$dir")" "$(basename "$dir")" 2>/dev/null &&
    mv -f "$OUT/validation.tar.gz.tmp" "$OUT/validation.tar.gz"
  cp -f "$log" "$OUT/validate.log" 2>/dev/null
  [[ -f "$dir/summary.md" ]] && cp -f "$dir/summary.md" "$OUT/summary.md"
  return 0
}

# The snapshots, once, at exit: in parts of 15 MiB, at most 3, so that with the 3 files above
# the tool's limits (8 files of 16 MiB, 64 MiB in all) are never exceeded: a file over them
# would not come back at all. Smallest first, so that a cut archive still holds whole files.
send_snapshots() {
  [[ -n "${OUT:-}" ]] || return 0
  local snapshots
  mapfile -t snapshots < <(cd "$dir" && ls -Sr torch/*.pickle 2>/dev/null)
  ((${#snapshots[@]} > 0)) || return 0
  rm -f "$OUT"/snapshots.tar.gz.*
  tar -czf - -C "$dir" "${snapshots[@]}" | split -b 15M -d -a 2 - "$OUT/snapshots.tar.gz."
  local part
  for part in "$OUT"/snapshots.tar.gz.*; do
    if ((10#${part##*.} > 2)); then
      rm -f "$part"
      echo "=== validate.sh: snapshots over 45 MiB compressed: $(basename "$part") left out" >>"$log"
    fi
  done
}

finish() {
  local status=$?
  trap - EXIT
  say "done in $((SECONDS - start))s (exit $status); failed steps: ${failed[*]:-none}; results in $dir"
  send_snapshots
  send_results
  exit "$status"
}
trap finish EXIT
# A step runs in the background while the script waits, so a signal is handled at once (bash
# defers traps until a foreground command ends): the step is stopped and the results sent.
child=""
trap 'say "stopped by a signal"; [[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; exit 143' TERM INT HUP

# step NAME SECONDS COMMAND...: runs with a time limit (cut to what is left before $ends_by,
# the current phase's end), logs, records a failure, and sends the results so far.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((ends_by - (SECONDS - start)))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    say "$name SKIPPED: out of time"
    failed+=("$name")
    return 0
  fi
  say "$name (limit ${limit}s): $*"
  timeout --kill-after=5 "$limit" "$@" > >(tee -a "$log") 2>&1 &
  child=$!
  wait "$child"
  local status=$?
  child=""
  if ((status != 0)); then
    say "$name FAILED (exit $status$( ((status == 124 || status == 137)) && echo ", over ${limit}s"))"
    failed+=("$name")
  fi
  send_results
  return 0
}

allocsim="${ALLOCSIM:-}"
for candidate in "$portable" build/release/allocsim; do
  [[ -z "$allocsim" && -x "$candidate" ]] && allocsim="$candidate"
done
if [[ -z "$allocsim" ]]; then
  say "no allocsim binary: building one"
  build_portable 2>&1 | tail -20 | tee -a "$log"
  allocsim="$portable"
fi
if [[ ! -x "$allocsim" ]]; then
  say "no allocsim: build one with real_gpu/validate.sh --build-only where its libraries are, and carry it"
  exit 2
fi
if ! "$allocsim" policies >/dev/null 2>>"$log"; then
  say "$allocsim does not start here (a shared library missing? see above); ldd says:"
  ldd "$allocsim" 2>&1 | tee -a "$log"
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1 | tee -a "$log"
python=python3
say "allocsim $allocsim, backend $backend, results in $dir"

# bestfit takes one region at its first request, by default all free memory, which a real
# cudaMalloc refuses; give it half of what the card has free (the host stand-in: 32 GiB).
free_mib="$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)"
[[ "$backend" == cuda && "$free_mib" =~ ^[0-9]+$ ]] || free_mib=65536
bestfit="bestfit:region=$((free_mib / 2))MiB"

# 1. The cost profile: validate uses it when there is one.
ends_by=90
profile="$dir/device_profile.json"
step calibrate 75 "$allocsim" calibrate --backend "$backend" --out "$profile"
profile_option=()
if [[ -f "$profile" ]]; then
  profile_option=(--device-profile "$profile")
else
  say "calibrate wrote no profile: validate runs on the built-in cost model"
fi

# 2. Every policy on CudaDevice against its simulation (vmm and expandable through the
#    device's own VMM calls: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemUnmap).
ends_by=250
for policy in bfc growth caching direct "$bestfit" buddy jax vmm expandable; do
  step "validate_${policy%%:*}" 30 "$allocsim" validate --backend "$backend" --workload "$workload" \
    --policy "$policy" "${profile_option[@]}" --out "$dir"
done
for policy in caching bfc; do
  step "validate_${policy}_cap" 30 "$allocsim" validate --backend "$backend" --workload "$cap_workload" \
    --policy "$policy" --cap "$cap" "${profile_option[@]}" --out "$dir"
done
# Page-mapped: every segment is cuMemCreate + cuMemMap (expandable maps 2/20 MiB pages).
for policy in direct expandable; do
  step "validate_${policy}_vmm" 30 "$allocsim" validate --backend "$backend" --workload "$workload" \
    --policy "$policy" --segments vmm "${profile_option[@]}" --out "$dir"
done

# 3. PyTorch's own allocator on the same card, last of the GPU steps: a hang here costs only itself.
ends_by=380
step record_torch 130 env PYTHONUNBUFFERED=1 "$python" real_gpu/record_torch.py --out "$dir/torch" \
  --batches 32,64,128 --precisions fp32,amp --steps 3 --cap "$cap"
ends_by=420
step record_torch_settings 40 env PYTHONUNBUFFERED=1 "$python" real_gpu/record_torch.py --out "$dir/torch" \
  --batches 64 --precisions fp32 --steps 3 --alloc-conf max_split_size_mb:256 --tag _split256

# 4. The table, from whatever the steps above left.
ends_by=470
step summarize 50 "$python" real_gpu/summarize.py --allocsim "$allocsim" --dir "$dir" --backend "$backend"

((${#failed[@]} == 0)) || exit 1
exit 0
