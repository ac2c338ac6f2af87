"""Gradients through complex tensors, PyTorch's convention (for a real loss L of z = x + iy the
gradient is dL/dx + i dL/dy): real-valued losses of complex intermediates built with complex/
real/imag/conj/angle/abs, add/sub/mul/div, matmul, sum/mean, exp, the FFT family and reshape/
transpose/slice, in both modes, against central finite differences of a numpy loss (float64),
and against torch.autograd when torch is installed (in its own process; MYCEL_TORCH_PYTHON may
name an interpreter that has it)."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops

from complex_grad_helpers import check_gradients

R = np.random.default_rng(5)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


def _c(*shape):
    return R.normal(size=shape) + 1j * R.normal(size=shape)


# (name, mycel loss, numpy loss, argument factory)
CASES = [
    ("fft_filter", lambda x, w: ops.sum(ops.square(ops.real(ops.ifft(ops.fft(x) * w)))),
     lambda x, w: np.sum(np.real(np.fft.ifft(np.fft.fft(x) * w)) ** 2),
     lambda: [R.normal(size=(2, 6)), _c(6)]),
    ("abs_of_complex", lambda a, b: ops.sum(ops.abs(ops.complex(a, b)) * Tensor(np.arange(1.0, 5.0))),
     lambda a, b: np.sum(np.abs(a + 1j * b) * np.arange(1.0, 5.0)),
     lambda: [R.normal(size=4), R.normal(size=4)]),
    ("arithmetic", lambda z, u: ops.sum(ops.abs(z * u + z / u - (u - z * 0.5)) ** 2),
     lambda z, u: np.sum(np.abs(z * u + z / u - (u - z * 0.5)) ** 2),
     lambda: [_c(3), _c(3) + 2.0]),
    ("mixed_real_complex", lambda x, z: ops.sum(ops.abs(x * z + x - z / (x + 3.0))),
     lambda x, z: np.sum(np.abs(x * z + x - z / (x + 3.0))),
     lambda: [R.normal(size=3), _c(3)]),
    ("matmul", lambda a, b: ops.sum(ops.real(ops.matmul(a, b)) + ops.imag(ops.matmul(a, b)) ** 2),
     lambda a, b: np.sum(np.real(a @ b) + np.imag(a @ b) ** 2),
     lambda: [_c(2, 3), _c(3, 2)]),
    ("sum_mean", lambda z: ops.abs(ops.sum(z)) + ops.real(ops.mean(z * z, axis=0)).sum(),
     lambda z: np.abs(np.sum(z)) + np.real(np.mean(z * z, axis=0)).sum(),
     lambda: [_c(3, 2)]),
    ("exp_conj_angle_imag",
     lambda z: ops.sum(ops.angle(z) * ops.real(ops.exp(ops.conj(z)))) + ops.sum(ops.imag(z) ** 2),
     lambda z: np.sum(np.angle(z) * np.real(np.exp(np.conj(z)))) + np.sum(np.imag(z) ** 2),
     lambda: [_c(4)]),
    ("reshape_transpose_slice",
     lambda z: ops.sum(ops.abs(ops.transpose(ops.reshape(z, (3, 4)), (1, 0))[1:, ::2]) ** 2),
     lambda z: np.sum(np.abs(z.reshape(3, 4).T[1:, ::2]) ** 2),
     lambda: [_c(12)]),
    ("rfft_irfft", lambda x, w: ops.sum(ops.irfft(ops.rfft(x) * w) ** 2),
     lambda x, w: np.sum(np.fft.irfft(np.fft.rfft(x) * w) ** 2),
     lambda: [R.normal(size=8), _c(5)]),
    ("fft2_of_complex", lambda z: ops.sum(ops.abs(ops.fft2(z)) ** 2) + ops.real(ops.ifft2(z)).sum(),
     lambda z: np.sum(np.abs(np.fft.fft2(z)) ** 2) + np.real(np.fft.ifft2(z)).sum(),
     lambda: [_c(3, 4)]),
]


@MODES
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_complex_gradients_match_finite_differences(case, mode):
    name, loss, ref, make = case
    check_gradients(name, loss, ref, make(), mode)


def test_a_complex_step_of_gradient_descent_lowers_the_loss():
    """The convention makes z - lr * grad a descent step, as in PyTorch."""
    target = _c(5)
    z = _c(5)

    def loss(z):
        return ops.sum(ops.abs(z - Tensor(target)) ** 2)
    g = ms.grad(loss)
    before = float(loss(Tensor(z)).asnumpy())
    z2 = z - 0.1 * g(Tensor(z)).asnumpy()
    assert float(loss(Tensor(z2)).asnumpy()) < 0.7 * before
    np.testing.assert_allclose(g(Tensor(z)).asnumpy(), 2 * (z - target))  # closed form


_TORCH = r"""
import json, sys, numpy as np, torch
inp = json.loads(sys.stdin.read())
def arr(v): return torch.tensor(np.array(v[0]) + 1j * np.array(v[1]) if v[2] else np.array(v[0]), requires_grad=True)
out = {}
for name, args in inp.items():
    t = [arr(a) for a in args]
    if name == "fft_filter":
        x, w = t; loss = (torch.fft.ifft(torch.fft.fft(x) * w).real ** 2).sum()
    elif name == "arithmetic":
        z, u = t; loss = ((z * u + z / u - (u - z * 0.5)).abs() ** 2).sum()
    elif name == "matmul":
        a, b = t; loss = ((a @ b).real + (a @ b).imag ** 2).sum()
    elif name == "exp_conj_angle_imag":
        z, = t; loss = (z.angle() * torch.exp(z.conj()).real).sum() + (z.imag ** 2).sum()
    loss.backward()
    out[name] = [[g.grad.real.tolist(), g.grad.imag.tolist()] if g.is_complex() else [g.grad.tolist(), None] for g in t]
print(json.dumps(out))
"""


# torch runs in its own interpreter: this one when it has torch, or MYCEL_TORCH_PYTHON's.
_TORCH_PYTHON = os.environ.get("MYCEL_TORCH_PYTHON") or (
    sys.executable if importlib.util.find_spec("torch") is not None else None)


@pytest.mark.skipif(_TORCH_PYTHON is None, reason="torch is not installed (MYCEL_TORCH_PYTHON unset)")
def test_complex_gradients_match_torch_autograd():
    chosen = {c[0]: c for c in CASES if c[0] in ("fft_filter", "arithmetic", "matmul", "exp_conj_angle_imag")}
    args = {n: c[3]() for n, c in chosen.items()}
    payload = {n: [[a.real.tolist(), a.imag.tolist() if np.iscomplexobj(a) else None, np.iscomplexobj(a)]
                   for a in v] for n, v in args.items()}
    res = subprocess.run([_TORCH_PYTHON, "-c", _TORCH], input=json.dumps(payload), capture_output=True,
                         text=True, timeout=120, check=True)
    torch_grads = json.loads(res.stdout)
    for n, (_, loss, _, _) in chosen.items():
        got = ms.grad(loss, grad_position=tuple(range(len(args[n]))))(*[Tensor(a) for a in args[n]])
        got = got if isinstance(got, tuple) else (got,)
        for g, (re, im) in zip(got, torch_grads[n]):
            want = np.array(re) + (1j * np.array(im) if im is not None else 0)
            np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-9, err_msg=n)
