"""pip install --no-build-isolation ./python

Builds the C library from this repository with CMake (the static
libprox.a, target prox_static, Release) and links it into the extension
module, so the installed module needs nothing of the build tree. Set
PROX_LIBRARY=/path/to/libprox.a to link a library already built instead
(its include/ must match this tree). Needs cmake, a C compiler with OpenMP,
Python's headers and numpy (Debian: cmake build-essential python3-dev
python3-numpy python3-setuptools); no network.
"""
import os
import subprocess
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class BuildWithLibprox(build_ext):
    def run(self):
        library = os.environ.get("PROX_LIBRARY")
        if not library:
            build = Path(self.build_temp).resolve() / "libprox"
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DPROX_BUILD_TOOLS=OFF", "-DPROX_BUILD_EXAMPLES=OFF", "-DBUILD_TESTING=OFF",
                "-DPROX_BUILD_PYTHON=OFF",
                "-DPROX_NATIVE=" + os.environ.get("PROX_NATIVE", "OFF")])
            subprocess.check_call(["cmake", "--build", str(build), "--target", "prox_static",
                                   "-j", str(os.cpu_count() or 2)])
            library = str(build / "libprox.a")
        for ext in self.extensions:
            ext.extra_objects = [library]
        super().run()


if not (ROOT / "include" / "prox" / "prox.h").exists():
    raise SystemExit("setup.py: build from the prox repository (python/ inside it)")

setup(
    name="prox",
    version="0.1.0",
    description="Fixed-radius neighbour search and broad-phase collision detection",
    packages=["prox"],
    package_data={"prox": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension(
        "prox._prox", ["prox/_prox.c"],
        include_dirs=[str(ROOT / "include"), numpy.get_include()],
        extra_compile_args=["-std=c11", "-fopenmp", "-ffp-contract=off", "-O2"],
        extra_link_args=["-fopenmp", "-lm"])],
    cmdclass={"build_ext": BuildWithLibprox},
    install_requires=["numpy"],
    python_requires=">=3.8",
)
