"""Every gradient-table row through the user API (GradOperation with sens_param, i.e. the full
vjp transform and a compiled Program) against central finite differences in float64."""
import numpy as np
import pytest

import mycel
from mycel import _mycel, ops
from grad_cases import all_cases, case_inputs, wrt_indices
from gradcheck import as_tensor, check_close, numeric_vjp, op_forward, random_douts


@pytest.fixture(autouse=True)
def graph_mode():
    """These tests check the parsed-graph path; PyNative recording reruns them in
    test_pynative_grad.py / test_grad_table_pynative.py."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name() for c in CASES])
def test_api_gradient_matches_finite_differences(case, tmp_path):
    arrays = case_inputs(case)
    if any(a is None or isinstance(a, (list, tuple)) for a in arrays):
        pytest.skip("absent optional or variadic inputs: covered by test_grad_rules")
    raw = getattr(_mycel.ops, case.op)(*[as_tensor(a) for a in arrays], **case.attrs)
    if any(o.dtype in (mycel.complex64, mycel.complex128) for o in (raw if isinstance(raw, tuple) else (raw,))):
        pytest.skip("complex output: this harness draws real cotangents; covered by test_grad_rules and "
                    "test_complex_grad.py")
    f = op_forward(case.op, case.attrs)
    outs = f(arrays)
    if len(outs) != 1:
        pytest.skip("multi-output op: covered by test_grad_rules")
    dout = random_douts(np.random.default_rng(1), outs)
    # Graph mode parses source, so the function is written to a file with a fixed arity.
    src_file = tmp_path / "case.py"
    # The registry op's own primitive (ops.operations may hold a MindSpore-order composite of
    # the same name, as GatherD).
    handle = _mycel.op_handles[case.op]
    prim = type(handle.class_name, (ops.operations.Primitive,), {"_handle": handle})(**case.attrs)
    src_file.write_text("def f({a}):\n    return prim({a})\n".format(a=", ".join(f"x{i}" for i in range(len(arrays)))))
    scope = {"prim": prim}
    exec(compile(src_file.read_text(), str(src_file), "exec"), scope)
    fn = scope["f"]
    sens = mycel.Tensor(dout[0])
    if isinstance(getattr(_mycel.ops, case.op)(*[as_tensor(a) for a in arrays], **case.attrs), tuple):
        sens = (sens,)  # split into one part still returns a tuple (MindSpore's Split)
    grads = ops.GradOperation(get_all=True, sens_param=True)(fn)(*[as_tensor(a) for a in arrays], sens)
    mode = "graph" if mycel.get_context("mode") == mycel.GRAPH_MODE else "pynative"
    for i in wrt_indices(case, arrays):
        num = numeric_vjp(f, arrays, i, dout, case.eps)
        check_close(grads[i].asnumpy(), num, case.rtol, case.atol, f"{case.name()} input {i} ({mode})")
