"""MindDataset: a MindRecord file set as a dataset source (C++ source "MindDataset")."""
from mycel.dataset.engine import SourceDataset

__all__ = ["MindDataset"]


class MindDataset(SourceDataset):
    """Reads MindRecord files written by mycel.mindrecord.FileWriter.

    dataset_files: a str names one file; the other shards of its set are found through its header.
    A list names exactly the files to read (one complete shard set is read in write order, anything
    else file after file). columns_list picks and orders the columns.

    Columns: numeric scalars are 0-d tensors, arrays have their schema shape (-1 dims as stored),
    bytes fields are 1-d uint8 tensors, and string fields are 1-d uint8 tensors of UTF-8 bytes
    (until Mycel has string tensors; FileReader returns them as str)."""

    def __init__(self, dataset_files, columns_list=None, num_parallel_workers=None, shuffle=None,
                 num_shards=None, shard_id=None, sampler=None, padded_sample=None, num_padded=None,
                 num_samples=None, cache=None):
        # Imported here so that `import mycel.dataset` never depends on the mindrecord package.
        from mycel.mindrecord.filereader import _as_files
        files, expand = _as_files(dataset_files, "MindDataset")
        if columns_list is not None and (not isinstance(columns_list, (list, tuple)) or not columns_list
                                         or not all(isinstance(c, str) for c in columns_list)):
            raise ValueError(f"[MindDataset] columns_list must be a non-empty list of str, got {columns_list!r}")
        if padded_sample is not None or num_padded is not None:
            raise NotImplementedError("[MindDataset] padded_sample/num_padded are not supported yet")
        if cache is not None:
            raise NotImplementedError("[MindDataset] cache is not supported")
        kwargs = {"dataset_files": files[0] if expand else files}
        if columns_list is not None:
            kwargs["columns_list"] = list(columns_list)
        super().__init__("MindDataset", kwargs, num_parallel_workers=num_parallel_workers,
                         shuffle=shuffle, num_samples=num_samples, num_shards=num_shards,
                         shard_id=shard_id, sampler=sampler)
        self.dataset_files = dataset_files
        self.columns_list = columns_list
