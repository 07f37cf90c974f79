"""policies(), workloads(), devices(): the catalogues as DataFrames; explain(): a pasted OOM judged."""
import json

from . import _core
from ._record import records


def _frame(rows):
    import pandas
    return pandas.DataFrame(rows)


def policies():
    """Every registered policy: name, alias, framework, models, summary, parameters ({key: default}), help ({key: help})."""
    return _frame(_core._policy_rows())


def workloads():
    """Generators, zoo models and trace readers (kind), with summary, example, parameters and help."""
    return _frame(_core._workload_rows())


def devices():
    """Device presets for ``device=``: name, summary, capacity_bytes, compute_capability, context, source."""
    return _frame(_core._device_rows())


def explain(text):
    """Why a pasted OOM message or log ran out: a record with kind (inconsistent | fragmentation |
    reservation | capacity, or None when the text tells too little), the figures read, and what to try."""
    if not isinstance(text, str):
        raise TypeError(f"text: the message or log as a str, not {type(text).__name__}")
    return records(json.loads(_core._explain_json(text)))
