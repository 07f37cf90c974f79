"""A stand-in for the part of PyTorch 2.11 that real_gpu/record_torch.py uses, for tests on
machines without a GPU or PyTorch: put real_gpu/tests/fake_torch first on PYTHONPATH.

Every function has torch 2.11's own signature (names, defaults, keyword-only markers), so a
call that the real torch would refuse (a misspelt keyword, a missing argument) raises
TypeError here too, and every call is appended to CALLS, written as JSON to the file named by
FAKE_TORCH_CALLS when the process exits. Memory is a toy model with a real shape: tensors
take bytes when made and give them back when dropped (CPython frees at the last reference),
reserved bytes round up to 2 MiB segments, set_per_process_memory_fraction caps them and an
allocation past the cap raises OutOfMemoryError. The allocator's history is a trace of
alloc/free_completed entries that _dump_snapshot writes as the snapshot format allocsim's
snapshot reader reads. The first matmul makes a cuBLAS workspace that is never freed. AMP: a GradScaler whose scale is above 4096 sees the first step's
gradients overflow, skips that optimizer step and halves the scale, as a fresh ResNet-50 at
65536 does. FAKE_TORCH_DIE_AT_MODEL=N kills the process (no clean-up) at the N-th model.
"""
import atexit
import contextlib
import itertools
import json
import os
import pickle
import sys
import types
import weakref

__version__ = "2.11.0+fake"
CALLS = []
float32, float16, bfloat16 = "float32", "float16", "bfloat16"
strided = "strided"
_BYTES = {float32: 4, float16: 2, bfloat16: 2, "int64": 8, "uint8": 1}
_TOTAL = 80 << 30
_SEGMENT = 2 << 20


def _call(name, **arguments):
    CALLS.append({"call": name, **{key: value for key, value in arguments.items()
                                   if isinstance(value, (int, float, str, bool, type(None), tuple, list))}})


@atexit.register
def _write_calls():
    path = os.environ.get("FAKE_TORCH_CALLS")
    if path:
        with open(path, "w") as file:
            json.dump(CALLS, file)


class OutOfMemoryError(RuntimeError):
    pass


class _Memory:
    def __init__(self):
        self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0
        self.fraction = 1.0
        self.recording = False
        self.trace = []
        self.addresses = itertools.count(0x7F0000000000, 512)
        self.clock = itertools.count(1)
        self.stats = {"num_alloc_retries": 0, "num_ooms": 0, "num_device_alloc": 0, "num_device_free": 0,
                      "allocation.all.allocated": 0}

    def take(self, size):
        reserved = max(self.reserved, -(-(self.allocated + size) // _SEGMENT) * _SEGMENT)
        if reserved > self.fraction * _TOTAL:
            self.stats["num_ooms"] += 1
            raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {size} bytes.\nmore")
        if reserved > self.reserved:
            self.stats["num_device_alloc"] += 1
        self.reserved = reserved
        self.allocated += size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.stats["allocation.all.allocated"] += 1
        addr = next(self.addresses)
        self.note("alloc", addr, size)
        return addr

    def give(self, addr, size):
        self.allocated -= size
        self.note("free_completed", addr, size)

    def note(self, action, addr, size):
        if self.recording:
            self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                               "time_us": next(self.clock)})


_memory = _Memory()


class device:
    def __init__(self, type, index=None):
        self.type, self.index = type, index


class Tensor:
    def __init__(self, shape, dtype=float32, on_device=True, graph=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.graph = graph  # what backward() needs: kept alive with this tensor, as autograd does
        self.grad = None
        self.nbytes = _BYTES.get(dtype, 4)
        for extent in self.shape:
            self.nbytes *= extent
        if on_device:
            addr = _memory.take(self.nbytes)
            weakref.finalize(self, _memory.give, addr, self.nbytes)

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return Tensor((), self.dtype, graph=self)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        _call("Tensor.backward")
        node = self
        while node is not None:
            if getattr(node, "parameters", None) is not None:
                for parameter in node.parameters:
                    if parameter.grad is None:
                        parameter.grad = Tensor(parameter.shape, parameter.dtype)
            node = node.graph
        self.graph = None  # the activations go once backward has used them

    def to(self, *args, **kwargs):
        return self


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def randn(*size, generator=None, out=None, dtype=None, layout=strided, device=None, requires_grad=False,
          pin_memory=False):
    _call("randn", size=list(_shape(size)), dtype=dtype, requires_grad=requires_grad)
    tensor = Tensor(_shape(size), dtype or float32)
    if requires_grad:
        tensor.parameters = [tensor]
    return tensor


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=strided, device=None,
            requires_grad=False):
    if high is None or size is None:
        raise TypeError("randint() missing required arguments 'high' and 'size'")
    _call("randint", low=low, high=high, size=list(size))
    return Tensor(size, "int64")


def manual_seed(seed):
    _call("manual_seed", seed=seed)


@contextlib.contextmanager
def autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"unsupported autocast device_type {device_type!r}")
    _call("autocast", device_type=device_type, dtype=dtype, enabled=enabled)
    yield


_workspace = []  # cuBLAS's: made through the allocator at the first matmul, held by the handle for good


def _linear(input, weight, bias=None):
    _call("nn.functional.linear", dtype=input.dtype)
    if not _workspace:
        _workspace.append(Tensor(((8 << 20) + (128 << 10),), "uint8"))
    parameters = [tensor for tensor in (weight, bias) if tensor is not None]
    result = Tensor((input.shape[0], weight.shape[0]), input.dtype, graph=input)
    result.parameters = parameters
    return result


