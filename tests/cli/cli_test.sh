#!/bin/sh
# End-to-end tests of the prox command-line tool.
# Usage: cli_test.sh PATH/TO/prox SCRATCH_DIR
# Every case prints "ok NAME" or "FAIL NAME: why"; the last line is
# "N passed, M failed" and the exit status is non-zero if any case failed.
# POSIX sh and utilities only (no python): the expected values below were
# computed once with an independent implementation of docs/workloads.md.

PROX=${1:?usage: cli_test.sh PATH/TO/prox SCRATCH_DIR}
DIR=${2:?usage: cli_test.sh PATH/TO/prox SCRATCH_DIR}
case $PROX in /*) ;; *) PROX=$(pwd)/$PROX ;; esac
SOURCE=$(cd "$(dirname "$0")/../.." && pwd) # the repository: LICENSE
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1

passed=0
failed=0
why=""

# ---- helpers -------------------------------------------------------------

# run CMD...: stdout to ./stdout, stderr to ./stderr, exit status in $rc.
run() {
    "$@" >stdout 2>stderr
    rc=$?
}

# check NAME FUNCTION: run a case; it returns non-zero and sets $why on failure.
check() {
    why=""
    if "$2"; then
        passed=$((passed + 1))
        echo "ok   $1"
    else
        failed=$((failed + 1))
        echo "FAIL $1: $why"
    fi
}

expect_exit() {
    [ "$rc" -eq "$1" ] && return 0
    why="exit status $rc, expected $1; stderr: $(head -c 400 stderr)"
    return 1
}

# expect_stdout FILE: stdout is exactly FILE's content.
expect_stdout() {
    cmp -s stdout "$1" && return 0
    why="stdout differs from $1:
$(diff "$1" stdout | head -20)"
    return 1
}

expect_stderr_has() {
    grep -F -q -- "$1" stderr && return 0
    why="stderr lacks '$1'; stderr: $(head -c 400 stderr)"
    return 1
}

# expect_no_temp PATH: no PATH.tmp.* temporary file is left.
expect_no_temp() {
    for f in "$1".tmp.*; do
        if [ -e "$f" ]; then
            why="temporary file $f left behind"
            return 1
        fi
    done
    return 0
}

# expect_no_output PATH: neither PATH nor a PATH.tmp.* temporary exists.
expect_no_output() {
    if [ -e "$1" ]; then
        why="$1 exists after a failure"
        return 1
    fi
    expect_no_temp "$1"
}

# expect_fail STATUS TEXT OUT CMD...: CMD fails with STATUS, says TEXT on
# stderr and leaves no OUT.
expect_fail() {
    status=$1 text=$2 out=$3
    shift 3
    run "$@"
    expect_exit "$status" && expect_stderr_has "$text" && expect_no_output "$out"
}

same_files() {
    cmp -s "$1" "$2" && return 0
    why="$1 and $2 differ:
$(diff "$1" "$2" | head -20)"
    return 1
}

# ---- fixtures ------------------------------------------------------------

# Six points: 0-1 exactly at distance 1 (a neighbour at r = 1), 0-2 just
# beyond 1 (1.0000000000000002 is the next double after 1), and three points
# 3, 4, 5 pairwise within 1.
cat >tiny.txt <<'EOF'
0 0 0
1 0 0
0 1.0000000000000002 0
5 5 5
5 5 4
5.5 5 4.5
EOF

# The same points with commas, tabs, comments, blank lines and CRLF.
printf '# a comment line\n\n0,0,0\n1,\t0, 0   # trailing comment\n\t0 1.0000000000000002 0\r\n\n5,5,5\n5 5 4\n#\n5.5\t5\t4.5' >tiny-mixed.txt

printf '0 1\n3 4\n3 5\n4 5\n' >tiny-pairs.expected
printf '4\n' >tiny-count.expected
printf '# lists rows=6 entries=8\n0: 1\n1: 0\n2:\n3: 4 5\n4: 3 5\n5: 3 4\n' >tiny-lists.expected

cat >sph3d-3.expected <<'EOF'
# prox gen sph3d n=3 seed=1
# dim=3
# radius=1.3365046175719759
0.5665615751722809 0.74578175726270113 0.97100275358679622
0.44435921705577208 0.44426470082635805 0.76289439191176101
0.87734868676417299 0.52306717985098139 0.28550868439696664
EOF

cat >nns2d-2.expected <<'EOF'
# prox gen nns2d n=2 seed=1 k=20
# dim=2
# radius=1870789.7292190082
594082.87024784961 782008.8519034941
1018170.1833450284 465944.41038347327
EOF

cat >mixed2d-boxes.expected <<'EOF'
# prox gen mixed2d n=3 seed=1 queries=2
# boxes: minx miny maxx maxy
3635.7621092706481 3634.1883123836292 3645.7283633287498 3645.9563344123235
2335.7411824878391 6497.921698640278 2346.7599719819523 6506.1062360790856
4337.7194665649822 3568.097996271043 4346.5628295167844 3575.7374995308055
EOF

cat >mixed2d-segments.expected <<'EOF'
# prox gen mixed2d n=3 seed=1 queries=2
# segments: x0 y0 x1 y1
1368.3506310393941 5286.5813726781935 1372.7044738723757 5276.5807326840213
7244.3868245179583 540.3459022485622 7251.3052625501696 544.22982144826403
EOF

# ---- gen -----------------------------------------------------------------

t_gen_sph3d_values() {
    run "$PROX" gen sph3d --n 3 --seed 1
    expect_exit 0 && expect_stdout sph3d-3.expected
}

t_gen_nns2d_values() {
    run "$PROX" gen nns2d --n 2 --k 20
    expect_exit 0 && expect_stdout nns2d-2.expected
}

t_gen_spheres3d_values() {
    run "$PROX" gen spheres3d --n 2
    expect_exit 0 || return 1
    grep -q '^# L=4.3756193577915514$' stdout || { why="no '# L=4.3756193577915514' line"; return 1; }
    grep -q '^2.4790577957047053 3.2632570937664749 4.2487384450632852$' stdout ||
        { why="first centre wrong: $(grep -v '^#' stdout | head -1)"; return 1; }
}

t_gen_mixed2d_values() {
    run "$PROX" gen mixed2d --n 3 --queries 2 -o boxes.txt
    expect_exit 0 && same_files boxes.txt mixed2d-boxes.expected &&
        same_files boxes.segments.txt mixed2d-segments.expected
}

# 20000 points span several parallel formatting blocks: the whole file's
# POSIX cksum against the independent implementation's.
t_gen_many_blocks() {
    run "$PROX" gen sph3d --n 20000 --seed 7 -o big.txt
    expect_exit 0 || return 1
    sum=$(cksum <big.txt)
    [ "$sum" = "4251613098 1199923" ] && return 0
    why="cksum '$sum', expected '4251613098 1199923'"
    return 1
}

t_gen_deterministic() {
    "$PROX" gen sph3d --n 2000 -o det1.txt && "$PROX" gen sph3d --n 2000 -o det2.txt &&
        same_files det1.txt det2.txt
}

# --order z: the same points, reordered along the curve, so that
# consecutive points lie close; the same pairs.
t_gen_order_z() {
    "$PROX" gen sph3d --n 4000 -o drawn.txt && "$PROX" gen sph3d --n 4000 --order z -o z.txt ||
        { why="gen failed"; return 1; }
    grep -q '^# prox gen sph3d n=4000 seed=1 order=z$' z.txt || { why="no order=z in the header"; return 1; }
    ! cmp -s drawn.txt z.txt || { why="--order z changed nothing"; return 1; }
    grep -v '^#' drawn.txt | sort >drawn.sorted && grep -v '^#' z.txt | sort >z.sorted
    same_files drawn.sorted z.sorted || return 1
    # mean step between consecutive points: the curve's is far shorter
    step() { awk '!/^#/ { if (NR > 4) s += sqrt(($1-x)^2 + ($2-y)^2 + ($3-z)^2); x = $1; y = $2; z = $3; n++ }
                  END { print s / (n - 1) }' "$1"; }
    awk -v d="$(step drawn.txt)" -v z="$(step z.txt)" 'BEGIN { exit !(z < d / 5) }' ||
        { why="z-order steps $(step z.txt) against $(step drawn.txt) drawn: not along a curve"; return 1; }
    "$PROX" pairs --count drawn.txt >drawn.count && "$PROX" pairs --count z.txt >z.count ||
        { why="pairs --count failed"; return 1; }
    same_files drawn.count z.count || return 1
    expect_fail 2 "--order must be input or z" out.txt "$PROX" gen sph3d --order y -o out.txt
}

t_gen_binary() {
    run "$PROX" gen nns2d --n 5 -o five.f64
    expect_exit 0 || return 1
    run "$PROX" gen nns2d --n 5 -o five.f32
    expect_exit 0 || return 1
    s64=$(cksum <five.f64)
    s32=$(cksum <five.f32)
    [ "$s64" = "1770506489 80" ] && [ "$s32" = "3819667007 40" ] && return 0
    why="cksums '$s64' / '$s32', expected '1770506489 80' / '3819667007 40'"
    return 1
}

# ---- pairs: exact results ------------------------------------------------

t_pairs_tiny() {
    run "$PROX" pairs --radius 1 tiny.txt
    expect_exit 0 && expect_stdout tiny-pairs.expected
}

t_pairs_tiny_brute() {
    run "$PROX" pairs --radius 1 --algo brute tiny.txt
    expect_exit 0 && expect_stdout tiny-pairs.expected
}

t_pairs_tiny_hash() {
    run "$PROX" pairs --radius 1 --keys hash tiny.txt
    expect_exit 0 && expect_stdout tiny-pairs.expected
}

t_pairs_count() {
    run "$PROX" pairs --radius 1 --count tiny.txt
    expect_exit 0 && expect_stdout tiny-count.expected
}

t_pairs_lists() {
    run "$PROX" pairs --radius 1 --lists tiny.txt
    expect_exit 0 && expect_stdout tiny-lists.expected
}

t_pairs_separators() {
    run "$PROX" pairs --radius 1 tiny-mixed.txt
    expect_exit 0 && expect_stdout tiny-pairs.expected
}

t_pairs_stdin() {
    "$PROX" pairs --radius 1 - <tiny.txt >stdout 2>stderr
    rc=$?
    expect_exit 0 && expect_stdout tiny-pairs.expected
}

t_pairs_output_file() {
    run "$PROX" pairs --radius 1 -o tiny-out.txt tiny.txt
    expect_exit 0 && [ ! -s stdout ] && same_files tiny-out.txt tiny-pairs.expected &&
        expect_no_temp tiny-out.txt
}

t_pairs_2d() {
    printf '0 0\n0.5 0\n3 3\n' >two-d.txt
    printf '0 1\n' >two-d.expected
    run "$PROX" pairs --radius 1 --dim 2 two-d.txt
    expect_exit 0 && expect_stdout two-d.expected
}

t_pairs_periodic() {
    printf '0.05 0.5 0.5\n0.95 0.5 0.5\n' >wrap.txt
    printf '0 1\n' >wrap.expected
    run "$PROX" pairs --radius 0.2 wrap.txt
    expect_exit 0 || return 1
    [ ! -s stdout ] || { why="pairs without --periodic: $(cat stdout)"; return 1; }
    run "$PROX" pairs --radius 0.2 --periodic 1,1,1 wrap.txt
    expect_exit 0 && expect_stdout wrap.expected
}

# ---- pairs: agreement ----------------------------------------------------

t_pairs_grid_equals_brute() {
    "$PROX" gen sph3d --n 2000 -o s2000.txt || { why="gen failed"; return 1; }
    for task in "" --lists; do
        "$PROX" pairs --algo brute $task s2000.txt >brute.out || { why="brute $task failed"; return 1; }
        "$PROX" pairs --algo grid $task s2000.txt >grid.out || { why="grid $task failed"; return 1; }
        "$PROX" pairs --algo grid --keys hash $task s2000.txt >hash.out ||
            { why="hash $task failed"; return 1; }
        "$PROX" pairs --algo grid --keys morton $task s2000.txt >morton.out ||
            { why="morton $task failed"; return 1; }
        "$PROX" pairs --algo hierarchical $task s2000.txt >hier.out ||
            { why="hierarchical $task failed"; return 1; }
        for out in grid hash morton hier; do
            same_files brute.out $out.out || return 1
        done
    done
    [ -s brute.out ] || { why="no pairs at all"; return 1; }
}

# --rows in-place: rows counted, then written in place; the same bytes as
# brute force, on one thread and on two (8000 points: several chunks).
t_pairs_rows_in_place() {
    "$PROX" gen sph3d --n 8000 -o s8000.txt || { why="gen failed"; return 1; }
    for task in "" --lists; do
        "$PROX" pairs --algo brute $task s8000.txt >brute.out || { why="brute $task failed"; return 1; }
        for t in 1 2; do
            "$PROX" pairs --rows in-place --threads $t $task s8000.txt >inplace$t.out ||
                { why="--rows in-place --threads $t $task failed"; return 1; }
            same_files brute.out inplace$t.out || return 1
        done
    done
    # the option reaches the library: in place keeps a fraction of the staging
    "$PROX" pairs --rows staged --stats s8000.txt 2>staged.err >/dev/null &&
        "$PROX" pairs --rows in-place --stats s8000.txt 2>inplace.err >/dev/null ||
        { why="--stats runs failed"; return 1; }
    grep -q '^rows=in-place$' inplace.err || { why="no rows=in-place in --stats"; return 1; }
    kept_s=$(sed -n 's/^kept_mb=//p' staged.err) kept_i=$(sed -n 's/^kept_mb=//p' inplace.err)
    awk -v s="$kept_s" -v i="$kept_i" 'BEGIN { exit !(i > 0 && 2 * i < s) }' ||
        { why="kept_mb in place $kept_i, staged $kept_s: the rows were not written in place"; return 1; }
    expect_fail 2 "--rows must be staged, in-place or in-output" out.txt \
        "$PROX" pairs --rows sideways -o out.txt s8000.txt
}

# --rows in-output (the default of one run): the bytes of staged rows and
# of brute force, on one thread and on two, sorted pairs and lists; it
# keeps nothing, counts fresh memory, and several runs stage as before.
# PROX_HUGE_PAGES=1 says so in --stats and changes no byte.
t_pairs_rows_in_output() {
    "$PROX" gen sph3d --n 8000 -o s8000.txt || { why="gen failed"; return 1; }
    for task in "" --lists; do
        "$PROX" pairs --algo brute $task s8000.txt >brute.out || { why="brute $task failed"; return 1; }
        "$PROX" pairs --rows staged $task s8000.txt >staged.out || { why="staged $task failed"; return 1; }
        same_files brute.out staged.out || return 1
        for t in 1 2; do
            "$PROX" pairs --rows in-output --threads $t $task s8000.txt >inout$t.out &&
                "$PROX" pairs --threads $t $task s8000.txt >default$t.out ||
                { why="--rows in-output --threads $t $task failed"; return 1; }
            same_files brute.out inout$t.out && same_files brute.out default$t.out || return 1
        done
        PROX_HUGE_PAGES=1 "$PROX" pairs --stats $task s8000.txt >huge.out 2>huge.err ||
            { why="PROX_HUGE_PAGES=1 $task failed"; return 1; }
        same_files brute.out huge.out || return 1
        grep -q '^huge_pages=1$' huge.err || { why="no huge_pages=1 with PROX_HUGE_PAGES=1"; return 1; }
        "$PROX" pairs --stats $task s8000.txt 2>once.err >/dev/null &&
            "$PROX" pairs --runs 3 --stats $task s8000.txt 2>runs.err >/dev/null ||
            { why="--stats runs $task failed"; return 1; }
        if [ -z "$task" ]; then # one run's sorted pairs in the output; lists staged
            grep -q '^rows=in-output$' once.err && grep -q '^kept_mb=0.000$' once.err ||
                { why="one run: not rows=in-output with nothing kept"; return 1; }
        else
            grep -q '^rows=staged$' once.err || { why="one run $task: not rows=staged"; return 1; }
        fi
        grep -q '^rows=staged$' runs.err || { why="--runs 3 $task: not rows=staged"; return 1; }
        fresh=$(sed -n 's/^fresh_mb=//p' once.err) later=$(sed -n 's/^fresh_mb=//p' runs.err)
        awk -v f="$fresh" -v l="$later" 'BEGIN { exit !(f > 0.1 && l < f / 4) }' ||
            { why="$task: fresh_mb $fresh for one run, $later for the last of three"; return 1; }
    done
}

# --unsorted: the same pairs (and the same list rows) in traversal order,
# byte-identical for 1 and 2 threads.
t_pairs_unsorted() {
    "$PROX" gen sph3d --n 3000 -o s3000.txt || { why="gen failed"; return 1; }
    "$PROX" pairs s3000.txt >sorted.out && "$PROX" pairs --lists s3000.txt >lists.out ||
        { why="sorted runs failed"; return 1; }
    for t in 1 2; do
        "$PROX" pairs --unsorted --threads $t s3000.txt >unsorted$t.out &&
            "$PROX" pairs --unsorted --lists --threads $t s3000.txt >ulists$t.out ||
            { why="--unsorted --threads $t failed"; return 1; }
    done
    same_files unsorted1.out unsorted2.out && same_files ulists1.out ulists2.out || return 1
    ! cmp -s sorted.out unsorted1.out || { why="--unsorted output is sorted: the test proves nothing"; return 1; }
    sort -n -k1,1 -k2,2 unsorted1.out >resorted.out
    same_files sorted.out resorted.out || return 1
    # every row holds the same entries: (row, entry) lines, sorted, agree
    for f in lists ulists1; do
        awk '!/^#/ { for (k = 2; k <= NF; k++) print $1 + 0, $k }' $f.out | sort -n -k1,1 -k2,2 >$f.entries
    done
    [ -s lists.entries ] || { why="no list entries"; return 1; }
    same_files lists.entries ulists1.entries
}

t_pairs_text_equals_f64() {
    "$PROX" gen sph3d --n 2000 -o s2000.txt && "$PROX" gen sph3d --n 2000 -o s2000.f64 ||
        { why="gen failed"; return 1; }
    # The text file gives its radius in its header; the binary one cannot.
    "$PROX" pairs s2000.txt >text.out &&
        "$PROX" pairs --radius 0.15299158709729344 s2000.f64 >f64.out ||
        { why="pairs failed"; return 1; }
    same_files text.out f64.out
}

t_pairs_f32() {
    "$PROX" gen sph3d --n 2000 -o s2000.f32 || { why="gen failed"; return 1; }
    run "$PROX" pairs --radius 0.15299158709729344 --count --stats s2000.f32
    expect_exit 0 && expect_stderr_has "scalar=f32" && expect_stderr_has "n=2000"
}

t_pairs_stats() {
    run "$PROX" pairs --radius 1 --stats tiny.txt
    expect_exit 0 || return 1
    for key in algo= keys= coords=fixed n=6 radius=1 threads= read_s= runs=1 first_s= build_s= \
        query_s= write_s= \
        pairs=4 candidates= rechecked= cells= rows=in-output kept_mb=0.000 fresh_mb= \
        huge_pages=0 peak_rss_mb=; do
        expect_stderr_has "$key" || return 1
    done
}

# --runs: every run on the one grid and output gives the first run's bytes;
# --stats names the runs and the first run's time apart from the medians.
t_pairs_runs() {
    "$PROX" gen sph3d --n 3000 -o s3000.txt || { why="gen failed"; return 1; }
    for task in "" --lists --count "--unsorted" "--algo brute"; do
        "$PROX" pairs $task s3000.txt >once.out || { why="pairs $task failed"; return 1; }
        run "$PROX" pairs --runs 3 --threads 2 --stats $task s3000.txt
        expect_exit 0 && expect_stderr_has "runs=3" && expect_stderr_has "first_s=" || return 1
        expect_stdout once.out || return 1
    done
    expect_fail 2 "--runs" out.txt "$PROX" pairs --runs 0 -o out.txt s3000.txt || return 1
    expect_fail 2 "not with --stream" out.txt "$PROX" pairs --runs 2 --stream -o out.txt s3000.txt
}

t_pairs_write_in_place() {
    # A device is written in place, never renamed over.
    run "$PROX" pairs --radius 1 -o /dev/null tiny.txt
    expect_exit 0 || return 1
    [ -c /dev/null ] || { why="/dev/null is no longer a character device"; return 1; }
}

# ---- errors: status, message, and no output left behind -------------------

t_err_missing_file() {
    expect_fail 4 "no-such-file.txt" out.txt "$PROX" pairs --radius 1 -o out.txt no-such-file.txt
}

t_err_hierarchical_periodic() {
    printf '0.1 0.2 0.3\n0.4 0.5 0.6\n' >two.txt
    expect_fail 3 "does not support periodic axes" out.txt \
        "$PROX" pairs --algo hierarchical --radius 0.2 --periodic 1,1,1 -o out.txt two.txt
}

t_err_wrong_count() {
    printf '1 2 3\n4 5\n' >short.txt
    expect_fail 3 "short.txt:2: expected 3 numbers, found 2" out.txt \
        "$PROX" pairs --radius 1 -o out.txt short.txt
}

t_err_not_a_number() {
    printf '1 2 3\n# fine\n4 5 abc\n' >word.txt
    expect_fail 3 "word.txt:3: not a number: 'abc'" out.txt \
        "$PROX" pairs --radius 1 -o out.txt word.txt
}

t_err_nan() {
    printf '1 2 3\nnan 5 6\n' >nan.txt
    expect_fail 3 "nan.txt:2: coordinate is not finite" out.txt \
        "$PROX" pairs --radius 1 -o out.txt nan.txt
}

t_err_inf() {
    printf '1 2 3\n4 1e999 6\n' >inf.txt
    expect_fail 3 "inf.txt:2: coordinate is not finite" out.txt \
        "$PROX" pairs --radius 1 -o out.txt inf.txt
}

t_err_radius_zero() {
    expect_fail 3 "radius" out.txt "$PROX" pairs --radius 0 -o out.txt tiny.txt
}

t_err_radius_negative() {
    expect_fail 3 "radius" out.txt "$PROX" pairs --radius -1 -o out.txt tiny.txt
}

t_err_radius_not_number() {
    expect_fail 2 "not a number" out.txt "$PROX" pairs --radius abc -o out.txt tiny.txt
}

t_err_radius_missing() {
    expect_fail 2 "radius" out.txt "$PROX" pairs -o out.txt tiny.txt
}

t_err_unknown_flag() {
    expect_fail 2 "--frobnicate" out.txt "$PROX" pairs --frobnicate --radius 1 -o out.txt tiny.txt
}

t_err_missing_value() {
    expect_fail 2 "needs a value" out.txt "$PROX" pairs tiny.txt -o out.txt --radius
}

t_err_count_and_lists() {
    expect_fail 2 "--count" out.txt "$PROX" pairs --count --lists --radius 1 -o out.txt tiny.txt
}

t_err_periodic_dims() {
    expect_fail 2 "periodic" out.txt "$PROX" pairs --radius 0.1 --periodic 1,1 -o out.txt tiny.txt
}

t_err_library_rejects() {
    # radius must be below half the period: the library says why (exit 3).
    printf '0.05 0.5 0.5\n0.95 0.5 0.5\n' >wrap.txt
    expect_fail 3 "prox: " out.txt "$PROX" pairs --radius 0.6 --periodic 1,1,1 -o out.txt wrap.txt
}

t_err_binary_size() {
    printf 'abcdefghij' >ten.f64
    expect_fail 3 "ten.f64: size 10 bytes" out.txt "$PROX" pairs --radius 1 -o out.txt ten.f64
}

t_err_output_dir_missing() {
    expect_fail 4 "no-such-dir/out.txt" no-such-dir/out.txt \
        "$PROX" pairs --radius 1 -o no-such-dir/out.txt tiny.txt
}

t_err_keeps_old_output() {
    printf 'precious\n' >old.txt
    run "$PROX" pairs --radius 0 -o old.txt tiny.txt
    expect_exit 3 || return 1
    [ "$(cat old.txt)" = precious ] || { why="old.txt was changed by a failed run"; return 1; }
    expect_no_temp old.txt
}

t_err_gen_unknown_workload() {
    expect_fail 2 "unknown workload" out.txt "$PROX" gen nosuch -o out.txt
}

t_err_gen_bad_n() {
    expect_fail 2 "--n" out.txt "$PROX" gen sph3d --n 12x -o out.txt
}

t_err_gen_output_dir_missing() {
    expect_fail 4 "no-such-dir/g.txt" no-such-dir/g.txt "$PROX" gen sph3d --n 10 -o no-such-dir/g.txt
}

t_err_unknown_command() {
    run "$PROX" frobnicate
    expect_exit 2 && expect_stderr_has "unknown command"
}

t_err_no_command() {
    run "$PROX"
    expect_exit 2
}

# ---- help, version, bench --------------------------------------------------

t_help() {
    for args in "--help" "-h" "gen --help" "pairs --help" "pairs -h" "bench --help" "--version"; do
        # shellcheck disable=SC2086 # split args on purpose
        run "$PROX" $args
        expect_exit 0 || { why="prox $args: $why"; return 1; }
        [ -s stdout ] || { why="prox $args printed nothing on stdout"; return 1; }
    done
    run "$PROX" --help
    expect_stdout_has_exit_codes
}

# --version --long: the one-line version, then LICENSE's copyright and name.
t_version_long() {
    run "$PROX" --version
    short=$(cat stdout)
    run "$PROX" --version --long
    expect_exit 0 || return 1
    [ "$(head -1 stdout)" = "$short" ] || { why="first line '$(head -1 stdout)', not '$short'"; return 1; }
    copyright=$(grep -m1 '^Copyright' "$SOURCE/LICENSE")
    name=$(head -1 "$SOURCE/LICENSE" | sed 's/ License$//')
    grep -F -q -x -- "$copyright" stdout || { why="no line '$copyright'"; return 1; }
    grep -F -q -- "$name" stdout || { why="'$name' not named"; return 1; }
    run "$PROX" --version --short
    expect_exit 2 || return 1
    expect_stderr_has "--long"
}

expect_stdout_has_exit_codes() {
    for code in "  2  usage" "  3  bad data" "  4  I/O" "  5  out of memory"; do
        grep -F -q -- "$code" stdout || { why="prox --help does not document '$code'"; return 1; }
    done
}

t_bench_small() {
    run "$PROX" bench sph3d --n 2000 --runs 1
    expect_exit 0 || return 1
    for row in "| grid | linear | double | r | staged | pairs |" \
        "| grid | linear | fixed | r | staged | count |" "| grid | linear | fixed | r | in-place | lists |" \
        "| grid | morton | double | r | staged | pairs |" "| grid | morton | double | r/2 | staged | count |" \
        "| grid | hash | double | r | staged | lists |" "| brute | - | - | - | - | count |"; do
        grep -F -q -- "$row" stdout || { why="no row '$row' in: $(cat stdout)"; return 1; }
    done
}

# ---- collide and query (the box family) --------------------------------------

# Four 2D boxes: 0 and 1 touch at a corner (they overlap: boxes are closed),
# 3 lies inside 0, 2 is apart.
cat >boxes2.txt <<'EOF'
0 0 1 1
1 1 2 2
# a comment line
5,5,6,6
0.5 0.5 0.6 0.6
EOF
# Segments: 0 lies in box 0 (length 0 on its face); 1 ends on the corner
# of box 3; 2 misses everything; 3's bounding box overlaps boxes 0 and 3 (at a corner) but the
# segment passes below it.
cat >segs2.txt <<'EOF'
0 0.5 0 0.5
-1 0.5 0.5 0.5
10 10 11 11
-1 0.5 0.5 -1
EOF

t_collide_pairs() {
    printf '0 1\n0 3\n' >expect_collide.txt
    for algo in brute grid multilevel hierarchical kdtree sap; do
        run "$PROX" collide --algo $algo boxes2.txt
        expect_exit 0 || return 1
        expect_stdout expect_collide.txt || { why="$algo: $why"; return 1; }
    done
}

t_collide_count_stats() {
    run "$PROX" collide --count --stats boxes2.txt
    expect_exit 0 || return 1
    printf '2\n' >expect_count.txt
    expect_stdout expect_count.txt || return 1
    for key in algo=auto dim=2 n=4 build_s= query_s= candidates= pairs=2 peak_rss_mb= simd= method=; do
        expect_stderr_has "$key" || return 1
    done
}

t_collide_algos_agree() {
    "$PROX" gen mixed2d --n 2000 --queries 3000 -o mixed.txt || { why="gen failed"; return 1; }
    "$PROX" collide --algo brute -o want.txt mixed.txt || { why="brute failed"; return 1; }
    for algo in grid multilevel hierarchical kdtree sap; do
        "$PROX" collide --algo $algo -o got.txt mixed.txt || { why="$algo failed"; return 1; }
        same_files want.txt got.txt || return 1
    done
    "$PROX" collide --growable --threads 3 -o got.txt mixed.txt || { why="growable failed"; return 1; }
    same_files want.txt got.txt || return 1
    [ "$(wc -l <want.txt)" -gt 1000 ] || { why="too few pairs to mean anything"; return 1; }
}

t_collide_kdtree_options() {
    "$PROX" gen mixed2d --n 2000 --queries 10 -o kd.txt || { why="gen failed"; return 1; }
    "$PROX" collide --algo brute -o want.txt kd.txt || { why="brute failed"; return 1; }
    for opts in "--kdtree-variant 1" "--kdtree-variant 2 --threads 2" "--no-split" \
        "--split-cost 0" "--split-cost 0 --kdtree-variant 1" "--split-cost 1e6" \
        "--root 1000,1000,3000,2500" "--root -1e9,-1e9,1e9,1e9 --kdtree-variant 1"; do
        "$PROX" collide --algo kdtree $opts -o got.txt kd.txt || { why="$opts failed"; return 1; }
        same_files want.txt got.txt || { why="$opts: $why"; return 1; }
    done
}

t_err_collide_kdtree_options() {
    expect_fail 2 "--kdtree-variant" out.txt \
        "$PROX" collide --algo kdtree --kdtree-variant 3 -o out.txt boxes2.txt || return 1
    expect_fail 2 "--root: 4 numbers (2D) or 6 (3D), not 3" out.txt \
        "$PROX" collide --algo kdtree --root 1,2,3 -o out.txt boxes2.txt || return 1
    expect_fail 2 "--root: the lower corner must be below" out.txt \
        "$PROX" collide --algo kdtree --root 5,0,1,1 -o out.txt boxes2.txt || return 1
    expect_fail 2 "--split-cost must be >= 0" out.txt \
        "$PROX" collide --algo kdtree --split-cost -1 -o out.txt boxes2.txt || return 1
    expect_fail 2 "not a finite number" out.txt \
        "$PROX" collide --algo kdtree --split-cost inf -o out.txt boxes2.txt
}

t_query_segments() {
    printf '0 0\n1 0\n1 3\n' >expect_exact.txt
    printf '0 0\n1 0\n1 3\n3 0\n3 3\n' >expect_broad.txt
    for algo in brute grid multilevel hierarchical kdtree sap; do
        run "$PROX" query --segments --algo $algo boxes2.txt segs2.txt
        expect_exit 0 || return 1
        expect_stdout expect_exact.txt || { why="$algo exact: $why"; return 1; }
        run "$PROX" query --segments --broad-only --algo $algo boxes2.txt segs2.txt
        expect_stdout expect_broad.txt || { why="$algo broad: $why"; return 1; }
    done
}

t_query_stats() {
    run "$PROX" query --segments --count --stats boxes2.txt segs2.txt
    expect_exit 0 || return 1
    for key in hits=3 hit_fraction=0.5 build_s= query_s= candidates= peak_rss_mb=; do
        expect_stderr_has "$key" || return 1
    done
}

t_query_boxes_mixed() {
    "$PROX" gen mixed2d --n 1500 --queries 2000 -o m2.txt || { why="gen failed"; return 1; }
    awk '!/^#/ { print $1, $2, $1 + 20, $2 + 20 }' m2.segments.txt >qboxes.txt
    "$PROX" query --algo brute -o want.txt m2.txt qboxes.txt || { why="brute failed"; return 1; }
    "$PROX" query --segments --algo brute -o want_s.txt m2.txt m2.segments.txt || { why="brute failed"; return 1; }
    for algo in grid multilevel hierarchical kdtree sap; do
        "$PROX" query --algo $algo -o got.txt m2.txt qboxes.txt || { why="$algo failed"; return 1; }
        same_files want.txt got.txt || return 1
        "$PROX" query --segments --algo $algo -o got.txt m2.txt m2.segments.txt || { why="$algo failed"; return 1; }
        same_files want_s.txt got.txt || return 1
    done
}

t_err_collide_min_above_max() {
    printf '0 0 1 1\n2 0 1 1\n' >minmax.txt
    expect_fail 3 "box 1 has min x 2 > max x 1" out.txt "$PROX" collide -o out.txt minmax.txt
}

t_err_collide_nan() {
    printf '0 0 1 1\n0 nan 1 1\n' >boxnan.txt
    expect_fail 3 "boxnan.txt:2: number is not finite" out.txt "$PROX" collide -o out.txt boxnan.txt
}

t_err_collide_count() {
    printf '0 0 1 1\n0 0 1 1 2\n' >box5.txt
    expect_fail 3 "box5.txt:2: expected 4 numbers, found 5" out.txt "$PROX" collide -o out.txt box5.txt
}

t_err_collide_unavailable() {
    expect_fail 2 "unknown broad-phase algorithm 'octree'" out.txt \
        "$PROX" collide --algo octree -o out.txt boxes2.txt
}

t_err_query_usage() {
    expect_fail 2 "--broad-only" out.txt "$PROX" query --broad-only -o out.txt boxes2.txt boxes2.txt
}

t_bench_mixed2d_small() {
    run "$PROX" bench mixed2d --n 500 --queries 2000 --runs 1
    expect_exit 0 || return 1
    for row in "| grid |" "| multilevel |" "| hierarchical |" "| hierarchical-growable |" "| brute |" "hit_fraction="; do
        grep -F -q -- "$row" stdout || { why="no '$row' in: $(cat stdout)"; return 1; }
    done
}

# --algos picks rows: only those named run; an unknown name is a usage error.
t_bench_mixed2d_algos() {
    run "$PROX" bench mixed2d --n 500 --queries 2000 --runs 1 --algos multilevel,hierarchical
    expect_exit 0 || return 1
    for row in "| multilevel |" "| hierarchical |"; do
        grep -F -q -- "$row" stdout || { why="no '$row' in: $(cat stdout)"; return 1; }
    done
    for row in "| grid |" "| hierarchical-growable |" "| brute |"; do
        ! grep -F -q -- "$row" stdout || { why="'$row' ran without being asked: $(cat stdout)"; return 1; }
    done
    expect_fail 2 "octree" out.txt "$PROX" bench mixed2d --n 500 --queries 2000 --algos grid,octree
}

# --unsorted delivers the same pairs in the structures' order: the tables
# agree on every count.
t_bench_spheres3d_unsorted() {
    run "$PROX" bench spheres3d --n 3000 --runs 1 --algo grid
    expect_exit 0 || return 1
    cp stdout sorted.txt
    run "$PROX" bench spheres3d --n 3000 --runs 1 --algo grid --unsorted
    expect_exit 0 || return 1
    grep -F -q -- "(--unsorted)" stdout || { why="no mention of --unsorted: $(cat stdout)"; return 1; }
    counts() { grep -F "| grid |" "$1" | awk -F'|' '{print $8, $9, $10}'; }
    [ -n "$(counts sorted.txt)" ] && [ "$(counts sorted.txt)" = "$(counts stdout)" ] ||
        { why="counts differ: '$(counts sorted.txt)' vs '$(counts stdout)'"; return 1; }
}

t_collide_binary_and_stdin() {
    "$PROX" gen mixed2d --n 800 --queries 0 -o bin.txt || { why="gen text failed"; return 1; }
    "$PROX" gen mixed2d --n 800 --queries 0 -o bin.f64 || { why="gen binary failed"; return 1; }
    "$PROX" collide -o want.txt bin.txt || { why="text failed"; return 1; }
    "$PROX" collide --dim 2 -o got.txt bin.f64 || { why="binary failed"; return 1; }
    same_files want.txt got.txt || return 1
    "$PROX" collide -o got.txt - <bin.txt || { why="stdin failed"; return 1; }
    same_files want.txt got.txt
}

# ---- run -------------------------------------------------------------------

check gen_sph3d_known_values t_gen_sph3d_values
check gen_nns2d_known_values t_gen_nns2d_values
check gen_spheres3d_known_values t_gen_spheres3d_values
check gen_mixed2d_known_values t_gen_mixed2d_values
check gen_sph3d_20000_checksum t_gen_many_blocks
check gen_deterministic t_gen_deterministic
check gen_binary_f64_f32 t_gen_binary
check gen_order_z t_gen_order_z
check pairs_tiny_closed_ball t_pairs_tiny
check pairs_rows_in_place t_pairs_rows_in_place
check pairs_rows_in_output t_pairs_rows_in_output
check pairs_tiny_brute t_pairs_tiny_brute
check pairs_tiny_hash t_pairs_tiny_hash
check pairs_count t_pairs_count
check pairs_lists t_pairs_lists
check pairs_commas_tabs_comments t_pairs_separators
check pairs_stdin t_pairs_stdin
check pairs_output_file t_pairs_output_file
check pairs_2d t_pairs_2d
check pairs_periodic t_pairs_periodic
check pairs_grid_equals_brute t_pairs_grid_equals_brute
check pairs_unsorted t_pairs_unsorted
check pairs_text_equals_f64 t_pairs_text_equals_f64
check pairs_f32 t_pairs_f32
check pairs_stats t_pairs_stats
check pairs_runs t_pairs_runs
check pairs_device_written_in_place t_pairs_write_in_place
check err_missing_file t_err_missing_file
check err_hierarchical_periodic t_err_hierarchical_periodic
check err_wrong_count t_err_wrong_count
check err_not_a_number t_err_not_a_number
check err_nan t_err_nan
check err_inf t_err_inf
check err_radius_zero t_err_radius_zero
check err_radius_negative t_err_radius_negative
check err_radius_not_a_number t_err_radius_not_number
check err_radius_missing t_err_radius_missing
check err_unknown_flag t_err_unknown_flag
check err_missing_value t_err_missing_value
check err_count_and_lists t_err_count_and_lists
check err_periodic_dims t_err_periodic_dims
check err_library_rejects t_err_library_rejects
check err_binary_size t_err_binary_size
check err_output_dir_missing t_err_output_dir_missing
check err_keeps_old_output t_err_keeps_old_output
check err_gen_unknown_workload t_err_gen_unknown_workload
check err_gen_bad_n t_err_gen_bad_n
check err_gen_output_dir_missing t_err_gen_output_dir_missing
check err_unknown_command t_err_unknown_command
check err_no_command t_err_no_command
check help_and_version t_help
check bench_small t_bench_small

check collide_pairs t_collide_pairs
check collide_count_stats t_collide_count_stats
check collide_algos_agree t_collide_algos_agree
check collide_binary_and_stdin t_collide_binary_and_stdin
check query_segments t_query_segments
check query_stats t_query_stats
check query_boxes_and_segments_mixed t_query_boxes_mixed
check err_collide_min_above_max t_err_collide_min_above_max
check err_collide_nan t_err_collide_nan
check err_collide_count t_err_collide_count
check err_collide_unavailable t_err_collide_unavailable
check collide_kdtree_options t_collide_kdtree_options
check err_collide_kdtree_options t_err_collide_kdtree_options
check err_query_usage t_err_query_usage
check bench_mixed2d_small t_bench_mixed2d_small
check bench_mixed2d_algos t_bench_mixed2d_algos
check bench_spheres3d_unsorted t_bench_spheres3d_unsorted

# ---- hardening (robustness: docs/robustness.md) --------------------------

# Radii whose square is not a normal double are refused up front (exit 3),
# by every algorithm alike; the two points are 2r apart.
t_radius_range() {
    printf -- '-1e300 0 0\n1e300 0 0\n' >far.txt
    for algo in grid brute hierarchical; do
        run "$PROX" pairs --radius 1e300 --count --algo "$algo" far.txt
        expect_exit 3 && expect_stderr_has "outside" || return 1
    done
    printf '0 0 0\n1e-300 0 0\n' >near.txt
    run "$PROX" pairs --radius 1e-302 --algo brute --count near.txt
    expect_exit 3 && expect_stderr_has "outside"
}

# A huge radius over close points was "out of memory for -9223372036854775781
# cells" (exit 5); the largest radius in range answers like brute force.
t_radius_no_false_out_of_memory() {
    printf '0 0 0\n0.5 0 0\n' >two.txt
    run "$PROX" pairs --radius 1e308 --count two.txt
    expect_exit 3 || return 1
    for algo in grid brute hierarchical; do
        run "$PROX" pairs --radius 1e150 --count --algo "$algo" two.txt
        expect_exit 0 && [ "$(cat stdout)" = 1 ] || { why="$algo: $(cat stdout stderr)"; return 1; }
    done
}

# A bad '# radius=' header is reported with its file and line.
t_header_radius_bad() {
    printf '# generated\n# radius=abc dim=3\n0 0 0\n' >badheader.txt
    run "$PROX" pairs --count badheader.txt
    expect_exit 3 && expect_stderr_has "badheader.txt:2:" && expect_stderr_has "radius=abc"
}

# An empty or comments-only box file holds zero boxes (3D), as for points.
t_collide_empty_file() {
    : >empty.txt
    printf '# only a comment\n\n' >comments.txt
    for f in empty.txt comments.txt; do
        run "$PROX" collide --count "$f"
        expect_exit 0 && [ "$(cat stdout)" = 0 ] || { why="collide $f: $(cat stdout stderr)"; return 1; }
        run "$PROX" query --count "$f" "$f"
        expect_exit 0 || return 1
    done
}

t_output_empty_name() {
    run "$PROX" pairs --radius 1 -o '' tiny.txt
    expect_exit 2 && expect_stderr_has "empty"
}

# A bad token is shown escaped: no terminal escape sequence reaches stderr.
t_bad_token_escaped() {
    printf '0 0 0\n1 1 \033[31mred\n' >escape.txt
    run "$PROX" pairs --radius 1 escape.txt
    expect_exit 3 && expect_stderr_has '\x1b[31mred' || return 1
    if LC_ALL=C grep -q "$(printf '\033')" stderr; then
        why="a raw ESC byte reached stderr"
        return 1
    fi
}

# One rule for NUL bytes in text files, comments included, points and boxes.
t_nul_in_comment() {
    printf '0 0 0 # a\000b\n1 1 1\n' >nul.txt
    run "$PROX" pairs --radius 1 nul.txt
    expect_exit 3 && expect_stderr_has "nul.txt:1:" && expect_stderr_has "NUL byte" || return 1
    printf '0 0 0 1 1 1 # a\000b\n' >nulbox.txt
    run "$PROX" collide nulbox.txt
    expect_exit 3 && expect_stderr_has "nulbox.txt:1:" && expect_stderr_has "NUL byte"
}

# A replaced OUT keeps its mode; a read-only one is refused (as a shell's
# '>' would; root may write it, and then its mode stays).
t_output_modes() {
    printf 'old\n' >mode.txt
    chmod 640 mode.txt
    run "$PROX" pairs --radius 1 -o mode.txt tiny.txt
    expect_exit 0 && same_files mode.txt tiny-pairs.expected || return 1
    [ "$(ls -l mode.txt | cut -c1-10)" = "-rw-r-----" ] || { why="mode $(ls -l mode.txt)"; return 1; }
    printf 'precious\n' >ro.txt
    chmod 444 ro.txt
    run "$PROX" pairs --radius 1 -o ro.txt tiny.txt
    if [ "$(id -u)" -ne 0 ]; then
        expect_exit 4 && [ "$(cat ro.txt)" = precious ] || return 1
    else
        expect_exit 0 && [ "$(ls -l ro.txt | cut -c1-10)" = "-r--r--r--" ] || return 1
    fi
    expect_no_temp ro.txt
}

# A symbolic link is followed, dangling or not: the target is written and the
# link stays.
t_output_dangling_symlink() {
    rm -f target.txt link.txt
    ln -s target.txt link.txt
    run "$PROX" pairs --radius 1 -o link.txt tiny.txt
    expect_exit 0 && same_files target.txt tiny-pairs.expected || return 1
    [ -L link.txt ] || { why="link.txt is no longer a link"; return 1; }
    expect_no_temp target.txt
}

# Every signal that terminates by default and can be caught leaves neither
# OUT nor its temporary file. prox blocks on a FIFO that stays open, so each
# signal arrives while the temporary file exists; env --default-signal undoes
# the SIG_IGN a shell gives SIGINT and SIGQUIT in background jobs.
t_signals_leave_no_temp() {
    env --default-signal true 2>/dev/null && reset="env --default-signal" || reset=""
    for sig in INT TERM HUP PIPE QUIT USR1 USR2 ALRM VTALRM PROF XCPU XFSZ; do
        [ -z "$reset" ] && { [ "$sig" = INT ] || [ "$sig" = QUIT ]; } && continue
        rm -f fifo sig.txt sig.txt.tmp.*
        mkfifo fifo || { why="mkfifo failed"; return 1; }
        sleep 30 >fifo &
        writer=$!
        $reset "$PROX" pairs --radius 1 -o sig.txt - <fifo >/dev/null 2>&1 &
        pid=$!
        tries=0
        while ! ls sig.txt.tmp.* >/dev/null 2>&1 && [ $tries -lt 100 ]; do
            sleep 0.05
            tries=$((tries + 1))
        done
        kill -s "$sig" "$pid"
        wait "$pid" 2>/dev/null
        kill "$writer" 2>/dev/null
        wait "$writer" 2>/dev/null
        [ $tries -lt 100 ] || { why="SIG$sig: no temporary file appeared"; return 1; }
        expect_no_output sig.txt || { why="SIG$sig: $why"; return 1; }
    done
}

# --stream writes the same bytes as the buffered output, sorted or not.
t_pairs_stream() {
    "$PROX" gen sph3d --n 20000 -o stream-in.txt || return 1
    "$PROX" pairs stream-in.txt -o buffered.txt || return 1
    run "$PROX" pairs --stream stream-in.txt -o streamed.txt
    expect_exit 0 && same_files buffered.txt streamed.txt || return 1
    "$PROX" pairs --unsorted stream-in.txt -o buffered.txt || return 1
    run "$PROX" pairs --stream --unsorted --threads 2 stream-in.txt -o streamed.txt
    expect_exit 0 && same_files buffered.txt streamed.txt || return 1
    run "$PROX" pairs --stream --algo brute stream-in.txt -o streamed.txt
    "$PROX" pairs --algo brute stream-in.txt -o buffered.txt || return 1
    expect_exit 0 && same_files buffered.txt streamed.txt || return 1
    expect_fail 2 "--stream" out.txt "$PROX" pairs --stream --count stream-in.txt -o out.txt
}

# --max-memory refuses before the search, naming the estimate; --stream fits.
t_pairs_max_memory() {
    [ -f stream-in.txt ] || "$PROX" gen sph3d --n 20000 -o stream-in.txt || return 1
    # staged rows hold 4 bytes a pair beside the buffer's 8; rows in the
    # output (one run's default) none
    expect_fail 5 "needs about" out.txt \
        "$PROX" pairs --rows staged --max-memory 20M stream-in.txt -o out.txt || return 1
    expect_stderr_has "pairs at 12 bytes" || return 1
    expect_fail 5 "needs about" out.txt "$PROX" pairs --max-memory 20000K stream-in.txt -o out.txt ||
        return 1
    expect_stderr_has "pairs at 8 bytes" || return 1
    run "$PROX" pairs --max-memory 20M stream-in.txt -o out.txt
    expect_exit 0 || return 1
    run "$PROX" pairs --max-memory 1G stream-in.txt -o out.txt
    expect_exit 0 || return 1
    run "$PROX" pairs --max-memory 20M --stream stream-in.txt -o out.txt
    expect_exit 0 || return 1
    rm -f out.txt
    expect_fail 5 "input and structure" out.txt "$PROX" pairs --max-memory 1K stream-in.txt -o out.txt
    expect_fail 2 "max-memory" out.txt "$PROX" pairs --max-memory 12Q stream-in.txt -o out.txt
}

check radius_range_refused t_radius_range
check radius_no_false_out_of_memory t_radius_no_false_out_of_memory
check header_radius_bad t_header_radius_bad
check collide_query_empty_file t_collide_empty_file
check output_empty_name t_output_empty_name
check bad_token_escaped t_bad_token_escaped
check nul_in_comment t_nul_in_comment
check output_modes t_output_modes
check output_dangling_symlink t_output_dangling_symlink
check signals_leave_no_temp t_signals_leave_no_temp
check pairs_stream t_pairs_stream
check pairs_max_memory t_pairs_max_memory
check version_long t_version_long

# ---- an output that is an input; .npy; reading bounded; sorted refused ----

# An OUT that is an input (the same device and inode: the name, a symbolic
# link, a hard link, stdin's redirection) is refused in every mode, and the
# input stays as it was.
t_output_is_input() {
    cp tiny.txt self.txt && cp tiny.txt self.copy && ln -sf self.txt self-link.txt || return 1
    rm -f self-hard.txt && ln self.txt self-hard.txt || return 1
    for mode in "" --count --lists --unsorted --stream "--stream --unsorted" "--algo brute"; do
        # shellcheck disable=SC2086
        run "$PROX" pairs --radius 1 $mode self.txt -o self.txt
        expect_exit 2 && expect_stderr_has "is the input" && same_files self.txt self.copy \
            && expect_no_temp self.txt || { why="pairs $mode: $why"; return 1; }
    done
    for out in self-link.txt self-hard.txt; do
        run "$PROX" pairs --radius 1 self.txt -o "$out"
        expect_exit 2 && same_files self.txt self.copy || { why="-o $out: $why"; return 1; }
    done
    "$PROX" pairs --radius 1 - -o self.txt <self.txt >stdout 2>stderr
    rc=$?
    expect_exit 2 && same_files self.txt self.copy || return 1
    printf '0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n' >selfbox.txt && cp selfbox.txt selfbox.copy
    run "$PROX" collide selfbox.txt -o selfbox.txt
    expect_exit 2 && same_files selfbox.txt selfbox.copy || return 1
    run "$PROX" query selfbox.txt selfbox.txt -o selfbox.txt
    expect_exit 2 && same_files selfbox.txt selfbox.copy || return 1
    run "$PROX" pairs --radius 1 self.txt -o self-other.txt
    expect_exit 0
}

# npy_header DESCR FORTRAN SHAPE: a version 1.0 .npy header, padded as numpy
# pads it (prefix and header a multiple of 64 bytes).
npy_header() {
    dict="{'descr': '$1', 'fortran_order': $2, 'shape': $3, }"
    pad=$(( (64 - (10 + ${#dict} + 1) % 64) % 64 ))
    hlen=$(( ${#dict} + pad + 1 ))
    printf '\223NUMPY\001\000'
    # shellcheck disable=SC2059
    printf "\\$(printf %03o $((hlen % 256)))\\$(printf %03o $((hlen / 256)))"
    printf '%s%*s\n' "$dict" "$pad" ""
}

# .npy: prox gen writes numpy's header and the doubles; pairs, collide and
# query read it as they read the text; '<f4' is read as floats; any other
# dtype, big-endian values, Fortran order, another shape or a size that
# disagrees with the header is refused by name (exit 3).
t_npy() {
    "$PROX" gen sph3d --n 2000 -o np.txt && "$PROX" gen sph3d --n 2000 -o np.npy \
        && "$PROX" gen sph3d --n 2000 -o np.f64 && "$PROX" gen sph3d --n 2000 -o np.f32 || return 1
    npy_header '<f8' False '(2000, 3)' >np.expected && cat np.f64 >>np.expected
    same_files np.npy np.expected || return 1
    [ "$(head -c 6 np.npy | od -An -c | tr -d ' ')" = '223NUMPY' ] || { why="no magic"; return 1; }
    r=$(sed -n 's/^# radius=//p' np.txt)
    "$PROX" pairs --radius "$r" np.txt >np-text.out || return 1
    run "$PROX" pairs --radius "$r" np.npy
    expect_exit 0 && expect_stdout np-text.out || return 1
    npy_header '<f4' False '(2000, 3)' >np32.npy && cat np.f32 >>np32.npy
    "$PROX" pairs --radius "$r" np.f32 >np-f32.out || return 1
    run "$PROX" pairs --radius "$r" --stats np32.npy
    expect_exit 0 && expect_stdout np-f32.out && expect_stderr_has "scalar=f32" || return 1
    run "$PROX" pairs --radius "$r" --dim 2 np.npy
    expect_exit 3 && expect_stderr_has "3 columns; 2 expected" || return 1
    for bad in "'>f8' False (2000, 3)|big-endian" "'<f8' True (2000, 3)|Fortran order" \
               "'<i8' False (2000, 3)|dtype '<i8'" "'<f8' False (6000,)|shape is (6000,)" \
               "'<f8' False (2001, 3)|the .npy header says 2001" "'<f8' False (1000, 6)|6 coordinates"; do
        spec=${bad%|*} text=${bad#*|}
        descr=$(echo "$spec" | cut -d"'" -f2) rest=${spec#*\' }
        npy_header "$descr" "${rest%% *}" "${rest#* }" >npbad.npy && cat np.f64 >>npbad.npy
        expect_fail 3 "$text" out.txt "$PROX" pairs --radius "$r" npbad.npy -o out.txt \
            || { why="$spec: $why"; return 1; }
    done
    printf 'not numpy' >npbad.npy
    expect_fail 3 "not a .npy file" out.txt "$PROX" pairs --radius "$r" npbad.npy -o out.txt || return 1
    "$PROX" gen mixed2d --n 300 -q 50 -o mx.txt && "$PROX" gen mixed2d --n 300 -q 50 -o mx.npy || return 1
    "$PROX" collide mx.txt >mx-text.out && "$PROX" query --segments mx.txt mx.segments.txt >mq-text.out \
        || return 1
    run "$PROX" collide mx.npy
    expect_exit 0 && expect_stdout mx-text.out || return 1
    run "$PROX" query --segments mx.npy mx.segments.npy
    expect_exit 0 && expect_stdout mq-text.out
}

# A text file is parsed as it is read: the first bad line stops it, before
# the rest is read (a NUL byte after it, or a NUL byte on line 1 of a file
# of zeros). Under a 1 GB address-space limit a 2 GB file of zeros, text or
# raw binary, and a .npy file whose header disagrees with its 2 GB size are
# bad data (exit 3), not out of memory.
t_reading_bounded() {
    printf '0 0 0\n1 1 x\n' >firstbad.txt && head -c 3000000 /dev/zero >>firstbad.txt
    expect_fail 3 "firstbad.txt:2: not a number" out.txt "$PROX" pairs --radius 1 firstbad.txt -o out.txt \
        || return 1
    if ! (ulimit -v 1000000 && "$PROX" --help >/dev/null 2>&1) 2>/dev/null; then
        echo "     (skipped the limits: prox does not start under ulimit -v)"
        return 0
    fi
    "$PROX" gen sph3d --n 10 -o big.npy || return 1
    for f in zeros.txt zeros.f64 big.npy; do
        if [ "$f" = big.npy ]; then truncate -s 2G big.npy; else truncate -s 2G "$f"; fi || return 1
        (ulimit -v 1000000 && exec "$PROX" pairs --radius 0.1 "$f" -o out.txt) >stdout 2>stderr
        rc=$?
        rm -f "$f"
        expect_exit 3 && expect_no_output out.txt || { why="$f: $why"; return 1; }
    done
}

# Sorted pairs and lists of 70,000 identical points (2,449,965,000 pairs)
# are refused before the search when their output cannot be held (here: a
# 4 GB address-space limit), as the unsorted buffer is.
t_sorted_refused_up_front() {
    if ! (ulimit -v 4000000 && "$PROX" --help >/dev/null 2>&1) 2>/dev/null; then
        echo "     (skipped: prox does not start under ulimit -v)"
        return 0
    fi
    awk 'BEGIN { for (i = 0; i < 70000; i++) print "0.5 0.5 0.5" }' >same.txt
    for mode in "" --lists; do
        # shellcheck disable=SC2086
        (ulimit -v 4000000 && exec "$PROX" pairs --radius 0.1 $mode same.txt -o out.txt) \
            >stdout 2>stderr
        rc=$?
        expect_exit 5 && expect_stderr_has "the output holds about 2.45e+09 pairs" \
            && expect_no_output out.txt || { why="pairs $mode: $why"; return 1; }
    done
}

# --cell: every image in a skewed cell, checked by hand: the self-images
# along c and a at exactly the radius, the pair (0, 1) directly and through
# -a; the same cubic cell's full count; its refusals.
t_pairs_cell() {
    printf '0 0 0\n0.9 0 0\n' >two.txt
    cat >cell.expected <<'END'
0 0 1 0 0 1 0 0 1
0 0 1 1 0 0 1 0 0
0 1 0.099999999999999978 -0.099999999999999978 0 0 -1 0 0
0 1 0.90000000000000002 0.90000000000000002 0 0 0 0 0
1 1 1 0 0 1 0 0 1
1 1 1 1 0 0 1 0 0
END
    run "$PROX" pairs --cell 1,0,0,0.5,1,0,0,0,1 --radius 1 --geometry two.txt
    expect_exit 0 && expect_stdout cell.expected || return 1
    echo 16 >cell-count.expected
    run "$PROX" pairs --cell 1,1,1 --radius 1 --full --count two.txt
    expect_exit 0 && expect_stdout cell-count.expected || return 1
    run "$PROX" pairs --cell 1,1,1 --pbc 0,0,0 --radius 1 --self-interaction two.txt
    printf '0 0\n0 1\n1 1\n' >cell-pbc.expected
    expect_exit 0 && expect_stdout cell-pbc.expected || return 1
    expect_fail 2 "MPI layer" out.txt "$PROX" pairs --cell 1,1,1 --mpi -r 1 two.txt -o out.txt \
        && expect_fail 3 "singular" out.txt "$PROX" pairs --cell 1,0,0,2,0,0,0,0,1 -r 1 two.txt \
            -o out.txt \
        && expect_fail 3 "too many images" out.txt "$PROX" pairs --cell 1,1,1 -r 1e4 two.txt \
            -o out.txt \
        && expect_fail 2 "need --cell" out.txt "$PROX" pairs --pbc 1,1,1 -r 1 two.txt -o out.txt \
        && expect_fail 2 "--pbc gives 2 flags" out.txt "$PROX" pairs --cell 1,1,1 --pbc 1,0 -r 1 \
            two.txt -o out.txt \
        && expect_fail 2 "lengths or 9" out.txt "$PROX" pairs --cell 1,1 -r 1 two.txt -o out.txt
}

# knn --cell: the skewed cell of t_pairs_cell, checked by hand: each
# point's nearest images are the other point through -a (0.1) and directly
# (0.9), then its own image through -a at exactly 1, first of the four
# self-images at 1 by S; max_radius 0.95 with only a periodic keeps two.
t_knn_cell() {
    printf '0 0 0\n0.9 0 0\n' >two.txt
    cat >knn-cell.expected <<'END'
0 1 0.099999999999999978 -1 0 0
0 1 0.90000000000000002 0 0 0
0 0 1 -1 0 0
1 0 0.099999999999999978 1 0 0
1 0 0.90000000000000002 0 0 0
1 1 1 -1 0 0
END
    run "$PROX" knn --k 3 --cell 1,0,0,0.5,1,0,0,0,1 two.txt
    expect_exit 0 && expect_stdout knn-cell.expected || return 1
    grep -v ' 1 -1 0 0$' knn-cell.expected >knn-radius.expected
    run "$PROX" knn --k 3 --cell 1,0,0,0.5,1,0,0,0,1 --pbc 1,0,0 --max-radius 0.95 two.txt
    expect_exit 0 && expect_stdout knn-radius.expected || return 1
    expect_fail 2 "one of them" out.txt "$PROX" knn --k 1 --cell 1,1,1 --periodic 1,1,1 \
            two.txt -o out.txt \
        && expect_fail 2 "--pbc needs --cell" out.txt "$PROX" knn --k 1 --pbc 1,1,1 two.txt \
            -o out.txt \
        && expect_fail 2 "lengths or 9" out.txt "$PROX" knn --k 1 --cell 1,1 two.txt -o out.txt \
        && expect_fail 3 "singular" out.txt "$PROX" knn --k 1 --cell 1,0,0,2,0,0,0,0,1 two.txt \
            -o out.txt
}

# --cell with --radii and --types: the skewed cell of t_pairs_cell, each
# image pair within its own threshold: radii 0.5 and 0.45 keep point 0's
# self-images at exactly 1 = 0.5 + 0.5 and both (0, 1) images (0.1, 0.9 <=
# 0.95), not point 1's (1 > 0.9); types with a cutoff of 0.5 between 0 and 1
# keep the (0, 1) image at 0.1 alone.
t_pairs_cell_sizes() {
    printf '0 0 0\n0.9 0 0\n' >two.txt
    printf '0.5\n0.45\n' >two-radii.txt
    cat >cell-sizes.expected <<'END'
0 0 1 0 0 1 0 0 1
0 0 1 1 0 0 1 0 0
0 1 0.099999999999999978 -0.099999999999999978 0 0 -1 0 0
0 1 0.90000000000000002 0.90000000000000002 0 0 0 0 0
END
    run "$PROX" pairs --cell 1,0,0,0.5,1,0,0,0,1 --radii two-radii.txt --geometry two.txt
    expect_exit 0 && expect_stdout cell-sizes.expected || return 1
    printf '0\n1\n' >two-types.txt
    printf '0 0.5\n0.5 0\n' >two-cutoffs.txt
    printf '0 1\n' >cell-types.expected
    run "$PROX" pairs --cell 1,0,0,0.5,1,0,0,0,1 --types two-types.txt --cutoffs two-cutoffs.txt \
        two.txt
    expect_exit 0 && expect_stdout cell-types.expected || return 1
    printf '0.5\n-1\n' >bad-radii.txt
    expect_fail 3 "radius 1 is -1" out.txt "$PROX" pairs --cell 1,1,1 --radii bad-radii.txt two.txt \
        -o out.txt
}

# --types and --cutoffs: one cutoff per pair of types; the expected pairs
# worked by hand (a pair at exactly its cutoff pairs; cutoff 0 never).
t_pairs_types() {
    printf '0 0 0\n1 0 0\n0 1.5 0\n3 0 0\n3 0.4 0\n' >typed.txt
    printf '0\n1\n1\n2\n# comment\n0\n' >types.txt
    printf '1.0 1.5 0\n1.5 0 2.0\n0 2.0 0.5\n' >cutoffs.txt
    printf '0 1\n0 2\n1 3\n' >types.expected
    run "$PROX" pairs --types types.txt --cutoffs cutoffs.txt typed.txt
    expect_exit 0 && expect_stdout types.expected || return 1
    run "$PROX" pairs --types types.txt --cutoffs cutoffs.txt --algo brute typed.txt
    expect_exit 0 && expect_stdout types.expected || return 1
    # periodic along x: 0 and 3 pair only through the wrap (|dx| 3, period 5)
    printf '0 3\n1 3\n3 4\n' >types-periodic.expected
    printf '1.0 0 2.0\n0 0 2.0\n2.0 2.0 0.5\n' >cutoffs2.txt
    printf '0\n1\n0\n2\n0\n' >types2.txt
    run "$PROX" pairs --types types2.txt --cutoffs cutoffs2.txt --periodic 5,100,100 typed.txt
    expect_exit 0 && expect_stdout types-periodic.expected || return 1
    printf '1 3\n3 4\n' >types-open.expected
    run "$PROX" pairs --types types2.txt --cutoffs cutoffs2.txt typed.txt
    expect_exit 0 && expect_stdout types-open.expected || return 1
    printf '1 2\n3 4\n' >asym.txt
    printf '1 2\n3\n' >ragged.txt
    printf '0\n1\n1.5\n2\n0\n' >frac.txt
    printf '0\n1\n5\n2\n0\n' >range.txt
    expect_fail 2 "go together" out.txt "$PROX" pairs --types types.txt typed.txt -o out.txt \
        && expect_fail 2 "exclude" out.txt "$PROX" pairs --types types.txt \
            --cutoffs cutoffs.txt -r 1 typed.txt -o out.txt \
        && expect_fail 3 "not symmetric" out.txt "$PROX" pairs --types types.txt \
            --cutoffs asym.txt typed.txt -o out.txt \
        && expect_fail 3 "first row" out.txt "$PROX" pairs --types types.txt \
            --cutoffs ragged.txt typed.txt -o out.txt \
        && expect_fail 3 "type of point 2 is 1.5" out.txt "$PROX" pairs --types frac.txt \
            --cutoffs cutoffs.txt typed.txt -o out.txt \
        && expect_fail 3 "outside" out.txt "$PROX" pairs --types range.txt \
            --cutoffs cutoffs.txt typed.txt -o out.txt
}

check output_is_input t_output_is_input
check pairs_cell t_pairs_cell
check knn_cell t_knn_cell
check npy t_npy
check reading_bounded t_reading_bounded
check sorted_refused_up_front t_sorted_refused_up_front
check pairs_types t_pairs_types
check pairs_cell_sizes t_pairs_cell_sizes

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
