"""Result: one tenant's outcome of a run, as the JSON output (``allocsim run --json``) has it.

Every key of the JSON's tenant object is an attribute (``peak_reserved_bytes``,
``first_oom_kind``, ``verdict_detail``, ...); the C++ run it came from gives the breakdown
at the peak, the timeline and the HTML report on demand.
"""
import html
import json
from collections import namedtuple

from ._record import Record, records

Timeline = namedtuple("Timeline", "time allocated reserved device_used event")
Timeline.__doc__ = "A tenant's bytes over simulated time (numpy arrays; time in ns), sampled on change."


class Result:
    """One tenant of a run. ``tenants`` holds every tenant of the run (this one first when alone)."""

    def __init__(self, run, tenant=0, document=None):
        self._run = run
        self._tenant = tenant
        self._document = document if document is not None else json.loads(run.json())
        self._fields = self._document["tenants"][tenant]
        self._timeline = None

    @property
    def tenants(self):
        """Every tenant of the run, in the scenario's order."""
        count = len(self._document["tenants"])
        return [self if i == self._tenant else Result(self._run, i, self._document) for i in range(count)]

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields")
        if fields is not None and name in fields:
            return records(fields[name])
        raise AttributeError(f"Result has no field {name!r} (see to_dict() for the fields)")

    def __dir__(self):
        return list(self._fields) + list(super().__dir__())

    def to_dict(self):
        """The tenant's JSON object, with the device and what made it (``allocsim``)."""
        data = json.loads(json.dumps(self._fields))
        data["device_detail"] = dict(self._document["device"])
        data["allocsim"] = dict(self._document["allocsim"])
        return data

    @property
    def ooms(self):
        """Every OOM (the first 1000): records with event, bytes, step, time_ns, ..., and its two
        names (docs/outputs.md): ``kind``, the run verdict judged at it, and ``request_kind``, its
        kind at the request (why this one request failed; ``text`` leads with it)."""
        return records(self._fields["ooms"])

    @property
    def verdict_text(self):
        """The verdict the table opens with, in words (``verdict`` is its one word: fits, capacity, ...)."""
        return self._fields["verdict_detail"]["text"]

    @property
    def breakdown(self):
        """What was alive at the peak: by tag, the top layers, the event it was after."""
        return records(self._run.breakdown(self._tenant))

    @property
    def timeline(self):
        """Allocated and reserved bytes over simulated time (numpy arrays)."""
        if self._timeline is None:
            points = self._run.timeline(self._tenant)
            self._timeline = Timeline(points["time_ns"], points["allocated_bytes"], points["reserved_bytes"],
                                      points["device_used_bytes"], points["event"])
        return self._timeline

    def report(self, path, title=""):
        """Writes the run's self-contained HTML page (every tenant) to ``path``; returns ``path``."""
        if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
            raise TypeError(f"path: a file name, not {type(path).__name__}")
        import os
        self._run.report(os.fsdecode(os.fspath(path)), title)
        return path

    def table(self):
        """The terminal table ``allocsim run`` prints."""
        return self._run.table()

    def __repr__(self):
        return (f"<allocsim.Result {self._fields['workload']} under {self._fields['policy']}: "
                f"{self._fields['verdict']}>")

    def _repr_html_(self):
        f = self._fields
        # An OOM's two names as every output labels them: the run verdict, the kind at the request.
        shown = [(key, key) for key in ("peak_reserved_bytes", "peak_allocated_bytes", "live_lower_bound_bytes",
                                        "fragmentation_at_peak", "oom_count")]
        shown += [("run verdict", "verdict"), ("first OOM at the request", "first_oom_request_kind")]
        rows = "".join(
            f"<tr><td>{html.escape(label)}</td><td>{html.escape(str(f[key]))}</td></tr>"
            for label, key in shown if key in f and f[key] is not None)
        return (f"<div><b>{html.escape(str(f['workload']))}</b> under <b>{html.escape(str(f['policy']))}</b>: "
                f"{html.escape(self.verdict_text)}<table>{rows}</table></div>")
