"""Builds the Python package with the project's CMake: the module allocsim._core and the
pure-Python files, as laid out under build/release/python, copied into the wheel.

The CMake build tree build/release is reused where it exists (CI compiles the libraries
once); else it is configured for the interpreter running this build.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("ALLOCSIM_BUILD_DIR", ROOT / "build" / "release"))


class BuildWithCMake(build_py):
    def run(self):
        if not (BUILD / "build.ninja").exists():
            subprocess.check_call(["cmake", "--preset", "release", f"-DPython_EXECUTABLE={sys.executable}"], cwd=ROOT)
        subprocess.check_call(["cmake", "--build", str(BUILD), "--target", "allocsim_python"], cwd=ROOT)
        built = BUILD / "python" / "allocsim"
        target = Path(self.build_lib) / "allocsim"
        target.mkdir(parents=True, exist_ok=True)
        for path in built.iterdir():
            if path.suffix in (".py", ".so"):
                shutil.copy2(path, target / path.name)


class BinaryDistribution(Distribution):
    """The wheel holds a compiled module: tagged for this platform and Python."""

    def has_ext_modules(self):
        return True


setup(packages=["allocsim"], package_dir={"allocsim": "python/allocsim"}, cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
