#!/usr/bin/env python3
"""The summary table of a hardware validation: allocsim's predictions against the GPU.

    python3 real_gpu/summarize.py --allocsim BIN --dir results/validation

Reads what real_gpu/validate.sh left in DIR (torch/record*.json and snapshots from
record_torch.py, *.csv from `allocsim validate`), runs allocsim for the predictions, and
writes DIR/summary.csv and DIR/summary.md (also printed). Standard library only; the
checks need no GPU, so this runs anywhere on recorded results.

Checks (the target each is held to in brackets; until a hardware run is committed under
results/validation/ these are targets, not results):
  snapshot_replay      caching replay of each recorded snapshot (read by allocsim itself,
                       `allocsim run --policy caching` with the run's settings) vs torch
                       max_memory_reserved [exact]; and, when this allocsim has it, the simulated
                       reserved peak of `allocsim replay-check FILE` (which rebuilds the state the
                       recording began in and compares every segment event) [exact]
  workload_allocated   allocsim's resnet50 workload vs torch max_memory_allocated [within 3%]
  workload_reserved    the same workload's reserved peak vs torch max_memory_reserved [reported]
  largest_batch        predicted vs measured largest batch under the memory fraction [equal]
  policy_reserved      simulated vs real peak reserved for each policy on CudaDevice [exact]
  policy_device_used   simulated vs real cudaMemGetInfo delta [exact]
  policy_oom_count     simulated vs real OOM count [exact]
  policy_oom           simulated vs real first OOM event [exact]

Not every row can fail: for a policy that never chooses between segments by address, on an
uncapped run, simulated and real reserved bytes are equal by construction, and so is "no OOM"
on both sides. `allocsim validate` marks such rows (its `informative` column); here they are
listed with informative = no, left out of the pass count, and counted apart per check.
"""
import argparse
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def run_allocsim(allocsim, args, timeout=300):
    return subprocess.run([allocsim] + args, capture_output=True, text=True, timeout=timeout)


def simulate(allocsim, workload, policy, total, in_use):
    """The first tenant of `allocsim run ... --json` as a dict."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "run.json")
        args = ["run", "--workload", workload, "--policy", policy, "--json", path]
        if total:
            args += ["--capacity", str(total), "--context", str(in_use), "--granularity", "2MiB"]
        result = run_allocsim(allocsim, args)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip() or f"allocsim exited {result.returncode}")
        with open(path) as file:
            return json.load(file)["tenants"][0]


def caching_spec(conf):
    """allocsim's caching policy with a PYTORCH_CUDA_ALLOC_CONF ("a:1,b:2" -> conf=a:1+b:2)."""
    return "caching" if not conf else "caching:conf=" + conf.replace(",", "+")


def row(check, case, allocsim, measured, target, passed, note="", informative=True):
    difference = ""
    if isinstance(allocsim, (int, float)) and isinstance(measured, (int, float)):
        difference = measured - allocsim
        if target.startswith("within") and measured:
            difference = f"{(allocsim - measured) / measured:+.2%}"
    return {"check": check, "case": case, "allocsim": allocsim, "measured": measured,
            "difference": difference, "target": target,
            "pass": {True: "yes", False: "NO", None: "n/a"}[passed], "note": note,
            "informative": "yes" if informative else "no"}


def held_before(record):
    """What the card held before a run that the workload cannot use: the CUDA context, the
    libraries' own memory and the warm-up's cuBLAS workspace (older records: the context)."""
    if "outside_allocator_bytes" in record:
        return record["outside_allocator_bytes"] + record.get("warm_up_reserved_bytes", 0)
    return record["in_use_before_bytes"]


def has_replay_check(allocsim):
    result = run_allocsim(allocsim, ["replay-check", "--help"], timeout=60)
    return result.returncode == 0


def snapshot_rows(allocsim, record, replay_check):
    rows = []
    conf = record.get("PYTORCH_CUDA_ALLOC_CONF")
    for run in record["runs"]:
        measured = run["max_memory_reserved"]
        case = os.path.basename(run["snapshot"])
        try:
            tenant = simulate(allocsim, run["snapshot"], caching_spec(conf), record["total_bytes"],
                              held_before(record))
            predicted = tenant["peak_reserved_bytes"]
            rows.append(row("snapshot_replay", case, predicted, measured, "exact", predicted == measured,
                            f"allocsim run --policy {caching_spec(conf)}"))
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rows.append(row("snapshot_replay", case, "", measured, "exact", None, str(error)[:200]))
        if replay_check:  # segment by segment, from the state the recording began in
            result = run_allocsim(allocsim, ["replay-check", run["snapshot"]])
            text = result.stdout + result.stderr
            peak = re.search(r"simulated [^(]*\((\d+) B\)", text)
            verdict = (text.strip().splitlines() or [""])[-1][:200]
            simulated = int(peak.group(1)) if peak else ""
            rows.append(row("snapshot_replay_check", case, simulated, measured, "exact",
                            simulated == measured if peak else None,
                            f"replay-check: {verdict} (exit {result.returncode})"))
    return rows


