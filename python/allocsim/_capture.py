"""allocsim.capture(): a user's own PyTorch training step run on fake tensors (no GPU, no data)
and recorded as a Trace, with tags, module names and steps (docs/capture.md).

How it records:
- FakeTensorMode runs every op on shapes alone; a TorchDispatchMode above it sees each op
  and the tensors it makes. Tensors stay on the CPU (PyTorch 1.13 refuses fake `cuda`
  tensors) and count as the device's once the program put them there: made with
  device="cuda", moved by .cuda() / .to("cuda"), or made by an op from such tensors.
- An allocation is a storage (bytes = the storage's bytes). Its free is seen when the
  storage dies: a weak reference per storage, checked before an op once a device tensor
  died and before each allocation, so a free lands before the next allocation as the
  caching allocator sees it.
- Tags: weight (module parameters and buffers), gradient (made during backward, .grad
  included, as the zoo tags them), optimizer (the optimizer's state), temp (the rest of
  optimizer.step), input (moved to the device outside a module), activation (the forward's),
  workspace and runtime (the CUDA-only allocations, below).
- What a CPU run cannot show is added from allocsim's rules for the chosen device (the zoo's
  lowering asks the same C++): a cuBLAS workspace at the first matmul of the forward thread
  and of autograd's backward thread, cuDNN workspaces around each convolution pass, and
  cudnn.benchmark's trial workspaces at the first run of each shape.
"""
import contextlib
import os
import sys
import weakref

from . import _core
from ._trace import Trace, _path

_TAGS = {name: code for code, name in enumerate(_core._tag_names())}
_MATMULS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "matmul", "linear", "_scaled_dot_product_attention"}


def _torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("allocsim.capture() needs PyTorch (pip install torch, or apt install python3-torch)") from None
    return torch


class DataRead(RuntimeError):
    """The captured code read a tensor's values, which a capture does not hold."""


class Allocation:
    """One storage the capture saw on the device."""
    __slots__ = ("index", "bytes", "tag", "module", "op", "extra")

    def __init__(self, index, nbytes, tag, module, op, extra=False):
        self.index, self.bytes, self.tag, self.module, self.op, self.extra = index, nbytes, tag, module, op, extra

    def __repr__(self):
        return f"<Allocation {self.index}: {self.bytes} B {self.tag} {self.module} {self.op}>"


