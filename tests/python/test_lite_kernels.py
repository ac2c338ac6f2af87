"""The lite runtime's own loops for small and memory-bound layers (kernels/cpu/infer_small.h):
dense over a few rows with panel-packed weights, a residual add with its relu in one pass, and
global average pooling read straight from oneDNN's blocked layout. Each against numpy or graph
mode, with the kernels on and off and with the blocked layout on and off."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from edge_helpers import graph_outputs, randomize

lite = _mycel.lite


class _Mlp(nn.Cell):
    """Dense layers whose widths are not multiples of 8 nor of the 64-output panels."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(100, 150)
        self.fc2 = nn.Dense(150, 7)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)))


class _Residual(nn.Cell):
    """conv -> relu -> conv, + the shortcut, relu, global average pooling: a ResNet block's tail
    with 12 or 44 channels (not a multiple of the layout's channel block: padded lanes; 44: the
    pooling's four-block pass and a remainder of two blocks)."""

    def __init__(self, keep_dims, channels=12):
        super().__init__()
        self.a = nn.Conv2d(3, channels, 3, pad_mode="pad", padding=1, has_bias=True)
        self.b = nn.Conv2d(channels, channels, 3, pad_mode="pad", padding=1, has_bias=True)
        self.keep_dims = keep_dims

    def construct(self, x):
        h = ops.relu(self.a(x))
        y = ops.relu(self.b(h) + h)
        return ops.mean(y, axis=(2, 3), keep_dims=self.keep_dims)


def _sessions(path):
    return {(small, blocked): lite.Session.from_file(path, num_threads=1, small_kernels=small,
                                                     blocked_layout=blocked)
            for small in (True, False) for blocked in (True, False)}


def test_dense_rows_panels_match_numpy(tmp_path):
    net = randomize(_Mlp(), seed=4)
    rng = np.random.default_rng(4)
    path = mycel.export(net, Tensor(rng.standard_normal((2, 100)).astype(np.float32)),
                        file_name=str(tmp_path / "mlp"), file_format="MINDIR")
    w1, b1, w2, b2 = (p.asnumpy().astype(np.float64) for _, p in net.parameters_and_names())
    for (small, _), s in _sessions(path).items():
        assert s.node_ops == ["dense+relu", "dense"], s.node_ops
        for rows in (1, 3, 6):  # <= 4 rows: the panel loop; 6: oneDNN's matmul
            x = rng.standard_normal((rows, 100)).astype(np.float32)
            want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
            got = s.run([Tensor(x)])[0].asnumpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            assert s.stats()["num_small"] == (2 if small and rows <= 4 else 0)


@pytest.mark.parametrize("threads", [2, 3])
def test_dense_rows_split_over_threads_match_numpy(threads, tmp_path):
    """A wide classifier (1000 outputs: 16 panels, the last one 40 wide) with its panels split over
    the pool's threads (serial_work=0: the plan keeps nothing on one thread)."""
    net = randomize(nn.Dense(300, 1000), seed=6)
    rng = np.random.default_rng(6)
    path = mycel.export(net, Tensor(rng.standard_normal((1, 300)).astype(np.float32)),
                        file_name=str(tmp_path / "wide"), file_format="MINDIR")
    w, b = (p.asnumpy().astype(np.float64) for _, p in net.parameters_and_names())
    s = lite.Session.from_file(path, num_threads=threads, serial_work=0)
    for rows in (1, 3):
        x = rng.standard_normal((rows, 300)).astype(np.float32)
        np.testing.assert_allclose(s.run([Tensor(x)])[0].asnumpy(), x @ w.T + b, rtol=1e-4, atol=1e-4)
        st = s.stats()
        assert st["num_small"] == 1 and st["num_serial"] == 0 and st["plan_threads"] == threads


@pytest.mark.parametrize("keep_dims,channels", [(False, 12), (True, 12), (False, 44)])
def test_residual_add_relu_and_global_pool_on_blocked_layout(keep_dims, channels, tmp_path):
    net = randomize(_Residual(keep_dims, channels), seed=5)
    rng = np.random.default_rng(5)
    path = mycel.export(net, Tensor(rng.standard_normal((2, 3, 9, 9)).astype(np.float32)),
                        file_name=str(tmp_path / "res"), file_format="MINDIR")
    for (small, blocked), s in _sessions(path).items():
        # the relu after the add is the add's own: one pass over the data
        assert s.node_ops == ["conv2d+relu", "conv2d", "add+relu", "mean"], s.node_ops
        for batch in (1, 3):
            x = rng.standard_normal((batch, 3, 9, 9)).astype(np.float32)
            want = graph_outputs(net, x)
            got = s.run([Tensor(x)])[0].asnumpy()
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        st = s.stats()
        if blocked:  # every activation stays blocked: the pooling reads it, no reorder to NCHW
            assert st["num_blocked"] == 3 and st["num_reorders"] == 0, st
        else:
            assert st["num_blocked"] == 0, st
