"""Checkpoints across layouts: per-rank slice files merge into one process's parameters and back
(mycel.parallel.checkpoint), checked against numpy slicing by hand."""
import numpy as np
import pytest

import mycel
from mycel import Tensor
from mycel.parallel import (load_distributed_checkpoint, merge_sliced_parameter, save_sliced_checkpoints,
                            slice_parameter)
from mpi_workers.autopar_common import MLP

# w1 (8, 16) on a 2 x 2 device matrix: rows on axis 0, columns on axis 1; w2 (16, 8): columns on 4.
LAYOUTS = {"w1": ([2, 2], [0, 1], (8, 16)), "w2": ([4], [-1, 0], (16, 8))}


def by_hand(name, a, r):
    if name == "w1":
        i, j = divmod(r, 2)
        return a[i * 4:(i + 1) * 4, j * 8:(j + 1) * 8]
    return a[:, r * 2:(r + 1) * 2]


def test_slices_merge_into_one_process_and_back(tmp_path):
    net = MLP()
    whole = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    files = save_sliced_checkpoints(net, LAYOUTS, str(tmp_path / "rank{rank}.ckpt"))
    assert len(files) == 4
    for r, f in enumerate(files):
        saved = mycel.load_checkpoint(f)
        for name in LAYOUTS:
            np.testing.assert_array_equal(saved[name].asnumpy(), by_hand(name, whole[name], r))
    other = MLP()
    for p in other.trainable_params():
        mycel.ops.assign(p, Tensor(np.zeros(p.shape, np.float32)))
    merged = load_distributed_checkpoint(other, files, layouts=LAYOUTS)
    assert sorted(merged) == sorted(whole)
    for p in other.trainable_params():
        np.testing.assert_array_equal(p.asnumpy(), whole[p.name])


def test_merge_checks_copies_and_counts():
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    layout = ([2, 2], [0, -1], (8, 4))  # ranks 0, 1 hold rows 0-3; ranks 2, 3 rows 4-7
    slices = [slice_parameter(Tensor(a), layout, r) for r in range(4)]
    np.testing.assert_array_equal(slices[1].asnumpy(), a[:4])
    np.testing.assert_array_equal(merge_sliced_parameter(slices, layout, "a").asnumpy(), a)
    bad = list(slices)
    bad[3] = Tensor(slices[3].asnumpy() + 1)
    with pytest.raises(ValueError, match="ranks 2 and 3 hold different copies of the same slice of 'a'"):
        merge_sliced_parameter(bad, layout, "a")
    with pytest.raises(ValueError, match="needs one slice per rank of the device matrix \\(4\\), got 3"):
        merge_sliced_parameter(slices[:3], layout, "a")
    with pytest.raises(ValueError, match="layout of 'value' must be"):
        slice_parameter(Tensor(a), ([3], [0, -1], (8, 4)), 0)
