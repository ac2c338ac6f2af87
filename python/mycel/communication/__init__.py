"""Process groups and collectives over Open MPI, with MindSpore's names (mindspore.communication).

Launch with `mpirun -n N python train.py` (or `scripts/mpirun -n N ...`), then call `init()`;
without mpirun `init()` gives a world of one process. See docs/parallel.md."""
from mycel.communication.management import (GlobalComm, init, release, get_rank, get_group_size,
                                            get_local_rank, get_local_rank_size, create_group,
                                            destroy_group, get_world_rank_from_group_rank,
                                            get_group_rank_from_world_rank, set_comm_timeout,
                                            get_comm_timeout, HCCL_WORLD_COMM_GROUP,
                                            NCCL_WORLD_COMM_GROUP, MPI_WORLD_COMM_GROUP)

__all__ = ["GlobalComm", "init", "release", "get_rank", "get_group_size", "get_local_rank",
           "get_local_rank_size", "create_group", "destroy_group", "get_world_rank_from_group_rank",
           "get_group_rank_from_world_rank", "set_comm_timeout", "get_comm_timeout",
           "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP", "MPI_WORLD_COMM_GROUP"]
