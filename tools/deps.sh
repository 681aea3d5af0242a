#!/bin/sh
# Install the Debian packages a make target needs, or say exactly how to.
# Usage: tools/deps.sh PACKAGE...
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends $missing >/dev/null; } ||
        { echo "deps: apt-get install$missing failed" >&2; exit 1; }
else
    echo "deps: missing Debian packages; run as root:" >&2
    echo "  apt-get install -y$missing" >&2
    exit 1
fi
