"""More image sources with MindSpore's signatures: KMnist-, FashionMnist- and EMnistDataset (IDX files),
SVHNDataset (MATLAB .mat), STL10Dataset (raw binary), Places365Dataset, FlickrDataset and
SBUDataset (image files listed by text files). Label and metadata files are parsed when the
dataset is built, so a bad file fails at once naming it; image files are read when a row is drawn
(raw bytes, or decoded with decode=True). Sampling, shuffling and sharding belong to the engine."""
import gzip
import math
import os
import struct
import zlib

import numpy as np

from mycel.dataset.detection_sources import _LazyRows, _image
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.matlab import load_mat
from mycel.dataset.sources import MnistDataset, _check_common, _check_dir, _check_type, _engine_args
from mycel.dataset.text_sources import _Rows

__all__ = ["KMnistDataset", "FashionMnistDataset", "EMnistDataset", "SVHNDataset", "STL10Dataset", "Places365Dataset",
           "FlickrDataset", "SBUDataset"]


def _usage(usage, valid, default="all"):
    usage = default if usage is None else usage
    _check_type(usage, "usage", str)
    if usage not in valid:
        raise ValueError(f"Input usage is not within the valid set of {list(valid)}.")
    return usage


def _source(owner, table, columns, num_samples, num_parallel_workers, shuffle, sampler, num_shards,
            shard_id):
    if not len(table):
        raise ValueError(f"{owner}: no rows (check the dataset folder and usage)")
    return dict(source_name=_E.py_source(table, columns), source_kwargs=None,
                **_engine_args(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id))


class KMnistDataset(MnistDataset):
    """Kuzushiji-MNIST: the four IDX files under MNIST's names (train-images-idx3-ubyte, ...),
    read by MnistDataset's reader. Columns image (28, 28, 1) uint8 and label."""


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST: the four IDX files under MNIST's names, read by MnistDataset's reader."""


# ---- IDX (EMNIST) --------------------------------------------------------------------------

def read_idx(path, owner, ndim):
    """The uint8 array of an IDX file (plain or .gz) with `ndim` dimensions; ValueError naming
    the file when its magic, rank or size is wrong. The body is read only up to the size the
    header declares (plus one byte to catch trailing data), so a forged header or a gzip bomb
    cannot make it read more."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4 + 4 * ndim)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != 0x08 or head[3] != ndim:
                raise ValueError(f"{owner}: '{path}' is not an IDX file of {ndim}-d unsigned bytes "
                                 f"(magic {head[:4].hex()}, expected 000008{ndim:02x})")
            if len(head) < 4 + 4 * ndim:
                raise ValueError(f"{owner}: '{path}' is truncated inside its header")
            dims = struct.unpack_from(">" + "I" * ndim, head, 4)
            need = math.prod(dims)  # Python ints: a forged header cannot wrap around
            if need > _IDX_MAX:
                raise ValueError(f"{owner}: '{path}' declares dimensions {list(dims)}, past {_IDX_MAX} bytes")
            chunks, got = [], 0
            while got <= need:
                block = f.read(min(need + 1 - got, 1 << 24))
                if not block:
                    break
                chunks.append(block)
                got += len(block)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e})") from None
    if got != need:
        raise ValueError(f"{owner}: '{path}' declares dimensions {list(dims)} ({need} bytes) but holds "
                         f"{'more' if got > need else got} bytes of data")
    return np.frombuffer(b"".join(chunks), np.uint8, need).reshape(dims)


def _find(folder, stem):
    for name in (stem, stem + ".gz"):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise ValueError(f"{folder}: {stem} (or {stem}.gz) does not exist")


_IDX_MAX = 1 << 33  # 8 GiB: EMNIST's largest file is about 550 MB

_EMNIST_NAMES = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")


