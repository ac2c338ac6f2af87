"""BackupAndRestore (MindSpore's): the training network (weights and optimizer state) saved
every save_freq epochs to backup_dir, and a later Model.train resumed from the last backup (its
weights loaded, its epochs skipped); the backup is deleted when training ends normally."""
import os

import numpy as np

from mycel.common.tensor import Tensor
from mycel.train.callback._callback import Callback

_EPOCH_KEY = "_backup_epoch"


class BackupAndRestore(Callback):
    """BackupAndRestore(backup_dir, save_freq="epoch" or N, delete_checkpoint=True)."""

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        if not isinstance(backup_dir, (str, os.PathLike)):
            raise TypeError(f"BackupAndRestore: backup_dir must be a path, got {type(backup_dir).__name__}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch' or a positive int, got {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = 1 if save_freq == "epoch" else save_freq
        self.delete_checkpoint = bool(delete_checkpoint)
        self.backup_file = os.path.join(self.backup_dir, "backup.ckpt")

    def on_train_begin(self, run_context):
        """Restores the last backup, if any: its weights, and the epoch to go on from."""
        from mycel.train.serialization import load_checkpoint, load_param_into_net
        if not os.path.isfile(self.backup_file):
            return
        cb = run_context.original_args()
        params = load_checkpoint(self.backup_file)
        if _EPOCH_KEY not in params:
            raise ValueError(f"BackupAndRestore: {self.backup_file} has no epoch entry; it was not written "
                             "by BackupAndRestore")
        epoch = int(params.pop(_EPOCH_KEY).asnumpy())
        if epoch >= cb.epoch_num:
            raise ValueError(f"BackupAndRestore: the backup in {self.backup_dir} is from epoch {epoch}, at or "
                             f"past this run's {cb.epoch_num} epochs; remove it to train again")
        not_loaded, _ = load_param_into_net(cb.train_network, params, strict_load=True)
        if not_loaded:
            raise ValueError(f"BackupAndRestore: the backup lacks parameters {not_loaded} of the network")
        cb.cur_epoch_num = epoch
        cb.cur_step_num = epoch * cb.batch_num

    def on_train_epoch_end(self, run_context):
        """Saves the training network every save_freq epochs (atomically)."""
        from mycel.train.serialization import save_checkpoint
        cb = run_context.original_args()
        if cb.cur_epoch_num % self.save_freq == 0:
            os.makedirs(self.backup_dir, exist_ok=True)
            save_checkpoint(cb.train_network, self.backup_file,
                            append_dict={_EPOCH_KEY: Tensor(np.array(cb.cur_epoch_num, np.int64))})

    def on_train_end(self, run_context):
        """Deletes the backup after a run that ended normally, unless delete_checkpoint=False."""
        if self.delete_checkpoint and os.path.isfile(self.backup_file):
            os.remove(self.backup_file)
