"""nn.DistributedGradReducer: averages (or sums) gradients across the ranks of a data-parallel
job. Gradients are fused into buckets (Horovod's tensor fusion, PyTorch DDP's Reducer): all
gradients are flattened into one vector, which is cut into buckets of consecutive parameters of
at most the bucket size, and each bucket is reduced by one AllReduce and split back into its
gradients. A model with many small parameters so costs a few messages instead of one per
parameter. The plan is fixed at construction, so construct() unrolls into a straight line of ops
in graph mode; it iterates over tuples only (graph mode cannot index a tuple argument with a
loop variable)."""
from mycel import ops
from mycel.communication.management import MPI_WORLD_COMM_GROUP, _comm
from mycel.nn.cell import Cell
from mycel.parallel import context as _pctx


def plan_buckets(shapes, dtypes, bucket_bytes):
    """Buckets as tuples of consecutive parameter indices, each at most bucket_bytes (a larger
    parameter gets a bucket of its own)."""
    buckets, cur, used = [], [], 0
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        nbytes = _numel(shape) * dtype.itemsize
        if cur and used + nbytes > bucket_bytes:
            buckets.append(tuple(cur))
            cur, used = [], 0
        cur.append(i)
        used += nbytes
    if cur:
        buckets.append(tuple(cur))
    return tuple(buckets)


class DistributedGradReducer(Cell):
    """Reduces a tuple of gradients (one per `parameters` entry) across `group` with AllReduce(sum);
    with mean=True divides by `degree` (default: the group size). bucket_size_mb (default: the
    auto-parallel context's comm_fusion, 25 MB) caps each fused allreduce. Parameters of mixed
    dtypes are reduced one allreduce each (a fused vector has one dtype)."""

    def __init__(self, parameters, mean=True, degree=None, fusion_type=1, group=MPI_WORLD_COMM_GROUP,
                 bucket_size_mb=None):
        super().__init__(auto_prefix=False)
        del fusion_type  # MindSpore's fusion groups; buckets by size replace them here
        if not _comm.initialized():
            raise RuntimeError("DistributedGradReducer: the communicator is not initialized; call "
                               "mycel.communication.init() first")
        params = list(parameters)
        if degree is None:
            degree = _comm.group_size(group)
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ValueError(f"DistributedGradReducer: argument 'degree' must be an int >= 1, got {degree!r}")
        if mean is None:
            mean = _pctx.get_auto_parallel_context("gradients_mean")
        bucket_bytes = _pctx._bucket_bytes() if bucket_size_mb is None else int(bucket_size_mb * (1 << 20))
        if bucket_bytes <= 0:
            raise ValueError(f"DistributedGradReducer: argument 'bucket_size_mb' must be > 0, got {bucket_size_mb!r}")
        self._mean = bool(mean)
        self._degree = float(degree)
        shapes = [tuple(p.shape) for p in params]
        dtypes = [p.dtype for p in params]
        self._fuse = len(params) > 0 and all(d == dtypes[0] for d in dtypes)
        self._buckets = plan_buckets(shapes, dtypes, bucket_bytes) if self._fuse else tuple((i,) for i in range(len(params)))
        # Per bucket (constants): its number of parameters, their element counts and shapes.
        self._counts = tuple(len(b) for b in self._buckets)
        self._sizes = tuple(tuple(_numel(shapes[i]) for i in b) for b in self._buckets)
        self._shapes = tuple(tuple(shapes[i] for i in b) for b in self._buckets)
        self._bucket_elems = tuple(sum(s) for s in self._sizes)
        self._num_buckets = len(self._buckets)
        self._allreduce = ops.AllReduce(op="sum", group=group)

    def _reduce(self, x):
        x = self._allreduce(x)
        if self._mean:
            x = x / self._degree
        return x

    def construct(self, grads):
        out = ()
        if not self._fuse:
            for g in grads:
                out = out + (self._reduce(g),)
            return out
        flats = ()
        for g in grads:
            flats = flats + (ops.reshape(g, (-1,)),)
        flat = ops.concat(flats, axis=0)
        if self._num_buckets == 1:
            chunks = (flat,)
        else:
            chunks = ops.split(flat, axis=0, output_num=self._num_buckets, size_splits=self._bucket_elems)
        for chunk, n, sizes, shapes in zip(chunks, self._counts, self._sizes, self._shapes):
            chunk = self._reduce(chunk)
            if n == 1:
                for shape in shapes:
                    out = out + (ops.reshape(chunk, shape),)
            else:
                parts = ops.split(chunk, axis=0, output_num=n, size_splits=sizes)
                for part, shape in zip(parts, shapes):
                    out = out + (ops.reshape(part, shape),)
        return out

    @property
    def buckets(self):
        """The planned buckets: tuples of parameter indices, one AllReduce each."""
        return self._buckets


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
