#!/usr/bin/python3
"""How soon ^C stops a sweep run from Python (docs/bench.md), printed, never asserted: a
SIGINT one second into each sweep, and the seconds from the signal to the KeyboardInterrupt,
with the rows that finished. Points of a small and a large generated trace, and a model's
batches.

Usage: PYTHONPATH=build/release/python bench/python_interrupt.py
"""
import os
import signal
import threading
import time

import allocsim

SWEEPS = {
    "random:n=200000": dict(param=["seed=1:400:1"]),
    "random:n=20000000": dict(param=["seed=1:400:1"]),
    "gpt2_b8": dict(batch="1:4096:1"),
}


def main():
    for workload, axis in SWEEPS.items():
        sent = {}

        def interrupt():
            sent["at"] = time.monotonic()
            os.kill(os.getpid(), signal.SIGINT)

        timer = threading.Timer(1.0, interrupt)
        timer.start()
        try:
            allocsim.sweep(workload=workload, policy="bfc", threads=2, quiet=True, **axis)
            print(f"{workload}: finished before the signal")
        except KeyboardInterrupt as stopped:
            rows = len(getattr(stopped, "partial", []))
            print(f"{workload}: stopped {time.monotonic() - sent['at']:.3f} s after SIGINT, {rows} rows finished")
        timer.join()


if __name__ == "__main__":
    main()
