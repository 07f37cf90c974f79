#!/usr/bin/env python3
"""Record what PyTorch's own CUDA caching allocator does for ResNet-50 training on a GPU.

    python3 real_gpu/record_torch.py [--out results/torch] [--batches 32,64,128]
                                     [--precisions fp32,amp] [--steps 3] [--cap 16GiB]
                                     [--alloc-conf "max_split_size_mb:256"]

For each precision and batch: a fresh torchvision resnet50 (seeded: every run starts from
the same weights and data), SGD with momentum 0.9, `--steps` training steps on random data
(allocsim's `resnet50_bB[_amp]_momentum_stepsN`), with the allocator's history recorded from
before the model exists. Writes per run OUT/resnet50_bB_PREC.snapshot.pickle
(torch.cuda.memory._dump_snapshot) and, for all runs, OUT/record.json: torch.cuda.memory_stats
(max_memory_allocated, max_memory_reserved, num_alloc_retries, num_ooms), the card's total
and what was in use before the first tensor, and the allocator settings read back from each
snapshot, checked against PYTORCH_CUDA_ALLOC_CONF so the records prove which settings were
in effect. record.json is rewritten (atomically) after every run and every probe, so a run
killed half way keeps every row it finished.

Two things a fresh process does once would otherwise land inside the first recording only:
- cuBLAS's workspace, allocated through the caching allocator at the first matmul and kept
  by the handle (empty_cache does not free it). A warm-up matmul (fp32 and fp16, forward
  and backward) makes it before any recording, so every recording begins with it in place;
  its bytes are recorded (warm_up_allocated_bytes, warm_up_reserved_bytes).
- AMP's GradScaler skips the optimizer step of any iteration whose gradients overflow, and
  at PyTorch's default scale of 65536 a fresh ResNet-50 overflows in its first steps, so
  the momentum buffers appear a step later than allocsim's lowering assumes. The scale
  starts at --init-scale (1024) instead, and the steps skipped anyway are counted
  (skipped_steps: a scale that went down in update()).

With --cap, the largest batch that trains under torch.cuda.set_per_process_memory_fraction
(cap / total) is searched for each precision (doubling, then bisection; a batch fits when
all steps run without an OOM).

Needs PyTorch with CUDA and torchvision; without them, or without a GPU, it says which is
missing on one line and exits with status 2.
"""
import argparse
import gc
import json
import os
import pickle
import sys
import time

UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def fail(message):
    print(f"record_torch: {message}", file=sys.stderr)
    sys.exit(2)


