"""The fuzz corpus (tests/fuzz/corpus) as regression inputs: every seed file of each loader, and
a few fixed mutants of each, must load or raise the loader's documented exception (see
tests/fuzz/targets.py). The replay runs in a subprocess, so a crash fails the test instead of
killing pytest. The coverage-guided runs themselves are scripts/fuzz (CI, bounded time)."""
import os
import subprocess
import sys

FUZZ = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz")
sys.path.insert(0, FUZZ)
import targets  # noqa: E402


def test_every_target_has_seeds():
    for name in targets.TARGETS:
        folder = os.path.join(FUZZ, "corpus", name)
        assert os.path.isdir(folder) and os.listdir(folder), f"no corpus for fuzz target '{name}'"


def test_corpus_replays_cleanly():
    proc = subprocess.run([sys.executable, os.path.join(FUZZ, "run_fuzz.py"), "all", "--replay"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    for name in targets.TARGETS:
        n = len(os.listdir(os.path.join(FUZZ, "corpus", name)))
        assert f"{name}: replayed {n} file(s)" in proc.stdout


def test_a_wrong_exception_type_is_a_finding(tmp_path):
    """The harness itself: an exception outside the allowed ones must fail the replay."""
    script = (f"import sys; sys.path.insert(0, {FUZZ!r}); import run_fuzz\n"
              "def bad(data): raise KeyError('boom')\n"
              "run_fuzz.replay(bad, (ValueError,), [sys.argv[1]])\n")
    seed = tmp_path / "seed"
    seed.write_bytes(b"x")
    proc = subprocess.run([sys.executable, "-c", script, str(seed)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0 and "FUZZ-WRONG-EXCEPTION KeyError" in proc.stderr
