"""Every gradient-table row of test_grad_table.py again in PYNATIVE_MODE: the op runs eagerly,
is recorded into IR and differentiated by the same transform (pynative_grad.py), checked against
central finite differences in float64. Together the two files give a gradient check for every
differentiable op in both modes."""
import pytest

import mycel
# Collected here, so it runs under this module's fixture (PYNATIVE_MODE), not test_grad_table's.
from test_grad_table import test_api_gradient_matches_finite_differences  # noqa: F401


@pytest.fixture(autouse=True)
def pynative_mode():
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
