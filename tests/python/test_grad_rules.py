"""Each op's backward rule, run alone (_mycel.ad.vjp), against central finite differences."""
import numpy as np
import pytest

import mycel
from mycel import _mycel
from grad_cases import all_cases, case_inputs, wrt_indices
from gradcheck import as_tensor, check_close, numeric_vjp, op_forward, random_douts

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name() for c in CASES])
def test_rule_matches_finite_differences(case):
    arrays = case_inputs(case)
    f = op_forward(case.op, case.attrs)
    outs = f(arrays)
    douts = random_douts(np.random.default_rng(1), outs, case.outputs)
    dout_t = [mycel.Tensor(d) for d in douts]
    grads = _mycel.ad.vjp(case.op, [as_tensor(a) for a in arrays],
                          dout_t[0] if len(dout_t) == 1 else tuple(dout_t), **case.attrs)
    assert len(grads) == len(arrays)
    for i in wrt_indices(case, arrays):
        num = numeric_vjp(f, arrays, i, douts, case.eps)
        g = grads[i]
        assert g is not None, f"{case.name()}: no gradient for input {i}"
        if isinstance(num, list):
            assert len(g) == len(num)
            for k, (a, n) in enumerate(zip(g, num)):
                check_close(a.asnumpy(), n, case.rtol, case.atol, f"{case.name()} input {i}[{k}]")
        else:
            check_close(g.asnumpy(), num, case.rtol, case.atol, f"{case.name()} input {i}")


# Send/Receive need a peer process: their gradients are checked under mpirun
# (mpi_workers/collectives.py, send_receive_gradients).
POINT_TO_POINT = {"send", "receive"}
# Ops without a float64 kernel, which the finite-difference rows need: their gradients are checked
# against float64 numpy references in their own files.
CHECKED_ELSEWHERE = {"flash_attention": "test_flash_attention.py"}


def test_every_bprop_op_has_a_rule_and_a_case():
    covered = {c.op for c in CASES}
    for name, h in _mycel.op_handles.items():
        grad = h.grad
        has_rule = _mycel.ad.has_bprop(name)
        assert (grad == "bprop") == has_rule, f"{name}: policy '{grad}' but rule registered: {has_rule}"
        if has_rule and name not in POINT_TO_POINT and name not in CHECKED_ELSEWHERE:
            assert name in covered, f"{name} has a backward rule but no row in tests/python/grad_cases"
