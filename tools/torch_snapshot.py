#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot into an allocsim CSV trace.

    python3 tools/torch_snapshot.py SNAPSHOT.pickle -o trace.csv [--settings-out s.json]
                                    [--cuda-device N] [--summary]

The input is what torch.cuda.memory._dump_snapshot() writes: a pickled dict with
`segments` (state at snapshot time) and `device_traces` (one list of entries per device;
see docs in shared/reference/allocators.md section 2.12). Pickles can run code, and these
files come from strangers, so they are loaded with an unpickler that refuses every
global: a snapshot is plain data (dicts, lists, str, int, float, tuples, None, bool).

Conversion rules (trace CSV: time_ns,op,id,bytes,stream,tag; see workloads/csv_trace.hpp):
- `alloc` -> alloc; id = the address in hex, bytes = the unrounded request, tag = other
  (or the entry's `category`, where a snapshot carries one: PARAMETER -> weight,
  OPTIMIZER_STATE -> optimizer, INPUT -> input, TEMPORARY -> temp, ACTIVATION and
  AUTOGRAD_DETAIL -> activation, GRADIENT -> gradient), stream = the CUDA stream renumbered
  0,1,2... in order of the raw stream values (PyTorch orders free blocks and releases by
  the raw stream, so ties break the same way). Its first stack frame outside torch
  (`model.py:42 forward`; none when frames were not recorded) goes in the sidecar's
  `frames`/`alloc_frames`: the allocation's layer, what a report colours its blocks by.
