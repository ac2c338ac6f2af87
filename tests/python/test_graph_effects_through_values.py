"""Graph mode keeps the effects of functions passed as values: an update function handed to
HyperMap / Map (with or without partial) or to a helper that calls it writes its Parameters, as it
does eagerly, even when what it returns is a constant (`return True`, MindSpore's optimizer
idiom). Before the fix, graph mode folded `(f(p, g),)` to `(True,)` and silently dropped the
update. The reference is the same code in PyNative mode and the closed form w - lr * g."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, ParameterTuple, Tensor, nn, ops
from mycel.ops import functional as F
from mycel.ops.multitype import HyperMap, Map


def _sgd_true(lr, p, g):
    ops.assign_sub(p, lr * g)
    return True


def _sgd_value(lr, p, g):
    return ops.assign_sub(p, lr * g)


def _sgd_no_lr(p, g):
    ops.assign_sub(p, 0.5 * g)
    return True


def _each(f, ps, gs):
    return (f(ps[0], gs[0]), f(ps[1], gs[1]))


class Updater(nn.Cell):
    def __init__(self, how, fn):
        super().__init__()
        self.params = ParameterTuple([Parameter(Tensor(np.full((3,), 1.0 + k, np.float32)), name=f"w{k}")
                                      for k in range(2)])
        self.how, self.fn = how, fn
        self.hyper_map, self.map_ = HyperMap(), Map()
        self.map_reverse = Map(None, True)

    def construct(self, g0, g1):
        grads = (g0, g1)
        if self.how == "hyper_map_partial":
            return self.hyper_map(F.partial(self.fn, 0.5), self.params, grads)
        if self.how == "map_partial":
            return self.map_(F.partial(self.fn, 0.5), self.params, grads)
        if self.how == "map_reverse_partial":
            return self.map_reverse(F.partial(self.fn, 0.5), self.params, grads)
        if self.how == "hyper_map":
            return self.hyper_map(self.fn, self.params, grads)
        if self.how == "helper":
            return _each(self.fn, self.params, grads)
        out = _each(self.fn, self.params, grads)  # helper, one item of its result read
        return out[1]


CASES = [("hyper_map_partial", _sgd_true), ("hyper_map_partial", _sgd_value), ("map_partial", _sgd_true),
         ("map_partial", _sgd_value), ("map_reverse_partial", _sgd_true), ("hyper_map", _sgd_no_lr),
         ("helper", _sgd_no_lr), ("helper_item", _sgd_no_lr)]


@pytest.mark.parametrize("how,fn", CASES, ids=[f"{h}-{f.__name__}" for h, f in CASES])
@pytest.mark.parametrize("mode", [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_update_through_a_function_value_writes_the_parameters(how, fn, mode):
    mycel.set_context(mode=mode)
    try:
        net = Updater(how, fn)
        g = [np.arange(3, dtype=np.float32) + k for k in range(2)]
        for step in range(2):  # a second run of the compiled step updates again
            net(Tensor(g[0]), Tensor(g[1]))
            for k, p in enumerate(net.params):
                np.testing.assert_allclose(p.asnumpy(), 1.0 + k - 0.5 * (step + 1) * g[k], rtol=1e-6,
                                           err_msg=f"{how} step {step} w{k}")
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_a_pure_helper_returning_constants_still_folds():
    """Folding stays for calls without effects: a helper returning a constant tuple is a
    compile-time shape (reshape takes it as its static attribute)."""
    def target(x):
        return (x.shape[0], -1)

    @mycel.jit
    def f(x):
        return ops.reshape(x, target(x))

    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    np.testing.assert_array_equal(f(Tensor(x)).asnumpy(), x.reshape(2, -1))
