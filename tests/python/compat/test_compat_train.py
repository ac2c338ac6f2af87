"""BackupAndRestore: a run that breaks off resumes from its last backup and ends with the weights
of a run that never broke (same data order, same initial weights, a stateful optimizer)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.dataset import NumpySlicesDataset
from mycel.train import BackupAndRestore, Callback, Model


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) > 0).astype(np.int32)
    return NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)


def _model(seed):
    mycel.set_seed(seed)
    net = nn.Dense(4, 2)
    return net, Model(net, nn.CrossEntropyLoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))


class _BreakAt(Callback):
    def __init__(self, epoch):
        self.epoch = epoch

    def on_train_epoch_begin(self, run_context):
        if run_context.original_args().cur_epoch_num == self.epoch:
            raise KeyboardInterrupt("simulated crash")


def test_backup_and_restore_resumes_to_the_same_weights(tmp_path):
    ref_net, ref = _model(1)
    ref.train(4, _data(), callbacks=[])
    net, model = _model(1)
    with pytest.raises(KeyboardInterrupt):
        model.train(4, _data(), callbacks=[BackupAndRestore(str(tmp_path)), _BreakAt(3)])
    assert (tmp_path / "backup.ckpt").is_file()
    resumed_net, resumed = _model(2)  # other initial weights: the backup replaces them
    seen = []

    class _Epochs(Callback):
        def on_train_epoch_begin(self, run_context):
            seen.append(run_context.original_args().cur_epoch_num)
    resumed.train(4, _data(), callbacks=[BackupAndRestore(str(tmp_path)), _Epochs()])
    assert seen == [3, 4]
    np.testing.assert_allclose(resumed_net.weight.asnumpy(), ref_net.weight.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(resumed_net.bias.asnumpy(), ref_net.bias.asnumpy(), rtol=1e-5, atol=1e-6)
    assert not (tmp_path / "backup.ckpt").exists()  # deleted after a normal end
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a positive int"):
        BackupAndRestore(str(tmp_path), save_freq=0)
