"""allocsim.replay and replay_check from a PyTorch snapshot, a path or the dict."""
import pickle

import pytest

import allocsim
from allocsim import _core


def test_replay_a_path(snapshot_path):
    results = allocsim.replay(snapshot_path)
    assert set(results) == {"caching", "expandable"}
    for result in results.values():
        assert isinstance(result, allocsim.Result)
        assert result.peak_reserved_bytes > 0
        assert len(result.timeline.time) > 0


def test_replay_details_and_check(snapshot_path, tmp_path):
    details = allocsim.replay_details(snapshot_path, policies="caching", capacity="1GiB")
    assert details.capacity_bytes == 2**30 and list(details.results) == ["caching"]
    details.results["caching"].report(tmp_path / "replay.html")
    check = allocsim.replay_check(snapshot_path)
    assert check.exact, check


def test_replay_the_dict_as_the_path(snapshot_path):
    snapshot = pickle.loads(snapshot_path.read_bytes())
    from_dict = allocsim.replay(snapshot)
    from_path = allocsim.replay(snapshot_path)
    for policy in from_path:
        assert from_dict[policy].peak_reserved_bytes == from_path[policy].peak_reserved_bytes
    assert allocsim.replay_check(snapshot).exact


@pytest.mark.parametrize("snapshot, naming", [
    ({"device_traces": []}, "'segments'"),
    ({"segments": []}, "'device_traces'"),
    ({"segments": {}, "device_traces": []}, r"\['segments'\]"),
    ({"segments": [], "device_traces": [[{"action": 3}]]}, r"\['device_traces'\]\[0\]\[0\]\['action'\]"),
    ({"segments": [{"blocks": [{"size": "x"}]}], "device_traces": []}, r"\['segments'\]\[0\]\['blocks'\]\[0\]\['size'\]"),
])
def test_bad_dicts_name_the_key_path(snapshot, naming):
    with pytest.raises(ValueError, match=naming):
        allocsim.replay(snapshot)
    with pytest.raises(ValueError, match=naming):
        allocsim.replay_check(snapshot)


def test_bad_arguments():
    with pytest.raises(TypeError, match="snapshot"):
        allocsim.replay(3)
    with pytest.raises(ValueError, match="snapshot"):
        allocsim.replay("/nonexistent.pickle")
    with pytest.raises(TypeError, match="policies"):
        allocsim.replay({"segments": [], "device_traces": []}, policies=[1])


def test_an_ooms_two_names_agree_across_the_outputs(snapshot_path, tmp_path):
    """The run verdict and the kind at the request (docs/outputs.md), the same in the fields, the
    OOM records, the table and the report of one replay."""
    result = allocsim.replay(snapshot_path, policies="caching", capacity="128MiB")["caching"]
    assert result.oom_count > 0
    first = result.ooms[0]
    assert result.verdict == result.first_oom_kind == first.kind == result.verdict_detail.verdict
    assert result.first_oom_request_kind == first.request_kind
    counts = {kind: getattr(result, "ooms_" + kind) for kind in ("capacity", "fragmentation", "reservation")}
    assert sum(counts.values()) == result.oom_count and counts[first.request_kind] > 0
    table = result.table()
    assert f"does not fit ({result.verdict})" in table
    assert f"was {first.request_kind} at the request" in table
    assert f"requested, {first.request_kind} at the request: " in table
    assert (f"; run verdict: {first.kind}" in table) == (first.kind != first.request_kind)
    page = result.report(tmp_path / "replay.html").read_text()
    assert f"does not fit ({result.verdict})" in page and f"{first.request_kind} at the request" in page
