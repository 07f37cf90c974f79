"""One name per result field (docs/outputs.md): every column of the command line's CSV is a field
of Python's Result (a run), of replay_details' side dicts (a recording's what-if) or of a
study's DataFrame (advise, maxbatch), under the same name and with the same value."""
import csv
import io
import subprocess

import pytest

import allocsim

WORKLOAD = "random:n=2000,seed=3,live=64MiB"
WALL_CLOCK = ("replay_seconds", "events_per_second")


def csv_text(value):
    """A value as the CSV writes it: integers as digits, none empty."""
    return "" if value is None else str(value)


def read_csv(path):
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_every_run_column_is_a_result_field(binary, tmp_path):
    out = tmp_path / "run.csv"
    subprocess.run([str(binary), "--workload", WORKLOAD, "--policy", "bfc", "--capacity", "48MiB", "--on-oom", "continue",
                    "--csv", str(out)], check=True, stdout=subprocess.DEVNULL)
    [row] = read_csv(out)
    result = allocsim.run(WORKLOAD, policy="bfc", capacity="48MiB", on_oom="continue")
    fields = result.to_dict()
    assert result.oom_count > 0  # 64 MiB live on 48 MiB: the OOM columns are filled
    for name, text in row.items():
        assert name in fields, name
        assert hasattr(result, name), name
        if name in WALL_CLOCK or isinstance(fields[name], float):
            continue  # wall clock, and reals whose shortest text Python spells its own way
        assert csv_text(getattr(result, name)) == text, name


def test_every_what_if_column_is_a_side_field(binary, snapshot_path, tmp_path):
    out = tmp_path / "what_if.csv"
    subprocess.run([str(binary), "replay", str(snapshot_path), "--policy", "caching,expandable", "--capacity", "128MiB",
                    "--csv", str(out)], check=True, stdout=subprocess.DEVNULL)
    rows = read_csv(out)
    details = allocsim.replay_details(str(snapshot_path), policies="caching,expandable", capacity="128MiB")
    sides = details.sides
    assert len(sides) == len(rows) == 3
    assert dict(details.recorded) == dict(sides[0])
    for side, row in zip(sides, rows):
        for name, text in row.items():
            assert name in side, name
            assert csv_text(side[name]) == text, name
        # The fields the CSV has never had, under the names the page's JSON gives them.
        for name in ("verdict", "at_the_request", "first_oom", "first_oom_kind", "first_oom_request_kind",
                     "torch_setting"):
            assert name in side, name
    # Bytes and counts are integers; the old spellings are gone.
    assert isinstance(sides[0]["peak_reserved_bytes"], int) and isinstance(sides[0]["device_mallocs"], int)
    assert "device_allocs" not in sides[0] and "ooms" not in sides[0]
    # The replayed sides agree with their Results where both say.
    for side in sides[1:]:
        result = details.results[side["policy"]]
        assert side["verdict"] == result.verdict
        assert side["oom_count"] == result.oom_count


@pytest.mark.parametrize("study, args, options", [
    ("advise", ["--workload", "random:n=500,live=2GiB", "--framework", "torch", "--capacity", "1GiB"],
     dict(workload="random:n=500,live=2GiB", framework="torch", capacity="1GiB")),
    ("maxbatch", ["--workload", "seed_cnn", "--policy", "direct,caching", "--capacity", "256MiB"],
     dict(workload="seed_cnn", policy="direct,caching", capacity="256MiB")),
])
def test_every_study_column_is_a_frame_column(binary, tmp_path, study, args, options):
    """advise's and maxbatch's DataFrame: the CSV's columns, in its order, with its cells."""
    import pandas
    out = tmp_path / f"{study}.csv"
    subprocess.run([str(binary), study, *args, "--csv", str(out)], check=True, stdout=subprocess.DEVNULL)
    expected = pandas.read_csv(out, keep_default_na=False, na_values=[""])
    frame = getattr(allocsim, study)(**options)
    assert list(frame.columns) == list(expected.columns)
    assert len(frame) == len(expected) > 1
    pandas.testing.assert_frame_equal(frame, expected, check_dtype=False)
