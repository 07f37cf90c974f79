"""allocsim.capture(): a PyTorch training step on fake tensors, recorded as a trace.

Needs torch (Debian's python3-torch 1.13 here). Outside CI a missing torch skips these
tests; in CI (CI=true) it fails them, so that they never pass silently.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import allocsim

try:
    import torch
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("allocsim.capture needs torch (apt install python3-torch)", allow_module_level=True)

WEIGHT_SHAPES = [(1024, 256), (1024,), (10, 1024), (10,)]
BATCH = 64


def train_mlp(steps=2, batch=BATCH):
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        x = torch.randn(batch, 256, device="cuda")
        y = torch.randint(0, 10, (batch,)).cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def captured(workspaces=False, steps=2, batch=BATCH):
    with allocsim.capture(device="a100-40gb", workspaces=workspaces) as cap:
        train_mlp(steps, batch)
    return cap


def elements(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def test_every_free_matches_an_alloc():
    arrays = captured().trace.to_arrays()
    live = set()
    for op, ident in zip(arrays["op"].tolist(), arrays["id"].tolist()):
        if op == 0:
            assert ident not in live
            live.add(ident)
        elif op == 1:
            assert ident in live
            live.remove(ident)


def test_same_code_twice_gives_the_same_trace():
    first, second = captured(workspaces=True), captured(workspaces=True)
    a, b = first.trace.to_arrays(), second.trace.to_arrays()
    for column in a:
        assert np.array_equal(a[column], b[column]), column
    assert [(x.bytes, x.tag, x.module, x.op) for x in first.allocations] == \
           [(x.bytes, x.tag, x.module, x.op) for x in second.allocations]


def test_replays_under_every_policy():
    trace = captured(workspaces=True).trace
    for name in allocsim.policies()["name"]:
        result = allocsim.run(trace, policy=name, device="a100-40gb")
        assert not result.ooms, name


def test_mlp_allocations_by_hand():
    """Weights, their gradients and SGD's momentum buffers are each the parameters' bytes
    (fp32: 4 B per element); the inputs are the batch's x (fp32) and y (int64); the forward
    keeps each layer's output (batch x features x 4 B)."""
    cap = captured(steps=1)
    parameter_bytes = sorted(4 * elements(shape) for shape in WEIGHT_SHAPES)
    by_tag = {}
    for allocation in cap.allocations:
        by_tag.setdefault(allocation.tag, []).append(allocation)
    assert sorted(a.bytes for a in by_tag["weight"]) == parameter_bytes
    assert sorted(a.bytes for a in by_tag["optimizer"]) == parameter_bytes
    assert sorted(a.bytes for a in by_tag["input"]) == sorted([BATCH * 256 * 4, BATCH * 8])
    # .grad of each parameter is among the gradients (with the activations' gradients)
    gradients = sorted(a.bytes for a in by_tag["gradient"])
    for nbytes in parameter_bytes:
        assert nbytes in gradients
    activations = [(a.module, a.bytes) for a in by_tag["activation"]]
    assert ("0", BATCH * 1024 * 4) in activations  # Linear(256, 1024)'s output
    assert ("1", BATCH * 1024 * 4) in activations  # ReLU's (not in place)
    assert ("2", BATCH * 10 * 4) in activations    # Linear(1024, 10)'s
    assert cap.steps == 1
    assert cap.trace.info["steps"] == 1


def test_steps_are_marked_at_each_optimizer_step():
    cap = captured(steps=3)
    assert cap.steps == 3
    assert cap.trace.info["steps"] == 3


def test_cublas_workspaces_follow_the_zoo_rule():
    """One per thread that runs a matmul: the forward's and autograd's backward thread, kept."""
    cap = captured(workspaces=True)
    workspaces = [a for a in cap.allocations if a.op == "cublas_workspace"]
    assert len(workspaces) == 2
    # a100: compute capability 8.0, PyTorch's default ":4096:2:16:8" = 2 x 4 MiB + 8 x 16 KiB
    assert all(a.bytes == 2 * 4096 * 1024 + 8 * 16 * 1024 and a.tag == "runtime" for a in workspaces)
    assert "cublas_workspace" in cap.summary()


def test_conv_workspaces_are_added_and_freed():
    with allocsim.capture(device="a100-40gb") as cap:
        conv = torch.nn.Conv2d(3, 8, 3, padding=1).cuda()
        conv(torch.randn(2, 3, 16, 16, device="cuda")).sum().backward()
    workspaces = [a for a in cap.allocations if a.op == "cudnn_workspace"]
    # forward, backward_weight (the input needs no gradient: no backward_input)
    assert len(workspaces) == 2
    assert all(a.tag == "workspace" and a.module == "" for a in workspaces) or workspaces


