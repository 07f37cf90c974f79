"""run, replay and replay_check: a scenario replayed by the engine, results as Result."""
import os

from . import _core
from ._policy import is_python_policy, policy_name
from ._record import records
from ._result import Result
from ._trace import Trace, _path


def _size_text(value, argument):
    """A size as the command line takes it ("16GiB", 4096) from a str or an int; None stays None."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{argument}: a size (an int of bytes or a str such as '16GiB'), not {type(value).__name__}")
    if isinstance(value, int) and value <= 0:
        raise ValueError(f"{argument}: {value} bytes; give more than 0")
    return str(value)


def _workload(value, argument):
    if isinstance(value, Trace):
        return value._trace
    if isinstance(value, dict):
        # A snapshot dict: its trace, as `allocsim run FILE.pickle` reads the file.
        from ._snapshot import snapshot_bytes
        try:
            return _core._snapshot_trace(snapshot_bytes(value), "snapshot", None)
        except _core.Error as error:
            raise ValueError(f"{argument}: {error}") from None
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{argument}: empty; give a spec (resnet50_b64, random:n=1000), a path or a Trace")
        return value
    if hasattr(value, "__fspath__"):
        return _path(value, argument)
    raise TypeError(f"{argument}: a spec or path (str), a Trace or a snapshot dict, not {type(value).__name__}")


def _policy(value, argument):
    """(policy object for C++, name): a spec string read now, once, or a Python policy."""
    if isinstance(value, str):
        try:
            spec = _core._check_policy(value)
        except _core.Error as error:
            raise ValueError(f"{argument}: {error}") from None
        return spec, spec.text
    if is_python_policy(value):
        return value, policy_name(value)
    raise TypeError(f"{argument}: a policy spec (str) or an allocsim.Policy subclass, not {type(value).__name__}")


def _start(value, argument):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{argument}: a start time (int ns or a str such as '2s'), not {type(value).__name__}")
    if isinstance(value, str):
        try:
            return _core._parse_nanos(value)
        except _core.Error as error:
            raise ValueError(f"{argument}: {error}") from None
    if value < 0:
        raise ValueError(f"{argument}: {value} ns is negative")
    return value


def _tenant(value, index):
    argument = f"tenants[{index}]"
    if isinstance(value, str):
        try:
            return _core._parse_tenant(value)  # the tenant, its workload and policy read once
        except _core.Error as error:
            raise ValueError(f"{argument}: {error}") from None
    if not isinstance(value, (tuple, list)) or len(value) not in (2, 3):
        raise TypeError(f"{argument}: 'WORKLOAD@POLICY[@start=T]' or a tuple (workload, policy[, start])")
    workload = _workload(value[0], argument + "[0]")
    policy, name = _policy(value[1], argument + "[1]")
    start = _start(value[2], argument + "[2]") if len(value) == 3 else 0
    return _core._Tenant(workload, policy, name, start)


def run(workload, policy="bfc", device=None, capacity=None, tenants=None, on_oom="stop", check=False):
    """Replays ``workload`` through ``policy`` on a device; returns the Result (of the first tenant).

    workload: a spec ("resnet50_b64", "random:n=1000,seed=7"), a trace path, a Trace, or the
    dict ``torch.cuda.memory._snapshot()`` returns; None when ``tenants`` gives every tenant. A
    recording (its path or its dict) replays from an empty allocator, the blocks it found live
    allocated first, as ``allocsim run FILE.pickle`` does, under any policy, one written in
    Python too; ``replay()`` starts each policy from the state the recording began in. policy: a spec ("bfc", "caching:max_split=256MiB")
    or an allocsim.Policy subclass. device: a preset name (see devices()); capacity: bytes or
    "16GiB". tenants: more processes on the device, "WORKLOAD@POLICY[@start=T]" or tuples.
    on_oom: "stop" (the tenant crashes at its first OOM) or "continue". check: every invariant
    after every event (slow).
    """
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device: a preset name (str), not {type(device).__name__}")
    capacity_text = _size_text(capacity, "capacity")
    try:
        _core._check_device(device or "", capacity_text)
    except _core.Error as error:
        raise ValueError(f"device/capacity: {error}") from None
    if not isinstance(on_oom, str):
        raise TypeError(f"on_oom: 'stop' or 'continue', not {type(on_oom).__name__}")
    if on_oom not in ("stop", "continue"):
        raise ValueError(f"on_oom: 'stop' or 'continue', not {on_oom!r}")
    if not isinstance(check, bool):
        raise TypeError(f"check: a bool, not {type(check).__name__}")
    chosen = []
    if workload is not None:
        policy_value, name = _policy(policy, "policy")
        chosen.append(_core._Tenant(_workload(workload, "workload"), policy_value, name, 0))
    if tenants is not None:
        if isinstance(tenants, (str, tuple)):
            tenants = [tenants]
        if not isinstance(tenants, list):
            raise TypeError(f"tenants: a list of tenants, not {type(tenants).__name__}")
        chosen.extend(_tenant(value, i) for i, value in enumerate(tenants))
    if not chosen:
        raise ValueError("workload: nothing to run; give a workload or tenants")
    return Result(_core._run(chosen, device or "", capacity_text, on_oom, check))


def _snapshot_source(snapshot):
    """('path', str) or ('dict', pickle bytes): what replay and replay_check read."""
    if isinstance(snapshot, dict):
        from ._snapshot import snapshot_bytes
        return "dict", snapshot_bytes(snapshot)
    if isinstance(snapshot, (str, bytes)) or hasattr(snapshot, "__fspath__"):
        path = os.fsdecode(os.fspath(snapshot))
        if not os.path.exists(path):
            raise ValueError(f"snapshot: {path}: no such file")
        return "path", path
    raise TypeError(f"snapshot: a path or the dict torch.cuda.memory._snapshot() returns, not {type(snapshot).__name__}")


def _replay_policies(policies):
    """The replay's policies for C++, in order: spec lists (str), and each policy written in
    Python as (name, the class or instance)."""
    if isinstance(policies, str) or is_python_policy(policies):
        policies = [policies]
    if not isinstance(policies, (list, tuple)) or not policies:
        raise TypeError("policies: a spec list as a str ('caching,expandable'), an allocsim.Policy subclass, "
                        "or a list/tuple of them")
    chosen, names = [], {}
    for i, policy in enumerate(policies):
        if isinstance(policy, str):
            chosen.append(policy)
        elif is_python_policy(policy):
            name = policy_name(policy)
            if names.setdefault(name, policy) is not policy:
                raise ValueError(f"policies[{i}]: two policies named {name}; give one a `name` attribute")
            chosen.append((name, policy))
        else:
            raise TypeError(f"policies[{i}]: a policy spec (str) or an allocsim.Policy subclass, "
                            f"not {type(policy).__name__}")
    return chosen


def _cuda_device(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"cuda_device: an int, not {type(value).__name__}")
    return value


def replay(snapshot, policies=("caching", "expandable"), capacity=None, cuda_device=None):
    """Replays a PyTorch recording (a snapshot pickle path, or the dict ``torch.cuda.memory._snapshot()``
    returns) through each policy, each from the allocator state the recording began in.

    policies: specs ("caching,expandable" or a list of them) and allocsim.Policy subclasses, in
    any mix. ``caching`` and ``expandable`` adopt the recorded segments; every other policy, one
    written in Python too, starts by allocating the blocks live at the start, in address order
    (replay_details' ``starts`` says how each began: "recorded segments adopted" or "live
    blocks placed").

    Returns {policy spec: Result}; replay_details() adds what the recording itself did.
    """
    return replay_details(snapshot, policies, capacity, cuda_device)["results"]


def replay_details(snapshot, policies=("caching", "expandable"), capacity=None, cuda_device=None):
    """replay(), with what the recording itself did ("recorded"), the device's capacity and why, and
    how each policy's replay began (``starts``, by policy). ``sides``: one dict per side, the
    recording's first (``recorded`` is it), keyed by the names of ``allocsim replay --csv``
    (``peak_reserved_bytes``, ``device_mallocs``, ``oom_count``, ...) with ``verdict``,
    ``at_the_request``, ``first_oom``, ``first_oom_kind``, ``first_oom_request_kind`` and
    ``torch_setting`` beside them, as the browser page's JSON has them."""
    lists = _replay_policies(policies)
    capacity_text = _size_text(capacity, "capacity")
    kind, source = _snapshot_source(snapshot)
    try:
        if kind == "path":
            outcome = _core._replay_path(source, lists, capacity_text or None, _cuda_device(cuda_device))
        else:
            outcome = _core._replay_bytes(source, "snapshot", lists, capacity_text or None, _cuda_device(cuda_device))
    except _core.Error as error:
        raise ValueError(f"snapshot: {error}") from None
    results = {run.label: Result(run) for run in outcome.pop("runs")}
    details = records(outcome)
    details["results"] = results
    return details


def replay_check(snapshot, capacity="1TiB", cuda_device=None):
    """Replays the recording through ``caching`` with its recorded settings: ``.exact`` and,
    when not, ``.divergence`` (the first event that differs) or ``.final_state``."""
    capacity_text = _size_text(capacity, "capacity")
    kind, source = _snapshot_source(snapshot)
    try:
        if kind == "path":
            return records(_core._replay_check_path(source, capacity_text, _cuda_device(cuda_device)))
        return records(_core._replay_check_bytes(source, "snapshot", capacity_text, _cuda_device(cuda_device)))
    except _core.Error as error:
        raise ValueError(f"snapshot: {error}") from None
