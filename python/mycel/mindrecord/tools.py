"""Converters from common datasets to MindRecord (MindSpore's names): MnistToMR, Cifar10ToMR,
ImageFolderToMR. Images are stored as PNG bytes (lossless; read them back with vision.Decode())."""
import gzip
import os
import struct
import zlib

import numpy as np

from mycel.mindrecord.filewriter import SUCCESS, FileWriter

__all__ = ["MnistToMR", "Cifar10ToMR", "ImageFolderToMR", "encode_png"]

_ROWS_PER_WRITE = 2048


def _chunk(tag, body):
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def encode_png(img):
    """PNG bytes of a uint8 image (H, W) grey or (H, W, 3) RGB; every row uses filter 0."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    if img.ndim == 2:
        color = 0
    elif img.ndim == 3 and img.shape[2] == 3:
        color = 2
    else:
        raise ValueError(f"encode_png: expected an (H, W) or (H, W, 3) image, got shape {img.shape}")
    h, w = img.shape[:2]
    raw = np.zeros((h, 1 + img[0].size), dtype=np.uint8)  # leading 0 = filter "none" per row
    raw[:, 1:] = img.reshape(h, -1)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + _chunk(b"IEND", b""))


def _check_dest(destination, owner):
    if not isinstance(destination, str) or not destination:
        raise ValueError(f"[{owner}] destination must be a non-empty str, got {destination!r}")
    parent = os.path.dirname(os.path.abspath(destination))
    if not os.path.isdir(parent):
        raise ValueError(f"[{owner}] the directory of destination '{destination}' does not exist")


def _check_source(source_dir, owner):
    if not isinstance(source_dir, str) or not os.path.isdir(source_dir):
        raise ValueError(f"[{owner}] source directory {source_dir!r} does not exist")


def _write(path, partitions, schema, rows, index_fields=None, desc=None):
    """Writes an iterable of row dicts in batches; the file appears only when complete."""
    writer = FileWriter(path, partitions, overwrite=False)
    writer.add_schema(schema, desc)
    if index_fields:
        writer.add_index(index_fields)
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == _ROWS_PER_WRITE:
            writer.write_raw_data(batch)
            batch = []
    if batch:
        writer.write_raw_data(batch)
    writer.commit()


def _read_idx(path, magic, ndim):
    """An IDX array (optionally gzipped) checked against its header: magic, dims and size."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise ValueError(f"[MnistToMR] cannot read '{path}': {e}") from None
    head = 4 + 4 * ndim
    if len(data) < head or struct.unpack(">I", data[:4])[0] != magic:
        raise ValueError(f"[MnistToMR] '{path}' is not an IDX file with magic {magic:#010x}")
    dims = struct.unpack(">" + "I" * ndim, data[4:head])
    if len(data) - head != int(np.prod(dims, dtype=np.int64)):
        raise ValueError(f"[MnistToMR] '{path}': header says {dims} but holds {len(data) - head} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=head).reshape(dims)


def _find(source_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(source_dir, name)
        if os.path.isfile(p):
            return p
    return None


class MnistToMR:
    """MNIST / Fashion-MNIST IDX files -> "<destination>_train.mindrecord" and
    "<destination>_test.mindrecord" with fields label (int64) and data (PNG bytes).

    Each split whose two files exist in source_dir is converted (plain or .gz)."""

    _SPLITS = (("train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               ("test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))

    def __init__(self, source, destination, partition_number=1):
        _check_source(source, "MnistToMR")
        _check_dest(destination, "MnistToMR")
        if not isinstance(partition_number, int) or not 1 <= partition_number <= 1000:
            raise ValueError(f"[MnistToMR] partition_number must be an int in [1, 1000], got {partition_number!r}")
        self.source, self.destination, self.partition_number = source, destination, partition_number
        self.splits = []
        for split, images, labels in self._SPLITS:
            pi, pl = _find(source, images), _find(source, labels)
            if pi and pl:
                self.splits.append((split, pi, pl))
        if not self.splits:
            raise ValueError(f"[MnistToMR] no MNIST IDX files (train-images-idx3-ubyte[.gz], ...) in '{source}'")

    def run(self):
        schema = {"label": {"type": "int64"}, "data": {"type": "bytes"}}
        for split, pi, pl in self.splits:
            images, labels = _read_idx(pi, 0x803, 3), _read_idx(pl, 0x801, 1)
            if len(images) != len(labels):
                raise ValueError(f"[MnistToMR] '{pi}' holds {len(images)} images but '{pl}' "
                                 f"{len(labels)} labels")
            rows = ({"label": int(labels[i]), "data": encode_png(images[i])} for i in range(len(labels)))
            _write(f"{self.destination}_{split}.mindrecord", self.partition_number, schema, rows,
                   desc=f"MNIST {split} split")
        return SUCCESS

    def transform(self):
        return self.run()


class Cifar10ToMR:
    """CIFAR-10 binary version (data_batch_1..5.bin, test_batch.bin) -> destination (train) and
    destination + "_test", fields id (int64), label (int64), data (PNG bytes of the 32x32 RGB image)."""

    _RECORD = 1 + 3 * 32 * 32

    def __init__(self, source, destination):
        _check_source(source, "Cifar10ToMR")
        _check_dest(destination, "Cifar10ToMR")
        self.source, self.destination = source, destination
        self.train = [os.path.join(source, f"data_batch_{i}.bin") for i in range(1, 6)]
        self.train = [p for p in self.train if os.path.isfile(p)]
        self.test = [p for p in [os.path.join(source, "test_batch.bin")] if os.path.isfile(p)]
        if not self.train and not self.test:
            raise ValueError(f"[Cifar10ToMR] no CIFAR-10 binary files (data_batch_N.bin, test_batch.bin) "
                             f"in '{source}'")

    def _load(self, paths):
        parts = []
        for p in paths:
            raw = np.fromfile(p, dtype=np.uint8)
            if raw.size == 0 or raw.size % self._RECORD:
                raise ValueError(f"[Cifar10ToMR] '{p}' has {raw.size} bytes, not a multiple of the "
                                 f"{self._RECORD}-byte CIFAR-10 record")
            parts.append(raw.reshape(-1, self._RECORD))
        rec = np.concatenate(parts)
        return rec[:, 0], rec[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)

    def run(self, fields=None):
        schema = {"id": {"type": "int64"}, "label": {"type": "int64"}, "data": {"type": "bytes"}}
        for paths, path in ((self.train, self.destination), (self.test, self.destination + "_test")):
            if not paths:
                continue
            labels, images = self._load(paths)
            rows = ({"id": i, "label": int(labels[i]), "data": encode_png(images[i])}
                    for i in range(len(labels)))
            _write(path, 1, schema, rows, index_fields=fields, desc="CIFAR-10")
        return SUCCESS

    def transform(self, fields=None):
        return self.run(fields)


class ImageFolderToMR:
    """An ImageFolder tree (one sub-folder per class, labels by sorted folder name) -> destination,
    fields label (int32), image (the file's bytes, undecoded), file_name (string)."""

    EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".gif", ".webp")

    def __init__(self, source_dir, destination, partition_number=1):
        _check_source(source_dir, "ImageFolderToMR")
        _check_dest(destination, "ImageFolderToMR")
        self.source, self.destination, self.partition_number = source_dir, destination, partition_number
        self.classes = sorted(d for d in os.listdir(source_dir) if os.path.isdir(os.path.join(source_dir, d)))
        if not self.classes:
            raise ValueError(f"[ImageFolderToMR] '{source_dir}' has no class sub-folders")

    def _rows(self):
        for label, cls in enumerate(self.classes):
            folder = os.path.join(self.source, cls)
            for name in sorted(os.listdir(folder)):
                if not name.lower().endswith(self.EXTENSIONS):
                    continue
                with open(os.path.join(folder, name), "rb") as f:
                    data = f.read()
                yield {"label": label, "image": data, "file_name": f"{cls}/{name}"}

    def run(self):
        schema = {"label": {"type": "int32"}, "image": {"type": "bytes"}, "file_name": {"type": "string"}}
        _write(self.destination, self.partition_number, schema, self._rows(), desc="ImageFolder")
        return SUCCESS

    def transform(self):
        return self.run()
