"""TextFileDataset: the lines of text files as a string column "text" (MindSpore's)."""
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import (_check_common, _engine_args, _find_files, _shuffle_flag)

__all__ = ["TextFileDataset"]


class _Lines:
    """Random access to the lines (read once, UTF-8, line endings and empty lines dropped)."""

    def __init__(self, files):
        self.lines = []
        for f in files:
            try:
                with open(f, encoding="utf-8") as fh:
                    self.lines += [ln for ln in fh.read().splitlines() if ln]
            except UnicodeDecodeError as e:
                raise ValueError(f"TextFileDataset: '{f}' is not UTF-8 text ({e})") from None

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i]


class TextFileDataset(SourceDataset):
    """Each non-empty line of dataset_files (paths or glob patterns, sorted) is a row with one
    string column "text". shuffle: bool or Shuffle (default: shuffled)."""

    def __init__(self, dataset_files, num_samples=None, num_parallel_workers=None, shuffle=True,
                 num_shards=None, shard_id=None, cache=None):
        self.dataset_files = _find_files(dataset_files)
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        source = _E.py_source(_Lines(self.dataset_files), ["text"])
        super().__init__(source, None, **_engine_args(num_samples, num_parallel_workers, shuffle, None,
                                                      num_shards, shard_id))