def workload_rows(allocsim, record):
    rows = []
    conf = record.get("PYTORCH_CUDA_ALLOC_CONF")
    for run in record["runs"]:
        if run.get("oom"):
            continue
        try:
            tenant = simulate(allocsim, run["workload"], caching_spec(conf), record["total_bytes"],
                              held_before(record))
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rows.append(row("workload_allocated", run["workload"], "", run["max_memory_allocated"], "within 3%",
                            None, str(error)[:200]))
            continue
        allocated, measured = tenant["peak_allocated_bytes"], run["max_memory_allocated"]
        notes = []
        if record.get("warm_up_allocated_bytes"):
            notes.append(f"measured includes {record['warm_up_allocated_bytes']} B of cuBLAS workspace "
                         "that the lowering does not model")
        if run.get("skipped_steps"):
            notes.append(f"{run['skipped_steps']} optimizer steps skipped on overflow; the lowering assumes none")
        rows.append(row("workload_allocated", run["workload"], allocated, measured, "within 3%",
                        abs(allocated - measured) <= 0.03 * measured, "; ".join(notes)))
        rows.append(row("workload_reserved", run["workload"], tenant["peak_reserved_bytes"],
                        run["max_memory_reserved"], "reported", None))
    return rows


def predicted_largest(allocsim, precision, steps, fraction, record, limit):
    """The largest batch allocsim says trains without an OOM, by the same search as record_torch."""
    policy = f"caching:fraction={fraction!r}"
    amp = "_amp" if precision == "amp" else ""

    def fits(batch):
        tenant = simulate(allocsim, f"resnet50_b{batch}{amp}_momentum_steps{steps}", policy,
                          record["total_bytes"], held_before(record))
        return tenant["oom_count"] == 0

    low, high = 0, 16
    while high <= limit and fits(high):
        low, high = high, high * 2
    if high > limit:
        return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def largest_batch_rows(allocsim, record, limit):
    rows = []
    steps = record["runs"][0]["steps"] if record["runs"] else 3
    for search in record.get("largest_batch", []):
        measured = search.get("largest_batch")
        case = f"resnet50 {search['precision']} under {search.get('cap_bytes', '?')} bytes"
        try:
            predicted = predicted_largest(allocsim, search["precision"], steps, search["fraction"], record, limit)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rows.append(row("largest_batch", case, "", measured, "equal", None, str(error)[:200]))
            continue
        rows.append(row("largest_batch", case, predicted, measured, "equal",
                        None if measured is None else predicted == measured))
    return rows


def policy_rows(folder, backend="cuda"):
    rows = []
    wanted = {"peak_reserved_bytes": "policy_reserved", "device_used_peak_bytes": "policy_device_used",
              "oom_count": "policy_oom_count", "first_oom_event": "policy_oom"}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        if path.endswith(".calls.csv") or os.path.basename(path).startswith("summary"):
            continue
        with open(path, newline="") as file:
            for line in csv.DictReader(file):
                check = wanted.get(line.get("metric"))
                if not check or line.get("backend") != backend:
                    continue
                case = os.path.basename(path)[:-len(".csv")]
                simulated = int(float(line["simulated"])) if line["simulated"] else "none"
                measured = int(float(line["measured"])) if line["measured"] else "none"
                # An older allocsim wrote no informative column: every row counted, as it did.
                informative = line.get("informative") != "no"
                rows.append(row(check, case, simulated, measured, "exact", line["agrees"] == "yes",
                                "" if informative else "equal by construction on this run", informative))
    return rows


def tally(rows):
    """Per check, in order of first appearance: informative rows that pass, informative rows
    judged, and rows left out as equal by construction."""
    counts = {}
    for item in rows:
        passed, judged, constructed = counts.setdefault(item["check"], [0, 0, 0])
        if item["informative"] == "no":
            constructed += 1
        elif item["pass"] in ("yes", "NO"):
            judged += 1
            passed += item["pass"] == "yes"
        counts[item["check"]] = [passed, judged, constructed]
    return counts


def write(rows, folder):
    columns = ["check", "case", "allocsim", "measured", "difference", "target", "pass", "informative", "note"]
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for item in rows:
        lines.append("| " + " | ".join(str(item[column]).replace("|", "/") for column in columns) + " |")
    counts = tally(rows)
    lines.append("")
    lines.append("| check | informative rows that pass | equal by construction (not counted) |")
    lines.append("|---|---|---|")
    for check, (passed, judged, constructed) in counts.items():
        lines.append(f"| {check} | {passed} of {judged} | {constructed} |")
    passed = sum(count[0] for count in counts.values())
    judged = sum(count[1] for count in counts.values())
    constructed = sum(count[2] for count in counts.values())
    lines.append("")
    lines.append(f"{passed} of {judged} judged informative checks pass ({len(rows)} rows; {constructed} equal "
                 "by construction, not counted).")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(folder, "summary.md"), "w") as file:
        file.write(text)
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allocsim", required=True, help="the allocsim binary")
    parser.add_argument("--dir", default="results/validation")
    parser.add_argument("--max-batch", type=int, default=2048)
    parser.add_argument("--backend", default="cuda", help="whose validate CSVs to read (host: a dry run)")
    args = parser.parse_args()
    if not os.access(args.allocsim, os.X_OK):
        print(f"summarize: {args.allocsim} is not an executable allocsim", file=sys.stderr)
        sys.exit(2)
    records = []
    for path in sorted(glob.glob(os.path.join(args.dir, "torch", "record*.json"))):
        with open(path) as file:
            records.append(json.load(file))
    replay_check = has_replay_check(args.allocsim)
    rows = []
    for record in records:
        rows += snapshot_rows(args.allocsim, record, replay_check)
        rows += workload_rows(args.allocsim, record)
        rows += largest_batch_rows(args.allocsim, record, args.max_batch)
    rows += policy_rows(args.dir, args.backend)
    if not records:
        rows.append(row("torch_records", "-", "", "", "present", False, "no torch/record*.json: record_torch.py did not run"))
    print(write(rows, args.dir), end="")


if __name__ == "__main__":
    main()
