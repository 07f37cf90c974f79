"""allocsim: replay GPU memory allocation workloads through allocator policies, from Python.

The same engine, policies, workloads and studies as the ``allocsim`` command line
(docs/python.md): ``run``, ``replay``, ``replay_check``, ``sweep``, ``maxbatch``,
``advise``, ``compare``, ``explain``, the catalogues ``policies()``, ``workloads()``,
``devices()``, traces (``load``, ``Trace.from_arrays``), ``Policy`` for allocator
policies written in Python, and ``capture()`` for a PyTorch training step run on fake tensors.
"""
from . import _core
from ._capture import capture, capturing
from ._core import Block, Device, Request, Segment
from ._policy import Policy, PolicyError
from ._record import Record
from ._result import Result, Timeline
from ._run import replay, replay_check, replay_details, run
from ._studies import Interrupted, advise, compare, maxbatch, sweep
from ._tables import devices, explain, policies, workloads
from ._trace import Trace, load

__all__ = [
    "Block", "Device", "Interrupted", "Policy", "PolicyError", "Record", "Request", "Result", "Segment",
    "Timeline", "Trace", "advise", "capture", "capturing", "compare", "devices", "explain", "load", "maxbatch",
    "policies", "replay", "replay_check", "replay_details", "run", "sweep", "workloads",
]
