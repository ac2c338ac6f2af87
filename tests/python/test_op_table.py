"""Runs every row of the op table (op_cases/) against its numpy reference, for each dtype."""
import dataclasses

import numpy as np
import pytest

import mycel
from mycel import _mycel, ops
from op_cases import all_cases, default_tol, make_input

CASES = [c for c in all_cases() if not c.nondeterministic and not c.needs_peer]


def _params():
    for case in CASES:
        for dt in case.dtypes:
            yield pytest.param(case, dt, id=f"{case.name()}-{dt}")
        # bfloat16 (which numpy lacks): float32 inputs rounded to bf16, reference in float32.
        claims_bf16 = any(d.name == "bfloat16" for d in mycel._mycel.op_handles[case.op].dtypes)
        if "float32" in case.dtypes and claims_bf16:
            yield pytest.param(case, "bfloat16", id=f"{case.name()}-bfloat16")


def _inputs(case, dtype, rng):
    if callable(case.shapes):
        return case.shapes(rng, dtype)
    return [make_input(rng, s, dtype, case.domain) for s in case.shapes]


def _check(out, ref, case, dtype):
    got = out.asnumpy() if isinstance(out, mycel.Tensor) else np.asarray(out)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"{case.name()}: shape {got.shape} != numpy's {ref.shape}"
    assert got.dtype == ref.dtype, f"{case.name()}: dtype {got.dtype} != numpy's {ref.dtype}"
    # complex results: the tolerance of their real type (the complex division formulas differ)
    real = np.empty(0, ref.dtype).real.dtype
    rtol, atol = default_tol(real if ref.dtype.kind in "fc" or dtype == "bfloat16" else dtype)
    rtol = case.rtol if case.rtol is not None else rtol
    atol = case.atol if case.atol is not None else atol
    if ref.dtype.kind in "fc":
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=case.name())
    else:
        np.testing.assert_array_equal(got, ref, err_msg=case.name())


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_op_matches_numpy(case, dtype):
    rng = np.random.default_rng(0)
    if dtype == "bfloat16":
        arrays = _inputs(case, "float32", rng)
        tensors = [mycel.Tensor(a, dtype=mycel.bfloat16)
                   if a.dtype == np.float32 and i not in case.keep_f32 else mycel.Tensor(a)
                   for i, a in enumerate(arrays)]
        arrays = [t.asnumpy() for t in tensors]  # the values bf16 actually holds
        case = dataclasses.replace(case, rtol=max(case.rtol or 0, 2e-2), atol=max(case.atol or 0, 2e-2))
    else:
        arrays = _inputs(case, dtype, rng)
        tensors = [mycel.Tensor(a) for a in arrays]
    inputs = mycel._mycel.op_handles[case.op].inputs
    if inputs and inputs[-1][2]:  # a variadic last input takes the remaining tensors as one tuple
        k = len(inputs) - 1
        tensors = list(tensors[:k]) + [tuple(tensors[k:])]
    out = getattr(_mycel.ops, case.op)(*tensors, **case.attrs)  # the registry's own signature
    ref = case.ref(*arrays, **case.attrs)
    if isinstance(ref, tuple):
        assert isinstance(out, tuple) and len(out) == len(ref), f"{case.name()}: output count"
        for o, r in zip(out, ref):
            _check(o, r, case, dtype)
    else:
        _check(out, ref, case, dtype)
