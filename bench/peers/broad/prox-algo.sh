#!/bin/sh
# prox-algo.sh ALGO PROX COMMAND...: run COMMAND when `PROX collide --algo
# ALGO` works (tried on one box); otherwise say so on stderr and exit 77, the
# runner's "skipped" status (a structure that has not landed yet).
set -eu
[ $# -ge 3 ] || { echo "usage: prox-algo.sh ALGO PROX COMMAND..." >&2; exit 2; }
algo=$1 prox=$2
shift 2
if ! echo '0 0 0 1 1 1' | "$prox" collide --algo "$algo" --count - >/dev/null 2>&1; then
    echo "prox-algo.sh: $prox has no --algo $algo yet: row skipped" >&2
    exit 77
fi
exec "$@"
