"""The extension module prox._prox over libprox.a (pyproject.toml has the
metadata).

build_ext first builds the C library with CMake (target prox_static,
Release, every SIMD level with run-time dispatch) from the C sources: the
repository this file lies in (python/ inside it), or the copy in libprox/
that `setup.py sdist` puts in the sdist. Set PROX_LIBRARY=/path/to/libprox.a
to link a library already built instead (its include/ must match these
sources). Needs cmake, a C compiler with OpenMP, Python's headers and numpy
(Debian: cmake build-essential python3-dev python3-numpy python3-setuptools
python3-wheel); no network.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
# What the sdist copies from the repository into libprox/: enough for CMake
# to build and install libprox (no tools, tests or examples).
C_TREE = ["CMakeLists.txt", "LICENSE", "cmake", "include", "src"]


def c_sources():
    """The root of the C sources: the repository, else the sdist's copy."""
    for root in (HERE.parent, HERE / "libprox"):
        if (root / "include" / "prox" / "prox.h").exists() and (root / "CMakeLists.txt").exists():
            return root
    raise SystemExit("setup.py: no C sources: run it from python/ in the prox repository, "
                     "or from an sdist (which carries them in libprox/)")


ROOT = c_sources()


def library_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.search(r"project\(prox VERSION ([0-9.]+)", text)
    if not found:
        raise SystemExit("setup.py: no 'project(prox VERSION ...)' in " + str(ROOT / "CMakeLists.txt"))
    return found.group(1)


class BuildWithLibprox(build_ext):
    def run(self):
        library = os.environ.get("PROX_LIBRARY")
        if not library:
            build = Path(self.build_temp).resolve() / "libprox"
            jobs = str(os.cpu_count() or 2)
            # pip shows this with -v only; the README gives the build time.
            print(f"prox: building libprox.a with CMake in {build} (every SIMD level, "
                  f"-j {jobs}: about a minute on 2 cores)", file=sys.stderr, flush=True)
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DPROX_BUILD_TOOLS=OFF", "-DPROX_BUILD_EXAMPLES=OFF", "-DBUILD_TESTING=OFF",
                "-DPROX_BUILD_PYTHON=OFF", "-DPROX_MPI=OFF",
                "-DPROX_NATIVE=" + os.environ.get("PROX_NATIVE", "OFF")])
            subprocess.check_call(["cmake", "--build", str(build), "--target", "prox_static",
                                   "-j", jobs])
            library = str(build / "libprox.a")
        for ext in self.extensions:
            ext.extra_objects = [library]
        super().run()


class SdistWithCSources(sdist):
    """An sdist that builds on its own: the C sources in libprox/, LICENSE a file."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        target = Path(base_dir) / "libprox"
        for name in C_TREE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name,
                                ignore=shutil.ignore_patterns("__pycache__", "*.o"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target / name)
        license_file = Path(base_dir) / "LICENSE"  # python/LICENSE is a link to ../LICENSE
        license_file.unlink(missing_ok=True)
        shutil.copyfile(ROOT / "LICENSE", license_file)


setup(
    version=library_version(),
    packages=["prox"],
    package_data={"prox": ["__init__.pyi", "py.typed"]},
    exclude_package_data={"prox": ["*.c"]},  # _prox.c: in the sdist, not the wheel
    license_files=["LICENSE"],  # a link to the repository's LICENSE; a copy in the sdist
    ext_modules=[Extension(
        "prox._prox", ["prox/_prox.c"], depends=["prox/_cell_binding.c"],
        include_dirs=[str(ROOT / "include"), numpy.get_include()],
        extra_compile_args=["-std=c11", "-fopenmp", "-ffp-contract=off", "-O2"],
        extra_link_args=["-fopenmp", "-lm"])],
    cmdclass={"build_ext": BuildWithLibprox, "sdist": SdistWithCSources},
)
