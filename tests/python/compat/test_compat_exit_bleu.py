"""OnRequestExit (training ends after the step a signal arrives in, and the weights of that
step are saved and exported) and BleuScore (MindSpore's documented example, closed forms, and an
independent brute force over n-gram positions), as MindSpore defines them."""
import math
import os
import signal

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.dataset import NumpySlicesDataset
from mycel.train import BleuScore, Callback, Model, OnRequestExit, load_checkpoint


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)


class _SignalAt(Callback):
    """Sends the signal to this process during step `at`, and records the steps that ran."""

    def __init__(self, at, sig):
        self.at, self.sig, self.steps = at, sig, []

    def on_train_step_begin(self, run_context):
        step = run_context.original_args().cur_step_num
        self.steps.append(step)
        if step == self.at:
            os.kill(os.getpid(), self.sig)


class _Weights(Callback):
    def __init__(self, net):
        self.net, self.last = net, None

    def on_train_step_end(self, run_context):
        self.last = self.net.weight.asnumpy().copy()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1])
def test_on_request_exit_stops_after_the_step_and_saves(tmp_path, sig):
    mycel.set_seed(3)
    net = nn.Dense(4, 2)
    model = Model(net, nn.CrossEntropyLoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))
    before = signal.getsignal(sig)
    sender, weights = _SignalAt(5, sig), _Weights(net)
    exit_cb = OnRequestExit(file_name="net", directory=str(tmp_path / "out"), sig=sig)
    model.train(3, _data(), callbacks=[sender, weights, exit_cb])
    assert sender.steps == [1, 2, 3, 4, 5]  # 3 epochs of 8 steps were asked for
    assert signal.getsignal(sig) is before  # the previous handler is back
    saved = load_checkpoint(str(tmp_path / "out" / "net.ckpt"))
    np.testing.assert_array_equal(saved["weight"].asnumpy(), weights.last)
    assert (tmp_path / "out" / "net.mindir").is_file()


def test_on_request_exit_without_signal_saves_nothing(tmp_path):
    net = nn.Dense(4, 2)
    model = Model(net, nn.CrossEntropyLoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))
    model.train(1, _data(), callbacks=[OnRequestExit(directory=str(tmp_path))])
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="OnRequestExit: sig"):
        OnRequestExit(sig=signal.SIGKILL)
    with pytest.raises(ValueError, match="OnRequestExit: save_ckpt"):
        OnRequestExit(save_ckpt=1)


def test_bleu_matches_mindspores_documented_example():
    candidate = [["i", "have", "a", "pen", "on", "my", "desk"]]
    reference = [[["i", "have", "a", "pen", "in", "my", "desk"],
                  ["there", "is", "a", "pen", "on", "the", "desk"]]]
    metric = BleuScore()
    metric.update(candidate, reference)
    assert metric.eval() == pytest.approx(0.5946035575013605, rel=1e-12)
    assert nn.BleuScore is BleuScore  # MindSpore 1.x's nn.BleuScore


def _brute_bleu(cands, refs, n_max, smooth):
    """BLEU from its definition, by comparing every pair of positions (no Counter, no clipping
    shortcut): a candidate n-gram occurrence counts while fewer earlier occurrences matched than
    the most any reference holds."""
    num, den = [0.0] * n_max, [0.0] * n_max
    c_len = r_len = 0
    for cand, rs in zip(cands, refs):
        c_len += len(cand)
        r_len += sorted((abs(len(r) - len(cand)), k, len(r)) for k, r in enumerate(rs))[0][2]
        for n in range(1, n_max + 1):
            grams = [tuple(cand[i:i + n]) for i in range(len(cand) - n + 1)]
            den[n - 1] += len(grams)
            for i, g in enumerate(grams):
                earlier = sum(1 for h in grams[:i] if h == g)
                most = max(sum(1 for j in range(len(r) - n + 1) if tuple(r[j:j + n]) == g) for r in rs)
                num[n - 1] += earlier < most
    if smooth:
        p = [(a + 1) / (b + 1) for a, b in zip(num, den)]
    else:
        if min(num) == 0:
            return 0.0
        p = [a / b for a, b in zip(num, den)]
    bp = 1.0 if c_len > r_len else math.exp(1 - r_len / c_len)
    return bp * math.exp(sum(math.log(x) for x in p) / n_max)


@pytest.mark.parametrize("n_gram,smooth", [(4, False), (2, False), (4, True), (3, True)])
def test_bleu_equals_a_brute_force_over_batches(n_gram, smooth):
    rng = np.random.default_rng(0)  # a draw where no precision is 0
    words = ["a", "b", "c"]
    cands = [list(rng.choice(words, size=rng.integers(4, 9))) for _ in range(6)]
    refs = [[list(rng.choice(words, size=rng.integers(4, 9))) for _ in range(rng.integers(1, 4))] for _ in range(6)]
    metric = BleuScore(n_gram, smooth)
    metric.update(cands[:3], refs[:3])
    metric.update(cands[3:], refs[3:])  # counts accumulate over updates: a corpus score
    assert metric.eval() > 0
    assert metric.eval() == pytest.approx(_brute_bleu(cands, refs, n_gram, smooth), rel=1e-12)
    short = BleuScore(4)
    short.update([["x", "y"]], [[["x", "y"]]])
    assert short.eval() == 0.0  # no 3- or 4-grams: a zero precision
    same = BleuScore(2)
    same.update([["x", "y", "z"]], [[["x", "y", "z"]]])
    assert same.eval() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="BleuScore: n_gram"):
        BleuScore(5)
