"""Weights stored as slices (slice_parameters=True), shared by the mpirun worker
(autopar_sliced.py) and the single-process reference in test_parallel_sliced.py: semi-auto MLPs
whose matmuls split the weights by columns, by rows (the reduction dim; 2 ranks), and on 4 ranks
by rows in 2 and columns in 2 (each slice held by 2 ranks: a mirror group), and the AUTO_PARALLEL wide
classifier. Momentum, so the optimizer's state is sliced too."""
from mycel import nn
from mpi_workers.autopar_auto_common import Wide, wide_data
from mpi_workers.autopar_common import FEATURES, HIDDEN, CLASSES, MLP, data



def make_loss_opt(net):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return loss, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)


def make_step(net):
    loss, opt = make_loss_opt(net)
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


def cases(n):
    """name -> (mode, network factory, data, {weight: (whole shape, how many slices it is cut into)})."""
    w1, w2 = (FEATURES, HIDDEN), (HIDDEN, CLASSES)
    out = {"columns": ("semi", lambda: MLP(((1, 1), (1, n)), ((1, n), (n, 1))), data("mlp"),
                       {"w1": (w1, n), "w2": (w2, n)})}
    if n == 2:  # (4 ranks: fewer cases, a shorter job)
        out["reduction"] = ("semi", lambda: MLP(((1, n), (n, 1))), data("mlp"), {"w1": (w1, n), "w2": (w2, 1)})
    else:
        out["rows_columns"] = ("semi", lambda: MLP(((2, 2), (2, 1)), ((2, 1), (1, 2))), data("mlp"),
                               {"w1": (w1, 2), "w2": (w2, 2)})
    # The search splits fc by classes on every rank and, on 4 ranks, w1 ((2, 1), (1, 2)): in 2.
    out["wide"] = ("auto", Wide, wide_data(), {"w1": ((8, 32), min(n, 2)), "fc": ((32, 2048), n)})
    return out
