"""allocsim.Trace: from arrays, to arrays, load, save, info."""
import numpy as np
import pytest

import allocsim


def small():
    return allocsim.Trace.from_arrays(
        time_ns=[0, 10, 20, 30, 40],
        op=["alloc", "alloc", "free", "release", "free"],
        id=[100, 7, 100, -1, 7],
        bytes=[1000, 4096, 0, 0, 4096],
        tag=["weight", "activation", "weight", "other", "activation"])


def test_from_arrays_and_back():
    trace = small()
    assert len(trace) == 5
    arrays = trace.to_arrays()
    assert list(arrays["op"]) == [0, 0, 1, 2, 1]
    assert list(arrays["id"]) == [0, 1, 0, -1, 1]  # dense ids, in order of first use
    assert list(arrays["bytes"]) == [1000, 4096, 1000, 0, 4096]  # a free's bytes are its allocation's
    again = allocsim.Trace.from_arrays(**{k: v for k, v in arrays.items()})
    assert {k: list(v) for k, v in again.to_arrays().items()} == {k: list(v) for k, v in arrays.items()}
    info = trace.info
    assert info.allocations == 2 and info.releases == 1 and info.live_lower_bound_bytes == 5096
    assert set(info.tags) == {"weight", "activation"}


def test_codes_and_numpy_arrays():
    trace = allocsim.Trace.from_arrays(np.array([0, 1], dtype=np.int32), np.array([0, 1]), np.array([5, 5]),
                                       np.array([256, 0], dtype=np.uint64), stream=[3, 3])
    assert list(trace.to_arrays()["stream"]) == [3, 3]


@pytest.mark.parametrize("suffix", [".csv", ".atrace"])
def test_save_and_load(tmp_path, suffix):
    trace = small()
    path = tmp_path / ("t" + suffix)
    trace.save(path)
    loaded = allocsim.load(path)
    assert len(loaded) == len(trace)
    assert list(loaded.to_arrays()["bytes"]) == list(trace.to_arrays()["bytes"])
    assert allocsim.run(loaded, policy="bestfit").peak_allocated_bytes == allocsim.run(trace, policy="bestfit").peak_allocated_bytes


@pytest.mark.parametrize("change, error, naming", [
    (dict(op=["alloc", "grab", "free", "release", "free"]), ValueError, r"op\[1\]"),
    (dict(op=[0, 9, 1, 2, 1]), ValueError, r"op\[1\]"),
    (dict(bytes=[1, 2, 3]), ValueError, "bytes"),
    (dict(time_ns=[0.5, 1, 2, 3, 4]), TypeError, "time_ns"),
    (dict(tag=["weight", "x", "weight", "other", "other"]), ValueError, r"tag\[1\]"),
    (dict(id=[1, 1, 1, -1, 1]), ValueError, "event 1"),
    (dict(time_ns=[5, 4, 6, 7, 8]), ValueError, "event 1"),
    (dict(stream=[70000] * 5), ValueError, "stream"),
    (dict(bytes=[1000, 4096, 999, 0, 4096]), ValueError, "event 2"),
])
def test_bad_arrays_name_the_argument_or_event(change, error, naming):
    columns = dict(time_ns=[0, 10, 20, 30, 40], op=["alloc", "alloc", "free", "release", "free"],
                   id=[100, 7, 100, -1, 7], bytes=[1000, 4096, 0, 0, 4096])
    columns.update(change)
    with pytest.raises(error, match=naming):
        allocsim.Trace.from_arrays(**columns)


def test_load_errors():
    with pytest.raises(ValueError, match="path"):
        allocsim.load("/nonexistent/trace.csv")
    with pytest.raises(TypeError, match="path"):
        allocsim.load(42)
