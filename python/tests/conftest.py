"""What every test of the package shares: where the source tree and the built binary are.

ctest sets PYTHONPATH to the built package and ALLOCSIM_SOURCE_DIR / ALLOCSIM_BINARY
(python/CMakeLists.txt); run by hand, the paths default to build/release.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("ALLOCSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = Path(os.environ.get("ALLOCSIM_BINARY", SOURCE / "build" / "release" / "allocsim"))
if "allocsim" not in sys.modules and not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(BINARY.parent / "python"))


@pytest.fixture
def source():
    return SOURCE


@pytest.fixture
def binary():
    return BINARY


@pytest.fixture(scope="session")
def snapshot_path(tmp_path_factory):
    """A PyTorch snapshot pickle, as `allocsim run --memory-viz` writes one (replay-check reads it exact)."""
    path = tmp_path_factory.mktemp("recording") / "recording.pickle"
    subprocess.run([str(BINARY), "--workload", "random:n=300,seed=3,live=256MiB", "--policy", "caching",
                    "--memory-viz", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path
