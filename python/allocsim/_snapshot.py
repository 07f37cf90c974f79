"""The dict ``torch.cuda.memory._snapshot()`` returns, checked and pickled in memory (never to disk)."""
import pickle


def _check(value, path, kind):
    if not isinstance(value, kind):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValueError(f"snapshot{path}: a {name}, not {type(value).__name__}")


def check_snapshot(snapshot):
    """ValueError naming the key path when the dict is not a snapshot's shape."""
    for key in ("segments", "device_traces"):
        if key not in snapshot:
            raise ValueError(f"snapshot: no {key!r} key (is it torch.cuda.memory._snapshot()'s dict?)")
    _check(snapshot["segments"], "['segments']", list)
    for i, segment in enumerate(snapshot["segments"]):
        _check(segment, f"['segments'][{i}]", dict)
        for key, kind in (("address", int), ("total_size", int), ("blocks", list)):
            if key in segment:
                _check(segment[key], f"['segments'][{i}][{key!r}]", kind)
        for j, block in enumerate(segment.get("blocks", [])):
            _check(block, f"['segments'][{i}]['blocks'][{j}]", dict)
            for key, kind in (("size", int), ("state", str)):
                if key in block:
                    _check(block[key], f"['segments'][{i}]['blocks'][{j}][{key!r}]", kind)
    _check(snapshot["device_traces"], "['device_traces']", list)
    for d, trace in enumerate(snapshot["device_traces"]):
        _check(trace, f"['device_traces'][{d}]", list)
        for e, entry in enumerate(trace):
            _check(entry, f"['device_traces'][{d}][{e}]", dict)
            for key, kind in (("action", str), ("addr", int), ("size", int)):
                if key in entry:
                    _check(entry[key], f"['device_traces'][{d}][{e}][{key!r}]", kind)


def snapshot_bytes(snapshot):
    check_snapshot(snapshot)
    return pickle.dumps(snapshot, protocol=2)
