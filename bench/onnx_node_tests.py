"""Pass rate of mycel.onnx's importer on ONNX's backend node tests, by op type: every op type we
claim (mycel.onnx.SUPPORTED_OPS), or all op types with --all. Prints a table; -v lists failures.

    .venv/bin/python bench/onnx_node_tests.py [--all] [-v]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import onnx_conformance  # noqa: E402
import mycel.onnx  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="every op type, not only the claimed ones")
    ap.add_argument("-v", action="store_true", help="print each failing case")
    a = ap.parse_args()
    t0 = time.time()
    by_op = onnx_conformance.collect(None if a.all else set(mycel.onnx.SUPPORTED_OPS))
    rows = onnx_conformance.table(by_op)
    print("cases whose tensors have dtypes Mycel lacks (uint16/32/64, strings, float8, 4-bit) are")
    print("listed as 'no dtype' and left out of the rate\n")
    print("| op type | passed | total | rate | unsupported | error | wrong | no dtype |")
    print("|---|---|---|---|---|---|---|---|")
    tp = tt = 0
    for op, (c, details) in rows.items():
        total = sum(c.values()) - c["no dtype"]
        tp += c["pass"]
        tt += total
        claimed = ("" if op in mycel.onnx.CLAIMED_OPS else " (partial)" if op in mycel.onnx.PARTIAL_OPS
                   else " (no rule)")
        rate = f"{100 * c['pass'] / total:.0f}%" if total else "-"
        print(f"| {op}{claimed} | {c['pass']} | {total} | {rate} | "
              f"{c['unsupported']} | {c['error']} | {c['wrong']} | {c['no dtype']} |")
        if a.v:
            for name, status, msg in details:
                print(f"    {name}: {status}: {msg[:300]}")
    print(f"\nall: {tp}/{tt} = {100 * tp / max(tt, 1):.1f}% in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
