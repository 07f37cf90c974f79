"""Never a crash: random arrays and random snapshot-like dicts give a trace, a result, or
TypeError / ValueError, nothing else."""
import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import allocsim
from allocsim import _core

# No example database in the source tree: every run draws afresh (the seeds print on failure).
settings.register_profile("allocsim", database=None)
settings.load_profile("allocsim")

REFUSED = (TypeError, ValueError)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=8), st.binary(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=20)
snapshot_keys = st.sampled_from(["segments", "device_traces", "action", "addr", "size", "stream", "blocks", "state",
                                 "address", "total_size", "time_us", "frames", "device", "allocator_settings"])
snapshot_like = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(snapshot_keys, inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(snapshot_keys, snapshot_like, max_size=4))
def test_random_dicts_never_crash_replay(snapshot):
    try:
        allocsim.replay_check(snapshot)
    except REFUSED:
        pass


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({"segments": st.lists(snapshot_like, max_size=3),
                              "device_traces": st.lists(st.lists(st.dictionaries(snapshot_keys, scalars, max_size=6),
                                                                 max_size=6), max_size=2)}))
def test_snapshot_shaped_dicts_never_crash_replay(snapshot):
    try:
        allocsim.replay(snapshot, policies="caching")
    except REFUSED:
        pass


ops = st.sampled_from(["alloc", "free", "release", 0, 1, 2, 3, "x"])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-5, 2**64 + 5), min_size=n, max_size=n),
    st.lists(ops, min_size=n, max_size=n),
    st.lists(st.integers(-3, 3), min_size=n, max_size=n),
    st.lists(st.integers(-1, 2**65), min_size=n, max_size=n),
    st.one_of(st.none(), st.lists(st.integers(-1, 2**17), min_size=n, max_size=n)))))
def test_random_arrays_never_crash(columns):
    time_ns, op, ids, sizes, stream = columns
    try:
        trace = allocsim.Trace.from_arrays(time_ns, op, ids, sizes, stream=stream)
    except (TypeError, ValueError):
        return
    allocsim.run(trace, policy="bestfit", capacity="1GiB", on_oom="continue")


@settings(max_examples=100, deadline=None)
@given(values, values)
def test_random_arguments_never_crash_run(workload, policy):
    try:
        allocsim.run(workload, policy=policy if policy is not None else "bfc")
    except (TypeError, ValueError):
        pass


def test_a_pickled_dict_stays_in_memory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        allocsim.replay({"segments": [], "device_traces": [[]]})
    except REFUSED:
        pass
    assert list(tmp_path.iterdir()) == []
    assert pickle.loads(pickle.dumps({"a": np.int64(1).item()})) == {"a": 1}
