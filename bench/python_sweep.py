#!/usr/bin/python3
"""A sweep of 100 points from Python against the same sweep on the command line
(docs/bench.md), printed, never asserted: allocsim.sweep builds the study's options and
calls it in-process; `allocsim sweep --csv` pays its process start and writes the file. The
two alternate, each timed several times; the medians are printed with their ratio.

Usage: PYTHONPATH=build/release/python bench/python_sweep.py [ALLOCSIM_BINARY] [--repeats N]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import allocsim

SWEEPS = {
    "random:n=20000 x 100 seeds": (dict(workload="random:n=20000", param=["seed=1:100:1"]),
                                   ["--workload", "random:n=20000", "--param", "seed=1:100:1"]),
    "resnet18 x 100 batches": (dict(workload="resnet18", batch="1:100:1"),
                               ["--workload", "resnet18", "--batch", "1:100:1"]),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default=str(Path(__file__).resolve().parents[1] / "build/release/allocsim"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    options = parser.parse_args()
    common = dict(policy="bfc,caching", capacity="16GiB", threads=options.threads)
    common_args = ["--policy", "bfc,caching", "--capacity", "16GiB", "--threads", str(options.threads), "--quiet"]
    for name, (keywords, arguments) in SWEEPS.items():
        python_times, cli_times = [], []
        with tempfile.TemporaryDirectory() as folder:
            csv = os.path.join(folder, "sweep.csv")
            for _ in range(options.repeats):
                began = time.perf_counter()
                rows = allocsim.sweep(**keywords, **common)
                python_times.append(time.perf_counter() - began)
                if os.path.exists(csv):
                    os.remove(csv)
                began = time.perf_counter()
                subprocess.run([options.binary, "sweep", *arguments, *common_args, "--csv", csv], check=True,
                               stdout=subprocess.DEVNULL)
                cli_times.append(time.perf_counter() - began)
        python, cli = statistics.median(python_times), statistics.median(cli_times)
        print(f"{name} ({len(rows)} rows): Python {python:.3f} s, command line {cli:.3f} s, "
              f"ratio {python / cli:.3f} (medians of {options.repeats})")


if __name__ == "__main__":
    main()
