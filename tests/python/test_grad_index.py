"""Gradient conventions of the indexing ops that finite differences cannot see."""
import numpy as np

import mycel
from mycel import _mycel


def test_embedding_padding_row_gets_no_gradient():
    ids = np.array([[0, 2, 0], [4, 1, 0]])
    w = np.random.default_rng(0).standard_normal((5, 3))
    dout = np.random.default_rng(1).standard_normal((2, 3, 3))
    _, dw = _mycel.ad.vjp("embedding", [mycel.Tensor(ids), mycel.Tensor(w)], mycel.Tensor(dout),
                          padding_idx=0)
    expected = np.zeros_like(w)
    np.add.at(expected, ids, dout)
    expected[0] = 0.0  # torch's padding_idx: the padding row is never updated
    np.testing.assert_allclose(dw.asnumpy(), expected, rtol=1e-12)
