"""Dataset base classes. (The engine helper replaces this file with the real pipeline; the
signature of SourceDataset below is the contract the source wrappers rely on.)"""
from mycel import _mycel

__all__ = ["Dataset", "SourceDataset"]


class Dataset:
    """Base of every dataset node."""


class SourceDataset(Dataset):
    """A dataset read from a registered C++ source (see src/mycel/data/source.h).

    Subclasses call: super().__init__(source_name, source_kwargs, num_parallel_workers=...,
    shuffle=..., num_samples=..., num_shards=..., shard_id=..., sampler=...)."""

    def __init__(self, source_name, source_kwargs, *, num_parallel_workers=None, shuffle=None,
                 num_samples=None, num_shards=None, shard_id=None, sampler=None):
        self.source = _mycel.data.make_source(source_name, **source_kwargs)
        self.num_samples = num_samples

    def __iter__(self):  # sequential, unshuffled: only until the engine lands
        n = len(self.source) if self.num_samples is None else min(self.num_samples, len(self.source))
        for i in range(n):
            yield list(self.source.get(i))

    def get_dataset_size(self):
        return len(self.source) if self.num_samples is None else min(self.num_samples, len(self.source))