- Devices: one trace list per visible device; --cuda-device N, else the only non-empty one.
- PyTorch 2.0 and 2.1 record no time_us: entries are then 1 us apart. 2.0 blocks carry no
  address (the segment's address plus the sizes of the blocks before) and no requested
  size (history[0].real_size, else the size). A bare list of segments (PyTorch <= 1.13,
  no trace) is refused.
- Errors name the file and the entry (device_traces[0][812], segments[3].blocks[2]) on
  one printable line: control characters in a stranger's values are escaped.
- `free_completed` -> free: the block becomes reusable then (reference section 2.8).
  `free_requested` carries nothing, except that it may reveal a pre-existing block.
- Pre-existing blocks (the recording started mid-run, or the ring buffer wrapped): a block
  whose first trace entry is a free, and an active block of the snapshot's `segments`
  that the trace never mentions, become allocs at time 0 before everything else.
- empty_cache(): a maximal run of consecutive `segment_free`/`segment_unmap` entries
  becomes one `release` at the time of its first entry, unless an `oom` entry follows
  it before the next `alloc`: then it is the allocator's own release stages inside a
  malloc that failed (CachingAllocator's malloc records `oom` after releasing), which a
  simulator redoes by itself. Limitation: a retry that *succeeded* (segment_free...,
  segment_alloc, alloc) looks exactly like empty_cache() followed by a malloc that needs
  a new segment, so it becomes a release too; so do garbage-collection frees
  (garbage_collection_threshold > 0).
- time_ns = (time_us - first time_us) * 1000, clamped so times never decrease.
"""
import argparse
import collections
import json
import os
import pickle
import sys
import tempfile

ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom")
SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap")
RELEASE_ACTIONS = ("segment_free", "segment_unmap")
# Keys each action must carry besides `action` and `time_us` (oom has device_free, not addr).
REQUIRED_KEYS = {"oom": ("device_free", "size", "stream"), "snapshot": ()}
ACTIVE_STATES = ("active_allocated", "active_pending_free")  # blocks that hold memory
# PyTorch's memory profiler categories (torch.profiler._memory_profiler.Category), as our tags.
CATEGORY_TAGS = {"parameter": "weight", "optimizer_state": "optimizer", "input": "input", "temporary": "temp",
                 "activation": "activation", "autograd_detail": "activation", "gradient": "gradient"}
SMALL_SEGMENT = 2 << 20  # the small pool's segment size; large-pool segments are >= 10 MiB
# What an old snapshot without `allocator_settings` ran with: PyTorch's defaults
# (max_split_size -1 is SIZE_MAX, i.e. no limit, as _snapshot() reports it).
DEFAULT_SETTINGS = {
    "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
    "expandable_segments": False, "pinned_num_register_threads": 1,
    "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
    "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
}


class SnapshotError(Exception):
    """A problem with the input that the user must fix; reported as one line, exit 2."""


def printable(text):
    """The message as one printable line: a NUL byte, a newline or any other control
    character a stranger's file holds is escaped, so the whole message reaches the user
    (allocsim reads the converter's last line of stderr as a C string)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def shown(value, limit=80):
    """A value for a message: its repr, printable, cut at `limit` characters."""
    text = printable(repr(value))
    return text if len(text) <= limit else text[:limit] + "..."


class PlainDataUnpickler(pickle.Unpickler):
    """Loads only plain data: every global (class, function) is refused, so loading a
    stranger's pickle cannot import modules or call anything. REDUCE/BUILD/NEWOBJ need a
    callable, which only a global (or a copyreg extension, resolved through find_class
    too) can supply; persistent ids and out-of-band buffers already fail by default."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refused global {printable(module)}.{printable(name)}: a memory snapshot is plain data")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError(f"refused persistent id {shown(pid)}: a memory snapshot is plain data")


def load_snapshot(path):
    """Read and check the top level of a snapshot file; raises SnapshotError."""
    try:
        with open(path, "rb") as file:
            data = PlainDataUnpickler(file).load()
    except OSError as error:
        raise SnapshotError(f"cannot read: {error.strerror or error}") from None
    except pickle.UnpicklingError as error:
        if str(error).startswith("refused "):
            raise SnapshotError(str(error)) from None
        raise SnapshotError(f"not a pickle: {printable(error)}") from None
    except Exception as error:  # truncated or garbage input raises many kinds
        raise SnapshotError(f"not a pickle: {type(error).__name__}: {printable(error)}") from None
    if isinstance(data, list) and all(isinstance(item, dict) and "total_size" in item for item in data):
        raise SnapshotError("a bare list of segments with no trace: a snapshot from PyTorch 1.13 or older "
                            "(torch.cuda.memory_snapshot()), which records no trace; replaying needs PyTorch 2.0 "
                            "or later (torch.cuda.memory._record_memory_history, then _dump_snapshot)")
    if not isinstance(data, dict):
        raise SnapshotError(f"not a memory snapshot: the pickle holds a {type(data).__name__}, not a dict")
    for key in ("segments", "device_traces"):
        if not isinstance(data.get(key), list):
            raise SnapshotError(f"not a memory snapshot: no '{key}' list")
    if not data["device_traces"]:
        raise SnapshotError("no device traces (was _record_memory_history enabled?)")
    return data


def chosen_device(snapshot, device):
    """The device whose trace to convert: `device` when given, else the only device trace
    that holds entries (one list per visible device; most are empty)."""
    traces = snapshot["device_traces"]
    if device is not None:
        if not 0 <= device < len(traces):
            raise SnapshotError(f"no device trace {device} (the snapshot has {len(traces)})")
        return device
    used = [index for index, entries in enumerate(traces) if entries]
    if not used:
        raise SnapshotError(f"all {len(traces)} device traces are empty (was _record_memory_history enabled?)")
    if len(used) > 1:
        listed = ", ".join(f"{index} ({len(traces[index])} entries)" for index in used)
        raise SnapshotError(f"{len(used)} devices have traces: {listed}; choose one with --cuda-device N")
    return used[0]


def checked_entries(snapshot, device):
    """The device's trace entries, each checked for the keys its action needs, so the
    converter can index them freely. Unknown actions (newer PyTorch) are kept; the
    converter counts and otherwise ignores them. PyTorch before 2.2 records no `time_us`:
    then every entry is 1 us after the one before it."""
    entries = snapshot["device_traces"][device]
    if not isinstance(entries, list) or not entries:
        raise SnapshotError(f"device trace {device} is empty")
    timed = any(isinstance(entry, dict) and "time_us" in entry for entry in entries)
    for index, entry in enumerate(entries):
        where = f"device_traces[{device}][{index}]"
        if not isinstance(entry, dict) or "action" not in entry:
            raise SnapshotError(f"{where} is not a trace entry (a dict with an 'action')")
        action = entry.get("action")
        if action not in ACTIONS:
            keys = ("time_us",) if timed else ()  # a newer action: only its time matters
        else:
            keys = (("time_us",) if timed else ()) + REQUIRED_KEYS.get(action, ("addr", "size", "stream"))
        for key in keys:
            if key not in entry:
                raise SnapshotError(f"{where} ({printable(action)}) lacks key '{key}'")
            value, kinds = entry[key], (int, float) if key == "time_us" else int
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise SnapshotError(f"{where} ({printable(action)}): '{key}' is {shown(value)}, not a number")
        if action in ("alloc", "free_requested", "free_completed") and entry["size"] < 0:
            raise SnapshotError(f"{where} ({action}): negative size {entry['size']}")
    if not timed:
        entries = [dict(entry, time_us=index) for index, entry in enumerate(entries)]
    return entries, timed


def in_torch(filename):
    """Whether a frame is PyTorch's own (or C++, or Python's frozen bootstrap): not the
    program's code that asked for the memory."""
    path = filename.replace("\\", "/")
    return (not path or path == "??" or path.startswith(("<", "torch/")) or "/torch/" in path
            or path.endswith((".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp")))


def first_frame_outside_torch(frames):
    """`model.py:42 forward`: the innermost frame of the program's own code, or None."""
    for frame in frames if isinstance(frames, list) else ():
        if not isinstance(frame, dict) or not isinstance(frame.get("filename"), str):
            continue
        if in_torch(frame["filename"]):
            continue
        line, name = frame.get("line"), frame.get("name")
        text = frame["filename"].replace("\\", "/").rsplit("/", 1)[-1]
        if is_int(line):
            text += f":{line}"
        if isinstance(name, str) and name:
            text += f" {name}"
        return printable(text)
    return None


def category_tag(category):
    """Our tag for a memory profiler category (an entry's `category`), or other."""
    if not isinstance(category, str):
        return "other"
    return CATEGORY_TAGS.get(category.rsplit(".", 1)[-1].lower(), "other")


def oom_follows_bursts(entries):
    """For each index, whether the first alloc-or-oom entry at or after it is an oom:
    a segment_free burst followed by oom before any alloc is part of a failed malloc."""
    result = [False] * len(entries)
    next_is_oom = False
    for index in range(len(entries) - 1, -1, -1):
        action = entries[index]["action"]
        if action in ("alloc", "oom"):
            next_is_oom = action == "oom"
        result[index] = next_is_oom
    return result


def convert(snapshot, device=None):
    """Turn one device's trace into CSV rows (time_ns, op, addr, bytes, cuda_stream) plus
    the facts the comments, the sidecar and --summary report. `device`: which device's
    trace (None: the only one that holds entries)."""
    device = chosen_device(snapshot, device)
    entries, timed = checked_entries(snapshot, device)
    first_time = entries[0]["time_us"]
    latest = first_time
    oom_next = oom_follows_bursts(entries)
    body, pre_freed, segment_events, ooms = [], [], [], []
    origins = []  # (first frame outside torch or None, tag) of each alloc row of body, in order
    live, seen = {}, set()  # addr -> (bytes, stream) of blocks the output holds live
    stats = collections.Counter()
    actions = collections.Counter(entry["action"] for entry in entries)
    for index, entry in enumerate(entries):
        action, addr = entry["action"], entry.get("addr")
        if entry["time_us"] < latest:
            stats["clamped"] += 1
        latest = max(latest, entry["time_us"])
        time_ns = int(round((latest - first_time) * 1000))
        if action == "alloc":
            if addr in live:  # its free_completed is missing: free it here
                body.append((time_ns, "free", addr, live.pop(addr)[0], None))
                stats["missing_frees"] += 1
            live[addr] = (int(entry["size"]), entry["stream"])
            seen.add(addr)
            body.append((time_ns, "alloc", addr, int(entry["size"]), entry["stream"]))
            origins.append((first_frame_outside_torch(entry.get("frames")), category_tag(entry.get("category"))))
        elif action in ("free_requested", "free_completed") and addr not in live:
            if addr in seen:  # freed twice, or never allocated after its last free
                stats["unmatched_frees"] += action == "free_completed"
                continue
            seen.add(addr)  # the block predates the recording: its size is the free's
            pre_freed.append((0, "alloc", addr, int(entry["size"]), entry["stream"]))
            live[addr] = (int(entry["size"]), entry["stream"])
        if action == "free_completed" and addr in live:
            body.append((time_ns, "free", addr, live.pop(addr)[0], None))
        elif action in RELEASE_ACTIONS and (index == 0 or entries[index - 1]["action"] not in RELEASE_ACTIONS):
            if oom_next[index]:
                stats["oom_bursts"] += 1
            else:
                body.append((time_ns, "release", None, None, None))
        if action in SEGMENT_ACTIONS:
            # The row whose processing made it: the alloc that follows a segment_alloc/map,
            # or the release row its burst became (a burst inside a failed malloc has none).
            in_release = action in RELEASE_ACTIONS and body and body[-1][1] == "release" and not oom_next[index]
            segment_events.append({"action": action, "addr": addr, "size": int(entry["size"]),
                                   "cuda_stream": entry["stream"], "time_ns": time_ns, "row": len(body),
                                   "during": len(body) - 1 if in_release else len(body)})
        elif action == "oom":
            ooms.append({"size": int(entry["size"]), "device_free": entry["device_free"],
                         "cuda_stream": entry["stream"], "time_ns": time_ns, "row": len(body)})
    pre_kept = []  # active at the snapshot, never mentioned by the trace
    for segment, blocks in device_segments(snapshot, device):
        for block in blocks:
            if not block["allocated"]:
                continue
            if block["addr"] not in seen:
                pre_kept.append((0, "alloc", block["addr"], block["requested"], segment.get("stream", 0)))
            elif block["addr"] not in live:
                stats["snapshot_unexplained"] += 1
    pre_kept.sort(key=lambda row: row[2])
    rows = pre_freed + pre_kept + body
    origins = [(None, "other")] * (len(pre_freed) + len(pre_kept)) + origins
    frames = list(dict.fromkeys(frame for frame, _ in origins if frame is not None))
    frame_index = {frame: index for index, frame in enumerate(frames)}
    shift = len(pre_freed) + len(pre_kept)
    for event in segment_events + ooms:
        event["before_event"] = event.pop("row") + shift
    for event in segment_events:
        event["during_event"] = event.pop("during") + shift
    # cuda stream -> dense number in order of the raw values: PyTorch orders free blocks
    # and releases by the raw stream, so the replay's tie-breaks follow the same order.
    raw = {row[4] for row in rows if row[1] == "alloc"}
    raw.update(event["cuda_stream"] for event in segment_events + ooms)
    raw.update(segment.get("stream", 0) for segment, _ in device_segments(snapshot, device))
    streams = {stream: number for number, stream in enumerate(sorted(raw))}
    if len(streams) > 1 << 16:
        raise SnapshotError(f"{len(streams)} streams; the trace's stream field has 16 bits")
    for event in segment_events + ooms:
        event["stream"] = streams[event["cuda_stream"]]
    end_segments = segments_at_snapshot(snapshot, device, streams)
    preexisting = [{"addr": addr, "size": size, "stream": streams[stream],
                    "block_size": end_block_sizes(end_segments).get(addr) if index >= len(pre_freed) else None}
                   for index, (_, _, addr, size, stream) in enumerate(pre_freed + pre_kept)]
    settings = snapshot.get("allocator_settings")
    return {"rows": rows, "streams": streams, "actions": actions, "stats": stats, "device": device,
            "pre_freed": len(pre_freed), "pre_kept": len(pre_kept),
            "releases": sum(row[1] == "release" for row in rows),
            "segment_events": segment_events, "ooms": ooms, "peak": replay_peak(rows),
            "preexisting": preexisting, "segments_at_end": end_segments,
            "segments_at_start": segments_at_start(end_segments, segment_events),
            "settings": dict(settings) if isinstance(settings, dict) else dict(DEFAULT_SETTINGS),
            "settings_recorded": isinstance(settings, dict), "timed": timed,
            "format": snapshot_format(snapshot, entries, timed),
            "private_pools": private_pools(snapshot, device),
            "addresses": [row[2] for row in rows if row[1] == "alloc"],
            "tags": [tag for _, tag in origins], "frames": frames,
            "alloc_frames": [frame_index.get(frame, -1) for frame, _ in origins] if frames else []}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def device_segments(snapshot, device):
    """(segment, blocks) for each of the device's segments, checked: blocks as dicts of
    addr, size, requested and allocated. PyTorch 2.0 blocks carry no address (blocks tile
    their segment: the segment's address plus the sizes of the blocks before) and no
    requested_size (the first history entry's real_size, else the size)."""
    result = []
    for index, segment in enumerate(snapshot["segments"]):
        where = f"segments[{index}]"
        if not isinstance(segment, dict):
            raise SnapshotError(f"{where} is not a segment (a dict)")
        if segment.get("device", device) != device:
            continue
        addr, total = segment.get("address"), segment.get("total_size")
        if not is_int(addr) or not is_int(total):
            raise SnapshotError(f"{where} lacks address or total_size (address {shown(addr)}, "
                                f"total_size {shown(total)})")
        raw_blocks = segment.get("blocks", [])
        if not isinstance(raw_blocks, list):
            raise SnapshotError(f"{where}: 'blocks' is {shown(raw_blocks)}, not a list")
        blocks, cursor = [], addr
        for number, block in enumerate(raw_blocks):
            block_where = f"{where}.blocks[{number}]"
            if not isinstance(block, dict) or not is_int(block.get("size")) or block["size"] < 0:
                raise SnapshotError(f"{block_where} lacks its size")
            block_addr = block.get("address", cursor)
            if not is_int(block_addr):
                raise SnapshotError(f"{block_where}: 'address' is {shown(block_addr)}, not a number")
            history = block.get("history")
            requested = block.get("requested_size")
            if isinstance(history, list) and history and isinstance(history[0], dict) and is_int(history[0].get("real_size")):
                requested = history[0]["real_size"]
            if not is_int(requested):
                requested = block["size"]
            blocks.append({"addr": block_addr, "size": block["size"], "requested": requested,
                           "allocated": block.get("state") in ACTIVE_STATES})
            cursor = block_addr + block["size"]
        result.append((segment, blocks))
    return result


def snapshot_format(snapshot, entries, timed):
    """Which PyTorch wrote the snapshot, as far as its keys tell."""
    if isinstance(snapshot.get("allocator_settings"), dict):
        return "PyTorch 2.3 or later"
    if timed:
        return "PyTorch 2.2 (time_us, no allocator_settings)"
    blocks = [block for segment in snapshot["segments"] if isinstance(segment, dict)
              for block in segment.get("blocks", []) if isinstance(block, dict)]
    if any("address" in block for block in blocks) or any(
            isinstance(segment, dict) and "segment_pool_id" in segment for segment in snapshot["segments"]):
        return "PyTorch 2.1 (no time_us)"
    return "PyTorch 2.0 (no time_us; block addresses computed from their segment)"


def private_pools(snapshot, device):
    """The private pools (CUDA graphs, MemPool) the device's segments or trace entries
    name: segment_pool_id / pool_id other than (0, 0), each with the first entry naming it."""
    pools = {}
    for index, segment in enumerate(snapshot["segments"]):
        if isinstance(segment, dict) and segment.get("device", device) == device:
            pool = segment.get("segment_pool_id")
            if isinstance(pool, (list, tuple)) and tuple(pool) != (0, 0):
                pools.setdefault(printable(tuple(pool)), f"segments[{index}]")
    for index, entry in enumerate(snapshot["device_traces"][device]):
        pool = entry.get("pool_id") if isinstance(entry, dict) else None
        if isinstance(pool, (list, tuple)) and tuple(pool) != (0, 0):
            pools.setdefault(printable(tuple(pool)), f"device_traces[{device}][{index}]")
    return [{"pool": pool, "entry": where} for pool, where in pools.items()]


def segments_at_snapshot(snapshot, device, streams):
    """The allocator's segments when the snapshot was taken, blocks in address order."""
    segments = []
    for segment, blocks in device_segments(snapshot, device):
        total = segment["total_size"]
        segments.append({"addr": segment["address"], "size": total,
                         "stream": streams[segment.get("stream", 0)],
                         "pool": segment.get("segment_type", "small" if total == SMALL_SEGMENT else "large"),
                         "expandable": bool(segment.get("is_expandable", False)),
                         "blocks": [{key: block[key] for key in ("addr", "size", "allocated")} for block in blocks]})
    return sorted(segments, key=lambda segment: segment["addr"])


def end_block_sizes(end_segments):
    """addr -> block size of every block at snapshot time (rounded, with unsplit slack)."""
    return {block["addr"]: block["size"] for segment in end_segments for block in segment["blocks"]}


def segments_at_start(end_segments, segment_events):
    """The segments that existed when recording began: those at the snapshot, with the
    trace's segment_alloc/free undone from last to first (blocks are left to the replay).
    An expandable segment is a mapped range: the trace's segment_map/unmap are undone on
    the ranges mapped at the snapshot, and what stays mapped held memory at the start."""
    keys = ("addr", "size", "stream", "pool", "expandable")
    alive = {segment["addr"]: {key: segment[key] for key in keys} for segment in end_segments
             if not segment["expandable"]}
    mapped = [dict({key: segment[key] for key in keys}, end=segment["addr"] + segment["size"])
              for segment in end_segments if segment["expandable"]]
    for event in reversed(segment_events):
        if event["action"] == "segment_alloc":
            alive.pop(event["addr"], None)
        elif event["action"] == "segment_free":
            alive[event["addr"]] = {"addr": event["addr"], "size": event["size"], "stream": event["stream"],
                                    "pool": "small" if event["size"] == SMALL_SEGMENT else "large",
                                    "expandable": False}
        elif event["action"] in ("segment_map", "segment_unmap"):
            start, end = event["addr"], event["addr"] + event["size"]
            mapped = [piece for r in mapped for piece in (dict(r, end=min(r["end"], start)),
                                                          dict(r, addr=max(r["addr"], end)))
                      if piece["addr"] < piece["end"]]
            if event["action"] == "segment_unmap":
                # Large-pool pages are 20 MiB, small-pool ones 2 MiB (a guess where both fit:
                # the replay's first map of that range then differs, and replay-check says so).
                mapped.append({"addr": start, "end": end, "stream": event["stream"], "expandable": True,
                               "pool": "large" if event["size"] % (10 * SMALL_SEGMENT) == 0 else "small"})
    mapped.sort(key=lambda r: r["addr"])
    merged = []
    for r in mapped:  # adjacent mapped pieces of one range are one segment, as a snapshot lists them
        if merged and merged[-1]["end"] == r["addr"] and merged[-1]["stream"] == r["stream"]:
            merged[-1]["end"] = r["end"]
        else:
            merged.append(dict(r))
    for r in merged:
        alive[r["addr"]] = {"addr": r["addr"], "size": r.pop("end") - r["addr"], "stream": r["stream"],
                            "pool": r["pool"], "expandable": True}
    return sorted(alive.values(), key=lambda segment: segment["addr"])


def replay_peak(rows):
    """Replays the rows as the C++ reader will, so a converter bug fails here rather than
    in allocsim; returns the peak of live requested bytes."""
    live, current, peak, last_time = {}, 0, 0, 0
    for time_ns, op, addr, size, _ in rows:
        if time_ns < last_time or (op == "alloc" and addr in live) or (op == "free" and addr not in live):
            raise RuntimeError(f"converter bug: inconsistent row {time_ns},{op},{addr}")
        last_time = time_ns
        if op == "alloc":
            live[addr] = size
            current += size
            peak = max(peak, current)
        elif op == "free":
            current -= live.pop(addr)
    return peak


def render_csv(result, source):
    """The CSV text: comments saying where it came from and what was guessed, then rows."""
    actions = ", ".join(f"{name} {count}" for name, count in sorted(result["actions"].items()))
    stats, streams = result["stats"], result["streams"]
    lines = [f"# from PyTorch memory snapshot {source}, device {result['device']}, by tools/torch_snapshot.py",
             f"# written by {result['format']}",
             f"# trace entries: {actions}",
             f"# {result['pre_freed'] + result['pre_kept']} pre-existing blocks (allocated before the "
             f"recording; {result['pre_freed']} freed in it, {result['pre_kept']} live at the snapshot) "
             "are allocs at time 0, tag other",
             f"# {result['releases']} releases from segment_free bursts (empty_cache); "
             f"{stats['oom_bursts']} bursts inside a failed malloc left out",
             f"# {stats['clamped']} timestamps clamped (they went back in time)" if result["timed"] else
             "# no time_us (PyTorch before 2.2): entries are 1 us apart",
             "# streams (ours = cuda): " + ", ".join(f"{ours} = {cuda}" for cuda, ours in streams.items())]
    for key, text in (("missing_frees", "allocs of a live address (a free_completed is missing; freed there)"),
                      ("unmatched_frees", "free_completed entries of a block not live (skipped)"),
                      ("snapshot_unexplained", "snapshot blocks active but freed in the trace")):
        if stats[key]:
            lines.append(f"# {stats[key]} {text}")
    lines.append("time_ns,op,id,bytes,stream,tag")
    tags = iter(result["tags"])
    for time_ns, op, addr, size, stream in result["rows"]:
        if op == "alloc":
            lines.append(f"{time_ns},alloc,{addr:#x},{size},{streams[stream]},{next(tags)}")
        elif op == "free":
            lines.append(f"{time_ns},free,{addr:#x},{size},,")
        else:
            lines.append(f"{time_ns},release,,,,")
    return "\n".join(lines) + "\n"


def render_settings(result, source):
    """The JSON sidecar a later replay-check needs: what the allocator was configured with,
    and where the real allocator reserved and released memory. `before_event` is the index
    (0-based, over the CSV's event rows) of the first row after the segment event;
    `during_event` the row whose replay made it. `preexisting` describes the CSV's leading
    rows (blocks allocated before the recording; `block_size` when the snapshot shows it),
    `segments_at_start` the segments the recording began with, `segments_at_end` the
    snapshot's own segments and blocks: what allocsim replay-check rebuilds and compares.
    `addresses`: the address of every alloc row, in order; `frames` the distinct first stack
    frames outside torch and `alloc_frames` each alloc row's, an index into them or -1 (both
    empty when the snapshot recorded no frames); `private_pools` the pools other
    than (0, 0) and the first entry naming each; `format` which PyTorch wrote the file."""
    streams = [{"stream": ours, "cuda_stream": cuda} for cuda, ours in result["streams"].items()]
    return json.dumps({"source": source, "device": result["device"], "format": result["format"],
                       "events": len(result["rows"]),
                       "allocator_settings": result["settings"],
                       "allocator_settings_recorded": result["settings_recorded"],
                       "streams": streams, "segment_events": result["segment_events"],
                       "ooms": result["ooms"], "preexisting": result["preexisting"],
                       "segments_at_start": result["segments_at_start"],
                       "segments_at_end": result["segments_at_end"],
                       "private_pools": result["private_pools"], "addresses": result["addresses"],
                       "frames": result["frames"], "alloc_frames": result["alloc_frames"]},
                      indent=1) + "\n"


def write_atomically(path, text):
    """Write to a temporary file in the same folder, then rename: no partial outputs."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def summary(result):
    """The --summary text: what the snapshot held and what the conversion decided."""
    actions = ", ".join(f"{name} {count}" for name, count in sorted(result["actions"].items()))
    streams = ", ".join(str(cuda) for cuda in result["streams"])
    return "\n".join([
        f"device {result['device']}, written by {result['format']}",
        f"events by action: {actions}",
        f"pre-existing blocks: {result['pre_freed'] + result['pre_kept']} "
        f"({result['pre_freed']} freed in the trace, {result['pre_kept']} live at the snapshot)",
        f"releases emitted: {result['releases']} (bursts inside a failed malloc: {result['stats']['oom_bursts']})",
        f"streams: {len(result['streams'])} (cuda {streams})",
        f"peak live requested bytes: {result['peak']} ({result['peak'] / 2**30:.3f} GiB)",
        f"clamped timestamps: {result['stats']['clamped']}",
        f"csv events: {len(result['rows'])}, segment events: {len(result['segment_events'])}, "
        f"allocator settings recorded: {result['settings_recorded']}"]) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Convert a PyTorch memory snapshot to an allocsim CSV trace.")
    parser.add_argument("snapshot", help="pickle written by torch.cuda.memory._dump_snapshot")
    parser.add_argument("-o", "--output", help="CSV trace to write")
    parser.add_argument("--settings-out", help="JSON sidecar: allocator settings and segment events")
    parser.add_argument("--cuda-device", "--device", dest="device", type=int, default=None,
                        help="which device's trace (default: the only one that holds entries)")
    parser.add_argument("--summary", action="store_true", help="print counts to stdout")
    args = parser.parse_args(argv)
    if not (args.output or args.settings_out or args.summary):
        parser.error("nothing to do: give -o, --settings-out or --summary")
    source = os.path.basename(args.snapshot)
    try:
        result = convert(load_snapshot(args.snapshot), args.device)
    except SnapshotError as error:
        print(f"torch_snapshot: {printable(args.snapshot)}: {printable(error)}", file=sys.stderr)
        return 2
    for path, render in ((args.output, render_csv), (args.settings_out, render_settings)):
        if path:
            try:
                write_atomically(path, render(result, source))
            except OSError as error:
                print(f"torch_snapshot: {printable(path)}: cannot write: {printable(error.strerror or error)}",
                      file=sys.stderr)
                return 2
    if args.summary:
        sys.stdout.write(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
