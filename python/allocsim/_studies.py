"""sweep, maxbatch, advise, compare: the commands, in-process, their CSV as a DataFrame.

Keyword arguments are the command's long options (dashes as underscores): values in the
command line's syntax ("bfc,caching", "8:64", "16GiB") or as Python lists and numbers.
"""
import io
import os
import re
import tempfile

from . import _core
from ._policy import is_python_policy, policy_name

# Options the commands take several times (each value its own, commas and all).
_REPEATED = {"workload", "policy", "tenant", "param"}


class Interrupted(KeyboardInterrupt):
    """^C stopped the command; ``partial`` holds the rows of what finished (a DataFrame)."""

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


def _arguments(options):
    arguments = []
    for key, value in options.items():
        if key == "csv":
            raise TypeError("csv: the DataFrame returned is the CSV (DataFrame.to_csv writes it)")
        option = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            arguments.append(option)
        elif isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"{key}: an empty list")
            texts = [_text(item, key) for item in value]
            if key in _REPEATED:
                for text in texts:
                    arguments += [option, text]
            else:
                arguments += [option, ",".join(texts)]
        else:
            arguments += [option, _text(value, key)]
    return arguments


def _read_csv(path):
    import pandas
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return pandas.DataFrame()
    with open(path, encoding="utf-8") as file:
        return pandas.read_csv(io.StringIO(file.read()))


def _hosted(options):
    """`policy`'s values with each policy written in Python replaced by its name, and those
    policies by name (the command makes one of each class per run)."""
    value = options.get("policy")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not any(is_python_policy(item) for item in values):
        return options, {}
    hosted = {}
    names = []
    for item in values:
        if not is_python_policy(item):
            names.append(item)
            continue
        if not isinstance(item, type):
            raise TypeError(f"policy: pass the class {type(item).__name__}, not an instance: "
                            "the command makes one policy per run")
        name = policy_name(item)
        if hosted.get(name, item) is not item:
            raise ValueError(f"policy: two policies named {name}; give one a `name` attribute")
        hosted[name] = item
        names.append(name)
    return dict(options, policy=names), hosted


def _traces_as_files(options, folder):
    """`workload`'s allocsim.Trace values (a capture's, say) written as .atrace files in
    `folder`, each replaced by its path: the command reads workloads as specs and files."""
    from ._trace import Trace
    value = options.get("workload")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not any(isinstance(item, Trace) for item in values):
        return options
    paths = []
    for index, item in enumerate(values):
        if isinstance(item, Trace):
            stem = re.sub(r"[^A-Za-z0-9_.-]", "_", item.name) or "trace"  # what the rows name it
            path = os.path.join(folder, str(index), stem + ".atrace")
            os.makedirs(os.path.dirname(path))
            item.save(path)
            item = path
        paths.append(item)
    return dict(options, workload=paths if isinstance(value, (list, tuple)) else paths[0])


def _run_command(command, options):
    options, hosted = _hosted(options)
    with tempfile.TemporaryDirectory(prefix="allocsim-") as folder:
        arguments = _arguments(_traces_as_files(options, folder))
        csv = os.path.join(folder, command + ".csv")
        try:
            status, out, stopped = _core._command(command, arguments + ["--csv", csv], hosted)
        except _core.Error as error:
            raise ValueError(f"{command}: {error}") from None
        rows = _read_csv(csv)
        if stopped:
            raise Interrupted(f"{command}: {stopped}", rows)
    rows.attrs["output"] = out
    rows.attrs["status"] = status
    return rows


def sweep(**options):
    """``allocsim sweep``: the cross product of list-valued options, one row per tenant per point."""
    return _run_command("sweep", options)


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
    return _run_command("maxbatch", options)


def advise(**options):
    """``allocsim advise``: what to change so that a workload fits, one row per line of advice."""
    return _run_command("advise", options)


def compare(**options):
    """``allocsim compare``: one workload through several policies, one row per policy.

    ``policy`` may name allocsim.Policy subclasses beside the built-ins' specs (so may
    sweep's and maxbatch's): each row then carries the class's name.
    """
    return _run_command("compare", options)
