"""Compile caches are bounded and owned (issue 21): a graph-mode function keeps at most
MYCEL_MAX_PROGRAMS compiled signatures (least recently used evicted, counted), results stay right
after evictions, and deleting a network frees it and its programs."""
import gc
import weakref

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn


@pytest.fixture(autouse=True)
def graph_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_compiled_signatures_are_an_lru_with_evictions_counted(monkeypatch):
    monkeypatch.setenv("MYCEL_MAX_PROGRAMS", "3")
    mycel.set_seed(0)
    net = nn.Dense(4, 2)
    w, b = net.weight.asnumpy(), net.bias.asnumpy()
    for batch in (1, 2, 3, 4, 5, 1, 2):  # 1 and 2 come back after being evicted
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    g = net._compiled.graph
    assert g.num_programs == 3
    assert g.evictions == 4  # 7 distinct compiles (1-5, then 1 and 2 again) kept 3


def test_deleting_a_training_network_frees_it():
    net = nn.SequentialCell([nn.Dense(4, 4), nn.ReLU()])
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
    step(Tensor(np.ones((2, 4), np.float32)), Tensor(np.ones((2, 4), np.float32)))
    refs = [weakref.ref(step), weakref.ref(net)]
    del step, net
    gc.collect()
    assert all(r() is None for r in refs)
