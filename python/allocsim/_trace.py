"""Trace: the ordered requests of one process, held in C++ (sim/trace.hpp)."""
import os

import numpy as np

from . import _core
from ._record import records

_OPS = {"alloc": 0, "free": 1, "release": 2}
_TAGS = {name: code for code, name in enumerate(_core._tag_names())}


def _path(value, argument):
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        return os.fsdecode(os.fspath(value))
    raise TypeError(f"{argument}: a path (str or os.PathLike), not {type(value).__name__}")


def _codes(values, table, argument, n):
    """op or tag as names or codes, to a uint8 array of length n."""
    array = np.asarray(values, dtype=object if not isinstance(values, np.ndarray) else None)
    if array.ndim != 1:
        raise ValueError(f"{argument}: a 1-d array or list, not {array.ndim}-d")
    if len(array) != n:
        raise ValueError(f"{argument}: {len(array)} values, time_ns has {n}")
    codes = np.empty(n, dtype=np.uint8)
    for i, value in enumerate(array.tolist()):
        if isinstance(value, str):
            if value not in table:
                raise ValueError(f"{argument}[{i}]: {value!r} is not one of {', '.join(table)}")
            codes[i] = table[value]
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not 0 <= value < max(table.values()) + 1:
                raise ValueError(f"{argument}[{i}]: code {value} is not one of 0..{max(table.values())}")
            codes[i] = value
        else:
            raise TypeError(f"{argument}[{i}]: a name or a code, not {type(value).__name__}")
    return codes


def _integers(values, argument, n, dtype):
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{argument}: a 1-d array or list, not {array.ndim}-d")
    if len(array) != n:
        raise ValueError(f"{argument}: {len(array)} values, time_ns has {n}")
    if n and not np.issubdtype(array.dtype, np.integer):
        items = array.tolist()
        whole = []
        for i, value in enumerate(items):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{argument}[{i}]: an integer, not {type(value).__name__}")
            if isinstance(value, float) and not value.is_integer():
                raise TypeError(f"{argument}[{i}]: an integer, not {value!r}")
            whole.append(int(value))
        array = np.array(whole, dtype=object)
    info = np.iinfo(dtype)
    for value in (array.min(), array.max()) if n else ():
        if int(value) < info.min or int(value) > info.max:
            raise ValueError(f"{argument}: {int(value)} is outside {info.min}..{info.max}")
    return array.astype(dtype)


class Trace:
    """A trace in memory: from ``allocsim.load(path_or_spec)`` or ``Trace.from_arrays(...)``."""

    def __init__(self, core_trace):
        if not isinstance(core_trace, _core.Trace):
            raise TypeError("use allocsim.load(path) or Trace.from_arrays(...) to make a Trace")
        self._trace = core_trace

    @classmethod
    def from_arrays(cls, time_ns, op, id, bytes, stream=None, tag=None, name="arrays"):  # noqa: A002 (the CSV's names)
        """Events from columns (numpy arrays or lists), as the trace CSV has them.

        ``op``: "alloc", "free", "release" or 0, 1, 2. ``id``: any integers, reusable after
        their free. A free's ``bytes`` may be 0 (its allocation's). ``tag``: names
        ("weight", "activation", ...) or codes; default "other". Raises ValueError naming the
        argument or the event.
        """
        time_array = np.asarray(time_ns)
        if time_array.ndim != 1:
            raise ValueError(f"time_ns: a 1-d array or list, not {time_array.ndim}-d")
        n = len(time_array)
        if n == 0:
            raise ValueError("time_ns: no events; a trace has at least one")
        if not isinstance(name, str):
            raise TypeError(f"name: a str, not {type(name).__name__}")
        time_column = _integers(time_array, "time_ns", n, np.uint64)
        op_column = _codes(op, _OPS, "op", n)
        id_column = _integers(id, "id", n, np.int64)
        bytes_column = _integers(bytes, "bytes", n, np.uint64)
        stream_column = np.zeros(n, np.uint16) if stream is None else _integers(stream, "stream", n, np.uint16)
        tag_column = np.full(n, _TAGS["other"], np.uint8) if tag is None else _codes(tag, _TAGS, "tag", n)
        try:
            built = _core.Trace._from_arrays(time_column, op_column, id_column, bytes_column, stream_column,
                                             tag_column, name)
        except _core.Error as error:
            raise ValueError(f"from_arrays: {error}") from None
        return cls(built)

    def to_arrays(self):
        """The events as numpy arrays: time_ns, op (codes), id (dense, -1 for a release), bytes, stream, tag (codes)."""
        return self._trace._to_arrays()

    def save(self, path):
        """Writes the trace: ``.atrace`` (binary) or ``.csv``, by the name's extension."""
        self._trace._save(_path(path, "path"))

    @property
    def info(self):
        """What ``allocsim trace info`` says: counts, span, the live lower bound, by tag and stream."""
        return records(self._trace._info())

    @property
    def name(self):
        return self._trace.name

    def __len__(self):
        return len(self._trace)

    def __repr__(self):
        return f"<allocsim.Trace {self.name!r}: {len(self)} events>"


def load(path, cuda_device=None):
    """A trace file through the reader catalogue (CSV, .atrace, PyTorch snapshots, logs), or a workload spec."""
    spec = _path(path, "path")
    if cuda_device is not None and (not isinstance(cuda_device, int) or isinstance(cuda_device, bool)):
        raise TypeError(f"cuda_device: an int, not {type(cuda_device).__name__}")
    try:
        return Trace(_core._load(spec, cuda_device))
    except _core.Error as error:
        raise ValueError(f"path: {error}") from None
