#!/bin/sh
# The CLI's main commands under valgrind memcheck: no invalid access, no use
# of an uninitialised value, no definite or indirect leak, on the success
# paths and on a bad-data exit. Usage: tests/valgrind_cli.sh PATH/TO/prox DIR
set -eu
PROX=${1:?usage: valgrind_cli.sh PATH/TO/prox DIR}
DIR=${2:?usage: valgrind_cli.sh PATH/TO/prox DIR}
case $PROX in /*) ;; *) PROX=$(pwd)/$PROX ;; esac
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR"
VG="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --track-origins=yes"
failed=0
# vg EXPECTED_STATUS ARGS...: prox ARGS under memcheck exits EXPECTED_STATUS.
vg() {
    want=$1
    shift
    set +e
    # shellcheck disable=SC2086
    $VG "$PROX" "$@" >out.txt 2>err.txt
    rc=$?
    set -e
    if [ "$rc" -eq "$want" ]; then
        echo "ok   prox $*"
    else
        failed=$((failed + 1))
        echo "FAIL prox $* (status $rc, expected $want)"
        head -40 err.txt
    fi
}
"$PROX" gen sph3d --n 3000 -o points.txt
"$PROX" gen mixed2d --n 500 --queries 500 -o boxes.txt
vg 0 gen sph3d --n 2000 -o gen.txt
vg 0 pairs points.txt -o pairs.txt
vg 0 pairs --threads 2 --unsorted points.txt -o pairs.txt
vg 0 pairs --lists points.txt -o lists.txt
vg 0 pairs --count --algo brute points.txt
vg 0 pairs --count --algo hierarchical points.txt
vg 0 pairs --stream points.txt -o stream.txt
vg 0 pairs --stream --unsorted --max-memory 1G points.txt -o stream.txt
vg 0 collide boxes.txt -o collide.txt
vg 0 collide --algo kdtree --count boxes.txt
vg 0 query --count boxes.txt boxes.txt
vg 0 query --segments boxes.txt boxes.segments.txt -o hits.txt
printf '0 0 0\n1 x 2\n' >bad.txt
vg 3 pairs --radius 1 bad.txt -o never.txt
vg 5 pairs --max-memory 1K points.txt -o never.txt
echo "valgrind: $failed failed"
[ "$failed" -eq 0 ]
