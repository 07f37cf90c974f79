"""allocsim.run and Result: the same figures as `allocsim run --json`, and the views on them."""
import json
import subprocess
import sys

import numpy as np
import pytest

import allocsim

WORKLOAD = "random:n=3000,seed=7,live=1GiB"


def test_imports_without_torch():
    assert "torch" not in sys.modules


def test_result_carries_every_json_field_as_the_command_line(binary, tmp_path):
    out = tmp_path / "run.json"
    subprocess.run([str(binary), "--workload", WORKLOAD, "--policy", "bestfit", "--capacity", "2GiB", "--json", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    expected = json.loads(out.read_text())["tenants"][0]
    result = allocsim.run(WORKLOAD, policy="bestfit", capacity="2GiB")
    got = result.to_dict()
    for key, value in expected.items():
        if key in ("replay_seconds", "events_per_second"):
            continue  # wall clock
        assert got[key] == value, key
        assert getattr(result, key) == value, key
    assert got["device_detail"]["capacity_bytes"] == 2 * 2**30


def test_result_views():
    result = allocsim.run(WORKLOAD, policy="bfc", capacity=64 * 2**20)
    assert result.oom_count >= 1
    first = result.ooms[0]
    assert first.kind in ("capacity", "fragmentation", "reservation")
    assert first.event == result.first_oom_event and first.bytes == result.first_oom_bytes
    assert result.verdict in result.verdict_text or result.verdict_text
    assert "<" in result._repr_html_() and result.policy in result._repr_html_()
    timeline = result.timeline
    assert isinstance(timeline.time, np.ndarray) and len(timeline.time) == len(timeline.reserved) > 0
    assert timeline.allocated.max() == result.peak_allocated_bytes
    assert result.breakdown.total_bytes > 0


def test_report_writes_a_page(tmp_path):
    result = allocsim.run(WORKLOAD, policy="caching")
    page = result.report(tmp_path / "run.html")
    assert (tmp_path / "run.html").read_text().startswith("<!DOCTYPE html>")
    assert page == tmp_path / "run.html"


def test_tenants_and_a_trace_as_workload():
    trace = allocsim.load("random:n=500,seed=3")
    result = allocsim.run(trace, policy="bestfit", tenants=["random:n=400,seed=4@caching", ("random:n=300", "direct", "1ms")])
    assert [t.policy for t in result.tenants] == ["bestfit", "caching", "direct"]
    assert result.events == len(trace)


def test_a_replay_is_deterministic():
    a = allocsim.run(WORKLOAD, policy="caching").to_dict()
    b = allocsim.run(WORKLOAD, policy="caching").to_dict()
    for key in ("replay_seconds", "events_per_second"):
        a.pop(key), b.pop(key)
    assert a == b


@pytest.mark.parametrize("kwargs, error, naming", [
    (dict(workload=3), TypeError, "workload"),
    (dict(workload="random", policy=7), TypeError, "policy"),
    (dict(workload="random", policy="nosuch"), ValueError, "policy"),
    (dict(workload="random", capacity=[1]), TypeError, "capacity"),
    (dict(workload="random", capacity=-1), ValueError, "capacity"),
    (dict(workload="random", device="nosuch"), ValueError, "device"),
    (dict(workload="random", on_oom="later"), ValueError, "on_oom"),
    (dict(workload="nosuch_model_b8"), ValueError, "workload"),
    (dict(workload="random", tenants=[5]), TypeError, "tenants[0]"),
    (dict(workload="random", tenants=["random@nosuch"]), ValueError, "tenants[0]: unknown policy 'nosuch'"),
    (dict(workload="random", tenants=["random@bfc", ("random", "bfc:nokey=1")]), ValueError, "tenants[1][1]"),
    (dict(workload=None, tenants=[("nosuch_model_b8", "bfc")]), ValueError, "workload"),
])
def test_bad_input_names_the_argument(kwargs, error, naming):
    with pytest.raises(error, match=naming.replace("[", r"\[").replace("]", r"\]")):
        allocsim.run(**kwargs)


def test_catalogues():
    policies = allocsim.policies()
    assert {"name", "alias", "models", "summary", "parameters", "help"} <= set(policies.columns)
    assert "bfc" in set(policies.name)
    row = policies[policies.name == "caching"].iloc[0]
    assert "max_split" in row.parameters or row.parameters
    workloads = allocsim.workloads()
    assert {"generator", "model", "reader"} <= set(workloads.kind)
    devices = allocsim.devices()
    assert (devices.capacity_bytes > 0).all()


def test_explain():
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "15.77 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 14.74 GiB memory in use. "
            "Of the allocated memory 11.50 GiB is allocated by PyTorch, and 2.81 GiB is reserved by PyTorch but unallocated.")
    explanation = allocsim.explain(text)
    assert explanation.kind in ("capacity", "fragmentation", "reservation")
    with pytest.raises(TypeError, match="text"):
        allocsim.explain(b"bytes")
