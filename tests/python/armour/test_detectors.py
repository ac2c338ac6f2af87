"""Detectors on constructed cases with closed forms: an auto-encoder that projects onto the data's
subspace (MagNet), Jensen-Shannon divergence against scipy, a model whose class-1 region is a thin
slab (region-based), near-duplicate query streams (similarity; thresholds against a brute-force
distance matrix), and the ensemble's policies."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist, jensenshannon

from mycel import Model, Tensor, nn
from mycel.armour import (DivergenceBasedDetector, EnsembleDetector, ErrorBasedDetector, RegionBasedDetector,
                          SimilarityDetector)
from mycel.armour.adv_robustness.detectors import Detector


def dense(w, b):
    """nn.Dense computing x @ w + b."""
    net = nn.Dense(w.shape[0], w.shape[1])
    net.weight.set_data(Tensor(np.ascontiguousarray(w.T, dtype=np.float32)))
    net.bias.set_data(Tensor(np.asarray(b, np.float32)))
    return net


def subspace_data(n, seed=0):
    """Points near a 2-D affine plane in [0, 1]^8 and the auto encoder projecting onto it."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((8, 2)))[0]
    c = np.full(8, 0.5)
    x = c + rng.uniform(-0.2, 0.2, (n, 2)) @ basis.T + rng.normal(0, 0.01, (n, 8))
    p = basis @ basis.T
    return x.astype(np.float32), p, c, basis


def test_error_based_detector_scores_the_reconstruction_error():
    x, p, c, basis = subspace_data(200)
    ae = dense(p, c - p @ c)               # x -> c + P (x - c)
    det = ErrorBasedDetector(Model(ae), false_positive_rate=0.1)
    want = ((x - (c + (x - c) @ p)) ** 2).mean(axis=1)
    np.testing.assert_allclose(det.detect_diff(x), want, rtol=1e-4, atol=1e-9)
    det.fit(x)
    assert det.detect(x).sum() == 20       # exactly the false positive rate of the benign data
    off = np.linalg.qr(np.c_[basis, np.random.default_rng(1).standard_normal((8, 1))])[0][:, 2]
    adv = x[:50] + 0.1 * off.astype(np.float32)
    assert det.detect(adv).all()
    out = det.transform(np.clip(adv * 3 - 1, 0, 1))
    assert out.min() >= 0 and out.max() <= 1
    det.set_threshold(1.0)
    assert not det.detect(adv).any()


