"""mycel.communication.management: init/release, ranks and groups over the C++ Communicator
(src/mycel/parallel). Every call here is thin: the rules live in C++."""
import atexit
import os
import sys

from mycel import _mycel

_comm = _mycel.comm

MPI_WORLD_COMM_GROUP = _comm.WORLD_COMM_GROUP
# MindSpore scripts name the world group of their backend; all three mean the same world here.
HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"


class GlobalComm:
    """The backend and world group in use (MindSpore's GlobalComm)."""
    BACKEND = "mpi"
    WORLD_COMM_GROUP = MPI_WORLD_COMM_GROUP
    INITED = False


def _set_threads():
    """Each rank takes an equal share of the node's cores: max(1, cores // ranks on this node),
    unless the user chose (OMP_NUM_THREADS or set_context(num_threads=...))."""
    from mycel import context
    if context._threads_set_by_user or os.environ.get("OMP_NUM_THREADS"):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _mycel.set_num_threads(max(1, (cores or 1) // _comm.local_size()))


_previous_excepthook = None


def _abort_on_uncaught(exc_type, exc, tb):
    """An exception nobody caught on one rank ends every rank: the others would wait for it in
    their next collective until the timeout."""
    _previous_excepthook(exc_type, exc, tb)
    sys.stderr.flush()
    if _comm.initialized() and _comm.world_size() > 1:
        _comm.abort(1)


def init(backend_name=None):
    """Starts the world: MPI when launched by mpirun, else one process. backend_name: None or
    "mpi" (MindSpore's "hccl"/"nccl" are refused: they need devices Mycel does not drive)."""
    global _previous_excepthook
    if backend_name not in (None, "mpi"):
        raise ValueError(f"init: argument 'backend_name' must be 'mpi' (or None), got {backend_name!r}")
    if _comm.initialized():
        return
    _comm.init()
    GlobalComm.INITED = True
    _set_threads()
    if _previous_excepthook is None:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught
    atexit.register(release)


def release():
    """Frees every group and finalizes MPI; MPI cannot start again in this process."""
    _comm.release()
    GlobalComm.INITED = False


def _check_init(what):
    if not _comm.initialized():
        raise RuntimeError(f"{what}: the communicator is not initialized; call mycel.communication.init() first")


def get_rank(group=MPI_WORLD_COMM_GROUP):
    """This process's rank in `group`."""
    _check_init("get_rank")
    return _comm.group_rank(group)


def get_group_size(group=MPI_WORLD_COMM_GROUP):
    """The number of processes in `group`."""
    _check_init("get_group_size")
    return _comm.group_size(group)


def get_local_rank(group=MPI_WORLD_COMM_GROUP):
    """This process's rank among the processes of its node (world group only)."""
    _check_init("get_local_rank")
    if group not in (MPI_WORLD_COMM_GROUP, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP):
        raise ValueError(f"get_local_rank: only the world group is supported, got {group!r}")
    return _comm.local_rank()


def get_local_rank_size(group=MPI_WORLD_COMM_GROUP):
    """The number of processes on this node (world group only)."""
    _check_init("get_local_rank_size")
    if group not in (MPI_WORLD_COMM_GROUP, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP):
        raise ValueError(f"get_local_rank_size: only the world group is supported, got {group!r}")
    return _comm.local_size()


def create_group(group, rank_ids):
    """Creates `group` from world ranks `rank_ids`; group rank k is rank_ids[k]. Call it on every
    member (calling it on other ranks too is allowed: they only record the name)."""
    _check_init("create_group")
    if not isinstance(group, str) or not group:
        raise TypeError(f"create_group: argument 'group' must be a non-empty str, got {group!r}")
    _comm.create_group(group, [int(r) for r in rank_ids])


def destroy_group(group):
    """Frees a group made by create_group."""
    _check_init("destroy_group")
    _comm.destroy_group(group)


def get_world_rank_from_group_rank(group, group_rank_id):
    """The world rank of `group`'s rank group_rank_id."""
    _check_init("get_world_rank_from_group_rank")
    ranks = _comm.group_ranks(group)
    if not 0 <= group_rank_id < len(ranks):
        raise ValueError(f"get_world_rank_from_group_rank: argument 'group_rank_id' must be in "
                         f"[0, {len(ranks)}), got {group_rank_id}")
    return ranks[group_rank_id]


def get_group_rank_from_world_rank(world_rank_id, group):
    """The rank in `group` of world rank world_rank_id."""
    _check_init("get_group_rank_from_world_rank")
    ranks = _comm.group_ranks(group)
    if world_rank_id not in ranks:
        raise ValueError(f"get_group_rank_from_world_rank: world rank {world_rank_id} is not in group "
                         f"{group!r} (members {ranks})")
    return ranks.index(world_rank_id)


def set_comm_timeout(seconds):
    """Timeout of every collective (default 300 s, or env MYCEL_COMM_TIMEOUT): past it, the job
    ends with an error naming the operation, the group and the missing rank(s)."""
    _comm.set_timeout(float(seconds))


def get_comm_timeout():
    """The collective timeout in seconds."""
    return _comm.timeout()
