#!/usr/bin/env python3
"""Check a PyTorch memory snapshot the way pytorch.org/memory_viz reads it.

    python3 tools/check_memory_viz.py SNAPSHOT.pickle [MORE.pickle ...]

Loads the pickle with a plain-data unpickler (no globals, as allocsim's own reader) and checks what
the viewer needs (docs/export.md): `segments` and `device_traces` (a list per device any
segment names); every integer in [0, 2^53); segment and block fields; blocks tiling
their segment in address order; then, device by device, the trace replayed backwards
from the final segments, as the "Allocator State History" view does: every alloc undone
on a live block of its requested size, every free_completed right after its
free_requested on a block not live, segments reserved only while empty, nothing left
before the first entry (a recording that began with the process). Prints one line per file and
exits 0 when every file passes (stdout), 1 when one does not (the first problem named, on
stderr), 2 when it cannot be read.
"""
import pickle
import sys

LIMIT = 1 << 53
SEGMENT_KEYS = ("device", "address", "total_size", "allocated_size", "stream", "segment_type", "blocks", "frames")
BLOCK_KEYS = ("size", "requested_size", "state", "frames")
STATES = ("active_allocated", "active_pending_free", "inactive")


class Bad(Exception):
    pass


class PlainDataUnpickler(pickle.Unpickler):
    """Loads only plain data: every global (class, function) and persistent id is refused,
    so loading a pickle cannot import modules or call anything."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused global {module}.{name}: a memory snapshot is plain data")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused persistent id: a memory snapshot is plain data")


def integers(value, where):
    """Every int below `value` in [0, 2^53): the viewer's oldest unpickler reads doubles."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and not 0 <= value < LIMIT:
        raise Bad(f"{where}: integer {value} outside [0, 2^53)")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        integers(item, f"{where}[{key!r}]")


def check_segments(snapshot):
    """The final state per device: segments {addr: size}, mapped ranges, live {addr: requested}."""
    state = {}
    for index, segment in enumerate(snapshot["segments"]):
        where = f"segments[{index}]"
        for key in SEGMENT_KEYS:
            if key not in segment:
                raise Bad(f"{where} lacks '{key}'")
        device = state.setdefault(segment["device"], {"segments": {}, "mapped": [], "live": {}})
        cursor, allocated = segment["address"], 0
        for number, block in enumerate(segment["blocks"]):
            for key in BLOCK_KEYS:
                if key not in block:
                    raise Bad(f"{where}.blocks[{number}] lacks '{key}'")
            if block["state"] not in STATES or block["size"] <= 0:
                raise Bad(f"{where}.blocks[{number}]: state {block['state']!r}, size {block['size']}")
            if block.get("address", cursor) != cursor:
                raise Bad(f"{where}.blocks[{number}] at {block['address']:#x}, not {cursor:#x}: blocks must tile")
            if block["state"] != "inactive":
                if block["requested_size"] > block["size"]:
                    raise Bad(f"{where}.blocks[{number}] requests more than its size")
                device["live"][cursor] = block["requested_size"]
                allocated += block["size"]
            cursor += block["size"]
        if cursor != segment["address"] + segment["total_size"]:
            raise Bad(f"{where}: blocks cover {cursor - segment['address']} of {segment['total_size']} bytes")
        if allocated != segment["allocated_size"]:
            raise Bad(f"{where}: allocated_size {segment['allocated_size']}, its blocks {allocated}")
        if segment.get("is_expandable"):
            device["mapped"].append((segment["address"], cursor))
        else:
            device["segments"][segment["address"]] = segment["total_size"]
    return state


def covered(ranges, start, end):
    """Whether [start, end) lies inside the union of the ranges."""
    for low, high in sorted(ranges):
        if low <= start < high:
            start = high
        if start >= end:
            return True
    return start >= end


def cut(ranges, start, end):
    return [piece for low, high in ranges for piece in ((low, min(high, start)), (max(low, end), high))
            if piece[0] < piece[1]]


