"""Tests of tools/torch_snapshot.py: python3 -m unittest discover -s tools/tests -v"""
import csv
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]
SCRIPT = TOOLS / "torch_snapshot.py"
# The shared recordings, only where CMake's test says they are (ALLOCSIM_SHARED_TRACES).
SHARED_TRACES = Path(os.environ.get("ALLOCSIM_SHARED_TRACES", "/nonexistent"))
sys.path.insert(0, str(TOOLS))
import torch_snapshot  # noqa: E402


def entry(action, addr, size, stream, time_us, **extra):
    return dict(action=action, addr=addr, size=size, stream=stream, time_us=time_us, frames=[], **extra)


# A recording that starts mid-run, on two streams, with an empty_cache() and a failed malloc.
TINY = {
    "segments": [
        {"device": 0, "address": 0x50000, "total_size": 2097152, "stream": 777, "segment_type": "small",
         "blocks": [{"address": 0x50000, "size": 512, "requested_size": 64, "state": "active_allocated"},
                    {"address": 0x50200, "size": 512, "requested_size": 0, "state": "inactive"}]},
        {"device": 0, "address": 0x10000, "total_size": 2097152, "stream": 777, "segment_type": "small",
         "blocks": [{"address": 0x10000, "size": 512, "requested_size": 200, "state": "active_allocated"},
                    {"address": 0x20000, "size": 512, "requested_size": 300, "state": "active_allocated"}]},
    ],
    "device_traces": [[
        entry("segment_alloc", 0x10000, 2097152, 777, 1000),
        entry("alloc", 0x10000, 100, 777, 1000),
        entry("alloc", 0x20000, 300, 5, 1002),
        entry("free_requested", 0x30000, 50, 5, 1003),   # a block from before the recording
        entry("free_completed", 0x30000, 50, 5, 1004),
        entry("free_requested", 0x10000, 100, 777, 1001),  # goes back in time: clamped
        entry("free_completed", 0x10000, 100, 777, 1005),
        entry("segment_free", 0x10000, 2097152, 777, 1006),  # empty_cache(): one release
        entry("segment_free", 0x40000, 2097152, 777, 1007),
        entry("alloc", 0x10000, 200, 777, 1008),           # the address is reused
        entry("segment_free", 0x60000, 2097152, 777, 1009),  # a failed malloc's own release
        {"action": "oom", "device_free": 0, "size": 1048576, "stream": 777, "time_us": 1010},
        entry("snapshot", 0, 600, 0, 1011),
    ]],
}

TINY_ROWS = """\
time_ns,op,id,bytes,stream,tag
0,alloc,0x30000,50,0,other
0,alloc,0x50000,64,1,other
0,alloc,0x10000,100,1,other
2000,alloc,0x20000,300,0,other
4000,free,0x30000,50,,
5000,free,0x10000,100,,
6000,release,,,,
8000,alloc,0x10000,200,1,other
"""


TAGS = ("weight", "activation", "gradient", "optimizer", "input", "temp", "other")


