"""Thousands of random malformed op calls: each must succeed or raise a documented Python
exception, and the process must survive (run in a subprocess to catch crashes)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_malformed_calls_never_crash(seed):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_ops.py"), str(seed), "2500"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    _, calls, accepted = proc.stdout.split()[-3:]
    assert int(accepted) > 0.02 * int(calls), "almost every call was rejected: the fuzzer is not exercising kernels"
