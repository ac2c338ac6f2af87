"""Backward rules keep the forward dtype: run each gradient-table row in float32 and check that
every sensitivity has its input's dtype and shape and matches the float64 rule's values."""
import numpy as np
import pytest

import mycel
from mycel import _mycel
from grad_cases import all_cases, case_inputs, wrt_indices
from gradcheck import as_tensor, op_forward, random_douts

CASES = all_cases()


def _to32(a):
    if a is None:
        return None
    if isinstance(a, (list, tuple)):
        return [_to32(x) for x in a]
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.kind == "f" else a


def _vjp(case, arrays, douts):
    dout_t = [mycel.Tensor(d) for d in douts]
    return _mycel.ad.vjp(case.op, [as_tensor(a) for a in arrays],
                         dout_t[0] if len(dout_t) == 1 else tuple(dout_t), **case.attrs)


def _items(g):
    return list(g) if isinstance(g, (list, tuple)) else [g]


@pytest.mark.parametrize("case", CASES, ids=[c.name() for c in CASES])
def test_rule_keeps_float32(case):
    arrays = case_inputs(case)
    outs = op_forward(case.op, case.attrs)(arrays)
    douts = random_douts(np.random.default_rng(1), outs)
    ref = _vjp(case, arrays, douts)
    arrays32 = [_to32(a) for a in arrays]
    douts32 = [d.astype(np.float32) for d in douts]
    got = _vjp(case, arrays32, douts32)
    for i in wrt_indices(case, arrays):
        for g, r, a in zip(_items(got[i]), _items(ref[i]), _items(arrays32[i])):
            assert g.asnumpy().dtype == np.float32, f"{case.name()} input {i}: {g.asnumpy().dtype}"
            assert g.asnumpy().shape == np.shape(a)
            np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=2e-3, atol=2e-3,
                                       err_msg=f"{case.name()} input {i}")
