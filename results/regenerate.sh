#!/usr/bin/env bash
# Regenerate the canonical CSVs in results/ (deterministic: the same bytes on every
# machine and for any thread count). Builds allocsim first if needed. ~50 s on 2 cores.
#   results/regenerate.sh            # all of them
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
allocsim="$root/tools/allocsim"
out="$root/results"

# The HTML reports show the command that made them: paths relative to the repository.
cd "$root"

echo "== ResNet-50 batch sweep: 1..1024 (powers of two and midpoints), fp32 and amp, every policy, 16 and 80 GiB" >&2
"$allocsim" sweep --workload resnet50 --batch 1:1024,3:768 --precision fp32,amp --policy all \
  --capacity 16GiB,80GiB --quiet --csv results/resnet50_batch_sweep.csv --report results/report_sweep_resnet50.html

echo "== BERT-base sequence-length sweep: 32..512 (and midpoints), batch 8 and 32, fp32 and amp, every policy" >&2
"$allocsim" sweep --workload bert_base --sequence 32:512,48:384 --batch 8,32 --precision fp32,amp --policy all \
  --capacity 16GiB,80GiB --quiet --csv "$out/bert_base_sequence_sweep.csv"

echo "== Two tenants: A (4 GiB live, every policy) preallocates before B (2.5 GiB, growth) asks" >&2
"$allocsim" sweep --workload random:n=20000,live=4GiB --policy all --tenant random:n=2,min=2560MiB,max=2560MiB@growth \
  --capacity 8GiB:24GiB:4GiB --quiet --csv "$out/two_tenant_preallocation.csv"

echo "== ResNet-50 largest batch per policy and device (with amp and 4-step accumulation)" >&2
"$allocsim" maxbatch --workload resnet50 --policy all --device t4,v100-16gb,v100-32gb,rtx3090,a100-40gb,a100-80gb,h100-80gb \
  --csv "$out/resnet50_maxbatch.csv" >"$out/resnet50_maxbatch.txt"

echo "== HTML reports: two tenants on a V100 (B starts 1 ms after A's bfc took the card), and the seed's fragmentation case" >&2
"$allocsim" run --device v100-16gb --tenant resnet50_b64@bfc --tenant resnet50_b32@growth@start=1ms \
  --report results/report_resnet50_b64.html >/dev/null
"$allocsim" compare --workload workloads/traces/seed_fragmentation.csv --policy bfc,direct,caching,expandable \
  --capacity 10GiB --report results/report_compare_fragmentation.html >/dev/null

# The browser page is emscripten's output: rebuilt where emscripten is, else the committed one stays.
if command -v em++ >/dev/null; then
  echo "== The browser page (docs/web.md): the wasm preset's allocsim.html" >&2
  [[ -f build/wasm/build.ninja ]] || cmake --preset wasm >/dev/null
  cmake --build --preset wasm --target allocsim_page >/dev/null
  cp build/wasm/allocsim.html "$out/allocsim.html"
else
  echo "== The browser page: no emscripten, results/allocsim.html left as it is (tools/setup --all installs it)" >&2
fi
