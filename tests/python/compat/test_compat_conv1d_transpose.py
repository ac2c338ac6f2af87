"""nn.Conv1dTranspose as MindSpore defines it (weight (in, out / group, k); output lengths of the
three pad modes), in both modes, against a numpy loop of the adjoint of conv1d."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn

R = np.random.default_rng(8)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _conv1d_transpose_ref(x, w, stride, dilation, pad_mode, padding, group):
    """The adjoint of MindSpore's conv1d: input position t*stride + j*dilation - left receives
    x[o, t] * w[o, c, j]; the output length and the left padding follow each pad mode."""
    n, cin, length = x.shape
    k = w.shape[2]
    cout = w.shape[1] * group
    span = dilation * (k - 1) + 1
    if pad_mode == "same":
        out_len, left = length * stride, max(span - stride, 0) // 2
    elif pad_mode == "valid":
        out_len, left = length * stride + max(span - stride, 0), 0
    else:
        out_len, left = (length - 1) * stride - 2 * padding + span, padding
    y = np.zeros((n, cout, out_len))
    per_in, per_out = cin // group, cout // group
    for o in range(cin):
        g = o // per_in
        for c in range(per_out):
            for t in range(length):
                for j in range(k):
                    pos = t * stride + j * dilation - left
                    if 0 <= pos < out_len:
                        y[:, g * per_out + c, pos] += x[:, o, t] * w[o, c, j]
    return y


@MODES
@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=4, stride=2, pad_mode="pad", padding=1),
                                dict(kernel_size=3, stride=2, pad_mode="valid", dilation=2),
                                dict(kernel_size=3, stride=1, group=2, has_bias=True)],
                         ids=["same", "pad_stride2", "valid_dilated", "groups_bias"])
def test_conv1d_transpose_vs_numpy(mode, kw):
    ms.set_context(mode=mode)
    layer = nn.Conv1dTranspose(4, 6, dtype=ms.float64, **kw)
    x = R.normal(size=(2, 4, 5))
    got = layer(Tensor(x)).asnumpy()
    want = _conv1d_transpose_ref(x, layer.weight.asnumpy(), layer.stride, layer.dilation, layer.pad_mode,
                                 kw.get("padding", 0), layer.group)
    if layer.has_bias:
        want = want + layer.bias.asnumpy().reshape(1, -1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert layer.weight.shape == (4, 6 // layer.group, layer.kernel_size)
