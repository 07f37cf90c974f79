"""record_torch.py, summarize.py and validate.sh without a GPU or PyTorch: the pure parts
directly, the scripts whole against fake_torch/ (torch 2.11's API surface that they use, with
its signatures), so a typo or an API slip fails here rather than in the GPU machine's one try.
ALLOCSIM (set by ctest) names the allocsim binary for the tests that run it."""
import csv
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_GPU = os.path.dirname(HERE)
FAKE_TORCH = os.path.join(HERE, "fake_torch")
ALLOCSIM = os.environ.get("ALLOCSIM", "")
sys.path.insert(0, REAL_GPU)

import record_torch  # noqa: E402  (imports no torch at module level)
import summarize  # noqa: E402


class RecordTorchTest(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(record_torch.parse_bytes("16GiB"), 16 << 30)
        self.assertEqual(record_torch.parse_bytes("1.5MiB"), 3 << 19)
        self.assertEqual(record_torch.parse_bytes("4096"), 4096)
        self.assertEqual(record_torch.parse_bytes("2GB"), 2 * 10**9)
        for bad in ("16Gib", "GiB", "x"):
            with self.assertRaises(Exception):
                record_torch.parse_bytes(bad)

    def test_settings_read_back(self):
        defaults = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False,
                    "garbage_collection_threshold": 0.0}
        self.assertTrue(record_torch.check_settings(defaults, None)["ok"])
        split = dict(defaults, PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:256", max_split_size=256 << 20)
        self.assertTrue(record_torch.check_settings(split, "max_split_size_mb:256")["ok"])
        # The variable was set but the allocator did not take it: that must show.
        verdict = record_torch.check_settings(defaults, "max_split_size_mb:256")
        self.assertFalse(verdict["ok"])
        self.assertIn("max_split_size", verdict["why"])
        self.assertIsNone(record_torch.check_settings(None, None)["ok"])


class SummarizeTest(unittest.TestCase):
    def test_caching_spec_carries_the_settings(self):
        self.assertEqual(summarize.caching_spec(None), "caching")
        self.assertEqual(summarize.caching_spec("max_split_size_mb:256,garbage_collection_threshold:0.8"),
                         "caching:conf=max_split_size_mb:256+garbage_collection_threshold:0.8")

    def test_rows(self):
        within = summarize.row("workload_allocated", "w", 103, 100, "within 3%", True)
        self.assertEqual(within["difference"], "+3.00%")
        exact = summarize.row("policy_reserved", "p", 7, 9, "exact", False)
        self.assertEqual((exact["difference"], exact["pass"]), (2, "NO"))

    def test_policy_rows_read_validate_csv_of_the_gpu_only(self):
        header = ("workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,difference,"
                  "agrees,informative\n")
        with tempfile.TemporaryDirectory() as folder:
            for backend in ("cuda", "host"):
                with open(os.path.join(folder, f"w__bfc__{backend}.csv"), "w") as file:
                    file.write(header)
                    file.write(f"w,bfc,{backend},GPU,1,peak_reserved_bytes,exact,10,10,0,yes,no\n")
                    file.write(f"w,bfc,{backend},GPU,1,device_used_peak_bytes,exact,12,12,0,yes,yes\n")
                    file.write(f"w,bfc,{backend},GPU,1,first_oom_event,exact,,5,,NO,yes\n")
                    file.write(f"w,bfc,{backend},GPU,1,malloc_ns_mean,ratio,1,2,x2,cost,\n")
            with open(os.path.join(folder, "w__bfc__cuda.calls.csv"), "w") as file:
                file.write("index,op,bytes,measured_ns,simulated_ns\n")
            rows = summarize.policy_rows(folder)
            self.assertEqual([(r["check"], r["allocsim"], r["measured"], r["pass"], r["informative"]) for r in rows],
                             [("policy_reserved", 10, 10, "yes", "no"), ("policy_device_used", 12, 12, "yes", "yes"),
                              ("policy_oom", "none", 5, "NO", "yes")])
            text = summarize.write(rows, folder)
            # Reserved bytes equal by construction are listed but not counted as a pass.
            self.assertIn("1 of 2 judged informative checks pass (3 rows; 1 equal by construction", text)
            self.assertIn("| policy_reserved | 0 of 0 | 1 |", text)
            self.assertIn("| policy_oom | 0 of 1 | 0 |", text)
            with open(os.path.join(folder, "summary.csv"), newline="") as file:
                self.assertEqual(len(list(csv.DictReader(file))), 3)

    def test_an_older_csv_without_the_informative_column_counts_every_row(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "w__bfc__cuda.csv"), "w") as file:
                file.write("workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,"
                           "difference,agrees\nw,bfc,cuda,GPU,1,peak_reserved_bytes,exact,10,10,0,yes\n")
            self.assertEqual(summarize.policy_rows(folder)[0]["informative"], "yes")


