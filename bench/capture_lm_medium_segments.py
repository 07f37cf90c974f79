"""The segments of the recorded medium language model against its capture's (docs/capture.md):
the capture of bench/capture_lm_medium.py (two steps), replayed through `caching` and dumped as
a snapshot by torch.cuda.memory._dump_snapshot, and the recording's own, by count and size.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/capture_lm_medium_segments.py
"""
import collections
import os
import pickle
import tempfile

import torch

import allocsim
from capture_lm_medium import LM, AdamW

RECORDING = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces",
                         "lm_medium_ctx128_train.snapshot.pickle")


def segments(path):
    """The snapshot's segment sizes at its end, and those allocated inside its window."""
    with open(path, "rb") as file:
        snapshot = pickle.load(file)
    allocated = [event["size"] for trace in snapshot["device_traces"] for event in trace
                 if event["action"] == "segment_alloc"]
    return [segment["total_size"] for segment in snapshot["segments"]], allocated


def describe(name, path):
    held, allocated = segments(path)
    by_size = sorted(collections.Counter(size >> 20 for size in held).items())
    sizes = ", ".join(f"{count} of {mib} MiB" for mib, count in by_size)
    print(f"{name}: {len(allocated)} segments allocated in its window; {len(held)} held at the end "
          f"({sizes}; {sum(held):,} B)")


def main():
    dumped = os.path.join(tempfile.mkdtemp(), "capture.pickle")
    with allocsim.capture(device="a100-80gb", name="lm_medium_ctx128"):
        model = LM().cuda()
        optimizer = AdamW(model.parameters())
        for _ in range(2):
            tokens = torch.randint(0, 10000, (4, 128), device="cuda")
            targets = torch.randint(0, 10000, (4, 128), device="cuda")
            logits = model(tokens)
            torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1)).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.memory._dump_snapshot(dumped)
    describe("recording", RECORDING)
    describe("capture  ", dumped)


if __name__ == "__main__":
    main()