def parse_bytes(text):
    number = text.rstrip("KMGTiB")
    unit = text[len(number):]
    if unit not in UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 16GiB")
    try:
        return int(float(number) * UNITS[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 16GiB") from None


def parse_list(text, kind=str):
    try:
        return [kind(item) for item in text.split(",") if item]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list") from None


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/torch", help="output folder (default results/torch)")
    parser.add_argument("--batches", type=lambda t: parse_list(t, int), default=[32, 64, 128])
    parser.add_argument("--precisions", type=parse_list, default=["fp32", "amp"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cap", type=parse_bytes, default=None,
                        help="search the largest batch under set_per_process_memory_fraction(cap / total)")
    parser.add_argument("--max-batch", type=int, default=2048, help="the search gives up above this batch")
    parser.add_argument("--alloc-conf", default=None,
                        help="PYTORCH_CUDA_ALLOC_CONF for this run (set before CUDA starts)")
    parser.add_argument("--tag", default="", help="appended to every file name (e.g. for a settings variant)")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed before every model (default 0)")
    parser.add_argument("--init-scale", type=float, default=1024.0,
                        help="the amp GradScaler's first scale (default 1024: no overflow in the first steps)")
    args = parser.parse_args()
    for precision in args.precisions:
        if precision not in ("fp32", "amp"):
            parser.error(f"--precisions: {precision!r} is not fp32 or amp")
    if args.steps < 1 or any(batch < 1 for batch in args.batches):
        parser.error("--steps and every batch must be 1 or more")
    return args


def import_torch():
    try:
        import torch
        import torchvision
    except ImportError as error:
        fail(f"needs PyTorch and torchvision ({error})")
    if not torch.cuda.is_available():
        fail(f"no CUDA GPU visible to PyTorch {torch.__version__} (torch.cuda.is_available() is False)")
    return torch, torchvision


class Trainer:
    """One fresh model and optimizer; everything is dropped by close()."""

    def __init__(self, torch, torchvision, batch, precision, seed=0, init_scale=1024.0):
        self.torch = torch
        self.batch = batch
        self.amp = precision == "amp"
        self.skipped_steps = 0
        device = torch.device("cuda", 0)
        self.device = device
        torch.manual_seed(seed)  # seeds every CUDA device too: the same weights and data each run
        self.model = torchvision.models.resnet50().to(device)
        self.model.train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", init_scale=init_scale, enabled=self.amp)

    def steps(self, count):
        torch = self.torch
        inputs = labels = None
        for _ in range(count):
            # Rebinding frees the previous batch after the new one exists, as a data loader loop does.
            inputs = torch.randn(self.batch, 3, 224, 224, device=self.device)
            labels = torch.randint(0, 1000, (self.batch,), device=self.device)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=self.amp):
                loss = torch.nn.functional.cross_entropy(self.model(inputs), labels)
            self.scaler.scale(loss).backward()
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            if self.amp and self.scaler.get_scale() < scale:  # update() backs off only after a skipped step
                self.skipped_steps += 1
            del loss
        torch.cuda.synchronize()
        del inputs, labels

    def close(self):
        del self.model, self.optimizer, self.scaler


def warm_up(torch):
    """cuBLAS's workspace (and cuBLASLt's) before any recording: see the module's doc."""
    device = torch.device("cuda", 0)
    for dtype in (torch.float32, torch.float16):
        weight = torch.randn(64, 64, device=device, dtype=dtype, requires_grad=True)
        bias = torch.randn(64, device=device, dtype=dtype, requires_grad=True)
        inputs = torch.randn(32, 64, device=device, dtype=dtype)
        torch.nn.functional.linear(inputs, weight, bias).sum().backward()
        del weight, bias, inputs
    fresh_allocator(torch)
    return torch.cuda.memory_allocated(0), torch.cuda.memory_reserved(0)


def save(document, path):
    """Atomically: a reader (or a kill) sees the previous complete file or this one."""
    with open(path + ".tmp", "w") as file:
        json.dump(document, file, indent=2)
    os.replace(path + ".tmp", path)


def fresh_allocator(torch):
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()


def read_settings(path):
    # Our own file, just written: plain pickle is safe here.
    with open(path, "rb") as file:
        snapshot = pickle.load(file)
    return snapshot.get("allocator_settings")


def check_settings(settings, conf):
    """Whether the snapshot's settings show PYTORCH_CUDA_ALLOC_CONF in effect."""
    if settings is None:
        return {"ok": None, "why": "this PyTorch writes no allocator_settings in snapshots"}
    problems = []
    if (settings.get("PYTORCH_CUDA_ALLOC_CONF") or "") != (conf or ""):
        problems.append(f"PYTORCH_CUDA_ALLOC_CONF reads back as {settings.get('PYTORCH_CUDA_ALLOC_CONF')!r}")
    for field in (conf or "").split(","):
        key, _, value = field.partition(":")
        key, value = key.strip(), value.strip()
        if key == "max_split_size_mb" and settings.get("max_split_size") != int(value) * (1 << 20):
            problems.append(f"max_split_size is {settings.get('max_split_size')}, not {value} MiB")
        if key == "expandable_segments" and bool(settings.get("expandable_segments")) != (value.lower() == "true"):
            problems.append(f"expandable_segments is {settings.get('expandable_segments')}")
        if key == "garbage_collection_threshold" and \
                abs(float(settings.get("garbage_collection_threshold", -1)) - float(value)) > 1e-9:
            problems.append(f"garbage_collection_threshold is {settings.get('garbage_collection_threshold')}")
    if not conf and settings.get("expandable_segments"):
        problems.append("expandable_segments is on without PYTORCH_CUDA_ALLOC_CONF")
    return {"ok": not problems, "why": "; ".join(problems)}


def record_one(torch, torchvision, batch, precision, steps, out, tag, conf, seed=0, init_scale=1024.0):
    name = f"resnet50_b{batch}_{precision}{tag}"
    fresh_allocator(torch)
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2_000_000)
    start = time.perf_counter()
    trainer = Trainer(torch, torchvision, batch, precision, seed, init_scale)
    oom = None
    try:
        trainer.steps(steps)
    except torch.OutOfMemoryError as error:
        oom = str(error).splitlines()[0]
    seconds = time.perf_counter() - start
    stats = torch.cuda.memory_stats()
    snapshot_path = os.path.join(out, name + ".snapshot.pickle")
    torch.cuda.memory._dump_snapshot(snapshot_path)
    torch.cuda.memory._record_memory_history(enabled=None)
    skipped = trainer.skipped_steps
    trainer.close()
    del trainer
    settings = read_settings(snapshot_path)
    record = {
        "name": name,
        "workload": f"resnet50_b{batch}{'_amp' if precision == 'amp' else ''}_momentum_steps{steps}",
        "batch": batch,
        "precision": precision,
        "steps": steps,
        "snapshot": snapshot_path,
        "seconds": round(seconds, 3),
        "oom": oom,
        "skipped_steps": skipped,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "num_alloc_retries": stats.get("num_alloc_retries", 0),
        "num_ooms": stats.get("num_ooms", 0),
        "num_device_alloc": stats.get("num_device_alloc"),
        "num_device_free": stats.get("num_device_free"),
        "allocation_count": stats.get("allocation.all.allocated"),
        "allocator_settings": settings,
        "settings_check": check_settings(settings, conf),
    }
    print(f"  {name}: allocated peak {record['max_memory_allocated']}, reserved peak "
          f"{record['max_memory_reserved']}, retries {record['num_alloc_retries']}"
          f"{', OOM' if oom else ''} ({seconds:.1f} s)", flush=True)
    fresh_allocator(torch)
    return record


def fits(torch, torchvision, batch, precision, steps, seed=0, init_scale=1024.0):
    fresh_allocator(torch)
    trainer = None
    failed = False
    try:
        trainer = Trainer(torch, torchvision, batch, precision, seed, init_scale)
        trainer.steps(steps)
    except torch.OutOfMemoryError:
        failed = True  # cleaned up below, outside the handler, so the traceback's tensors go too
    if trainer is not None:
        trainer.close()
    del trainer
    reserved = torch.cuda.max_memory_reserved()
    fresh_allocator(torch)
    return not failed, reserved


def largest_batch(torch, torchvision, precision, steps, cap, total, limit, search, saved, seed=0, init_scale=1024.0):
    """Fills `search` (already in the document) as it goes and calls saved() after each probe.

    Until the search ends, largest_batch is None and "why" says it is unfinished."""
    fraction = cap / total
    search.update({"precision": precision, "largest_batch": None, "why": "the search did not finish",
                   "fraction": fraction, "cap_bytes": cap, "probes": []})
    torch.cuda.set_per_process_memory_fraction(fraction, 0)
    try:
        def probe(batch):
            ok, reserved = fits(torch, torchvision, batch, precision, steps, seed, init_scale)
            search["probes"].append({"batch": batch, "fits": ok, "max_memory_reserved": reserved})
            saved()
            print(f"  {precision} batch {batch}: {'fits' if ok else 'OOM'}", flush=True)
            return ok

        low, high = 0, 16  # low fits (0 trivially); high is the next to try
        while high <= limit and probe(high):
            low, high = high, high * 2
        if high > limit:
            search["why"] = f"fits at {low}, the search limit"
            return
        while high - low > 1:  # low fits, high does not
            middle = (low + high) // 2
            if probe(middle):
                low = middle
            else:
                high = middle
        search["largest_batch"] = low
        del search["why"]
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, 0)
        saved()