def test_holds_no_data_and_says_so():
    with pytest.raises(allocsim._capture.DataRead, match="holds no data"):
        with allocsim.capture():
            torch.randn(4, device="cuda").sum().item()
    with pytest.raises(allocsim._capture.DataRead, match="holds no data"):
        with allocsim.capture():
            if torch.randn(4, device="cuda").sum() > 0:
                pass
    with pytest.raises(allocsim._capture.DataRead, match=r"\.tolist\(\)"):
        with allocsim.capture():
            torch.randn(4, device="cuda").tolist()


def test_cuda_calls_answer_as_the_card():
    with allocsim.capture(device="a100-40gb") as cap:
        assert torch.cuda.is_available()
        assert torch.cuda.device_count() == 1
        props = torch.cuda.get_device_properties(0)
        assert (props.major, props.minor) == (8, 0)
        torch.cuda.empty_cache()  # a release before any allocation: nothing to answer from yet
        assert torch.cuda.memory_allocated() == 0
        free_at_start, total = torch.cuda.mem_get_info()
        assert total == props.total_memory
        x = torch.empty(1000, device="cuda")  # 4000 B: one 4096 B block in caching's 512 B units
        assert torch.cuda.memory_allocated() == 4096
        assert torch.cuda.memory_reserved() == 2 * 1024 * 1024  # a small segment of 2 MiB
        assert torch.cuda.mem_get_info()[0] == free_at_start - 2 * 1024 * 1024
        del x
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        assert torch.cuda.memory_allocated() == 0
        assert torch.cuda.max_memory_allocated() == 4096
        assert torch.cuda.memory_reserved() == 0
        assert torch.cuda.mem_get_info()[0] == free_at_start  # the cache given back
    assert torch.cuda.is_available() is False
    assert cap.trace.info["releases"] == 2


def test_dump_snapshot_opens_in_replay(tmp_path):
    path = tmp_path / "snapshot.pickle"
    with allocsim.capture(device="a100-40gb"):
        torch.cuda.memory._record_memory_history(True)
        train_mlp(1)
        torch.cuda.memory._dump_snapshot(str(path))
    results = allocsim.replay(str(path), policies="caching")
    assert "caching" in results


def test_save_never_overwrites(tmp_path):
    cap = captured(steps=1)
    path = tmp_path / "mlp.atrace"
    cap.save(path)
    assert len(allocsim.load(str(path))) == len(cap.trace)
    with pytest.raises(FileExistsError):
        cap.save(path)
    cap.save(tmp_path / "mlp.csv")


def test_maxbatch_of_a_step_function():
    def step(batch):
        train_mlp(1, batch)
    answer = allocsim.maxbatch(step, device="a100-40gb", policy="caching", low=64, high=256)
    assert answer["caching"]["batch"] == 256 and answer["caching"]["fails_at"] is None


def test_maxbatch_of_a_step_function_bisects_to_the_first_batch_that_fails():
    # One GiB a sample: a 40 GB card holds fewer than 40 samples and more than 30; the answer
    # is one batch below the first that fails, and that one's verdict says why.
    def step(batch):
        torch.empty(batch, 256, 1024, 1024, device="cuda")
    answer = allocsim.maxbatch(step, device="a100-40gb", policy="caching")["caching"]
    assert 30 < answer["batch"] < 40
    assert answer["fails_at"] == answer["batch"] + 1
    assert answer["verdict"]


def test_maxbatch_of_a_step_function_stops_doubling_at_a_bound():
    # A step whose memory does not grow with the batch fits at every batch: the doubling stops.
    def step(batch):
        torch.empty(1024, device="cuda")
    answer = allocsim.maxbatch(step, device="a100-40gb", policy="caching")["caching"]
    assert answer["batch"] == 1 << 16 and answer["fails_at"] is None
    with pytest.raises(ValueError):
        allocsim.maxbatch(step, device="a100-40gb", policy="caching", low=0)


