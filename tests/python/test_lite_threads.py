"""The lite runtime's per-node thread decision (lite/thread_plan.h): when a session plans, each
node whose work (multiply-adds) is below a threshold is set to run on one thread. The counts are
checked against the layers' own arithmetic, the outputs against graph mode at every setting, and
a change of the pool size makes the session plan again."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel
from edge_helpers import MODELS, graph_outputs, randomize

lite = _mycel.lite


def _export(name, tmp_path, seed=0):
    make, shape = MODELS[name]
    net = randomize(make(), seed=seed)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="MINDIR")
    return net, x, path


def _lenet_work(net, h=32):
    """Multiply-adds of LeNet5's convolutions and dense layers, from their weights: a valid
    convolution gives (h - k + 1)^2 positions per output channel, then a 2x2 pooling halves h."""
    work = []
    for conv in (net.conv1, net.conv2):
        oc, c, k, _ = conv.weight.shape
        oh = h - k + 1
        work.append(oc * oh * oh * c * k * k)
        h = oh // 2
    for fc in (net.fc1, net.fc2, net.fc3):
        n, k = fc.weight.shape
        work.append(n * k)
    return work


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_lenet5_runs_on_one_thread_below_the_threshold(tmp_path):
    net, x, path = _export("lenet5", tmp_path)
    want = graph_outputs(net, x)
    s = lite.Session.from_file(path, num_threads=2)
    _close(s.run([Tensor(x)])[0].asnumpy(), want)
    st = s.stats()
    assert st["plan_threads"] == 2
    ops = [op.split("+")[0] for op in s.node_ops]
    got = [w for op, w in zip(ops, st["node_work"]) if op in ("conv2d", "dense")]
    assert got == _lenet_work(net)
    # Every LeNet5 layer is far below the default threshold (2^20 multiply-adds): one thread.
    assert max(st["node_work"]) < 2**20
    assert st["num_serial"] == st["num_nodes"] and all(st["node_serial"])
    # serial_work=0: every node may split; the threshold between the two convolutions splits the
    # one above it only. Same outputs either way.
    for serial_work, serial in ((0, [False] * len(ops)),
                                (200_000, [w < 200_000 for w in st["node_work"]])):
        t = lite.Session.from_file(path, num_threads=2, serial_work=serial_work)
        _close(t.run([Tensor(x)])[0].asnumpy(), want)
        assert t.stats()["node_serial"] == serial
    assert serial[ops.index("conv2d")] and not serial[len(ops) - 1 - ops[::-1].index("conv2d")]


def test_one_thread_plans_nothing_serial_and_pool_changes_replan(tmp_path):
    net, x, path = _export("lenet5", tmp_path)
    want = graph_outputs(net, x)
    two = lite.Session.from_file(path, num_threads=2)
    _close(two.run([Tensor(x)])[0].asnumpy(), want)
    assert two.stats()["num_plans"] == 1 and two.stats()["num_serial"] > 0
    one = lite.Session.from_file(path, num_threads=1)  # sets the shared pool to one thread
    _close(one.run([Tensor(x)])[0].asnumpy(), want)
    assert one.stats()["num_serial"] == 0 and one.stats()["plan_threads"] == 1
    # The same input shape, but the pool changed: the first session plans again for it.
    _close(two.run([Tensor(x)])[0].asnumpy(), want)
    assert two.stats()["num_plans"] == 2 and two.stats()["plan_threads"] == 1
    assert two.stats()["num_serial"] == 0


@pytest.mark.parametrize("serial_work", [-1, 0, 2**40])
def test_resnet18_outputs_at_every_threshold(serial_work, tmp_path):
    net, x, path = _export("resnet18", tmp_path)
    want = graph_outputs(net, x)
    s = lite.Session.from_file(path, num_threads=2, serial_work=serial_work)
    _close(s.run([Tensor(x)])[0].asnumpy(), want)
    st = s.stats()
    limit = 2**20 if serial_work < 0 else serial_work
    assert st["node_serial"] == [w < limit for w in st["node_work"]]
    if serial_work < 0:  # the default splits ResNet-18's large convolutions only
        assert 0 < st["num_serial"] < st["num_nodes"]
    # conv2d's count: the output's elements times the input channels and taps of each.
    convs = [w for op, w in zip(s.node_ops, st["node_work"]) if op.startswith("conv2d")]
    assert max(convs) == 512 * 4 * 4 * 512 * 9  # the last stage's 3x3 convolutions at 4x4


def test_depthwise_convolutions_count_four_times_their_work(tmp_path):
    """A depthwise convolution runs at about a quarter of a dense one's multiply-add rate, so the
    thread decision weighs its work 4x: MobileNetV2's depthwise layers between 2^18 and 2^20
    multiply-adds split over two threads while 1x1 convolutions of the same work do not."""
    net, x, path = _export("mobilenet_v2", tmp_path)
    want = graph_outputs(net, x)
    s = lite.Session.from_file(path, num_threads=2)
    _close(s.run([Tensor(x)])[0].asnumpy(), want)
    st = s.stats()
    # The lite graph keeps the convolutions in the network's order (BatchNorm folded into them).
    cells = [c for _, c in net.cells_and_names() if isinstance(c, mycel.nn.Conv2d)]
    convs = [k for k, op in enumerate(s.node_ops) if op.startswith("conv2d")]
    assert len(cells) == len(convs)
    depthwise = [c.group > 1 and c.group == c.in_channels for c in cells]
    assert any(depthwise) and not all(depthwise)
    for k, dw in zip(convs, depthwise):
        assert st["node_serial"][k] == ((4 if dw else 1) * st["node_work"][k] < 2**20), (k, dw)
    # The rule decides some layers here: depthwise ones split that plain work would keep serial.
    assert any(dw and st["node_work"][k] < 2**20 and not st["node_serial"][k]
               for k, dw in zip(convs, depthwise))
    assert any(not dw and st["node_serial"][k] for k, dw in zip(convs, depthwise))


def test_small_models_stay_float32_under_bf16(tmp_path):
    """A bf16 request on a model under 2^20 multiply-adds per run (batch 1) runs float32: LeNet5
    (0.43M) was 0.70x of float32 in bf16, its casts and bf16 kernel calls costing more than its
    convolutions saved, while the small ResNet (3.3M) gained 1.2x. The note gives the count."""
    net, x, path = _export("lenet5", tmp_path)
    want = lite.Session.from_file(path, num_threads=1).run([Tensor(x)])[0].asnumpy()
    s = lite.Session.from_file(path, num_threads=1, precision="bfloat16", emulate_bf16=True)
    st = s.stats()
    assert st["precision"] == "float32" and "cast" not in s.node_ops
    note = st["precision_note"]
    assert note.startswith("bf16 requested, running float32: the model's ") and "below 1048576" in note
    work = int(note.split("the model's ")[1].split()[0])
    # at least its convolutions and dense layers, counted from their weights
    assert sum(_lenet_work(net)) <= work < 2**20
    np.testing.assert_array_equal(s.run([Tensor(x)])[0].asnumpy(), want)
    forced = lite.Session.from_file(path, num_threads=1, precision="bfloat16", emulate_bf16=True,
                                    bf16_min_work=0)
    assert forced.stats()["precision"] == "bfloat16" and forced.node_ops[0] == "cast"
    _, x18, path18 = _export("resnet18", tmp_path)
    big = lite.Session.from_file(path18, num_threads=1, precision="bfloat16", emulate_bf16=True)
    assert big.stats()["precision"] == "bfloat16"  # 556M multiply-adds: over the threshold


class _SmallPlanes(mycel.nn.Cell):
    """conv (Winograd at 8x8) -> stride-2 conv -> conv at 4x4: on Zen 4 the last two run oneDNN's
    brgconv on NHWC between nChw8c tensors, their reorders as the plain loops of dnnl_conv.cc
    (20 and 36 channels: the last 8-channel block of 20 is padding, kept zero)."""

    def __init__(self):
        super().__init__()
        nn = mycel.nn
        self.c1 = nn.Conv2d(16, 20, 3, pad_mode="pad", padding=1, has_bias=True)
        self.c2 = nn.Conv2d(20, 36, 3, stride=2, pad_mode="pad", padding=1, has_bias=True)
        self.c3 = nn.Conv2d(36, 20, 3, pad_mode="pad", padding=1, has_bias=True)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.c3(self.relu(self.c2(self.relu(self.c1(x)))))


def _conv_f64(x, w, b, stride):
    """3x3 convolution with padding 1 in float64 (N, C, H, W)."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    y = np.zeros((n, w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + b[None, :, None, None]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_small_plane_convolutions_match_float64_on_1_to_3_threads(threads, tmp_path):
    net = randomize(_SmallPlanes(), seed=3)
    x = np.random.default_rng(3).standard_normal((1, 16, 8, 8)).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "small_planes"), file_format="MINDIR")
    p = {k: v.asnumpy().astype(np.float64) for k, v in net.parameters_dict().items()}
    h = np.maximum(_conv_f64(x.astype(np.float64), p["c1.weight"], p["c1.bias"], 1), 0)
    h = np.maximum(_conv_f64(h, p["c2.weight"], p["c2.bias"], 2), 0)
    want = _conv_f64(h, p["c3.weight"], p["c3.bias"], 1)
    s = lite.Session.from_file(path, num_threads=threads, serial_work=0, profile=True)
    for _ in range(2):  # the first run prepares the kernels, the second reuses them
        _close(s.run([Tensor(x)])[0].asnumpy(), want)
    st = s.stats()
    assert len(st["node_us"]) == st["num_nodes"]
    # With several threads the profile gives each thread's CPU time per node.
    assert len(st["node_thread_us"]) == (st["num_nodes"] if threads > 1 else 0)
    assert all(len(t) == threads and min(t) >= 0 for t in st["node_thread_us"])
