"""torch.cuda inside allocsim.capture(): the calls a training script makes answer as on the
chosen card. memory_allocated(), the peaks and memory_reserved() replay the capture so far through `caching`
(allocsim.run on the trace, in memory); _dump_snapshot writes that replay as the
--memory-viz export (studies/memory_viz_export)."""
import collections
import os

from . import _core

_Properties = collections.namedtuple("_CudaDeviceProperties",
                                     "name major minor total_memory multi_processor_count is_integrated "
                                     "is_multi_gpu_board")


def install_cuda_shims(cap, torch, undo):
    figures = cap.device
    peak_from = {"event": 0, "allocated": 0}  # reset_peak_memory_stats(): the peak counts from here

    def replay():
        cap._poll()
        from ._run import run
        if not cap.allocations:
            return None
        # Past an OOM too: PyTorch's counters go on after a failed allocation the script catches.
        return run(cap.trace, policy="caching", device=cap.device_name, on_oom="continue")

    def memory_allocated(device=None):
        result = replay()
        return 0 if result is None else int(result.to_dict()["allocated_bytes.all.current"])

    def max_memory_allocated(device=None):
        result = replay()
        if result is None:
            return 0
        if peak_from["event"] == 0:
            return int(result.to_dict()["peak_allocated_bytes"])
        timeline = result.timeline  # a point after each allocation: where peaks are
        after = [int(value) for event, value in zip(timeline.event, timeline.allocated) if event >= peak_from["event"]]
        return max([peak_from["allocated"]] + after)

    def reset_peak_memory_stats(device=None):
        peak_from["allocated"] = memory_allocated()
        peak_from["event"] = len(cap._events)

    def memory_reserved(device=None):
        result = replay()
        return 0 if result is None else int(result.to_dict()["reserved_bytes.all.current"])

    def mem_get_info(device=None):
        result = replay()
        reserved = 0 if result is None else int(result.to_dict()["reserved_bytes.all.current"])
        free = max(0, figures["capacity"] - figures["context"] - reserved)
        return free, figures["capacity"]

    def get_device_properties(device=None):
        cc = figures["compute_capability"]
        return _Properties(figures["name"], cc // 10, cc % 10, figures["capacity"], 108, False, False)

    def empty_cache():
        cap._poll()
        cap._events.append((2, 0))
        cap._trace = None

    def dump_snapshot(filename="dump_snapshot.pickle"):
        cap._poll()
        path = os.fsdecode(os.fspath(filename))
        try:
            _core._memory_viz(cap.trace._trace, cap.device_name, "caching", path)
        except _core.Error as error:
            raise ValueError(f"_dump_snapshot: {error}") from None

    def nothing(*args, **kwargs):
        return None

    shims = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": nothing,
        "synchronize": nothing,
        "is_initialized": lambda: True,
        "_lazy_init": nothing,
        "init": nothing,
        "get_device_name": lambda device=None: figures["name"],
        "get_device_capability": lambda device=None: divmod(figures["compute_capability"], 10),
        "get_device_properties": get_device_properties,
        "mem_get_info": mem_get_info,
        "empty_cache": empty_cache,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
        "memory_reserved": memory_reserved,
        "is_bf16_supported": lambda: figures["compute_capability"] >= 80,
        "manual_seed": nothing,
        "manual_seed_all": nothing,
    }
    from ._capture_modes import _patch
    for name, value in shims.items():
        if hasattr(torch.cuda, name):
            _patch(undo, torch.cuda, name, value)
    memory = torch.cuda.memory
    for name in ("empty_cache", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
                 "memory_reserved", "mem_get_info"):
        if hasattr(memory, name):
            _patch(undo, memory, name, shims[name])
    _patch(undo, memory, "_record_memory_history", nothing) if hasattr(memory, "_record_memory_history") else \
        _set_new(undo, memory, "_record_memory_history", nothing)
    _set_new(undo, memory, "_dump_snapshot", dump_snapshot) if not hasattr(memory, "_dump_snapshot") else \
        _patch(undo, memory, "_dump_snapshot", dump_snapshot)


def _set_new(undo, owner, name, value):
    setattr(owner, name, value)
    undo.callback(delattr, owner, name)