def main():
    args = parse_args()
    if args.alloc_conf is not None:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = args.alloc_conf  # before CUDA starts
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    torch, torchvision = import_torch()
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info(0)  # the context exists now; nothing of ours yet
    warm_allocated, warm_reserved = warm_up(torch)
    warm_free, _ = torch.cuda.mem_get_info(0)
    document = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "PYTORCH_CUDA_ALLOC_CONF": conf,
        "total_bytes": total,
        "in_use_before_bytes": total - free,
        "warm_up_allocated_bytes": warm_allocated,
        "warm_up_reserved_bytes": warm_reserved,
        # The CUDA context and the libraries' own device memory: what the allocator cannot use.
        "outside_allocator_bytes": total - warm_free - warm_reserved,
        "seed": args.seed,
        "init_scale": args.init_scale,
        "runs": [],
        "largest_batch": [],
    }
    print(f"record_torch: {document['device']}, torch {torch.__version__}, {total} bytes, "
          f"{total - free} in use before the first tensor, warm-up reserved {warm_reserved}", flush=True)
    path = os.path.join(args.out, f"record{args.tag}.json")
    save(document, path)
    if args.cap and args.cap >= total:
        fail(f"--cap {args.cap} is not below the card's {total} bytes")
    for precision in args.precisions:
        for batch in args.batches:
            document["runs"].append(record_one(torch, torchvision, batch, precision, args.steps, args.out,
                                               args.tag, conf, args.seed, args.init_scale))
            save(document, path)
    if args.cap:
        for precision in args.precisions:
            search = {}
            document["largest_batch"].append(search)
            largest_batch(torch, torchvision, precision, args.steps, args.cap, total, args.max_batch, search,
                          lambda: save(document, path), args.seed, args.init_scale)
    print(f"record_torch: wrote {path}")
    bad = [run["name"] for run in document["runs"] if run["settings_check"]["ok"] is False]
    if bad:
        fail(f"allocator settings did not take effect in {', '.join(bad)} (see {path})")


if __name__ == "__main__":
    main()
