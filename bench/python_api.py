#!/usr/bin/python3
"""The Python package's costs (docs/bench.md), printed, never asserted:

- a built-in policy replayed from Python against the command line on the same trace file
  (the same events, loaded whole by both; best of --repeat runs each);
- the engine's cost per call into a Python policy that only bumps a pointer, over the
  built-in `direct`'s replay of the same trace;
- the best fit of docs/python.md in events per second.

Usage: PYTHONPATH=build/release/python bench/python_api.py [--events N] [--repeat R]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))  # best_fit.py, the guide's best fit

import allocsim  # noqa: E402
from best_fit import BestFit  # noqa: E402


class Bump(allocsim.Policy):
    """One segment, a pointer that only moves up: the least a Python policy can do per call."""

    def allocate(self, request):
        if not hasattr(self, "segment"):
            self.segment = self.device.malloc(1 << 40)
            self.top = self.segment.addr
        size = (max(request.bytes, 1) + 255) // 256 * 256
        block = allocsim.Block(self.top, size, request)
        self.top += size
        return block

    def deallocate(self, block):
        pass


def best(repeat, action):
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    binary = ROOT / "build" / "release" / "allocsim"
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.atrace")
        trace = allocsim.load(f"random:n={options.events},seed=1")
        trace.save(path)
        events = len(trace)
        cli = best(options.repeat, lambda: subprocess.run([str(binary), "--workload", path, "--policy", "bfc"],
                                                          check=True, stdout=subprocess.DEVNULL))
        python = best(options.repeat, lambda: allocsim.run(path, policy="bfc"))
        print(f"bfc, {events} events from {path}: command line {cli:.3f} s, Python {python:.3f} s "
              f"({python / cli:.2f}x)")
        roomy = "1TiB"
        direct = best(options.repeat, lambda: allocsim.run(trace, policy="direct", capacity=roomy))
        bump = best(options.repeat, lambda: allocsim.run(trace, policy=Bump, capacity=roomy))
        calls = events  # one allocate or deallocate per event
        print(f"Python policy call: {(bump - direct) / calls * 1e6:.2f} us per call over direct "
              f"({bump:.3f} s against {direct:.3f} s)")
        fit = best(1, lambda: allocsim.run(trace, policy=BestFit, capacity="64GiB"))
        print(f"best fit in Python: {events / fit:,.0f} events/s ({fit:.3f} s)")


if __name__ == "__main__":
    main()
