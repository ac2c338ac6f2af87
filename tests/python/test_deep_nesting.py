"""A deep program gets an error, not a crash, under any caller: analysis measures the stack its
thread has left (core/stack.h) besides its fixed nesting cap, so compiling on a Python thread
with a small threading.stack_size stops with a NotImplementedError naming the graph."""
import subprocess
import sys
import textwrap

# A loop over a compile-time range that grows a list unrolls: each iteration nests the analysis
# one specialization deeper (about 8 levels, a few KB of C++ stack each).
PROGRAM = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import mycel
    from mycel import Tensor

    def grow(x):
        acc = []
        for i in range(60):
            acc.append(x * i)
        return acc[-1] + acc[3]

    result = {}

    def run():
        try:
            result["out"] = mycel.jit(grow)(Tensor(np.ones(2, np.float32))).asnumpy().tolist()
        except Exception as e:
            result["err"] = (type(e).__name__, str(e))

    threading.stack_size(int(sys.argv[1]))
    t = threading.Thread(target=run)
    t.start()
    t.join()
    print(repr(result))
""")


def _run_on_thread(tmp_path, stack_bytes):
    script = tmp_path / "deep.py"  # graph mode parses source: the program needs a file
    script.write_text(PROGRAM)
    p = subprocess.run([sys.executable, str(script), str(stack_bytes)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"the process died (rc {p.returncode}): {p.stderr[-2000:]}"
    return eval(p.stdout.strip().splitlines()[-1])


def test_small_thread_stack_gives_an_error_not_a_crash(tmp_path):
    # 512 KB: less than the ~1.5 MB the unrolled loop's analysis needs.
    r = _run_on_thread(tmp_path, 512 << 10)
    assert "err" in r, r
    kind, msg = r["err"]
    assert kind == "NotImplementedError", r
    assert "[specialize]" in msg and "stack" in msg and "threading.stack_size" in msg, msg


def test_large_thread_stack_compiles_the_same_program(tmp_path):
    r = _run_on_thread(tmp_path, 64 << 20)
    assert r.get("out") == [62.0, 62.0], r  # x * 59 + x * 3 on ones, as numpy gives