def run_cli(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def data_lines(text):
    return [line for line in text.splitlines() if not line.startswith("#")]


def replay_csv(path):
    """Replays a CSV trace as allocsim's reader does; returns (events, peak live bytes)."""
    live, current, peak, last, events = {}, 0, 0, 0, 0
    with open(path, newline="") as file:
        rows = csv.DictReader(line for line in file if not line.startswith("#"))
        for row in rows:
            events += 1
            time_ns = int(row["time_ns"])
            if time_ns < last:
                raise AssertionError(f"time goes back: {row}")
            last = time_ns
            if row["op"] == "alloc":
                if row["id"] in live:
                    raise AssertionError(f"alloc of a live id: {row}")
                if not 0 <= int(row["stream"]) <= 0xFFFF or row["tag"] not in TAGS:
                    raise AssertionError(f"bad stream or tag: {row}")
                live[row["id"]] = int(row["bytes"])
                current += live[row["id"]]
                peak = max(peak, current)
            elif row["op"] == "free":
                if row["id"] not in live:
                    raise AssertionError(f"free of an id that is not live: {row}")
                if row["bytes"] and int(row["bytes"]) != live[row["id"]]:
                    raise AssertionError(f"free with another size than its alloc: {row}")
                current -= live.pop(row["id"])
            elif row["op"] != "release":
                raise AssertionError(f"unknown op: {row}")
    return events, peak


class UnpicklerTest(unittest.TestCase):
    def load(self, data):
        return torch_snapshot.PlainDataUnpickler(io.BytesIO(data)).load()

    def test_refuses_a_function_reference(self):
        with self.assertRaises(pickle.UnpicklingError) as caught:
            self.load(pickle.dumps(os.system))
        self.assertIn(f"{os.system.__module__}.system", str(caught.exception))

    def test_refuses_a_handcrafted_global_opcode(self):
        # Protocol 0: GLOBAL os system, MARK, STRING, TUPLE, REDUCE: would run `echo pwned`.
        with self.assertRaises(pickle.UnpicklingError) as caught:
            self.load(b"cos\nsystem\n(S'echo pwned'\ntR.")
        self.assertIn("os.system", str(caught.exception))

    def test_refuses_a_harmless_looking_class(self):
        with self.assertRaises(pickle.UnpicklingError) as caught:
            self.load(pickle.dumps(io.BytesIO))  # a class, not even an instance
        self.assertIn("BytesIO", str(caught.exception))

    def test_loads_plain_data(self):
        data = {"a": [1, 2.5, "x", None, True, (3, 4)], "b": {"c": -1 << 70}}
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            self.assertEqual(self.load(pickle.dumps(data, protocol=protocol)), data)


class ConvertTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.dir = Path(self.folder.name)
        self.addCleanup(self.folder.cleanup)

    def write_pickle(self, data, name="snap.pickle"):
        path = self.dir / name
        path.write_bytes(pickle.dumps(data))
        return path

    def test_tiny_snapshot_converts_exactly(self):
        out, sidecar = self.dir / "trace.csv", self.dir / "settings.json"
        done = run_cli(self.write_pickle(TINY), "-o", out, "--settings-out", sidecar, "--summary")
        self.assertEqual(done.returncode, 0, done.stderr)
        text = out.read_text()
        self.assertEqual("\n".join(data_lines(text)) + "\n", TINY_ROWS)
        self.assertIn("# 2 pre-existing blocks", text)
        self.assertIn("# 1 timestamps clamped", text)
        self.assertIn("1 bursts inside a failed malloc left out", text)
        self.assertIn("# streams (ours = cuda): 0 = 5, 1 = 777", text)
        self.assertEqual(replay_csv(out), (8, 564))  # 64 + 300 + 200 at the end
        self.assertIn("peak live requested bytes: 564", done.stdout)
        self.assertIn("releases emitted: 1", done.stdout)
        settings = json.loads(sidecar.read_text())
        self.assertFalse(settings["allocator_settings_recorded"])
        self.assertEqual(settings["allocator_settings"]["max_split_size"], -1)
        events = [(e["action"], e["addr"], e["size"], e["stream"], e["before_event"])
                  for e in settings["segment_events"]]
        self.assertEqual(events, [("segment_alloc", 0x10000, 2097152, 1, 2),
                                  ("segment_free", 0x10000, 2097152, 1, 7),
                                  ("segment_free", 0x40000, 2097152, 1, 7),
                                  ("segment_free", 0x60000, 2097152, 1, 8)])
        self.assertEqual([(o["size"], o["before_event"]) for o in settings["ooms"]], [(1048576, 8)])
        # The rows that made them: an alloc, the release row (twice), and none for the
        # failed malloc's own release (8 is past the last row).
        self.assertEqual([e["during_event"] for e in settings["segment_events"]], [2, 6, 6, 8])
        self.assertEqual([(b["addr"], b["size"], b["stream"], b["block_size"]) for b in settings["preexisting"]],
                         [(0x30000, 50, 0, None), (0x50000, 64, 1, 512)])
        # At the start: the snapshot's segments with the trace's segment events undone.
        self.assertEqual([(s["addr"], s["size"], s["stream"], s["pool"]) for s in settings["segments_at_start"]],
                         [(0x40000, 2097152, 1, "small"), (0x50000, 2097152, 1, "small"),
                          (0x60000, 2097152, 1, "small")])
        self.assertEqual([[(b["addr"], b["size"], b["allocated"]) for b in s["blocks"]]
                          for s in settings["segments_at_end"]],
                         [[(0x10000, 512, True), (0x20000, 512, True)], [(0x50000, 512, True), (0x50200, 512, False)]])

    def test_recorded_settings_and_second_device(self):
        snapshot = dict(TINY, allocator_settings={"expandable_segments": True},
                        device_traces=[[], [entry("alloc", 0x100, 7, 0, 5)]])
        sidecar = self.dir / "s.json"
        done = run_cli(self.write_pickle(snapshot), "--device", 1, "--settings-out", sidecar)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(sidecar.read_text())["allocator_settings"], {"expandable_segments": True})

    def assert_fails(self, snapshot_path, message, *extra):
        out, before = self.dir / "trace.csv", sorted(self.dir.iterdir())
        done = run_cli(snapshot_path, "-o", out, *extra)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertTrue(done.stderr.startswith(f"torch_snapshot: {snapshot_path}: "), done.stderr)
        self.assertIn(message, done.stderr)
        self.assertEqual(sorted(self.dir.iterdir()), before)  # no output, not even a partial one

    def test_errors(self):
        garbage = self.dir / "garbage.pickle"
        garbage.write_bytes(b"time_ns,op\n")
        self.assert_fails(garbage, "not a pickle")
        evil = self.dir / "evil.pickle"
        evil.write_bytes(b"cos\nsystem\n(S'touch pwned'\ntR.")
        self.assert_fails(evil, "refused global os.system")
        self.assert_fails(self.write_pickle([1, 2]), "not a dict")
        self.assert_fails(self.write_pickle({"segments": []}), "no 'device_traces'")
        self.assert_fails(self.write_pickle({"segments": [], "device_traces": []}), "no device traces")
        self.assert_fails(self.write_pickle(TINY), "no device trace 3", "--device", 3)
        broken = dict(TINY, device_traces=[[{"action": "alloc", "addr": 1, "stream": 0, "time_us": 0}]])
        self.assert_fails(self.write_pickle(broken), "lacks key 'size'")


