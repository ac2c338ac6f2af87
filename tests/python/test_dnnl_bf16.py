"""bfloat16 on both oneDNN paths: native bf16 kernels (AVX512-BF16) and, with oneDNN capped at AVX2
(ONEDNN_MAX_CPU_ISA, read at startup, hence a subprocess), the float32 fallback. Both must match
a float32 numpy reference of the bf16-rounded inputs."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import numpy as np
    import mycel
    from mycel import ops

    def bf16(a):
        t = mycel.Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16)
        return t, t.asnumpy().astype(np.float64)

    def check(name, got, ref, scale):
        got = got.asnumpy().astype(np.float64)
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        err = np.abs(got - ref).max() / scale
        assert err < 1e-2, (name, err)
        print(name, "ok", err)

    rng = np.random.default_rng(0)
    (a, an), (b, bn) = bf16(rng.standard_normal((2, 33, 64))), bf16(rng.standard_normal((64, 17)))
    check("matmul", ops.matmul(a, b), an @ bn, np.abs(an @ bn).max())
    (w, wn), (bias, biasn) = bf16(rng.standard_normal((17, 64))), bf16(rng.standard_normal(17))
    ref = an @ wn.T + biasn
    check("dense", ops.dense(a, w, bias), ref, np.abs(ref).max())
    (x, xn), (k, kn) = bf16(rng.standard_normal((2, 8, 10, 10))), bf16(rng.standard_normal((16, 8, 3, 3)))
    xp = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 16, 10, 10))
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 10, j:j + 10], kn[:, :, i, j])
    check("conv2d", ops.conv2d(x, k, pad_mode="same"), ref, np.abs(ref).max())
    out = ops.matmul(a, b)
    assert out.dtype.name == "bfloat16", out.dtype
""")


def _has_avx512_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read()
    except OSError:
        return False


@pytest.mark.parametrize("isa", [None, "AVX2"], ids=["native", "avx2_fallback"])
def test_bf16_matches_float32_reference(isa):
    if isa is None and not _has_avx512_bf16():
        pytest.skip("no AVX512-BF16 on this CPU; the native bf16 path cannot run")
    env = dict(os.environ)
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    env.pop("DNNL_MAX_CPU_ISA", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    env["ONEDNN_VERBOSE"] = "1"  # prints the implementation each primitive ran with
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("matmul", "dense", "conv2d"):
        assert f"{name} ok" in r.stdout
    executed = [line for line in r.stdout.splitlines() if line.startswith("onednn_verbose,exec")
                or line.startswith("dnnl_verbose,exec")]
    ran_bf16 = any("bf16" in line for line in executed)
    if isa == "AVX2":
        assert not ran_bf16, "oneDNN ran a bf16 primitive although capped at AVX2"
    else:
        assert ran_bf16, "oneDNN did not run a native bf16 primitive"
