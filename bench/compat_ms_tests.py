"""Runs MindSpore's own tests with `mindspore` aliased to `mycel` and nothing else changed, as
issue 14 measured the promise "a MindSpore script runs with only its imports renamed": per file
the tests passed, failed and erred, the files that fail at import, and the most common first
error lines. Nothing from MindSpore is vendored: point it at a MindSpore source tree.

    git clone --depth 1 https://github.com/mindspore-ai/mindspore /tmp/ms   # or any checkout
    .venv/bin/python bench/compat_ms_tests.py /tmp/ms --glob 'tests/st/ops/cpu/test_*.py' \\
        --json /tmp/ms_tests.json

Each file runs in its own pytest process (a crash or hang costs that file only; --timeout per
file). The alias is a sitecustomize.py on PYTHONPATH that maps every `mindspore[.x]` import to
`mycel[.x]`; MindSpore's `tests` package (mark_utils) comes from the tree itself."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SITECUSTOMIZE = '''
import importlib, importlib.abc, importlib.util, sys

class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """mindspore[.x] -> the module mycel[.x] (the same object, under both names)."""

    def find_spec(self, name, path=None, target=None):
        if name == "mindspore" or name.startswith("mindspore."):
            target = "mycel" + name[len("mindspore"):]
            try:
                if importlib.util.find_spec(target) is None:
                    return None
            except (ImportError, ValueError):
                return None
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return importlib.import_module("mycel" + spec.name[len("mindspore"):])

    def exec_module(self, module):
        pass

sys.meta_path.insert(0, _Alias())
'''

SUMMARY = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
FIRST_ERROR = re.compile(r"^E\s+(\w+(?:Error|Exception|Exit|Failed|Interrupt)?:?.*)$")


def run_file(path, env, timeout, cwd):
    start = time.time()
    try:
        # MindSpore's CI picks its CPU tests by mark (tests.mark_utils.arg_mark): so do we, which
        # also leaves out the helper functions named test_* that take arguments.
        p = subprocess.run([sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider",
                            "-m", "cpu_linux", "-W", "ignore", "--tb=short", "-rfE"],
                           env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return {"file": path, "timeout": True, "passed": 0, "failed": 0, "errors": 1, "skipped": 0,
                "seconds": timeout, "reasons": ["timeout"]}
    counts = collections.Counter()
    tail = next((line for line in reversed(p.stdout.splitlines()) if SUMMARY.search(line) and " in " in line), "")
    for n, kind in SUMMARY.findall(tail):
        counts["errors" if kind.startswith("error") else kind] += int(n)
    reasons = []
    for line in out.splitlines():
        m = FIRST_ERROR.match(line)
        if m:
            reasons.append(m.group(1)[:160])
    import_error = "ERROR collecting" in out or "error during collection" in out
    return {"file": path, "timeout": False, "passed": counts["passed"], "failed": counts["failed"],
            "errors": counts["errors"], "skipped": counts["skipped"], "import_error": import_error,
            "seconds": round(time.time() - start, 1), "reasons": reasons}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mindspore_root", help="a MindSpore source tree (its tests/ folder is used)")
    ap.add_argument("--glob", default="tests/st/ops/cpu/test_*.py", help="test files, relative to the root")
    ap.add_argument("--limit", type=int, default=0, help="run only the first N files (sorted)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per file")
    ap.add_argument("--json", help="write per-file results here")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.mindspore_root, args.glob)))
    if args.limit:
        files = files[:args.limit]
    if not files:
        sys.exit(f"no test files match {args.glob!r} under {args.mindspore_root}")
    with tempfile.TemporaryDirectory() as shim:
        with open(os.path.join(shim, "sitecustomize.py"), "w") as f:
            f.write(SITECUSTOMIZE)
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE",
                   PYTHONPATH=os.pathsep.join([shim, os.path.join(ROOT, "python"), args.mindspore_root]))
        results = []
        for i, path in enumerate(files):
            r = run_file(path, env, args.timeout, args.mindspore_root)
            r["file"] = os.path.relpath(path, args.mindspore_root)
            results.append(r)
            print(f"[{i + 1}/{len(files)}] {r['file']}: {r['passed']} passed, {r['failed']} failed, "
                  f"{r['errors']} errors{' (import)' if r.get('import_error') else ''}"
                  f"{' TIMEOUT' if r['timeout'] else ''} ({r['seconds']} s)", flush=True)
    total = {k: sum(r[k] for r in results) for k in ("passed", "failed", "errors", "skipped")}
    run = total["passed"] + total["failed"] + total["errors"]
    importing = [r for r in results if not r.get("import_error") and not r["timeout"]]
    run_importing = sum(r["passed"] + r["failed"] + r["errors"] for r in importing)
    all_pass = sum(1 for r in results if r["passed"] and not r["failed"] and not r["errors"])
    print(f"\n{len(files)} files: {len(files) - len(importing)} fail at import or time out, "
          f"{all_pass} pass every test")
    print(f"tests: {total['passed']} of {run} pass ({100 * total['passed'] / max(run, 1):.0f}%); "
          f"in the files that import: {sum(r['passed'] for r in importing)} of {run_importing} "
          f"({100 * sum(r['passed'] for r in importing) / max(run_importing, 1):.0f}%); "
          f"{total['skipped']} skipped")
    reasons = collections.Counter()
    for r in results:
        for line in dict.fromkeys(r["reasons"]):  # once per file
            reasons[re.sub(r"\d+", "N", line)[:120]] += 1
    print("\nmost common error lines (files):")
    for line, n in reasons.most_common(25):
        print(f"{n:4d}  {line}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"files": results, "total": total}, f, indent=1)


if __name__ == "__main__":
    main()
