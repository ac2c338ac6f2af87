"""Gradient rows for te_call: the adjoints te.differentiate generates, against finite differences.
The functions come from op_cases/te_call.py (float64 ones: the table runs in float64)."""
from grad_cases import GradCase
from op_cases import te_call as _rows

_ids = {c.id: c.attrs["kernel"] for c in _rows.CASES}


def _seq(*shapes):
    def gen(rng):
        return [[rng.standard_normal(s) for s in shapes]]
    return gen


CASES = [
    GradCase("te_call", _seq((3, 4), (4,)), {"kernel": _ids["chain_float64"]}, wrt=[0], id="chain"),
    GradCase("te_call", _seq((2, 5), (5, 3)), {"kernel": _ids["contract_float64"]}, wrt=[0],
             id="contract"),
]
