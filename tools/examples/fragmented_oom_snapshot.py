#!/usr/bin/python3
"""Writes docs/recordings.md's `allocsim replay` example: a PyTorch 2.1-style memory snapshot (plain dicts
and lists, pickled by the standard library) that ends in a fragmentation OOM.

  python3 tools/examples/fragmented_oom_snapshot.py fragmented_oom.pickle

A 40 MiB segment is allocated, freed (cached), split by a 4 MiB request; the next 40 MiB
finds no block, and cudaMalloc fails with 30 MiB free on the device.
"""
import pickle
import sys

M = 1 << 20
X = 0x7f0000000000


def entry(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0}


trace = [entry("segment_alloc", X, 40 * M), entry("alloc", X, 40 * M), entry("free_requested", X, 40 * M),
         entry("free_completed", X, 40 * M), entry("alloc", X, 4 * M),
         {"action": "oom", "size": 40 * M, "device_free": 30 * M, "stream": 0}]
blocks = [{"size": 4 * M, "state": "active_allocated", "address": X, "requested_size": 4 * M},
          {"size": 36 * M, "state": "inactive", "address": X + 4 * M}]
snapshot = {"segments": [{"device": 0, "address": X, "total_size": 40 * M, "stream": 0, "segment_type": "large",
                          "allocated_size": 4 * M, "blocks": blocks}],
            "device_traces": [trace]}

if len(sys.argv) != 2:
    sys.exit("usage: fragmented_oom_snapshot.py OUT.pickle")
with open(sys.argv[1], "wb") as out:
    pickle.dump(snapshot, out, protocol=4)
