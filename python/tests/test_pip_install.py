"""`pip install --no-build-isolation .` into a fresh venv, offline, reusing the build tree."""
import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(sys.executable != "/usr/bin/python3" and not os.environ.get("ALLOCSIM_PIP_TEST"),
                    reason="checks Debian's python3, whose packages the venv sees")
def test_pip_installs_offline_into_a_venv(tmp_path, source):
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    environment = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    environment.pop("PYTHONPATH", None)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--quiet", str(source)],
                   check=True, env=environment, cwd=tmp_path, timeout=600)
    check = ("import allocsim, sys; assert 'torch' not in sys.modules; "
             "print(allocsim.run('random:n=100', policy='bfc').peak_allocated_bytes)")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", check], check=True, env=environment, cwd=tmp_path,
                         capture_output=True, text=True)
    assert int(out.stdout) > 0