class Capture:
    """The context manager ``allocsim.capture(device=...)`` returns; see the module's docstring.

    After the ``with`` block: ``trace`` (an allocsim.Trace), ``allocations`` (one
    Allocation per storage, in order), ``steps`` (optimizer steps seen), ``summary()``,
    ``save(path)``.
    """

    def __init__(self, device="a100-80gb", name="capture", workspaces=True, max_steps=None):
        if not isinstance(device, str):
            raise TypeError(f"device: a preset name (str), not {type(device).__name__}")
        try:
            self.device = _core._device_figures(device)
        except _core.Error as error:
            raise ValueError(f"device: {error}") from None
        self.device_name = device
        self.name = name
        self.workspaces = workspaces
        self.max_steps = max_steps
        self.allocations = []
        self.steps = 0
        self._events = []          # (op, value): 0 alloc (allocation index), 1 free (index), 2 release
        self._step_starts = []
        self._live = {}            # storage key -> (weak ref, Allocation)
        self._device_keys = set()  # storages on the device (a subset of _live's keys)
        self._phase = "forward"
        self._module_stack = []
        self._backward_module = None
        self._names = weakref.WeakKeyDictionary()
        self._optimizers = weakref.WeakSet()
        self._modules = weakref.WeakSet()
        self._cublas = set()       # threads whose cuBLAS handle has a workspace: "forward", "backward"
        self._benchmarked = set()
        self._trace = None
        self._trace_events = None  # (events, steps) when _trace was built
        self._dirty = False        # a watched device tensor died since the last poll
        self._watchers = {}
        self._holders = {}         # storage key -> watched tensors alive on it
        self._suspects = set()     # storages whose watched tensor died since the last poll
        self._orphans = set()      # live storages no watched tensor holds
        self._undo = contextlib.ExitStack()
        self._expired = None  # torch's check of a storage's weak reference, set on entering

    # ----- the trace ---------------------------------------------------------------------

    @property
    def trace(self):
        if self._trace is None or self._trace_events != (len(self._events), len(self._step_starts)):
            self._trace = self._build()
            self._trace_events = (len(self._events), len(self._step_starts))
        return self._trace

    def _build(self):
        layer_names, layer_index = [], {}
        ops, values, tags, layers = [], [], [], []
        for op, value in self._events:
            ops.append(op)
            values.append(value)
            if op == 0:
                allocation = self.allocations[value]
                module = allocation.module or "(outside modules)"
                if module not in layer_index:
                    layer_index[module] = len(layer_names)
                    layer_names.append(module)
                tags.append(_TAGS[allocation.tag])
                layers.append(layer_index[module])
                values[-1] = allocation.bytes
            else:
                tags.append(0)
                layers.append(0)
        if 0 not in ops:  # releases alone (an empty_cache() call) are no trace
            raise ValueError("capture: nothing was allocated on the device (did the code call .cuda() or "
                             ".to('cuda')?)")
        if not layer_names:
            layer_names.append("(outside modules)")
        try:
            # a step boundary with no allocation after it (the frees at the end) ends no step
            last_alloc = max(n for n, op in enumerate(ops) if op == 0)
            starts = [start for start in self._step_starts if start <= last_alloc]
            if self._step_starts and not starts:
                starts = [0]
            return Trace(_core._capture_trace(ops, values, tags, layers, layer_names, starts, self.name))
        except _core.Error as error:
            raise ValueError(f"capture: {error}") from None

    def save(self, path, overwrite=False):
        """Writes the trace (``.atrace`` or ``.csv``); never over an existing file unless ``overwrite``."""
        path = _path(path, "path")
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path}: exists; pass overwrite=True to replace it")
        self.trace.save(path)

    def step(self):
        """Marks a step boundary by hand (optimizer.step() marks one itself)."""
        self._poll()
        self.steps += 1
        self._step_starts.append(len(self._events))
        self._trace = None
        if self.max_steps is not None and self.steps >= self.max_steps:
            raise StepsReached(self.steps)

    def summary(self):
        """Bytes and counts by tag, and the CUDA-only allocations added from allocsim's rules."""
        by_tag = {}
        extras = {}
        for allocation in self.allocations:
            count, total = by_tag.get(allocation.tag, (0, 0))
            by_tag[allocation.tag] = (count + 1, total + allocation.bytes)
            if allocation.extra:
                count, total = extras.get((allocation.op, allocation.tag), (0, 0))
                extras[(allocation.op, allocation.tag)] = (count + 1, total + allocation.bytes)
        lines = [f"capture {self.name!r} on {self.device_name}: {len(self.allocations)} allocations, "
                 f"{self.steps} steps"]
        for tag, (count, total) in sorted(by_tag.items(), key=lambda item: -item[1][1]):
            lines.append(f"  {tag:<11} {count:>7} allocations {total:>16,} B in total")
        lines.append("added from allocsim's CUDA rules (not seen on the CPU):")
        for (what, tag), (count, total) in sorted(extras.items()):
            lines.append(f"  {what:<28} {tag:<10} {count:>6} x, {total:>16,} B in total")
        if not extras:
            lines.append("  none")
        return "\n".join(lines)

    # ----- recording ---------------------------------------------------------------------

    def _module(self):
        if self._phase == "backward" and self._backward_module is not None:
            return self._backward_module
        return self._module_stack[-1] if self._module_stack else ""

    def _alloc(self, nbytes, tag, op, module=None, extra=False):
        allocation = Allocation(len(self.allocations), nbytes, tag, self._module() if module is None else module,
                                op, extra)
        self.allocations.append(allocation)
        self._events.append((0, allocation.index))
        return allocation

    def _free(self, allocation):
        self._events.append((1, allocation.index))

    def _extra(self, nbytes, tag, op, keep=False, module=None):
        if nbytes <= 0:
            return
        self._poll()
        allocation = self._alloc(nbytes, tag, op, module, extra=True)
        if not keep:
            self._free(allocation)

    def _poll(self):
        """Records the frees of the storages that died since the last poll: before each op once a
        device tensor died, before each allocation recorded, and at each marker (a step,
        backward, empty_cache, the exit). Only suspects are checked: the storages whose watched
        tensor died since, and those no watched tensor holds (autograd's C++ copies of saved
        outputs hold them, and die unseen). Frees come in allocation order, as a scan would."""
        self._dirty = False
        live, expired, holders, orphans = self._live, self._expired, self._holders, self._orphans
        suspects = self._suspects | orphans
        self._suspects = set()
        dead = []
        for key in suspects:
            if key not in live:
                orphans.discard(key)
            elif expired(key):
                dead.append(key)
                orphans.discard(key)
            elif holders.get(key, 0) == 0:
                orphans.add(key)
            else:
                orphans.discard(key)
        dead.sort(key=lambda key: live[key][1].index)
        for key in dead:
            _, allocation = live.pop(key)
            self._device_keys.discard(key)
            holders.pop(key, None)
            self._free(allocation)

    def _tag_for_new(self, moved):
        if self._phase == "backward":
            return "gradient"
        if self._phase == "optimizer":
            return "temp"
        if moved and not self._module_stack:
            return "input"
        return "activation"

    def _record_outputs(self, tensors, op, on_device, moved=False):
        from torch.multiprocessing.reductions import StorageWeakRef
        if not on_device:
            return
        storages = [tensor.storage() for tensor in tensors]
        refs = [StorageWeakRef(storage) for storage in storages]
        live, expired = self._live, self._expired
        if any(ref.cdata not in live or expired(ref.cdata) for ref in refs):
            self._poll()  # the frees before this op's allocations (and a dead storage's address let go)
            for storage, ref in zip(storages, refs):
                if ref.cdata in live:
                    continue
                allocation = self._alloc(storage.nbytes(), self._tag_for_new(moved), op)
                live[ref.cdata] = (ref, allocation)
                self._device_keys.add(ref.cdata)
        for tensor, ref in zip(tensors, refs):
            self._watch(tensor, ref.cdata)

    def _watch(self, tensor, key):
        """Counts the tensor as a holder of its storage; its death makes the storage a suspect
        and the next op poll, so frees keep the order they happen in."""
        self._holders[key] = self._holders.get(key, 0) + 1
        watchers = self._watchers  # by id: a weak reference to a tensor compares by the tensors' ==
        watcher = weakref.ref(tensor, lambda ref: self._released(watchers.pop(id(ref), None), key))
        watchers[id(watcher)] = watcher

    def _released(self, _, key):
        if key in self._holders:
            self._holders[key] -= 1
        self._suspects.add(key)
        self._dirty = True

    def _poll_if_dirty(self):
        if self._dirty:
            self._poll()

    def _is_device(self, tensor):
        from torch.multiprocessing.reductions import StorageWeakRef
        key = StorageWeakRef(tensor.storage()).cdata
        # a key of a storage that died since the last poll may name a new host storage now
        return key in self._device_keys and not self._expired(key)

    def _retag(self, tensor, tag, module=None):
        from torch.multiprocessing.reductions import StorageWeakRef
        entry = self._live.get(StorageWeakRef(tensor.storage()).cdata)
        if entry is not None:
            entry[1].tag = tag
            if module:
                entry[1].module = module

    def _classify(self):
        """Tags what is now a parameter, buffer, gradient or optimizer state, each under the
        module that owns the parameter (as the zoo names them)."""
        owner = {}
        for module in list(self._modules):
            name = self._names.get(module, "")
            for tensor in module.parameters(recurse=False):
                owner[id(tensor)] = name
                self._retag(tensor, "weight", name)
                if tensor.grad is not None:
                    self._retag(tensor.grad, "gradient", name)
            for tensor in module.buffers(recurse=False):
                self._retag(tensor, "weight", name)
        for optimizer in list(self._optimizers):
            for group in optimizer.param_groups:
                for tensor in group["params"]:
                    self._retag(tensor, "weight", owner.get(id(tensor)))
                    if tensor.grad is not None:
                        self._retag(tensor.grad, "gradient", owner.get(id(tensor)))
            for parameter, state in optimizer.state.items():
                for value in state.values():
                    if _torch().is_tensor(value):
                        self._retag(value, "optimizer", owner.get(id(parameter)))

    # ----- the CUDA-only allocations ------------------------------------------------------

    def _before_op(self, name, args, kwargs):
        if not self.workspaces:
            return
        thread = "backward" if self._phase == "backward" else "forward"
        if name in _MATMULS and thread not in self._cublas:
            self._cublas.add(thread)
            self._extra(_core._cublas_workspace_bytes(self.device["compute_capability"]), "runtime",
                        "cublas_workspace", keep=True, module="cublas_workspace")

    def _conv_forward(self, args, output):
        weight = args[1]
        if weight.dim() < 3:
            return
        self._benchmark_trial(0, args[0], weight, output)
        self._extra(_core._conv_workspace_bytes(weight.shape[2], _nbytes(args[0]), _nbytes(output), 0), "workspace",
                    "cudnn_workspace")

    def _benchmark_trial(self, conv_pass, input, weight, output):
        torch = _torch()
        if not torch.backends.cudnn.benchmark:
            return
        shape = (conv_pass, tuple(input.shape), tuple(weight.shape))
        if shape in self._benchmarked:
            return
        self._benchmarked.add(shape)
        positions = 1
        for size in output.shape[2:]:
            positions *= size
        self._extra(_core._cudnn_benchmark_trial_bytes(weight.numel(), weight.shape[0], positions, input.shape[0],
                                                       input.element_size()), "runtime", "cudnn_benchmark_trial")

    # ----- entering and leaving ----------------------------------------------------------

    def __enter__(self):
        torch = _torch()
        from ._capture_modes import enter
        # the builtin behind StorageWeakRef.expired (UntypedStorage in 1.13 and 2.x), asked of every
        # live storage before each allocation: a storage can die without a Python tensor dying
        # (autograd's saved outputs are C++ copies), so no signal from Python objects is exact
        self._expired = torch.UntypedStorage._expired
        try:
            enter(self, torch, self._undo)
            _active.append(self)
            self._undo.callback(_active.remove, self)
        except BaseException:
            self._undo.close()
            raise
        return self

    def __exit__(self, kind, error, traceback):
        try:
            self._poll()
            self._classify()
        finally:
            self._undo.close()
        self._trace = None
        if kind is not None and issubclass(kind, StepsReached):
            return True
        return False


