"""allocsim.capture() against a real recording: the medium language model of
../shared/traces/lm_medium_ctx128_train.snapshot.pickle, written from its description
(bench/capture_lm_medium.py, docs/capture.md), two steps: replayed through `caching`, the peak
allocated is within 1% of the recording's, 7,026,606,592 B (docs/llm.md, the recorded check).
"""
import importlib.util
import os

import pytest

import allocsim

try:
    import torch
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("allocsim.capture needs torch (apt install python3-torch)", allow_module_level=True)

RECORDED_PEAK_ALLOCATED = 7_026_606_592


def load_bench():
    source = os.environ.get("ALLOCSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    spec = importlib.util.spec_from_file_location("capture_lm_medium",
                                                  os.path.join(source, "bench", "capture_lm_medium.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_medium_language_model_peak_within_one_percent_of_its_recording():
    bench = load_bench()
    with allocsim.capture(device="a100-80gb", name="lm_medium_ctx128") as cap:
        model = bench.LM().cuda()
        optimizer = bench.AdamW(model.parameters())
        for _ in range(2):
            tokens = torch.randint(0, 10000, (4, 128), device="cuda")
            targets = torch.randint(0, 10000, (4, 128), device="cuda")
            logits = model(tokens)
            torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1)).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    peak = allocsim.run(cap.trace, policy="caching", device="a100-80gb").to_dict()["peak_allocated_bytes"]
    print(f"\ncapture {peak:,} B, recording {RECORDED_PEAK_ALLOCATED:,} B "
          f"({100 * (peak - RECORDED_PEAK_ALLOCATED) / RECORDED_PEAK_ALLOCATED:+.2f}%)")
    assert abs(peak - RECORDED_PEAK_ALLOCATED) / RECORDED_PEAK_ALLOCATED < 0.01
