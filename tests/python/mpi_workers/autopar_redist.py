"""Run under mpirun -n 4 by test_parallel_autopar.py: every pair among a set of 2-d and 4-d layouts
(tuples (device_matrix, tensor_map, shape, pending-sum axes)) redistributes this rank's slice to
exactly its slice under the other layout, and back. Prints the number of pairs checked."""
import numpy as np

import mycel.communication as comm
from mycel import Tensor, _mycel

A = _mycel.autopar
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
assert N == 4, N

S2, S4 = (8, 8), (4, 4, 4, 4)
LAYOUTS = [
    ([4], [-1, -1], S2, []), ([4], [0, -1], S2, []), ([4], [-1, 0], S2, []), ([2, 2], [0, 1], S2, []),
    ([2, 2], [1, 0], S2, []), ([2, 2], [0, -1], S2, []), ([2, 2], [-1, 1], S2, []), ([4, 1], [0, -1], S2, []),
    ([1, 4], [-1, 1], S2, []), ([2, 2], [-1, -1], S2, [0]),
    ([4], [-1, -1, -1, -1], S4, []), ([4], [0, -1, -1, -1], S4, []), ([4], [-1, -1, -1, 0], S4, []),
    ([2, 2], [0, 1, -1, -1], S4, []), ([2, 2], [-1, -1, 1, 0], S4, []), ([2, 2], [1, -1, -1, -1], S4, []),
    ([2, 2], [-1, 0, -1, -1], S4, [1]),
]


def local(full, layout):
    """This rank's slice; a pending sum holds an equal share of it on each rank of its axes."""
    off, shape = A.slice_offset(layout, R), A.slice_shape(layout)
    x = full[tuple(slice(o, o + s) for o, s in zip(off, shape))]
    terms = int(np.prod([layout[0][a] for a in layout[3]])) if layout[3] else 1
    return (x / terms).astype(np.float32)


pairs = 0
for a in LAYOUTS:
    for b in LAYOUTS:
        if a[2] != b[2] or b[3]:
            continue
        full = np.arange(np.prod(a[2]), dtype=np.float32).reshape(a[2])
        y = A.redistribute(Tensor(local(full, a)), a, b).asnumpy()
        np.testing.assert_array_equal(y, local(full, b), err_msg=f"{a} -> {b} on rank {R}")
        if not a[3]:  # and back
            z = A.redistribute(Tensor(y), b, a).asnumpy()
            np.testing.assert_array_equal(z, local(full, a), err_msg=f"{b} -> {a} on rank {R}")
        pairs += 1
print(f"rank {R}: {pairs} pairs exact", flush=True)