class EMnistDataset(SourceDataset):
    """EMNIST: dataset_dir/emnist-<name>-<train|test>-images-idx3-ubyte and -labels-idx1-ubyte
    (plain or .gz). name: byclass, bymerge, balanced, letters, digits or mnist; usage train, test
    or all (None). Columns image (28, 28, 1) uint8 as stored and label uint32."""

    def __init__(self, dataset_dir, name, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "EMnistDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(name, "name", str)
        if name not in _EMNIST_NAMES:
            raise ValueError(f"Input name is not within the valid set of {list(_EMNIST_NAMES)}.")
        self.name, self.usage = name, _usage(usage, ("train", "test", "all"))
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        rows = []
        for part in (("train", "test") if self.usage == "all" else (self.usage,)):
            try:
                img_path = _find(self.dataset_dir, f"emnist-{name}-{part}-images-idx3-ubyte")
                lab_path = _find(self.dataset_dir, f"emnist-{name}-{part}-labels-idx1-ubyte")
            except ValueError as e:
                if self.usage == "all":  # 'all' reads whichever of the two parts the folder holds
                    continue
                raise ValueError(f"{owner}: {e}") from None
            images = read_idx(img_path, owner, 3)
            labels = read_idx(lab_path, owner, 1)
            if len(images) != len(labels):
                raise ValueError(f"{owner}: '{img_path}' holds {len(images)} images but '{lab_path}' "
                                 f"{len(labels)} labels")
            rows += [(images[k][:, :, None], np.array(labels[k], np.uint32)) for k in range(len(images))]
        super().__init__(**_source(owner, _Rows(rows), ["image", "label"], num_samples,
                                   num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- SVHN (.mat) ----------------------------------------------------------------------------

class SVHNDataset(SourceDataset):
    """SVHN cropped digits: dataset_dir/{train,test,extra}_32x32.mat, each with X (32, 32, 3, N)
    uint8 and y (N, 1). usage train, test, extra or all (None: the three in that order). Columns
    image (32, 32, 3) uint8 and label uint32, the digit (the files' label 10 is read as 0)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=1, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None):
        owner = "SVHNDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, ("train", "test", "extra", "all"))
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        images, labels = [], []
        for part in (("train", "test", "extra") if self.usage == "all" else (self.usage,)):
            path = os.path.join(self.dataset_dir, f"{part}_32x32.mat")
            if not os.path.isfile(path):
                raise ValueError(f"{owner}: {path} does not exist")
            mat = load_mat(path)
            x, y = mat.get("X"), mat.get("y")
            if x is None or y is None:
                raise ValueError(f"{owner}: '{path}' lacks the variable X or y (has {sorted(mat)})")
            if x.ndim != 4 or x.shape[:3] != (32, 32, 3) or y.size != x.shape[3]:
                raise ValueError(f"{owner}: '{path}': X must be (32, 32, 3, N) and y hold N labels; got X "
                                 f"{x.shape}, y {y.shape}")
            y = y.reshape(-1)
            if ((y < 0) | (y > 10) | (y != np.floor(y))).any():
                raise ValueError(f"{owner}: '{path}': labels must be integers 0..10, got {y[(y < 0) | (y > 10)][:5]}")
            images.append(np.moveaxis(x.astype(np.uint8, copy=False), 3, 0))
            labels.append(np.where(y == 10, 0, y).astype(np.uint32))
        images, labels = np.concatenate(images), np.concatenate(labels)
        rows = _LazyRows(owner, range(len(images)),
                         lambda k: (np.ascontiguousarray(images[k]), np.array(labels[k], np.uint32)))
        super().__init__(**_source(owner, rows, ["image", "label"], num_samples, num_parallel_workers,
                                   shuffle, sampler, num_shards, shard_id))


# ---- STL-10 (binary) ------------------------------------------------------------------------

_STL_PIXELS = 96 * 96 * 3


class STL10Dataset(SourceDataset):
    """STL-10's binary files: dataset_dir/train_X.bin, train_y.bin, test_X.bin, test_y.bin and
    unlabeled_X.bin. Each image is 3 x 96 x 96 bytes, channel by channel, each channel column by
    column; labels are bytes 1..10. usage train, test, unlabeled, train+unlabeled or all (None),
    files read in name order. Columns image (96, 96, 3) uint8 and label int32: the class 0..9,
    or -1 for an unlabeled image."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "STL10Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, ("train", "test", "unlabeled", "train+unlabeled", "all"))
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        parts = {"train": ["train"], "test": ["test"], "unlabeled": ["unlabeled"],
                 "train+unlabeled": ["train", "unlabeled"], "all": ["test", "train", "unlabeled"]}[self.usage]
        images, labels = [], []
        for part in sorted(parts):  # MindSpore reads the files in name order
            x_path = os.path.join(self.dataset_dir, f"{part}_X.bin")
            if not os.path.isfile(x_path):
                raise ValueError(f"{owner}: {x_path} does not exist")
            x = np.fromfile(x_path, np.uint8)
            if x.size % _STL_PIXELS:
                raise ValueError(f"{owner}: '{x_path}' holds {x.size} bytes, not a whole number of "
                                 f"{_STL_PIXELS}-byte images")
            n = x.size // _STL_PIXELS
            # (n, channel, column, row) -> (n, row, column, channel)
            images.append(x.reshape(n, 3, 96, 96).transpose(0, 3, 2, 1))
            if part == "unlabeled":
                labels.append(np.full(n, -1, np.int32))
                continue
            y_path = os.path.join(self.dataset_dir, f"{part}_y.bin")
            if not os.path.isfile(y_path):
                raise ValueError(f"{owner}: {y_path} does not exist")
            y = np.fromfile(y_path, np.uint8)
            if y.size != n:
                raise ValueError(f"{owner}: '{y_path}' holds {y.size} labels but '{x_path}' {n} images")
            if n and (y.min() < 1 or y.max() > 10):
                raise ValueError(f"{owner}: '{y_path}': labels must be 1..10, got {y.min()}..{y.max()}")
            labels.append(y.astype(np.int32) - 1)
        images, labels = np.concatenate(images), np.concatenate(labels)
        rows = _LazyRows(owner, range(len(images)),
                         lambda k: (np.ascontiguousarray(images[k]), np.array(labels[k], np.int32)))
        super().__init__(**_source(owner, rows, ["image", "label"], num_samples, num_parallel_workers,
                                   shuffle, sampler, num_shards, shard_id))


# ---- listed image files: Places365, Flickr, SBU ----------------------------------------------

def _text_lines(path, owner):
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None


def _pairs(path, owner, what):
    """[(text, int)] of a file of '<text> <integer>' lines."""
    out = []
    for k, line in enumerate(_text_lines(path, owner), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 2 or not f[1].isdigit():
            raise ValueError(f"{owner}: '{path}':{k}: expected '<{what}> <label>', got {line[:80]!r}")
        out.append((f[0], int(f[1])))
    return out


_PLACES_LISTS = {"train-standard": "places365_train_standard.txt",
                 "train-challenge": "places365_train_challenge.txt", "val": "places365_val.txt"}


class Places365Dataset(SourceDataset):
    """Places365: dataset_dir/categories_places365.txt ('/a/airfield 0' lines), the file list
    of the usage (places365_train_standard.txt, places365_train_challenge.txt or
    places365_val.txt: '<image path> <label>' lines) and the images under data_256_standard,
    data_256_challenge or val_256 (small=True), else data_large_* / val_large. usage
    'train-standard' (None), 'train-challenge' or 'val'. Columns image (file bytes, or decoded
    with decode) and label uint32, in list order."""

    def __init__(self, dataset_dir, usage=None, small=True, decode=False, num_samples=None,
                 num_parallel_workers=None, shuffle=None, sampler=None, num_shards=None, shard_id=None,
                 cache=None):
        owner = "Places365Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, tuple(_PLACES_LISTS), "train-standard")
        _check_type(small, "small", bool)
        _check_type(decode, "decode", bool)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.small, self.decode = small, decode
        self.categories = dict(_pairs(os.path.join(self.dataset_dir, "categories_places365.txt"), owner,
                                      "category"))
        size = "256" if small else "large"
        folder = f"val_{size}" if self.usage == "val" else f"data_{size}_{self.usage.split('-')[1]}"
        records = [(os.path.join(self.dataset_dir, folder, p.lstrip("/")), label) for p, label in
                   _pairs(os.path.join(self.dataset_dir, _PLACES_LISTS[self.usage]), owner, "image path")]
        bad = [label for _, label in records if label > 0xFFFFFFFF]
        if bad:
            raise ValueError(f"{owner}: label {bad[0]} of {_PLACES_LISTS[self.usage]} is past 2^32 - 1")
        rows = _LazyRows(owner, records, lambda r: (_image(r[0], owner, decode), np.array(r[1], np.uint32)))
        super().__init__(**_source(owner, rows, ["image", "label"], num_samples, num_parallel_workers,
                                   shuffle, sampler, num_shards, shard_id))


_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PN", b"GIF", b"BM")


def _is_image(path, owner):
    try:
        with open(path, "rb") as f:
            head = f.read(3)
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None
    return any(head.startswith(m) for m in _IMAGE_MAGIC)


class FlickrDataset(SourceDataset):
    """Flickr8k / Flickr30k: annotation_file holds '<image name>#<k>\\t<caption>' lines, the
    images lie in dataset_dir. One row per image (in name order; files that are not JPEG, PNG,
    GIF or BMP are skipped, as MindSpore does): image (file bytes, or decoded with decode) and
    annotation, the 1-d string array of its captions in file order."""

    def __init__(self, dataset_dir, annotation_file, num_samples=None, num_parallel_workers=None,
                 shuffle=None, decode=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "FlickrDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(annotation_file, "annotation_file", (str, os.PathLike))
        self.annotation_file = os.fspath(annotation_file)
        decode = False if decode is None else decode
        _check_type(decode, "decode", bool)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        captions = {}
        for k, line in enumerate(_text_lines(self.annotation_file, owner), 1):
            if not line:
                continue
            name, tab, caption = line.partition("\t")
            image = name.rpartition("#")[0]
            if not tab or not image or not caption:
                raise ValueError(f"{owner}: '{self.annotation_file}':{k}: expected '<image>#<k>\\t<caption>', "
                                 f"got {line[:80]!r}")
            path = os.path.join(self.dataset_dir, image)
            if not os.path.isfile(path):
                raise ValueError(f"{owner}: '{self.annotation_file}':{k}: the image {path} does not exist")
            captions.setdefault(path, []).append(caption)
        records = [(p, np.array(c)) for p, c in sorted(captions.items()) if _is_image(p, owner)]
        rows = _LazyRows(owner, records, lambda r: (_image(r[0], owner, decode), r[1]))
        super().__init__(**_source(owner, rows, ["image", "annotation"], num_samples, num_parallel_workers,
                                   shuffle, sampler, num_shards, shard_id))


class SBUDataset(SourceDataset):
    """SBU Captioned Photos: dataset_dir/SBU_captioned_photo_dataset_urls.txt and
    SBU_captioned_photo_dataset_captions.txt (line k of one goes with line k of the other) and
    the downloaded images in dataset_dir/sbu_images/, each named as the last part of its URL.
    Rows are the listed photos whose file is present, in list order: image (file bytes, or
    decoded with decode) and caption (str)."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None, decode=False,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "SBUDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(decode, "decode", bool)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        urls_path = os.path.join(self.dataset_dir, "SBU_captioned_photo_dataset_urls.txt")
        caps_path = os.path.join(self.dataset_dir, "SBU_captioned_photo_dataset_captions.txt")
        images = os.path.join(self.dataset_dir, "sbu_images")
        if not os.path.isdir(images):
            raise ValueError(f"{owner}: the image folder {images} does not exist")
        urls = [u.strip() for u in _text_lines(urls_path, owner)]
        caps = [c.strip() for c in _text_lines(caps_path, owner)]
        while urls and not urls[-1]:
            urls.pop()
        while caps and not caps[-1]:
            caps.pop()
        if len(urls) != len(caps):
            raise ValueError(f"{owner}: '{urls_path}' lists {len(urls)} URLs but '{caps_path}' "
                             f"{len(caps)} captions")
        records = []
        for url, cap in zip(urls, caps):
            path = os.path.join(images, url.rstrip("/").rsplit("/", 1)[-1])
            if url and os.path.isfile(path):
                records.append((path, np.array(cap)))
        rows = _LazyRows(owner, records, lambda r: (_image(r[0], owner, decode), r[1]))
        super().__init__(**_source(owner, rows, ["image", "caption"], num_samples, num_parallel_workers,
                                   shuffle, sampler, num_shards, shard_id))
