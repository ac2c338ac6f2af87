"""nn.DistributedGradReducer: averages (or sums) gradients across the ranks of a data-parallel
job. Gradients are fused into buckets (Horovod's tensor fusion, PyTorch DDP's Reducer) of at most
the bucket size, each reduced by one AllReduce and sliced back into its gradients, so a model
with many small parameters costs a few messages instead of one per parameter.

With overlap (the default), buckets hold consecutive parameters in reverse order, the order the
backward produces their gradients, and each bucket's AllReduce is split into all_reduce_start
and all_reduce_wait: in graph mode the scheduler issues a bucket's start as soon as its last
gradient exists and its wait just before the optimizer reads it, so the reduction of the early
buckets runs while the rest of the backward computes (docs/parallel.md, "Overlap"). Without
overlap, all gradients are flattened into one vector cut into buckets, each reduced by a blocking
AllReduce after the backward. The plan is fixed at construction, so construct() unrolls into a
straight line of ops in graph mode (measured: a branch on a constant or an early return in
construct made the LeNet5 reducer's compile 4x slower, about 0.45 s instead of 0.1 s)."""
from mycel import ops
from mycel.communication.management import MPI_WORLD_COMM_GROUP, _comm
from mycel.nn.cell import Cell
from mycel.parallel import context as _pctx


def broadcast_parameters(params, root=0, group=MPI_WORLD_COMM_GROUP):
    """Overwrites every Parameter with rank `root`'s value (eagerly, one Broadcast each), so that
    every rank starts from the same weights (the auto-parallel context's parameter_broadcast)."""
    bcast = ops.Broadcast(root, group)
    for p in params:
        ops.assign(p, bcast(p))


def plan_buckets(shapes, dtypes, bucket_bytes, reverse=False):
    """Buckets as tuples of consecutive parameter indices, each at most bucket_bytes (a larger
    parameter gets a bucket of its own) and of one dtype. reverse: from the last parameter to
    the first (the order in which the backward produces the gradients)."""
    buckets, cur, used = [], [], 0
    order = range(len(shapes) - 1, -1, -1) if reverse else range(len(shapes))
    for i in order:
        shape, dtype = shapes[i], dtypes[i]
        nbytes = _numel(shape) * dtype.itemsize
        if cur and (used + nbytes > bucket_bytes or dtype != dtypes[cur[-1]]):
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
    auto-parallel context's comm_fusion, 25 MB) caps each fused allreduce. overlap (default: the
    context's comm_overlap, True) starts each bucket's allreduce as soon as its gradients exist
    (graph mode; eagerly all buckets start together after the backward, see docs/parallel.md).
    Without overlap, parameters of mixed dtypes are reduced one allreduce each."""

    def __init__(self, parameters, mean=True, degree=None, fusion_type=1, group=MPI_WORLD_COMM_GROUP,
                 bucket_size_mb=None, overlap=None):
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
        # With mean, the sum is scaled by 1/degree (one multiply; equal to dividing within an ulp).
        scale = 1.0 / degree if mean else 1.0
        if overlap is None:
            overlap = _pctx.get_auto_parallel_context("comm_overlap")
        if not isinstance(overlap, bool):
            raise TypeError(f"DistributedGradReducer: argument 'overlap' must be a bool, got {overlap!r}")
        self._overlap = overlap
        allreduce = ops.AllReduce(op="sum", group=group)
        shapes = [tuple(p.shape) for p in params]
        dtypes = [p.dtype for p in params]
        if overlap:
            self._buckets = plan_buckets(shapes, dtypes, bucket_bytes, reverse=True)
            self._impl = _OverlapReduce(ops.AllReduceStart(op="sum", group=group), ops.AllReduceWait(), scale,
                                        shapes, self._buckets)
        elif params and all(d == dtypes[0] for d in dtypes):
            self._buckets = plan_buckets(shapes, dtypes, bucket_bytes)
            self._impl = _FusedReduce(allreduce, scale, shapes, self._buckets)
        else:  # a fused vector has one dtype
            self._buckets = tuple((i,) for i in range(len(params)))
            self._impl = _EachReduce(allreduce, scale)

    def construct(self, grads):
        return self._impl(grads)

    @property
    def buckets(self):
        """The planned buckets: tuples of parameter indices, one AllReduce each, in the order
        their allreduces start."""
        return self._buckets

    @property
    def overlap(self):
        """Whether the buckets' allreduces are split into start and wait (see the module doc)."""
        return self._overlap