class RecordingKindsTest(unittest.TestCase):
    """Issue 13's rules on the converter's side (replay-check's tests replay them)."""

    def convert(self, snapshot, device=None):
        return torch_snapshot.convert(snapshot, device)

    def test_pytorch_2_0_without_time_addresses_or_requested_sizes(self):
        # Rule 2: no time_us; blocks tile their segment and carry only history.
        snapshot = {"segments": [{"device": 0, "address": 0x1000000, "total_size": 2097152, "stream": 0,
                                  "blocks": [{"size": 1024, "state": "inactive", "history": []},
                                             {"size": 512, "state": "active_allocated",
                                              "history": [{"addr": 0x1000400, "real_size": 300, "frames": []}]},
                                             {"size": 2097152 - 1536, "state": "inactive"}]}],
                    "device_traces": [[{"action": "alloc", "addr": 0x1000000, "size": 1000, "stream": 0},
                                       {"action": "free_completed", "addr": 0x1000000, "size": 1000, "stream": 0}]]}
        result = self.convert(snapshot)
        self.assertEqual(result["rows"], [(0, "alloc", 0x1000400, 300, 0), (0, "alloc", 0x1000000, 1000, 0),
                                          (1000, "free", 0x1000000, 1000, None)])
        self.assertEqual([b["addr"] for b in result["segments_at_end"][0]["blocks"]], [0x1000000, 0x1000400, 0x1000600])
        self.assertTrue(result["format"].startswith("PyTorch 2.0"))
        self.assertFalse(result["settings_recorded"])
        self.assertEqual(result["addresses"], [0x1000400, 0x1000000])

    def test_older_than_2_0_is_refused_naming_the_version(self):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "old.pickle"
            path.write_bytes(pickle.dumps([{"address": 0, "total_size": 2097152, "blocks": []}]))
            with self.assertRaises(torch_snapshot.SnapshotError) as caught:
                torch_snapshot.load_snapshot(path)
        self.assertIn("PyTorch 1.13 or older", str(caught.exception))

    def test_several_devices_need_a_choice(self):
        # Rule 3: one list per visible device; the only non-empty one by default.
        one = entry("alloc", 0x100, 7, 0, 5)
        self.assertEqual(self.convert({"segments": [], "device_traces": [[], [one]]})["device"], 1)
        with self.assertRaises(torch_snapshot.SnapshotError) as caught:
            self.convert({"segments": [], "device_traces": [[one], [], [one, one]]})
        self.assertIn("2 devices have traces: 0 (1 entries), 2 (2 entries); choose one with --cuda-device N",
                      str(caught.exception))
        self.assertEqual(self.convert({"segments": [], "device_traces": [[one], [], [one]]}, 2)["device"], 2)

    def test_streams_numbered_by_raw_value(self):
        # Rule 4: 0x200 appears first but is numbered after 0x100 (and the default stream 0).
        snapshot = {"segments": [{"device": 0, "address": 0x9000000, "total_size": 2097152, "stream": 0,
                                  "blocks": []}],
                    "device_traces": [[entry("alloc", 0x100, 7, 0x200, 1), entry("alloc", 0x300, 7, 0x100, 2)]]}
        self.assertEqual(self.convert(snapshot)["streams"], {0: 0, 0x100: 1, 0x200: 2})

    def test_frames_outside_torch_and_categories(self):
        torch_frame = {"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125,
                       "name": "forward"}
        cpp_frame = {"filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 900, "name": "malloc"}
        model = {"filename": "/home/me/model.py", "line": 42, "name": "forward"}
        cache = {"filename": "/home/me/cache.py", "line": 7, "name": "update"}
        snapshot = {"segments": [{"device": 0, "address": 0x9000000, "total_size": 2097152, "stream": 0, "blocks": []}],
                    "device_traces": [[dict(entry("alloc", 0x100, 7, 0, 1), frames=[cpp_frame, torch_frame, model]),
                                       dict(entry("alloc", 0x200, 7, 0, 2), frames=[torch_frame, cache, model],
                                            category="PARAMETER"),
                                       dict(entry("alloc", 0x300, 7, 0, 3), frames=[torch_frame]),
                                       dict(entry("alloc", 0x400, 7, 0, 4), frames=[model], category="Category.GRADIENT")]]}
        result = self.convert(snapshot)
        self.assertEqual(result["frames"], ["model.py:42 forward", "cache.py:7 update"])
        self.assertEqual(result["alloc_frames"], [0, 1, -1, 0])
        self.assertEqual(result["tags"], ["other", "weight", "other", "gradient"])
        rows = data_lines(torch_snapshot.render_csv(result, "x.pickle"))
        self.assertEqual([row.rsplit(",", 1)[1] for row in rows[1:]], ["other", "weight", "other", "gradient"])
        # No frames recorded: nothing in the sidecar.
        self.assertEqual(self.convert({"segments": [], "device_traces": [[entry("alloc", 0x100, 7, 0, 1)]]})["alloc_frames"], [])

    def test_expandable_segments_at_the_start_undo_the_maps(self):
        # Rule 6: a snapshot lists an expandable segment per mapped range; the trace's maps
        # and unmaps, undone, leave what was mapped when the recording began.
        M = 1 << 20
        segment = {"device": 0, "address": 0x2000000, "total_size": 40 * M, "stream": 0, "segment_type": "large",
                   "is_expandable": True, "blocks": [{"address": 0x2000000, "size": 40 * M, "state": "inactive"}]}
        maps = [entry("segment_map", 0x2000000 + 20 * M, 20 * M, 0, 1), entry("alloc", 0x2000000 + 20 * M, 5, 0, 1),
                entry("segment_unmap", 0x2000000 + 60 * M, 20 * M, 0, 2)]
        start = self.convert({"segments": [segment], "device_traces": [maps]})["segments_at_start"]
        self.assertEqual([(s["addr"], s["size"], s["pool"], s["expandable"]) for s in start],
                         [(0x2000000, 20 * M, "large", True), (0x2000000 + 60 * M, 20 * M, "large", True)])
        # Mapped from the first entry on: nothing at the start.
        maps[2] = entry("segment_map", 0x2000000, 20 * M, 0, 0)
        self.assertEqual(self.convert({"segments": [segment], "device_traces": [maps]})["segments_at_start"], [])

    def test_private_pools_are_named_with_their_entry(self):
        # Rule 7: replay-check refuses them by these names.
        snapshot = {"segments": [{"device": 0, "address": 0x9000000, "total_size": 2097152, "stream": 0,
                                  "segment_pool_id": (0, 0), "blocks": []},
                                 {"device": 0, "address": 0xa000000, "total_size": 2097152, "stream": 0,
                                  "segment_pool_id": (3, 1), "blocks": []}],
                    "device_traces": [[entry("alloc", 0x100, 7, 0, 1), entry("alloc", 0x200, 7, 0, 1, pool_id=(4, 0))]]}
        self.assertEqual(self.convert(snapshot)["private_pools"],
                         [{"pool": "(3, 1)", "entry": "segments[1]"}, {"pool": "(4, 0)", "entry": "device_traces[0][1]"}])


class MessagesTest(unittest.TestCase):
    """Errors name the file and the entry, whole: one printable line."""

    def fails(self, data):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bad.pickle"
            path.write_bytes(data)
            done = run_cli(path, "--summary")
        self.assertEqual(done.returncode, 2)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertTrue(done.stderr.startswith(f"torch_snapshot: {path}: "), done.stderr)
        self.assertTrue(done.stderr.isprintable() or done.stderr[:-1].isprintable(), done.stderr)
        return done.stderr

    def test_a_nul_byte_in_a_value(self):
        data = pickle.dumps({"segments": [], "device_traces": [[entry("alloc", 1, "a\x00\nb", 0, 1)]]})
        self.assertIn("device_traces[0][0] (alloc): 'size' is 'a\\x00\\nb', not a number", self.fails(data))

    def test_a_persistent_id(self):
        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                return "storage\x00" if obj == "STORAGE" else None
        out = io.BytesIO()
        Pickler(out).dump({"segments": [], "device_traces": [["STORAGE"]]})
        self.assertIn("refused persistent id 'storage\\x00': a memory snapshot is plain data",
                      self.fails(out.getvalue()))

    def test_a_block_without_size_is_named(self):
        data = pickle.dumps({"segments": [{"device": 0, "address": 0, "total_size": 2097152,
                                           "blocks": [{"size": 512, "state": "inactive"}, {"state": "inactive"}]}],
                             "device_traces": [[entry("alloc", 1, 512, 0, 1)]]})
        self.assertIn("segments[0].blocks[1] lacks its size", self.fails(data))


@unittest.skipUnless(SHARED_TRACES.is_dir(), f"no shared traces at {SHARED_TRACES}")
class SharedTracesTest(unittest.TestCase):
    def convert(self, name):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        out, sidecar = Path(folder.name) / "trace.csv", Path(folder.name) / "s.json"
        done = run_cli(SHARED_TRACES / name, "-o", out, "--settings-out", sidecar, "--summary")
        self.assertEqual(done.returncode, 0, done.stderr)
        return replay_csv(out), out.read_text(), json.loads(sidecar.read_text())

    def test_lm_medium_training_step(self):
        (events, peak), text, settings = self.convert("lm_medium_ctx128_train.snapshot.pickle")
        self.assertIn("438 freed in it", text)  # as the traces README says
        self.assertTrue(settings["allocator_settings_recorded"])
        self.assertEqual(settings["segment_events"], [])  # every segment predates the trace
        self.assertEqual(len(settings["segments_at_start"]), 377)
        self.assertEqual(len(settings["preexisting"]), 664)
        self.assertGreater(peak, 6 << 30)

    def test_vae_decode_loop(self):
        (events, peak), text, settings = self.convert("vae_decode_loop.snapshot.pickle")
        self.assertFalse(settings["allocator_settings_recorded"])
        self.assertEqual([e["action"] for e in settings["segment_events"]], ["segment_alloc"] * 7)
        self.assertTrue(all(0 <= e["before_event"] <= events for e in settings["segment_events"]))


if __name__ == "__main__":
    unittest.main()
