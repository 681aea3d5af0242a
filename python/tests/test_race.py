"""A caller racing its own array: the module releases the GIL and reads the
array in place, so another Python thread may rewrite it during a call. Each
call must then give an answer (right or wrong) or a clean ValueError or
MemoryError, never a crash. The race runs in a child process, so that a
crash fails this test instead of ending the suite, and is bounded: about
three seconds."""
import subprocess
import sys
import textwrap

RACE = textwrap.dedent(
    """
    import threading, time
    import numpy as np
    import prox

    # above 65536 points the passes over them run on both threads; the
    # values keep the points' cells few (no far outlier that would put the
    # rest in one cell): NaN and -inf (refused, or not seen), a wide spread
    n = 70000
    rng = np.random.default_rng(48)
    original = rng.random((n, 3))
    wide = rng.random((n, 3)) * 1e6
    values = [np.nan, original, wide, -np.inf, original]
    A = original.copy()
    stop = threading.Event()

    def rewrite():
        k = 0
        while not stop.is_set():
            A[:] = values[k % len(values)]
            k += 1
            time.sleep(0.0005)

    racer = threading.Thread(target=rewrite)
    racer.start()
    answers = errors = 0
    end = time.monotonic() + 3.0
    try:
        while time.monotonic() < end:
            for search in (prox.pairs, prox.lists):
                try:
                    search(A, 0.01, threads=2)
                    answers += 1
                except (ValueError, MemoryError):
                    errors += 1
    finally:
        stop.set()
        racer.join()
    print("answers", answers, "errors", errors)
    """
)


def test_rewritten_array_gives_an_answer_or_an_error():
    run = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    words = run.stdout.split()
    assert words[0] == "answers" and words[2] == "errors", run.stdout
    assert int(words[1]) + int(words[3]) > 0