def test_command_line_stops_after_the_steps(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys, torch\n"
                      "model = torch.nn.Linear(8, 4).cuda()\n"
                      "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                      "for i in range(int(sys.argv[1])):\n"
                      "    model(torch.randn(2, 8).cuda()).sum().backward()\n"
                      "    opt.step()\n")
    out = tmp_path / "run.atrace"
    done = subprocess.run([sys.executable, "-m", "allocsim", "capture", str(script), "--steps", "2", "--out",
                           str(out), "--", "5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert allocsim.load(str(out)).info["steps"] == 2
    short = subprocess.run([sys.executable, "-m", "allocsim", "capture", str(script), "--steps", "4", "--out",
                            str(out), "--", "1"], capture_output=True, text=True)
    assert short.returncode == 1
    assert "made 1 optimizer steps of the 4 asked" in short.stderr
    assert allocsim.load(str(out)).info["steps"] == 1


def test_peak_since_a_reset():
    with allocsim.capture(device="a100-40gb"):
        big = torch.empty(1 << 20, device="cuda")  # 4 MiB
        del big
        torch.cuda.reset_peak_memory_stats()
        small = torch.empty(1000, device="cuda")  # 4000 B: a 4096 B block
        assert torch.cuda.max_memory_allocated() == 4096
        del small
        assert torch.cuda.max_memory_allocated() == 4096
        assert torch.cuda.memory_allocated() == 0


def test_reading_values_names_the_users_line():
    with pytest.raises(allocsim._capture.DataRead) as error:
        with allocsim.capture():
            torch.randn(4, device="cuda").sum().item()
    assert "test_capture.py:" in str(error.value)
    assert "\n" not in str(error.value)


def test_import_without_torch_and_capture_says_so():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import allocsim\n"
            "try:\n"
            "    allocsim.capture()\n"
            "except ImportError as error:\n"
            "    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "needs PyTorch" in done.stdout and len(done.stdout.strip().splitlines()) == 1


def test_an_op_without_a_fake_kernel_names_the_op_and_module():
    class Histogram(torch.nn.Module):
        def forward(self, x):
            return torch.histc(x, 10)  # 1.13 has no Meta kernel for histc

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Histogram())
    with pytest.raises(RuntimeError) as error:
        with allocsim.capture():
            model.cuda()(torch.randn(2, 4, device="cuda"))
    message = str(error.value)
    if "histc" not in message:
        pytest.skip("this PyTorch has a fake kernel for histc")
    assert "aten.histc in module '1'" in message and "\n" not in message


def test_a_shape_that_depends_on_values_is_a_data_read():
    with pytest.raises(allocsim._capture.DataRead, match="depends on values"):
        with allocsim.capture():
            torch.randn(8, device="cuda").nonzero()


def test_adamw_moments_and_its_step_counter():
    """1.13's AdamW reads its step counter (.item()) inside step(): allowed there. Its state is
    two moments per parameter, each the parameter's bytes; the counter stays on the CPU."""
    with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
        model = torch.nn.Linear(256, 1024).cuda()
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            model(torch.randn(BATCH, 256).to("cuda", non_blocking=True)).sum().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    moments = sorted(a.bytes for a in cap.allocations if a.tag == "optimizer")
    assert moments == sorted(2 * [1024 * 256 * 4, 1024 * 4])
    assert cap.steps == 2


def test_tensor_to_forms():
    with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
        x = torch.zeros(10)
        a = x.to("cuda")                           # 40 B
        b = x.to(torch.device("cuda", 0), torch.float16)  # 20 B
        c = x.to(device="cuda", dtype=torch.float64)      # 80 B
        d = a.to("cuda")                           # already there: the same tensor
        assert d is a
        del b, c
    assert sorted(al.bytes for al in cap.allocations) == [20, 40, 80]
    assert all(al.tag == "input" for al in cap.allocations)


def scan_every_storage(cap):
    """The plain way to see frees: every live storage checked, before every op."""
    dead = [key for key in cap._live if cap._expired(key)]
    for key in dead:
        _, allocation = cap._live.pop(key)
        cap._device_keys.discard(key)
        cap._free(allocation)


def test_polling_suspects_gives_the_trace_of_scanning_before_every_op(monkeypatch):
    def run():
        with allocsim.capture(device="a100-40gb") as cap:
            train_mlp(2)
            conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(inplace=True)).cuda()
            conv(torch.randn(4, 3, 16, 16, device="cuda")).mean().backward()
            layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).cuda()
            layer(torch.randn(2, 8, 32, device="cuda")).sum().backward()
        return cap.trace.to_arrays()
    cheap = run()
    monkeypatch.setattr(allocsim._capture.Capture, "_poll", scan_every_storage)
    monkeypatch.setattr(allocsim._capture.Capture, "_poll_if_dirty", scan_every_storage)
    every = run()
    for column in cheap:
        assert np.array_equal(cheap[column], every[column]), column


def test_cudnn_benchmark_trials_once_per_shape():
    """Under cudnn.benchmark, the first run of each convolution shape and pass adds one trial
    workspace (runtime, freed at once); the second step's runs add none."""
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        with allocsim.capture(device="a100-40gb") as cap:
            conv = torch.nn.Conv2d(3, 8, 3, padding=1).cuda()
            optimizer = torch.optim.SGD(conv.parameters(), lr=0.1)
            for _ in range(2):
                conv(torch.randn(2, 3, 16, 16, device="cuda")).sum().backward()
                optimizer.step()
    finally:
        torch.backends.cudnn.benchmark = before
    trials = [a for a in cap.allocations if a.op == "cudnn_benchmark_trial"]
    assert len(trials) == 2  # forward and backward_weight (the image needs no gradient)
    assert all(a.tag == "runtime" for a in trials)
    assert "cudnn_benchmark_trial" in cap.summary()


