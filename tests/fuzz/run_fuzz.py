"""Runs one fuzz target (targets.py) under atheris (libFuzzer for Python) for a bounded time,
starting from the seeds in tests/fuzz/corpus/<target>/, or replays files through it.

  python tests/fuzz/run_fuzz.py TARGET --seconds 25 [--work DIR]   coverage-guided fuzzing
  python tests/fuzz/run_fuzz.py TARGET|all --replay [FILE|DIR ...] each file once (regression)

A finding stops the run: libFuzzer writes the input to DIR (default: a temporary folder) as
crash-*/timeout-*/oom-* and this script exits non-zero; a wrong exception type is printed as
'FUZZ-WRONG-EXCEPTION' first. New inputs found go to DIR/new, never into the repository; copy
an interesting one into the corpus by hand. scripts/fuzz runs every target and sums the figures.
Coverage: atheris instruments Mycel's Python code; the C++ loaders are not instrumented (GCC
build), so inside them the search is guided by the Python side and the seeds' structure only.
scripts/fuzz_native fuzzes those C++ loaders with coverage (tests/fuzz/native)."""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
INSTRUMENTED = ["targets", "mycel.train.serialization", "mycel.mindrecord", "mycel.dataset.sources",
                "mycel.dataset.engine", "mycel.dataset.vision", "mycel.lite", "mycel.onnx"]


def check(fn, allowed, data):
    try:
        fn(data)
    except allowed:
        pass
    except MemoryError:
        pass  # a loader may refuse a size it cannot allocate
    except BaseException as e:
        sys.stderr.write(f"FUZZ-WRONG-EXCEPTION {type(e).__name__}: {str(e)[:500]}\n")
        sys.stderr.flush()
        raise


def replay(fn, allowed, paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p))
        else:
            files.append(p)
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        check(fn, allowed, data)
        # A few fixed mutants of each seed too: cheap, deterministic, and they reach error paths
        # the valid seeds do not (truncations, a zeroed and a saturated byte, a doubled tail).
        for mutant in (data[:len(data) // 2], data[:-1], data + data[-32:],
                       data[:len(data) // 3] + b"\xff" * 8 + data[len(data) // 3 + 8:],
                       data[:len(data) // 2] + b"\x00" * 8 + data[len(data) // 2 + 8:]):
            check(fn, allowed, mutant)
    print(f"replayed {len(files)} file(s) and {5 * len(files)} mutants")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--seconds", type=int, default=25)
    ap.add_argument("--work", default=None)
    ap.add_argument("--replay", nargs="*", default=None)
    args = ap.parse_args()
    if args.replay is not None:  # no atheris needed: plain calls
        import targets
        names = sorted(targets.TARGETS) if args.target == "all" else [args.target]
        for name in names:
            if name not in targets.TARGETS:
                sys.exit(f"run_fuzz: unknown target '{name}'; known: {sorted(targets.TARGETS)}")
            fn, allowed = targets.TARGETS[name]
            print(name, end=": ")
            replay(fn, allowed, args.replay or [os.path.join(HERE, "corpus", name)])
        return
    import atheris  # test-only dependency (constraints.txt)
    # Instrument only the Python layers the targets pass through (all of mycel takes ~20 s).
    with atheris.instrument_imports(include=INSTRUMENTED):
        import mycel  # noqa: F401
        import mycel.dataset  # noqa: F401
        import mycel.mindrecord  # noqa: F401
        import targets
    if args.target not in targets.TARGETS:
        sys.exit(f"run_fuzz: unknown target '{args.target}'; known: {sorted(targets.TARGETS)}")
    fn, allowed = targets.TARGETS[args.target]
    corpus = os.path.join(HERE, "corpus", args.target)
    work = args.work or tempfile.mkdtemp(prefix=f"mycel-fuzz-{args.target}-")
    new = os.path.join(work, "new")
    os.makedirs(new, exist_ok=True)
    argv = [sys.argv[0], new, corpus, f"-max_total_time={args.seconds}", "-timeout=10",
            "-rss_limit_mb=4096", "-max_len=65536", f"-artifact_prefix={work}/",
            "-print_final_stats=1"]
    atheris.Setup(argv, lambda data: check(fn, allowed, data))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
