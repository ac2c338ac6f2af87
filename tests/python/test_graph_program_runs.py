"""A compiled graph's Program shared by threads (runs are serialized, results stay right) and
its shape-plan cache with many batch sizes (bounded; every size still computes correctly)."""
import threading

import numpy as np

import mycel
from mycel import Tensor, nn, ops

RNG = np.random.default_rng(11)


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.fc2 = nn.Dense(16, 4)

    def construct(self, x):
        return ops.softmax(self.fc2(ops.relu(self.fc1(x))), axis=-1)


def _eager(net, xs):
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    return [net(Tensor(x)).asnumpy() for x in xs]


def test_two_threads_share_one_compiled_graph():
    net = MLP()
    net.set_inputs(Tensor(shape=[None, 8], dtype=mycel.float32))
    xs = [RNG.standard_normal((b, 8)).astype(np.float32) for b in (64, 3, 64, 17) * 4]
    want = _eager(net, xs)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net(Tensor(xs[0]))  # compile under one thread; the threads then only run
    errors = []

    def worker(order):
        try:
            for _ in range(25):
                for k in order:
                    got = net(Tensor(xs[k])).asnumpy()
                    if not np.array_equal(got, want[k]):
                        errors.append(k)
        except Exception as e:  # noqa: BLE001 - reported below with the thread's failure
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(list(range(len(xs))),)),
               threading.Thread(target=worker, args=(list(reversed(range(len(xs)))),))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, f"concurrent runs gave wrong results for inputs {errors[:5]}"


def test_forty_batch_sizes_through_one_dynamic_program():
    net = MLP()
    net.set_inputs(Tensor(shape=[None, 8], dtype=mycel.float32))
    xs = [RNG.standard_normal((b, 8)).astype(np.float32) for b in range(1, 41)]
    want = _eager(net, xs)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for rounds in range(2):  # the second round revisits sizes whose plans were evicted
        for x, w in zip(xs, want):
            np.testing.assert_array_equal(net(Tensor(x)).asnumpy(), w)
    assert net._compiled.graph.num_programs == 1