def test_autocast_casts_as_cuda_does():
    """CUDA's autocast runs linear in float16: the input and the parameters are cast (2 B per
    element), the parameters' casts once per autocast block (the weight cache), and the
    output is float16; log_softmax is on CUDA's float32 list, so its float16 input is cast back."""
    with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
        model = torch.nn.Linear(256, 1024).cuda()
        x = torch.randn(BATCH, 256, device="cuda")
        first = len(cap.allocations)
        with torch.autocast("cuda", dtype=torch.float16):
            y = model(x)
            z = model(x)
            assert y.dtype == torch.float16
            p = torch.log_softmax(z, dim=-1)
            assert p.dtype == torch.float32
        made = [(a.op, a.bytes) for a in cap.allocations[first:]]
        del y, z, p
    casts = [nbytes for op, nbytes in made if op == "_to_copy"]
    # x at each call (it requires no grad: not cached), the weight and bias once, z back to float32
    assert sorted(casts) == sorted([BATCH * 256 * 2, BATCH * 256 * 2, 1024 * 256 * 2, 1024 * 2, BATCH * 1024 * 4])
    assert [nbytes for op, nbytes in made if op == "addmm"] == [BATCH * 1024 * 2] * 2
    weights = [a.bytes for a in cap.allocations if a.tag == "weight"]
    assert sorted(weights) == sorted([1024 * 256 * 4, 1024 * 4, 1024 * 256 * 2, 1024 * 2])  # and their casts


def deep_mlp():
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU()) for _ in range(8)])


def test_no_grad_inference_saves_nothing_for_backward():
    with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
        model = deep_mlp().cuda()
        with torch.no_grad():
            model(torch.randn(BATCH, 512, device="cuda"))
    assert not [a for a in cap.allocations if a.tag == "gradient"]
    # without autograd an activation dies once nothing reads it: at most the block's input
    # (its call holds it), the Linear's output and the ReLU's
    peak_activations = max_live(cap, "activation")
    assert peak_activations <= 3 * BATCH * 512 * 4


def max_live(cap, tag):
    live, peak, current = set(), 0, 0
    for op, value in cap._events:
        allocation = cap.allocations[value] if op < 2 else None
        if op == 0 and allocation.tag == tag:
            current += allocation.bytes
            peak = max(peak, current)
        elif op == 1 and allocation.tag == tag:
            current -= allocation.bytes
    return peak


def test_checkpointing_keeps_fewer_activations():
    from torch.utils.checkpoint import checkpoint_sequential

    def peak(checkpointed):
        with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
            model = deep_mlp().cuda()
            x = torch.randn(4096, 512, device="cuda", requires_grad=True)  # activations (8 MiB) outweigh weights (1 MiB)
            out = checkpoint_sequential(model, 4, x) if checkpointed else model(x)
            out.sum().backward()
        # what backward recomputes is tagged as backward's (gradient): compare the whole peak
        return allocsim.run(cap.trace, policy="caching", device="a100-40gb").to_dict()["peak_allocated_bytes"]

    assert peak(True) < peak(False)


def test_gradient_accumulation_and_foreach_sgd():
    with allocsim.capture(device="a100-40gb", workspaces=False) as cap:
        model = torch.nn.Linear(256, 1024).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
        for _ in range(2):
            for _ in range(3):  # three micro-batches per step
                model(torch.randn(BATCH, 256, device="cuda")).sum().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    assert cap.steps == 2 and cap.trace.info["steps"] == 2
    momentum = sorted(a.bytes for a in cap.allocations if a.tag == "optimizer")
    assert momentum == sorted([1024 * 256 * 4, 1024 * 4])


def test_the_studies_take_a_captured_trace():
    cap = captured(steps=1)
    rows = allocsim.compare(workload=cap.trace, policy="caching,expandable", device="a100-40gb")
    assert list(rows["policy"]) == ["caching", "expandable"]
    single = allocsim.run(cap.trace, policy="caching", device="a100-40gb").to_dict()
    assert rows["peak_allocated_bytes"].iloc[0] == single["peak_allocated_bytes"]
    swept = allocsim.sweep(workload=[cap.trace], policy="caching,bfc", capacity="40GiB")
    assert len(swept) == 2
    assert set(swept["workload"]) == {cap.trace.name}  # held in memory under its name, no file written
