#!/bin/sh
# CI: the Python package as its users install it (README, "Python"): the
# sdist (setup.py sdist, carrying the C sources) and the wheel
# (pip wheel ./python), each installed offline into a fresh venv that sees
# Debian's numpy (--system-site-packages, --no-index), then the pytest suite
# run against the installed package, not the build tree.
# Usage: tools/python-package-test.sh [SCRATCH_DIR]   (PYTHON=/usr/bin/python3)
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
tools/deps.sh build-essential cmake python3-dev python3-numpy python3-setuptools python3-wheel \
    python3-pip python3-venv python3-pytest
if [ $# -gt 0 ]; then
    scratch=$1
    rm -rf "$scratch" && mkdir -p "$scratch"
else
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
fi
scratch=$(cd "$scratch" && pwd)

step() { echo "python-package-test: $*"; }
elapsed() { echo "$(($(date +%s) - $1)) s"; }

# install KIND ARTIFACT: a fresh venv with ARTIFACT installed, then the tests.
install_and_test() {
    kind=$1 artifact=$2 venv=$scratch/venv-$1
    "$PYTHON" -m venv --system-site-packages "$venv"
    start=$(date +%s)
    "$venv/bin/python" -m pip install -q --no-index --no-build-isolation "$artifact"
    step "$kind installed in $(elapsed "$start")"
    # From the scratch directory: nothing of the repository on sys.path.
    module=$(cd "$scratch" && "$venv/bin/python" - "$venv" <<'PY'
import os, sys
from importlib import metadata
import prox
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(prox.__file__)
assert where.startswith(venv + os.sep), f"prox imported from {where}, not from {venv}"
meta = metadata.metadata("prox")
assert meta["License"] == "BSD-3-Clause", meta["License"]
assert "numpy" in (metadata.requires("prox") or []), metadata.requires("prox")
files = [str(f) for f in metadata.files("prox")]
assert any(f.endswith(".dist-info/LICENSE") for f in files), files
print(where)
PY
)
    step "$kind: prox $(cd "$scratch" && "$venv/bin/python" -c 'import prox; print(prox.__version__)') from $module"
    (cd "$scratch" && "$venv/bin/python" -m pytest -q -p no:cacheprovider --doctest-modules \
        "$module" "$repo/python/tests")
}

start=$(date +%s)
(cd python && "$PYTHON" setup.py -q sdist -d "$scratch/sdist" >/dev/null)
sdist=$(ls "$scratch"/sdist/prox-*.tar.gz)
tar tzf "$sdist" | grep -q '/libprox/src/simd/engine.c$' || { echo "sdist without C sources" >&2; exit 1; }
step "sdist $(basename "$sdist") in $(elapsed "$start")"
install_and_test sdist "$sdist"

start=$(date +%s)
"$PYTHON" -m pip wheel -q --no-build-isolation --no-deps -w "$scratch/wheel" ./python
wheel=$(ls "$scratch"/wheel/prox-*.whl)
step "wheel $(basename "$wheel") in $(elapsed "$start")"
install_and_test wheel "$wheel"
step "ok"
