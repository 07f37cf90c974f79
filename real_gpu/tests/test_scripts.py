"""The parts of record_torch.py and summarize.py that need no GPU and no PyTorch."""
import csv
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

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
        header = "workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,difference,agrees\n"
        with tempfile.TemporaryDirectory() as folder:
            for backend in ("cuda", "host"):
                with open(os.path.join(folder, f"w__bfc__{backend}.csv"), "w") as file:
                    file.write(header)
                    file.write(f"w,bfc,{backend},GPU,1,peak_reserved_bytes,exact,10,10,0,yes\n")
                    file.write(f"w,bfc,{backend},GPU,1,first_oom_event,exact,,5,,NO\n")
                    file.write(f"w,bfc,{backend},GPU,1,malloc_ns_mean,ratio,1,2,x2,cost\n")
            with open(os.path.join(folder, "w__bfc__cuda.calls.csv"), "w") as file:
                file.write("index,op,bytes,measured_ns,simulated_ns\n")
            rows = summarize.policy_rows(folder)
            self.assertEqual([(r["check"], r["allocsim"], r["measured"], r["pass"]) for r in rows],
                             [("policy_reserved", 10, 10, "yes"), ("policy_oom", "none", 5, "NO")])
            text = summarize.write(rows, folder)
            self.assertIn("1 of 2 judged checks pass", text)
            with open(os.path.join(folder, "summary.csv"), newline="") as file:
                self.assertEqual(len(list(csv.DictReader(file))), 2)


if __name__ == "__main__":
    unittest.main()