def replay_backwards(device, entries, state):
    segments, live = state["segments"], state["live"]
    mapped = list(state["mapped"])

    def inside_memory(addr, size):
        return any(a <= addr and addr + size <= a + s for a, s in segments.items()) or covered(mapped, addr, addr + size)

    def holds_block(start, end):
        return any(start <= addr < end for addr in live)

    last_time = None
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        where = f"device_traces[{device}][{index}] ({entry.get('action')})"
        for key in ("action", "size", "stream", "time_us", "frames") + (("device_free",) if entry.get("action") == "oom"
                                                                          else ("addr",)):
            if key not in entry:
                raise Bad(f"{where} lacks '{key}'")
        if last_time is not None and entry["time_us"] > last_time:
            raise Bad(f"{where}: time goes back")
        last_time = entry["time_us"]
        action, addr, size = entry["action"], entry.get("addr"), entry["size"]
        if action == "alloc":
            if live.get(addr) != size:
                raise Bad(f"{where}: no live block of {size} bytes at {addr:#x} to undo")
            del live[addr]
        elif action == "free_completed":
            if addr in live:
                raise Bad(f"{where}: block at {addr:#x} live before its free")
            previous = entries[index - 1] if index > 0 else {}
            if previous.get("action") != "free_requested" or previous.get("addr") != addr:
                raise Bad(f"{where}: not right after its free_requested")
            if not inside_memory(addr, max(size, 1)):
                raise Bad(f"{where}: freed block at {addr:#x} outside every segment")
            live[addr] = size
        elif action == "segment_alloc":
            if segments.get(addr) != size or holds_block(addr, addr + size):
                raise Bad(f"{where}: segment at {addr:#x} not held empty when undone")
            del segments[addr]
        elif action == "segment_free":
            if addr in segments:
                raise Bad(f"{where}: segment at {addr:#x} held before its free")
            segments[addr] = size
        elif action == "segment_map":
            if not covered(mapped, addr, addr + size) or holds_block(addr, addr + size):
                raise Bad(f"{where}: range at {addr:#x} not mapped and empty when undone")
            mapped = cut(mapped, addr, addr + size)
        elif action == "segment_unmap":
            if any(low < addr + size and addr < high for low, high in mapped):
                raise Bad(f"{where}: range at {addr:#x} mapped before its unmap")
            mapped.append((addr, addr + size))
        elif action not in ("free_requested", "oom"):
            raise Bad(f"{where}: unknown action")
    if segments or mapped or live:
        raise Bad(f"device {device}: before the first entry {len(segments)} segments, {len(mapped)} mapped ranges "
                  f"and {len(live)} blocks remain")


def main(argv):
    if len(argv) < 2:
        print("usage: check_memory_viz.py SNAPSHOT.pickle [MORE.pickle ...]", file=sys.stderr)
        return 2
    return max(check_file(path) for path in argv[1:])


def check_file(path):
    """0, 1 or 2 as main's exit status, for one file."""
    argv = [None, path]
    try:
        with open(argv[1], "rb") as file:
            snapshot = PlainDataUnpickler(file).load()
    except Exception as error:  # noqa: BLE001 - any failure to read is one line
        print(f"check_memory_viz: {argv[1]}: cannot read: {error}", file=sys.stderr)
        return 2
    try:
        if not isinstance(snapshot, dict) or not isinstance(snapshot.get("segments"), list) or not isinstance(
                snapshot.get("device_traces"), list):
            raise Bad("no 'segments' and 'device_traces' lists")
        integers(snapshot, "snapshot")
        state = check_segments(snapshot)
        traces = snapshot["device_traces"]
        if state and max(state) >= len(traces):
            raise Bad(f"a segment on device {max(state)}, {len(traces)} device traces")
        for device, entries in enumerate(traces):
            replay_backwards(device, entries, state.get(device, {"segments": {}, "mapped": [], "live": {}}))
    except Bad as problem:
        print(f"check_memory_viz: {argv[1]}: {problem}", file=sys.stderr)
        return 1
    entries = sum(len(entries) for entries in snapshot["device_traces"])
    print(f"ok: {len(snapshot['device_traces'])} devices, {len(snapshot['segments'])} segments, {entries} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