def fake_torch_env(**extra):
    env = dict(os.environ, PYTHONPATH=FAKE_TORCH, PYTHONUNBUFFERED="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env.update(extra)
    return env


def record(folder, *args, **env):
    """record_torch.py on the fake torch; the process, its record.json (or None) and its calls."""
    calls = os.path.join(folder, "calls.json")
    process = subprocess.run([sys.executable, os.path.join(REAL_GPU, "record_torch.py"), "--out",
                              os.path.join(folder, "torch"), *args],
                             env=fake_torch_env(FAKE_TORCH_CALLS=calls, **env), capture_output=True, text=True,
                             timeout=120)
    path = os.path.join(folder, "torch", "record.json")
    document = None
    if os.path.exists(path):
        with open(path) as file:
            document = json.load(file)
    made = []
    if os.path.exists(calls):
        with open(calls) as file:
            made = json.load(file)
    return process, document, made


class RecordTorchOnFakeTorchTest(unittest.TestCase):
    ARGS = ("--batches", "8,16", "--precisions", "fp32,amp", "--steps", "2", "--cap", "2GiB", "--max-batch", "128")

    def test_a_whole_run(self):
        with tempfile.TemporaryDirectory() as folder:
            process, document, calls = record(folder, *self.ARGS)
            self.assertEqual(process.returncode, 0, process.stderr)
            self.assertEqual([run["name"] for run in document["runs"]],
                             ["resnet50_b8_fp32", "resnet50_b16_fp32", "resnet50_b8_amp", "resnet50_b16_amp"])
            for run in document["runs"]:
                self.assertTrue(os.path.exists(run["snapshot"]), run["snapshot"])
                self.assertEqual(run["skipped_steps"], 0)
                self.assertTrue(run["settings_check"]["ok"], run["settings_check"])
                self.assertGreater(run["max_memory_allocated"], 0)
            self.assertEqual(document["runs"][2]["workload"], "resnet50_b8_amp_momentum_steps2")
            searches = document["largest_batch"]
            self.assertEqual([search["precision"] for search in searches], ["fp32", "amp"])
            for search in searches:
                self.assertIsInstance(search["largest_batch"], int)
                self.assertNotIn("why", search)
                fits = [probe["batch"] for probe in search["probes"] if probe["fits"]]
                self.assertEqual(max(fits), search["largest_batch"])
            # The warm-up made cuBLAS's workspace before the first recording started.
            names = [call["call"] for call in calls]
            self.assertLess(names.index("nn.functional.linear"), names.index("cuda.memory._record_memory_history"))
            self.assertGreater(document["warm_up_reserved_bytes"], 0)
            self.assertGreater(document["outside_allocator_bytes"], 0)
            # Every model is seeded, and AMP starts at a scale that skips no step.
            self.assertEqual(names.count("manual_seed"), names.count("torchvision.models.resnet50"))
            scalers = [call for call in calls if call["call"] == "amp.GradScaler"]
            self.assertTrue(all(call["init_scale"] == 1024.0 for call in scalers))
            self.assertEqual({call["enabled"] for call in scalers}, {False, True})

    def test_amp_at_pytorchs_default_scale_skips_steps_and_says_so(self):
        with tempfile.TemporaryDirectory() as folder:
            process, document, _ = record(folder, "--batches", "8", "--precisions", "amp", "--steps", "2",
                                          "--init-scale", "65536")
            self.assertEqual(process.returncode, 0, process.stderr)
            self.assertEqual(document["runs"][0]["skipped_steps"], 2)

    def test_a_kill_keeps_every_finished_run(self):
        with tempfile.TemporaryDirectory() as folder:
            process, document, _ = record(folder, *self.ARGS, FAKE_TORCH_DIE_AT_MODEL="3")
            self.assertNotEqual(process.returncode, 0)
            self.assertEqual([run["name"] for run in document["runs"]], ["resnet50_b8_fp32", "resnet50_b16_fp32"])

    def test_a_kill_during_the_search_keeps_its_probes(self):
        with tempfile.TemporaryDirectory() as folder:
            process, document, _ = record(folder, *self.ARGS, FAKE_TORCH_DIE_AT_MODEL="7")
            self.assertNotEqual(process.returncode, 0)
            self.assertEqual(len(document["runs"]), 4)
            search = document["largest_batch"][0]
            self.assertEqual(len(search["probes"]), 2)  # models 5 and 6
            self.assertIsNone(search["largest_batch"])
            self.assertIn("did not finish", search["why"])
            self.assertEqual(glob.glob(os.path.join(folder, "torch", "*.tmp")), [])


@unittest.skipUnless(os.access(ALLOCSIM, os.X_OK), "ALLOCSIM names no allocsim binary (ctest sets it)")
class SummarizeOnFakeTorchTest(unittest.TestCase):
    def test_the_table_from_a_fake_recording(self):
        with tempfile.TemporaryDirectory() as folder:
            process, _, _ = record(folder, *RecordTorchOnFakeTorchTest.ARGS)
            self.assertEqual(process.returncode, 0, process.stderr)
            summary = subprocess.run([sys.executable, os.path.join(REAL_GPU, "summarize.py"), "--allocsim", ALLOCSIM,
                                      "--dir", folder, "--backend", "host", "--max-batch", "128"],
                                     capture_output=True, text=True, timeout=300)
            self.assertEqual(summary.returncode, 0, summary.stderr)
            with open(os.path.join(folder, "summary.csv"), newline="") as file:
                rows = list(csv.DictReader(file))
            checks = {row["check"] for row in rows}
            self.assertTrue({"snapshot_replay", "workload_allocated", "largest_batch"} <= checks, checks)
            for row in rows:
                if row["check"] in ("workload_allocated", "largest_batch", "snapshot_replay"):
                    self.assertNotEqual(row["allocsim"], "", row)  # allocsim answered
            self.assertIn("judged informative checks pass", summary.stdout)


if __name__ == "__main__":
    unittest.main()


VALIDATE_SH = os.path.join(REAL_GPU, "validate.sh")
RESULTS = os.path.join(REAL_GPU, "..", "results", "validation")


def read(path):
    with open(path) as file:
        return file.read()


def listing(folder):
    return sorted(os.path.relpath(os.path.join(top, name), folder)
                  for top, _, names in os.walk(folder) for name in names)


@unittest.skipUnless(os.access(ALLOCSIM, os.X_OK), "ALLOCSIM names no allocsim binary (ctest sets it)")
class ValidateShDryRunTest(unittest.TestCase):
    """validate.sh as the GPU machine runs it, on the host stand-in and the fake torch."""

    def run_script(self, out, *args, allocsim=ALLOCSIM, wait=True):
        env = fake_torch_env(OUT=out, ALLOCSIM=allocsim, VALIDATE_BACKEND="host", VALIDATE_WORKLOAD="resnet50_b8",
                             VALIDATE_CAP_WORKLOAD="resnet50_b16", VALIDATE_CAP="2GiB")
        command = ["bash", VALIDATE_SH, *args]
        if not wait:
            return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)

    def wrapper(self, folder, body):
        """An allocsim that does `body` first (a bash snippet; $1 is the command), then the real one."""
        path = os.path.join(folder, "allocsim")
        with open(path, "w") as file:
            file.write(f"#!/usr/bin/env bash\n{body}\nexec {ALLOCSIM} \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def test_everything_comes_back_and_nothing_is_left_in_results(self):
        before = listing(RESULTS)
        with tempfile.TemporaryDirectory() as out:
            process = self.run_script(out)  # no DIR: a dry run writes to a temporary folder
            self.assertEqual(process.returncode, 0, process.stdout[-3000:])
            self.assertEqual(listing(RESULTS), before)
            self.assertTrue({"validation.tar.gz", "summary.md", "validate.log", "snapshots.tar.gz.00"}
                            <= set(os.listdir(out)), os.listdir(out))
            self.assertLessEqual(len(os.listdir(out)), 8)  # what the device tool returns
            with tarfile.open(os.path.join(out, "validation.tar.gz")) as archive:
                names = archive.getnames()
            self.assertTrue(any(name.endswith("torch/record.json") for name in names), names)
            self.assertTrue(any(name.endswith("__vmm__host.csv") for name in names), names)
            self.assertTrue(any("bestfit_region" in name for name in names), names)  # below what is free
            self.assertFalse(any(name.endswith(".pickle") for name in names))
            with open(os.path.join(out, "summary.md")) as file:
                self.assertIn("equal by construction", file.read())
            with open(os.path.join(out, "validate.log")) as file:
                log = file.read()
            # The validate steps run before PyTorch's, so a hang in torch cannot eat their time.
            self.assertLess(log.index("validate_expandable_vmm"), log.index("record_torch"))

    def test_its_own_stale_outputs_go_and_nothing_else(self):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out:
            results = os.path.join(folder, "validation")
            os.makedirs(os.path.join(results, "torch"))
            for stale in ("old__bfc__host.csv", "torch/record_old.json", "keep.txt"):
                with open(os.path.join(results, stale), "w") as file:
                    file.write("stale\n")
            process = self.run_script(out, results)
            self.assertEqual(process.returncode, 0, process.stdout[-3000:])
            self.assertFalse(os.path.exists(os.path.join(results, "old__bfc__host.csv")))
            self.assertFalse(os.path.exists(os.path.join(results, "torch", "record_old.json")))
            self.assertTrue(os.path.exists(os.path.join(results, "keep.txt")))

    def test_a_failed_calibrate_does_not_stop_the_validation(self):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out:
            allocsim = self.wrapper(folder, '[[ "$1" == calibrate ]] && exit 1')
            process = self.run_script(out, os.path.join(folder, "results"), allocsim=allocsim)
            self.assertEqual(process.returncode, 1)  # a step failed
            with open(os.path.join(out, "validate.log")) as file:
                log = file.read()
            self.assertIn("calibrate FAILED", log)
            self.assertIn("built-in cost model", log)
            self.assertEqual(glob.glob(os.path.join(folder, "results", "*__host.csv")).__len__(), 13)

    def test_an_allocsim_that_does_not_start_still_returns_the_log(self):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out:
            allocsim = os.path.join(folder, "allocsim")
            with open(allocsim, "w") as file:
                file.write("#!/usr/bin/env bash\necho 'error while loading shared libraries: libmpi.so.40' >&2\nexit 127\n")
            os.chmod(allocsim, 0o755)
            process = self.run_script(out, os.path.join(folder, "results"), allocsim=allocsim)
            self.assertEqual(process.returncode, 2)
            with open(os.path.join(out, "validate.log")) as file:
                self.assertIn("libmpi.so.40", file.read())

    def test_a_signal_mid_step_still_returns_the_results(self):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out:
            allocsim = self.wrapper(folder, '[[ "$1" == validate ]] && sleep 60')
            script = self.run_script(out, os.path.join(folder, "results"), allocsim=allocsim, wait=False)
            running = os.path.join(folder, "results", "validate.log")  # $OUT's copy lags a step
            for _ in range(300):  # the calibrate step's results are sent before validate starts
                if os.path.exists(running) and "validate_bfc" in read(running):
                    break
                time.sleep(0.1)
            script.terminate()
            self.assertEqual(script.wait(timeout=30), 143)
            with open(os.path.join(out, "validate.log")) as file:
                self.assertIn("stopped by a signal", file.read())
            with tarfile.open(os.path.join(out, "validation.tar.gz")) as archive:
                self.assertTrue(any(name.endswith("device_profile.json") for name in archive.getnames()))