class StepsReached(BaseException):
    """Raised inside the captured code once max_steps optimizer steps ran (the capture stops it)."""

    def __init__(self, steps):
        super().__init__(f"capture: stopped after {steps} optimizer steps")
        self.steps = steps


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()


_active = []  # the captures whose block is running


def capturing():
    """True inside ``with allocsim.capture()``: guard code that reads tensor values with it."""
    return bool(_active)


def capture(device="a100-80gb", name="capture", workspaces=True, max_steps=None):
    """Runs the ``with`` block's PyTorch code on fake tensors and records its device memory.

    device: the preset the torch.cuda shims describe and the CUDA rules follow (see
    allocsim.devices()). workspaces: add cuBLAS and cuDNN workspaces from allocsim's rules.
    max_steps: stop the block (quietly) after that many optimizer steps.
    """
    _torch()
    return Capture(device, name, workspaces, max_steps)


def _script_line():
    """'file:line' of the innermost frame outside torch and allocsim, for error messages."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if "/torch/" not in filename and "/allocsim/" not in filename and "contextlib" not in filename:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


# Where the doubling stops without a `high`: a step whose memory does not grow with the
# batch fits at every batch, and a capture costs no real memory to stop it.
_MAX_BATCH = 1 << 16


def maxbatch_of(step_fn, device="a100-80gb", policy=("caching",), low=1, high=None, workspaces=True):
    """The largest batch at which ``step_fn(batch)`` (one training step) fits, per policy.

    Captures ``step_fn`` at each batch it tries (doubling from ``low`` up to ``high``, or
    65536 without one, then bisecting) and replays each capture through the policies in
    memory (allocsim.run on the trace); a run fits when its verdict is ``fits`` (an allocator
    hang does not). Returns {policy: {"batch": largest that fits (0: none), "fails_at": the
    first that does not (None: none up to the bound), "verdict": that run's verdict}}.
    """
    from ._run import run
    if not callable(step_fn):
        raise TypeError(f"step_fn: a callable step_fn(batch), not {type(step_fn).__name__}")
    if low < 1 or (high is not None and high < low):
        raise ValueError(f"low={low}, high={high}: need 1 <= low <= high")
    if high is None:
        high = max(low, _MAX_BATCH)
    policies = [policy] if isinstance(policy, str) else list(policy)
    if not policies:
        raise ValueError("policy: give at least one")
    traces = {}

    def trace_at(batch):
        if batch not in traces:
            with capture(device=device, name=f"capture_b{batch}", workspaces=workspaces) as cap:
                step_fn(batch)
            traces[batch] = cap.trace
        return traces[batch]

    answers = {}
    for spec in policies:
        results = {}

        def fits(batch):
            if batch not in results:
                results[batch] = run(trace_at(batch), policy=spec, device=device)
            return results[batch].verdict == "fits"

        good, bad = 0, None
        batch = low
        while bad is None:
            if fits(batch):
                good = batch
                if batch >= high:
                    break
                batch = min(batch * 2, high)
            else:
                bad = batch
        while bad is not None and bad - good > 1 and good >= low:
            middle = (good + bad) // 2
            if fits(middle):
                good = middle
            else:
                bad = middle
        answers[spec] = {"batch": good, "fails_at": bad,
                         "verdict": results[bad].verdict_text if bad is not None else None}
    return answers