def test_divergence_based_detector_against_scipy():
    x, p, c, _ = subspace_data(20)
    ae = dense(p, c - p @ c)
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((8, 3)) * 3, rng.standard_normal(3)
    clf = dense(w, b)
    x = x + rng.normal(0, 0.05, x.shape).astype(np.float32)
    for t in (1, 2):
        det = DivergenceBasedDetector(Model(ae), Model(clf), t=t)

        def soft(z):
            e = np.exp(z / t - (z / t).max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        recon = c + (x - c) @ p
        want = [jensenshannon(a, b_) ** 2 for a, b_ in zip(soft(x @ w + b), soft(recon @ w + b))]
        np.testing.assert_allclose(det.detect_diff(x), want, rtol=2e-3, atol=1e-8)


def slab_model(w, c, eps):
    """2 classes: class 1 exactly on the slab |w.x - c| < eps (logits relu(w.x-c)+relu(c-w.x), eps)."""
    return nn.SequentialCell([dense(np.c_[w, -w], [-c, c]), nn.ReLU(),
                              dense(np.array([[1.0, 0.0], [1.0, 0.0]]), [0.0, eps])])


def test_region_based_detector_flags_examples_in_a_thin_slab():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(4)
    w /= np.linalg.norm(w)
    c = w.sum() / 2                                  # the slab passes through the cube's centre
    net = slab_model(w, c, 0.02)
    x = rng.uniform(0, 1, (400, 4))
    s = x @ w - c
    benign = x[np.abs(s) > 0.3][:40].astype(np.float32)
    adv = (x - np.outer(s, w))[:60]                  # projected onto the slab's centre: class 1
    adv = adv[(adv.min(axis=1) > 0.05) & (adv.max(axis=1) < 0.95)][:20].astype(np.float32)
    assert (net(Tensor(adv)).asnumpy().argmax(axis=1) == 1).all() and len(adv) >= 5
    det = RegionBasedDetector(Model(net), number_points=25, max_radius=0.2, search_step=0.05, sparse=True, seed=0)
    assert det.fit(benign, np.zeros(len(benign), np.int32)) == pytest.approx(0.15)
    assert det.detect(adv).all() and not det.detect(benign).any()
    raw, region = det.detect_diff(adv)
    assert (raw.argmax(axis=1) == 1).all() and (region == 0).all()
    assert det.transform(adv).shape == (len(adv), 25, 4)
    assert np.abs(det.transform(adv) - adv[:, None]).max() <= 0.15 + 1e-6


def test_region_based_fit_keeps_every_radius_that_cannot_flip_a_label():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((6, 2))
    x = rng.uniform(0, 1, (300, 6)).astype(np.float32)
    z = x @ w
    y = z.argmax(axis=1)
    margin = np.abs(z[:, 0] - z[:, 1])
    keep = margin > 0.4
    x, y, margin = x[keep], y[keep], margin[keep]
    safe = margin.min() / np.abs(w[:, 0] - w[:, 1]).sum()   # no point of an L-inf cube this small flips
    det = RegionBasedDetector(Model(dense(w, np.zeros(2))), number_points=15, max_radius=1.0, search_step=0.02,
                              sparse=False, seed=1)
    r = det.fit(x, np.eye(2)[y])
    assert r >= safe - 0.02 - 1e-9


def test_similarity_detector_thresholds_and_streams():
    rng = np.random.default_rng(5)
    train = rng.uniform(0, 1, (300, 16)).astype(np.float32)
    det = SimilarityDetector(Model(nn.Flatten()), max_k_neighbor=5, chunk_size=64, tuning=True, fpr=0.01)
    ks, thresholds = det.fit(train.reshape(300, 4, 4))
    d = cdist(train, train)
    np.fill_diagonal(d, np.inf)
    nearest = np.sort(d, axis=1)
    want = [np.sort(nearest[:, :k].mean(axis=1))[3] for k in range(1, 6)]
    assert ks == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(thresholds, want, rtol=1e-5)
    det.detect(rng.uniform(0, 1, (100, 4, 4)).astype(np.float32))   # benign: spread out
    assert det.get_detected_queries() == []
    det.clear_buffer()
    x0 = rng.uniform(0, 1, (1, 4, 4))
    attack = (x0 + rng.normal(0, 0.005, (60, 4, 4))).astype(np.float32)   # an attack's near-duplicates
    det.detect(attack)
    hits = det.get_detected_queries()
    # each detection clears the buffer: k queries refill it, the next one is detected
    assert hits == list(range(100 + 6, 161, 6))
    assert det.get_detection_interval() == [6] * (len(hits) - 1)
    with pytest.raises(NotImplementedError):
        det.detect_diff(attack)


class Fixed(Detector):
    def __init__(self, out):
        self.out = np.array(out)

    def detect(self, inputs):
        return self.out


def test_ensemble_policies():
    a, b, c = Fixed([1, 1, 0, 0]), Fixed([1, 0, 1, 0]), Fixed([1, 0, 0, 0])
    x = np.zeros((4, 2), np.float32)
    np.testing.assert_array_equal(EnsembleDetector([a, b, c], "vote").detect(x), [1, 0, 0, 0])
    np.testing.assert_array_equal(EnsembleDetector([a, b], "vote").detect(x), [1, 0, 0, 0])
    np.testing.assert_array_equal(EnsembleDetector([a, b, c], "all").detect(x), [1, 0, 0, 0])
    np.testing.assert_array_equal(EnsembleDetector([a, b, c], "any").detect(x), [1, 1, 1, 0])


def test_detector_bad_arguments():
    with pytest.raises(TypeError, match="ErrorBasedDetector: auto_encoder must be a mycel Model or Cell"):
        ErrorBasedDetector(lambda v: v)
    with pytest.raises(ValueError, match="false_positive_rate must be <= 1"):
        ErrorBasedDetector(nn.Flatten(), false_positive_rate=2)
    with pytest.raises(ValueError, match="option must be 'jsd'"):
        DivergenceBasedDetector(nn.Flatten(), nn.Flatten(), option="kl")
    with pytest.raises(ValueError, match="no radius"):
        RegionBasedDetector(nn.Flatten()).detect(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="fit needs more than max_k_neighbor"):
        SimilarityDetector(nn.Flatten(), max_k_neighbor=10).fit(np.zeros((5, 3), np.float32))
    with pytest.raises(ValueError, match="policy must be one of"):
        EnsembleDetector([Fixed([0])], policy="most")
    with pytest.raises(ValueError, match="no threshold"):
        SimilarityDetector(nn.Flatten()).detect(np.zeros((2, 3), np.float32))
