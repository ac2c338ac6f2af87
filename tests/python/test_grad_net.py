"""The gradient test net, bounded slice (issue 22): 30 seeded random networks, each checked in
both modes for equal outputs, gradients against float64 finite differences, and one optimizer
step that moves every parameter by -lr * gradient (tests/python/grad_net.py). Seeds 6, 11 and 14
have the deep residual stacks whose last weights graph mode once left untrained.
bench/grad_net_sweep.py runs thousands."""
import pytest

from grad_net import check, random_net


@pytest.mark.parametrize("seed", range(30))
def test_random_network(seed):
    net, x, _ = random_net(seed)
    check(net, x, seed)
