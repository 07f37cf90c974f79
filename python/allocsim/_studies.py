"""sweep, maxbatch, advise, compare: each study run in-process, its rows as a DataFrame.

Keyword arguments are the command line's long options (dashes as underscores): values in
the command line's syntax ("bfc,caching", "8:64", "16GiB") or as Python lists and numbers.
The module builds the study's typed options from them (python/study_binding.cpp) and runs
the study; the DataFrame has the columns and cells of the CSV the command line writes.
"""
import os

from . import _core
from ._policy import is_python_policy, policy_name

# Options the studies take several times (each value its own, commas and all).
_REPEATED = {"workload", "policy", "tenant", "param"}
# Options of the command line that write files or show progress: the DataFrame is the output.
_FILES = {"csv", "report", "resume", "save_every"}


class Interrupted(KeyboardInterrupt):
    """^C stopped the study; ``partial`` holds the rows of what finished (a DataFrame)."""

    def __init__(self, message, partial):
        super().__init__(message)
        self.partial = partial


def _text(value, argument):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if hasattr(value, "__fspath__"):
        return os.fsdecode(os.fspath(value))
    raise TypeError(f"{argument}: a str, number or bool, or a list of them, not {type(value).__name__}")


def _keywords(options):
    """Each keyword's value as a list of texts: a repeatable option's values one by one,
    any other list joined by commas, True as "true"; None and False left out."""
    keywords = {}
    for key, value in options.items():
        if key in _FILES:
            raise TypeError(f"{key}: the DataFrame returned is the output (DataFrame.to_csv writes it)")
        if value is None or value is False:
            continue
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"{key}: an empty list")
            texts = [_text(item, key) for item in value]
            keywords[key] = texts if key in _REPEATED else [",".join(texts)]
        else:
            keywords[key] = [_text(value, key)]
    return keywords


def _python_policies(options):
    """`policy`'s values with each policy written in Python replaced by its name, and those
    policies by name (the study makes one of each class per run)."""
    value = options.get("policy")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not any(is_python_policy(item) for item in values):
        return options, {}
    policies = {}
    names = []
    for item in values:
        if not is_python_policy(item):
            names.append(item)
            continue
        if not isinstance(item, type):
            raise TypeError(f"policy: pass the class {type(item).__name__}, not an instance: "
                            "the study makes one policy per run")
        name = policy_name(item)
        if policies.get(name, item) is not item:
            raise ValueError(f"policy: two policies named {name}; give one a `name` attribute")
        policies[name] = item
        names.append(name)
    return dict(options, policy=names), policies


def _python_traces(options):
    """`workload`'s allocsim.Trace values (a capture's, say) replaced by their names, and
    those traces by name: the study reads each as the workload of that name, in memory."""
    from ._trace import Trace
    value = options.get("workload")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not any(isinstance(item, Trace) for item in values):
        return options, {}
    traces = {}
    names = []
    for item in values:
        if isinstance(item, Trace):
            name = item.name or "trace"
            if traces.get(name, item) is not item:
                raise ValueError(f"workload: two traces named {name}; give one another name")
            traces[name] = item
            item = name
        names.append(item)
    return dict(options, workload=names if isinstance(value, (list, tuple)) else names[0]), traces


_TRUE = {"True", "true", "TRUE"}
_FALSE = {"False", "false", "FALSE"}


def _column(cells):
    """A column's cells as pandas.read_csv would type them: whole numbers (float when one
    is empty), numbers, booleans, else text ("" missing)."""
    import numpy
    present = [cell for cell in cells if cell != ""]
    missing = len(present) < len(cells)
    for kind in (int, float):
        try:
            if any("_" in cell or cell != cell.strip() for cell in present):
                break
            values = [kind(cell) for cell in present]
        except ValueError:
            continue
        if kind is int and not missing and all(-2**63 <= v < 2**63 for v in values):
            return numpy.array(values, dtype=numpy.int64)
        return numpy.array([float(cell) if cell != "" else numpy.nan for cell in cells], dtype=numpy.float64)
    if present and not missing and all(cell in _TRUE or cell in _FALSE for cell in present):
        return numpy.array([cell in _TRUE for cell in cells], dtype=bool)
    return numpy.array([cell if cell != "" else numpy.nan for cell in cells], dtype=object)


def _frame(columns, rows):
    import pandas
    if not columns:
        return pandas.DataFrame()
    cells = list(zip(*rows)) if rows else [()] * len(columns)
    return pandas.DataFrame({name: _column(list(values)) for name, values in zip(columns, cells)}, columns=columns)


def _run_study(name, study, options):
    options, policies = _python_policies(options)
    options, traces = _python_traces(options)
    keywords = _keywords(options)
    try:
        columns, rows, out, stopped = study(keywords, policies, {label: trace._trace for label, trace in traces.items()})
    except _core.Error as error:
        raise ValueError(f"{name}: {error}") from None
    frame = _frame(columns, rows)
    if stopped:
        raise Interrupted(f"{name}: {stopped}", frame)
    frame.attrs["output"] = out
    return frame


def sweep(**options):
    """``allocsim sweep``: the cross product of list-valued options, one row per tenant per point."""
    return _run_study("sweep", _core._sweep, options)


def maxbatch(step_fn=None, **options):
    """``allocsim maxbatch``: the largest batch that runs without OOM, one row per device, policy and variant.

    Given a callable ``step_fn(batch)`` (one training step of the user's own PyTorch code),
    captures it at each batch tried instead (allocsim.capture; docs/capture.md).
    """
    if callable(step_fn):
        from ._capture import maxbatch_of
        return maxbatch_of(step_fn, **options)
    if step_fn is not None:
        raise TypeError(f"maxbatch: a step_fn(batch) callable or keyword options, not {type(step_fn).__name__}")
    return _run_study("maxbatch", _core._maxbatch, options)


def advise(**options):
    """``allocsim advise``: what to change so that a workload fits, one row per line of advice."""
    return _run_study("advise", _core._advise, options)


def compare(**options):
    """``allocsim compare``: one workload through several policies, one row per policy.

    ``policy`` may name allocsim.Policy subclasses beside the built-ins' specs (so may
    sweep's and maxbatch's): each row then carries the class's name.
    """
    return _run_study("compare", _core._compare, options)
