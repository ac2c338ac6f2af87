"""conv2d's weight gradient on small output planes (<= 16 positions), which runs as one GEMM over
the batch (kernels/cpu/conv_gemm_filter.cc), against a float64 numpy sum: strides, asymmetric
padding, dilation and odd sizes; eagerly and in a warm graph step (prepared launch), next to the
input gradient of the same convolution."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops

RNG = np.random.default_rng(5)


def filter_grad_ref(x, dy, kh, kw, stride, pads, dil):
    """dw[o, c, i, j] = sum over n, oh, ow of dy[n, o, oh, ow] * xpad[n, c, oh*s + i*d, ow*s + j*d]."""
    pt, pb, pl, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, o, oh, ow = dy.shape
    dw = np.zeros((o, x.shape[1], kh, kw))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dil:i * dil + (oh - 1) * stride + 1:stride,
                     j * dil:j * dil + (ow - 1) * stride + 1:stride]
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy.astype(np.float64), win)
    return dw


# (n, c, hw, oc, k, stride, pads, dilation): every case has an output plane of <= 16 positions.
CASES = [(8, 32, 4, 32, 3, 1, (1, 1, 1, 1), 1),    # ResNet-18's last stage, small
         (5, 7, 8, 19, 3, 2, (1, 1, 1, 1), 1),      # stride 2 from 8x8, odd channels
         (8, 9, 7, 16, 3, 2, (0, 1, 1, 0), 1),      # asymmetric padding, 3x3 plane
         (4, 5, 6, 17, 2, 1, (0, 0, 0, 0), 2),      # dilation 2, 4x4 output
         (9, 3, 5, 16, (3, 1), 1, (1, 1, 0, 0), 1)]  # a rectangular kernel, 5x5 plane: fallback


def conv_out(hw, k, stride, pads, dil, axis):
    lo, hi = (pads[0], pads[1]) if axis == 0 else (pads[2], pads[3])
    return (hw + lo + hi - dil * (k - 1) - 1) // stride + 1


@pytest.mark.parametrize("n,c,hw,oc,k,stride,pads,dil", CASES)
def test_filter_gradient_equals_numpy(n, c, hw, oc, k, stride, pads, dil):
    kh, kw = (k, k) if isinstance(k, int) else k
    oh, ow = conv_out(hw, kh, stride, pads, dil, 0), conv_out(hw, kw, stride, pads, dil, 1)
    x = RNG.standard_normal((n, c, hw, hw)).astype(np.float32)
    dy = RNG.standard_normal((n, oc, oh, ow)).astype(np.float32)
    op = ops.Conv2DBackpropFilter(filter_size=(oc, c, kh, kw), pad_mode="pad", pad=pads,
                                  stride=(stride, stride), dilation=(dil, dil))
    ref = filter_grad_ref(x, dy, kh, kw, stride, pads, dil)
    got = op(Tensor(dy), Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


class ConvSum(nn.Cell):
    def __init__(self, w, dyw):
        super().__init__()
        self.conv = nn.Conv2d(w.shape[1], w.shape[0], 3, pad_mode="pad", padding=1, has_bias=False)
        self.conv.weight.set_data(Tensor(w))
        self.dyw = Tensor(dyw)

    def construct(self, x):
        return (self.conv(x) * self.dyw).sum()


def test_graph_step_gradients():
    """Weight and input gradients of sum(conv(x) * r) on a 4x4 plane, twice in graph mode."""
    x = RNG.standard_normal((16, 24, 4, 4)).astype(np.float32)
    w = (RNG.standard_normal((32, 24, 3, 3)) * 0.1).astype(np.float32)
    r = RNG.standard_normal((16, 32, 4, 4)).astype(np.float32)
    dw_ref = filter_grad_ref(x, r, 3, 3, 1, (1, 1, 1, 1), 1)
    # The input gradient: the transposed convolution of r with w (flipped), as a numpy sum.
    rp = np.pad(r.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dx_ref = np.zeros(x.shape)
    for i in range(3):
        for j in range(3):
            dx_ref += np.einsum("nohw,oc->nchw", rp[:, :, 2 - i:6 - i, 2 - j:6 - j], w[:, :, i, j])
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = ConvSum(w, r)
        grad = ops.GradOperation(get_all=True, get_by_list=True)(net, [net.conv.weight])
        for _ in range(2):
            (dx,), (dw,) = grad(Tensor(x))
            np.testing.assert_allclose(dw.asnumpy(), dw_ref, rtol=0, atol=1e-5 * np.abs(dw_ref).max())
            np.testing.assert_allclose(dx.asnumpy(), dx_ref, rtol=0, atol=1e-5 * np.abs(dx_ref).max())
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