class _OverlapReduce(Cell):
    """Per bucket (consecutive parameters from the last): flatten its gradients, concatenate,
    start the allreduce. Then per bucket: wait, scale, split back into gradients, returned in
    parameter order. Nothing ties a bucket to the others' gradients, so graph mode's scheduler
    can start it as soon as its own exist (OpDef::placement marks start early and wait late).
    The gradients are reversed by iteration and buckets are constant slices of that tuple:
    graph mode folds those, where a tuple indexed by a loop variable would not be."""

    def __init__(self, start, wait, scale, shapes, buckets):
        super().__init__(auto_prefix=False)
        self._start = start
        self._wait = wait
        self._scale = scale
        last = len(shapes) - 1
        for b in buckets:  # consecutive parameters, last first
            assert all(i == j + 1 for i, j in zip(b, b[1:])), buckets
        # per bucket: its slice of the reversed gradients, then the split plan (sizes with a
        # trailing empty part, as _FusedReduce) and the gradients' shapes
        self._plan = tuple((last - b[0], last - b[-1] + 1, len(b) + 1, tuple(_numel(shapes[i]) for i in b) + (0,),
                            tuple(shapes[i] for i in b)) for b in buckets)

    def construct(self, grads):
        rev = ()
        for g in grads:
            rev = (g,) + rev
        started = ()
        for lo, hi, n, sizes, shapes in self._plan:
            flats = ()
            for g in rev[lo:hi]:
                flats = flats + (ops.reshape(g, (-1,)),)
            started = started + (self._start(ops.concat(flats, axis=0)),)
        out = ()
        for buf, (lo, hi, n, sizes, shapes) in zip(started, self._plan):
            parts = ops.split(self._wait(buf) * self._scale, axis=0, output_num=n, size_splits=sizes)
            for part, shape in zip(parts, shapes):
                out = (ops.reshape(part, shape),) + out  # last parameter first: prepend
        return out


class _FusedReduce(Cell):
    """Flattens all gradients into one vector, splits it into buckets (slices of consecutive
    parameters), reduces each with one allreduce and splits it back into gradients. Every loop
    runs over a constant tuple and has no branch, so graph mode unrolls it into a straight line
    cheaply. Each split gets a trailing empty part: its result is then a tuple even for one
    bucket or one parameter (a one-part split gives a bare tensor eagerly)."""

    def __init__(self, allreduce, scale, shapes, buckets):
        super().__init__(auto_prefix=False)
        self._allreduce = allreduce
        self._scale = scale
        self._bucket_sizes = tuple(sum(_numel(shapes[i]) for i in b) for b in buckets) + (0,)
        self._num_parts = len(self._bucket_sizes)
        # per bucket: its number of split parts, their sizes and the gradients' shapes
        self._plan = tuple((len(b) + 1, tuple(_numel(shapes[i]) for i in b) + (0,), tuple(shapes[i] for i in b))
                           for b in buckets)

    def construct(self, grads):
        flats = ()
        for g in grads:
            flats = flats + (ops.reshape(g, (-1,)),)
        chunks = ops.split(ops.concat(flats, axis=0), axis=0, output_num=self._num_parts,
                           size_splits=self._bucket_sizes)
        out = ()
        for chunk, (n, sizes, shapes) in zip(chunks, self._plan):
            parts = ops.split(self._allreduce(chunk) * self._scale, axis=0, output_num=n, size_splits=sizes)
            for part, shape in zip(parts, shapes):
                out = out + (ops.reshape(part, shape),)
        return out


class _EachReduce(Cell):
    """One allreduce per gradient (parameters of mixed dtypes)."""

    def __init__(self, allreduce, scale):
        super().__init__(auto_prefix=False)
        self._allreduce = allreduce
        self._scale = scale

    def construct(self, grads):
        out = ()
        for g in grads:
            out = out + (self._allreduce(g) * self._scale,)
        return out


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
