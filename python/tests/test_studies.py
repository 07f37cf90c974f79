"""sweep, maxbatch, advise, compare: keywords to the command's options, its CSV as a DataFrame."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import allocsim


def cli_header(binary, tmp_path, *args):
    out = tmp_path / "cli.csv"
    subprocess.run([str(binary), *args, "--csv", str(out)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return out.read_text().splitlines()[0].split(",")


def test_sweep_columns_are_the_csv(binary, tmp_path):
    frame = allocsim.sweep(workload="random:n=500", param=["seed=1:4:1"], policy=["bfc", "caching"], capacity="1GiB",
                           quiet=True)
    assert list(frame.columns) == cli_header(binary, tmp_path, "sweep", "--workload", "random:n=500", "--param",
                                             "seed=1:4:1", "--policy", "bfc", "--policy", "caching", "--capacity", "1GiB",
                                             "--quiet")
    assert len(frame) == 8


def test_sweep_lists_and_cli_syntax_agree():
    a = allocsim.sweep(workload="random:n=300", policy="bfc,bestfit", capacity=[2**28, 2**30], quiet=True)
    b = allocsim.sweep(workload="random:n=300", policy=["bfc", "bestfit"], capacity="256MiB,1GiB", quiet=True)
    assert a.equals(b)


def test_maxbatch_compare_advise(binary, tmp_path):
    frame = allocsim.maxbatch(workload="resnet18", policy="bfc", capacity="4GiB")
    assert len(frame) >= 1 and "policy" in frame.columns
    compared = allocsim.compare(workload="random:n=500", policy="bfc,caching,bestfit")
    assert list(compared.policy) == ["bfc", "caching", "bestfit"]
    assert list(compared.columns) == cli_header(binary, tmp_path, "compare", "--workload", "random:n=500",
                                                "--policy", "bfc,caching,bestfit")
    advice = allocsim.advise(workload="random:n=500,live=2GiB", framework="torch", capacity="1GiB")
    assert len(advice) >= 1


@pytest.mark.parametrize("kwargs, error, naming", [
    (dict(workload="random", policy="bfc", capacity={1: 2}), TypeError, "capacity"),
    (dict(workload="random", policy=[object()]), TypeError, "policy"),
    (dict(workload="random", policy="bfc", csv="x.csv"), TypeError, "csv"),
    (dict(workload="random", policy="bfc", no_such_option=1), ValueError, "no-such-option"),
    (dict(workload="random", policy="nosuch"), ValueError, "nosuch"),
])
def test_bad_keywords(kwargs, error, naming):
    with pytest.raises(error, match=naming):
        allocsim.sweep(**kwargs)


def test_ctrl_c_stops_a_sweep_with_the_rows_that_finished():
    before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as raised:
        allocsim.sweep(workload="random:n=200000", param=["seed=1:400:1"], policy="bfc", threads=2, quiet=True)
    stopped = time.monotonic() - began
    assert stopped < 3.0, stopped  # the signal at 1 s, then the points running finish (on a loaded machine)
    assert isinstance(raised.value, allocsim.Interrupted)
    assert len(raised.value.partial) > 0
    assert signal.getsignal(signal.SIGINT) is before  # Python's own handler, back
