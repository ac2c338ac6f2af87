"""ModelCheckpoint and CheckpointConfig: save the training network's Parameters every few steps
or epochs, keeping at most keep_checkpoint_max files."""
import os

from mycel import _mycel
from mycel.train.callback._callback import Callback, step_in_epoch
from mycel.train.serialization import save_checkpoint

_comm = _mycel.comm


def _count(who, arg, value, allow_none):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{who}: '{arg}' must be an int >= 0{' or None' if allow_none else ''}, got {value!r}")
    return value


class CheckpointConfig:
    """When to save and how many files to keep. save_checkpoint_epochs, when given, replaces the
    step interval; keep_checkpoint_max=0 keeps every file. saved_network saves that Cell instead
    of the training network; append_info (a dict name -> number/Tensor) is saved alongside."""

    def __init__(self, save_checkpoint_steps=1, save_checkpoint_epochs=None, keep_checkpoint_max=5,
                 integrated_save=True, async_save=False, saved_network=None, append_info=None,
                 save_checkpoint_seconds=0, keep_checkpoint_per_n_minutes=0, **kwargs):
        who = "CheckpointConfig"
        if kwargs:
            raise TypeError(f"{who}: unexpected arguments {sorted(kwargs)}")
        self.save_checkpoint_steps = _count(who, "save_checkpoint_steps", save_checkpoint_steps, True)
        self.save_checkpoint_epochs = _count(who, "save_checkpoint_epochs", save_checkpoint_epochs, True)
        if not self.save_checkpoint_steps and not self.save_checkpoint_epochs:
            raise ValueError(f"{who}: give save_checkpoint_steps or save_checkpoint_epochs (> 0)")
        self.keep_checkpoint_max = _count(who, "keep_checkpoint_max", keep_checkpoint_max, False)
        if save_checkpoint_seconds or keep_checkpoint_per_n_minutes:
            raise NotImplementedError(f"{who}: time-based saving (save_checkpoint_seconds, "
                                      f"keep_checkpoint_per_n_minutes) is not supported")
        if append_info is not None and not isinstance(append_info, dict):
            raise TypeError(f"{who}: append_info must be a dict of name -> value, got {type(append_info).__name__}")
        self.integrated_save = integrated_save
        self.async_save = async_save
        self.saved_network = saved_network
        self.append_info = append_info


class ModelCheckpoint(Callback):
    """Writes `<directory>/<prefix>-<epoch>_<step in epoch>.ckpt`. Parameters are saved under
    their own names (Parameter.name, e.g. "conv1.weight"), so the file loads straight into the
    backbone with load_checkpoint/load_param_into_net. The last step is saved at the end of
    training if it was not already. Only files this callback wrote count towards
    keep_checkpoint_max; the oldest are deleted first."""

    def __init__(self, prefix="CKP", directory=None, config=None):
        super().__init__()
        if not isinstance(prefix, str) or not prefix or os.sep in prefix:
            raise ValueError(f"ModelCheckpoint: prefix must be a non-empty file name part, got {prefix!r}")
        if config is None:
            config = CheckpointConfig()
        if not isinstance(config, CheckpointConfig):
            raise TypeError(f"ModelCheckpoint: config must be a CheckpointConfig, got {type(config).__name__}")
        self.prefix = prefix
        self.directory = os.path.abspath(directory if directory is not None else os.getcwd())
        self.config = config
        self.saved_files = []
        self.latest_ckpt_file_name = None
        self._last_saved_step = None

    def _save(self, cb):
        if _comm.initialized() and _comm.world_rank() != 0:
            # Data parallel: every rank holds the same weights, so rank 0 alone writes them.
            self._last_saved_step = cb.cur_step_num
            return
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"{self.prefix}-{cb.cur_epoch_num}_{step_in_epoch(cb)}.ckpt")
        network = self.config.saved_network or cb.train_network
        entries, names = [], set()
        for p in network.get_parameters():
            if p.name not in names:  # the first of two same-named Parameters wins
                names.add(p.name)
                entries.append({"name": p.name, "data": p})
        save_checkpoint(entries, path, append_dict=self.config.append_info)
        if path in self.saved_files:
            self.saved_files.remove(path)
        self.saved_files.append(path)
        keep = self.config.keep_checkpoint_max
        while keep and len(self.saved_files) > keep:
            old = self.saved_files.pop(0)
            if os.path.exists(old):
                os.remove(old)
        self.latest_ckpt_file_name = path
        self._last_saved_step = cb.cur_step_num

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        steps = self.config.save_checkpoint_steps
        if not self.config.save_checkpoint_epochs and steps and cb.cur_step_num % steps == 0:
            self._save(cb)

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        epochs = self.config.save_checkpoint_epochs
        if epochs and cb.cur_epoch_num % epochs == 0:
            self._save(cb)

    def on_train_end(self, run_context):
        cb = run_context.original_args()
        if cb.cur_step_num and self._last_saved_step != cb.cur_step_num:
            self._save(cb)
