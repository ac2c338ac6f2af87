"""load_distributed_checkpoint(predict_strategy=...) (MindSpore's distributed inference): slices
saved under the training layouts are merged and re-sliced for the predict layouts that
Model.infer_predict_layout returns, under real mpirun on 2 ranks, against the checkpoints merged
by hand in numpy and a numpy forward pass; and the argument checks in one process."""
import numpy as np
import pytest

import mycel
from mycel import Tensor
from mycel.parallel import load_distributed_checkpoint, save_sliced_checkpoints
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.autopar_common import MLP


@requires_mpi
def test_predict_strategy_reslices_training_checkpoints_on_two_ranks(tmp_path):
    rc, log = run_mpi(2, "predict_strategy.py", tmp_path, timeout=180)
    assert rc == 0, log
    got = np.load(tmp_path / "predict.npz")
    # training ("columns"): rank r saved w1[:, 8r:8r+8] and w2[8r:8r+8, :]; merged by hand
    files = [mycel.load_checkpoint(str(tmp_path / f"train_rank{r}.ckpt")) for r in range(2)]
    assert files[0]["w1"].shape == (8, 8) and files[0]["w2"].shape == (8, 8)
    w1 = np.concatenate([f["w1"].asnumpy() for f in files], axis=1)
    w2 = np.concatenate([f["w2"].asnumpy() for f in files], axis=0)
    assert list(got["train_names"]) == ["w1", "w2"]
    # predict ("reduction"): w1 split by rows (each rank 4 of its 8 rows), w2 whole
    assert list(got["predict_names"]) == ["w1"] and list(got["predict_w1"]) == [4, 16]
    assert list(got["shape_w1"]) == [4, 16] and list(got["shape_w2"]) == [16, 8]
    held_w1 = got["held_w1"].reshape(2, 4, 16)
    np.testing.assert_array_equal(held_w1[0], w1[:4])
    np.testing.assert_array_equal(held_w1[1], w1[4:])
    for r in range(2):
        np.testing.assert_array_equal(got["held_w2"][r].reshape(16, 8), w2)
    want = np.maximum(got["x"] @ w1, 0) @ w2
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-5)
    # infer_train_layout plans for one training step's batch, sinking or not
    assert list(got["sink_names"]) == ["w1", "w2"]
    assert list(got["sink_w1"]) == [8, 8] and list(got["step_w1"]) == [8, 8]


def test_predict_strategy_argument_checks(tmp_path):
    net = MLP()
    layouts = {"w1": ([2], [-1, 0], (8, 16))}
    files = save_sliced_checkpoints(net, layouts, str(tmp_path / "r{rank}.ckpt"))
    whole = net.w1.asnumpy().copy()
    # one process is rank 0: a predict layout splitting w1 by rows gives it rows 0-3
    other = MLP()
    merged = load_distributed_checkpoint(other, files, {"w1": [[2], [0, -1], [4, 16], 0, True, ""]},
                                         train_strategy_filename=layouts)
    np.testing.assert_array_equal(merged["w1"].asnumpy(), whole)
    np.testing.assert_array_equal(other.w1.asnumpy(), whole[:4])
    assert other.w1.layout == ((2,), (0, -1), (8, 16))
    np.testing.assert_array_equal(other.w2.asnumpy(), net.w2.asnumpy())
    # the training layouts from a JSON file too; None keeps every parameter whole
    import json
    (tmp_path / "train.json").write_text(json.dumps(layouts))
    third = MLP()
    load_distributed_checkpoint(third, files, None, str(tmp_path / "train.json"))
    np.testing.assert_array_equal(third.w1.asnumpy(), whole)
    with pytest.raises(ValueError, match=r"predict_strategy\['w1'\] gives slice shape \(8, 16\), but its layout "
                                         r"cuts the checkpoint's \(8, 16\) into \(4, 16\)"):
        load_distributed_checkpoint(MLP(), files, {"w1": [[2], [0, -1], [8, 16], 0, True, ""]}, layouts)
    with pytest.raises(ValueError, match=r"predict_strategy names parameters the checkpoints do not hold: \['w9'\]"):
        load_distributed_checkpoint(MLP(), files, {"w9": [[2], [0, -1], [4, 16]]}, layouts)
    with pytest.raises(TypeError, match="predict_strategy must be the dict Model.infer_predict_layout returns"):
        load_distributed_checkpoint(MLP(), files, [1, 2])
    with pytest.raises(ValueError, match="pass the training layouts once"):
        load_distributed_checkpoint(MLP(), files, None, layouts, layouts=layouts)
    with pytest.raises(ValueError, match="cannot read the training layouts"):
        load_distributed_checkpoint(MLP(), files, None, str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="checkpoint_filenames must be a list"):
        load_distributed_checkpoint(MLP(), files[0])
    with pytest.raises(ValueError, match="needs one slice per rank"):
        load_distributed_checkpoint(MLP(), files[:1], None, layouts)


def test_infer_train_layout_checks_its_arguments():
    from mycel import Model, nn
    from mycel.dataset import NumpySlicesDataset
    model = Model(nn.Dense(3, 2), nn.MSELoss(), nn.Momentum(nn.Dense(3, 2).trainable_params(), 0.1, 0.9))
    ds = NumpySlicesDataset((np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)), shuffle=False).batch(2)
    with pytest.raises(ValueError, match="sink_size must be -1 or an int >= 1, got 0"):
        model.infer_train_layout(ds, sink_size=0)
    with pytest.raises(TypeError, match="must be a mycel.dataset Dataset"):
        model.infer_train_layout([1, 2])
