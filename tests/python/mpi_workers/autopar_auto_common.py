"""The AUTO_PARALLEL test problems, shared by the mpirun worker (autopar_auto.py) and the
single-process reference in test_parallel_auto.py: the MLP of autopar_common without any hint,
and a classifier whose last matmul is wide (a 32 x 2048 weight against a batch of 16), which the
search must split by classes (model parallel). The topology makes communication dear (1 GB/s):
reducing the wide weight's whole gradient every step (data parallel) costs ~100x what moving the
activations does."""
import numpy as np

from mycel import Parameter, Tensor, nn, ops
from mpi_workers.autopar_common import BATCH, MLP, STEPS

FEATURES, HIDDEN, WIDE = 8, 32, 2048
TOPOLOGY = {"devices_per_node": 8, "flops_per_second": 1.0e11, "memory_per_device_gib": 1,
            "intra_node": {"latency_us": 2, "bandwidth_gbps": 1}, "inter_node": {"latency_us": 2, "bandwidth_gbps": 1}}


class Wide(nn.Cell):
    """x -> matmul -> relu -> wide matmul (the classifier)."""

    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(3)
        self.w1 = Parameter(Tensor((rng.standard_normal((FEATURES, HIDDEN)) * 0.3).astype(np.float32)), name="w1")
        self.fc = Parameter(Tensor((rng.standard_normal((HIDDEN, WIDE)) * 0.1).astype(np.float32)), name="fc")
        self.mm1, self.mm2, self.relu = ops.MatMul(), ops.MatMul(), ops.ReLU()

    def construct(self, x):
        return self.mm2(self.relu(self.mm1(x, self.w1)), self.fc)


def wide_data():
    rng = np.random.RandomState(4)
    x = rng.standard_normal((STEPS * BATCH, FEATURES)).astype(np.float32)
    y = rng.randint(0, WIDE, STEPS * BATCH).astype(np.int32)
    return x, y


def cases(n, search_mode="dynamic_programming"):
    """name -> (network factory, data) on n ranks: the MLP and the wide net without hints (not
    under sharding_propagation, which needs some), and the MLP with its first matmul's weight
    split by columns (a shard() hint the search must keep)."""
    from mpi_workers.autopar_common import data
    out = {} if search_mode == "sharding_propagation" else {"mlp": (MLP, data("mlp")), "wide": (Wide, wide_data())}
    out["mlp_hinted"] = (lambda: MLP(((1, 1), (1, n))), data("mlp"))
    if search_mode == "sharding_propagation":  # only the last matmul hinted: the rest by backward propagation
        out["mlp_hint_last"] = (lambda: MLP(None, ((n, 1), (1, 1))), data("mlp"))
    return out


def batch_split_reference_rows(rank, n):
    """The rows of the first global batch rank `rank` of n reads with full_batch=False: its
    dataset shard (a DistributedSampler: rows rank, rank + n, ...), first BATCH // n of them."""
    return np.arange(rank, BATCH, n)[:BATCH // n]