def _cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    _call("nn.functional.cross_entropy")
    return Tensor((), float32, graph=input)


nn = types.SimpleNamespace(functional=types.SimpleNamespace(linear=_linear, cross_entropy=_cross_entropy),
                           Module=object)


class _SGD:
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _call("optim.SGD", lr=lr, momentum=momentum)
        self.params = list(params)
        self.momentum = momentum
        self.buffers = None

    def zero_grad(self, set_to_none=True):
        if not set_to_none:
            raise AssertionError("record_torch.py frees gradients as the lowering assumes")
        for parameter in self.params:
            parameter.grad = None

    def step(self, closure=None):
        _call("optim.SGD.step")
        if self.momentum and self.buffers is None:  # momentum buffers at the first step taken
            self.buffers = [Tensor(parameter.shape, parameter.dtype) for parameter in self.params]


optim = types.SimpleNamespace(SGD=_SGD)


class _GradScaler:
    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _call("amp.GradScaler", device=device, init_scale=init_scale, enabled=enabled)
        self.scale_value, self.enabled = float(init_scale), enabled
        self.backoff_factor = backoff_factor
        self.overflowed = False

    def scale(self, outputs):
        if self.enabled:
            self.overflowed = self.scale_value > 4096  # a fresh ResNet-50's first gradients at this scale
        return outputs

    def step(self, optimizer, *args, **kwargs):
        if not (self.enabled and self.overflowed):
            optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        if self.enabled and self.overflowed:
            self.scale_value *= self.backoff_factor

    def get_scale(self):
        return self.scale_value if self.enabled else 1.0


amp = types.SimpleNamespace(GradScaler=_GradScaler)


def _device_arg(device):
    if device not in (None, 0) and not isinstance(device, globals()["device"]):
        raise ValueError(f"fake torch has one GPU, not {device!r}")


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                           clear_history=False, compile_context=False, global_record_annotations=False):
    if enabled not in (None, "state", "all") or context not in (None, "state", "alloc", "all") or \
            stacks not in ("python", "all"):
        raise ValueError(f"bad _record_memory_history arguments {enabled!r}, {context!r}, {stacks!r}")
    _call("cuda.memory._record_memory_history", enabled=enabled, context=context, stacks=stacks)
    if enabled and not _memory.recording:
        _memory.trace = []
    _memory.recording = bool(enabled)


def _dump_snapshot(filename="dump_snapshot.pickle"):
    _call("cuda.memory._dump_snapshot", filename=filename)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    split = -1
    for field in conf.split(","):
        key, _, value = field.partition(":")
        if key.strip() == "max_split_size_mb":
            split = int(value) << 20
    snapshot = {"segments": [], "device_traces": [list(_memory.trace)],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": split,
                                       "expandable_segments": False, "garbage_collection_threshold": 0.0}}
    with open(filename, "wb") as file:
        pickle.dump(snapshot, file)


def _counter(name, value):
    def read(device=None):
        _device_arg(device)
        _call("cuda." + name)
        return value()
    read.__name__ = name
    return read


def _reset_peak_memory_stats(device=None):
    _device_arg(device)
    _call("cuda.reset_peak_memory_stats")
    _memory.peak_allocated, _memory.peak_reserved = _memory.allocated, _memory.reserved


def _reset_accumulated_memory_stats(device=None):
    _device_arg(device)
    _call("cuda.reset_accumulated_memory_stats")
    for key in _memory.stats:
        _memory.stats[key] = 0


def _empty_cache():
    _call("cuda.empty_cache")
    _memory.reserved = -(-_memory.allocated // _SEGMENT) * _SEGMENT


def _set_per_process_memory_fraction(fraction, device=None):
    _device_arg(device)
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _call("cuda.set_per_process_memory_fraction", fraction=fraction)
    _memory.fraction = fraction


def _mem_get_info(device=None):
    _device_arg(device)
    _call("cuda.mem_get_info")
    used = (500 << 20) + _memory.reserved  # the context and what the allocator holds
    return _TOTAL - used, _TOTAL


def _synchronize(device=None):
    _device_arg(device)


cuda = types.SimpleNamespace(
    is_available=lambda: True,
    init=lambda: _call("cuda.init"),
    get_device_name=lambda device=None: "Fake GPU",
    synchronize=_synchronize,
    empty_cache=_empty_cache,
    mem_get_info=_mem_get_info,
    set_per_process_memory_fraction=_set_per_process_memory_fraction,
    reset_peak_memory_stats=_reset_peak_memory_stats,
    reset_accumulated_memory_stats=_reset_accumulated_memory_stats,
    memory_stats=_counter("memory_stats", lambda: dict(_memory.stats)),
    memory_allocated=_counter("memory_allocated", lambda: _memory.allocated),
    memory_reserved=_counter("memory_reserved", lambda: _memory.reserved),
    max_memory_allocated=_counter("max_memory_allocated", lambda: _memory.peak_allocated),
    max_memory_reserved=_counter("max_memory_reserved", lambda: _memory.peak_reserved),
    memory=types.SimpleNamespace(_record_memory_history=_record_memory_history, _dump_snapshot=_dump_snapshot),
    OutOfMemoryError=OutOfMemoryError,
)
version = types.SimpleNamespace(cuda="13.0")
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91000, benchmark=False))
