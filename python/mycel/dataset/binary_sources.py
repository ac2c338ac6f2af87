"""Image sources stored in binary or numeric text files, with MindSpore's signatures: QMnistDataset
(IDX files with int32 label tables), SemeionDataset (semeion.data), USPSDataset (LIBSVM text) and
PhotoTourDataset (patches tiled in BMP files). These files come from outside, so every reader
checks each size and count against the bytes present and raises ValueError naming the file
(tests/fuzz targets qmnist_labels, semeion, usps and bmp run them on random bytes)."""
import functools
import gzip
import math
import os
import struct
import zlib

import numpy as np

from mycel.dataset.detection_sources import _LazyRows
from mycel.dataset.engine import SourceDataset
from mycel.dataset.folder_sources import _choice, _need_dir, _need_file
from mycel.dataset.image_sources import _find, _source, read_idx
from mycel.dataset.sources import _check_common, _check_dir, _check_type

__all__ = ["QMnistDataset", "SemeionDataset", "USPSDataset", "PhotoTourDataset"]

_MAX_BYTES = 1 << 32  # no file of these sets comes near 4 GiB; a forged header cannot ask for more


def _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
           num_shards, shard_id):
    SourceDataset.__init__(self, **_source(owner, _LazyRows(owner, records, row), columns, num_samples,
                                           num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- QMNIST -----------------------------------------------------------------------------------

def read_idx_int32(path, owner, ndim=2):
    """The int32 array of an IDX file of big-endian 32-bit integers (type code 0x0C, QMNIST's
    label tables), plain or .gz; ValueError naming the file when its magic, rank or size is wrong.
    At most the declared size plus one byte is read, so a forged header or a gzip bomb cannot make
    it read more."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4 + 4 * ndim)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != 0x0C or head[3] != ndim:
                raise ValueError(f"{owner}: '{path}' is not an IDX file of {ndim}-d int32 "
                                 f"(magic {head[:4].hex()}, expected 00000c{ndim:02x})")
            if len(head) < 4 + 4 * ndim:
                raise ValueError(f"{owner}: '{path}' is truncated inside its header")
            dims = struct.unpack_from(">" + "I" * ndim, head, 4)
            need = 4 * math.prod(dims)
            if need > _MAX_BYTES:
                raise ValueError(f"{owner}: '{path}' declares dimensions {list(dims)}, past {_MAX_BYTES} bytes")
            data = f.read(need + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e})") from None
    if len(data) != need:
        raise ValueError(f"{owner}: '{path}' declares dimensions {list(dims)} ({need} bytes) but holds "
                         f"{'more' if len(data) > need else len(data)} bytes of data")
    return np.frombuffer(data, ">i4").astype(np.int32).reshape(dims)


_QMNIST_PARTS = {"train": ("qmnist-train",), "test": ("qmnist-test",), "test10k": ("qmnist-test",),
                 "test50k": ("qmnist-test",), "nist": ("xnist",), "all": ("qmnist-train", "qmnist-test", "xnist")}


class QMnistDataset(SourceDataset):
    """QMNIST: dataset_dir/qmnist-{train,test}-images-idx3-ubyte with qmnist-{train,test}-labels-idx2-int,
    and xnist-images-idx3-ubyte with xnist-labels-idx2-int (plain or .gz). usage 'train', 'test',
    'test10k' (the first 10000 test rows), 'test50k' (the rest), 'nist' or 'all' (None: train, test
    and nist, as MindSpore reads them). Columns image (28, 28, 1) uint8 and label, uint32: the digit (compat=True) or the whole
    8-field label row (compat=False: digit, NIST class, writer id, ...)."""

    def __init__(self, dataset_dir, usage=None, compat=True, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "QMnistDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", tuple(_QMNIST_PARTS), "all")
        _check_type(compat, "compat", bool)
        self.compat = compat
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        images, labels = [], []
        for stem in _QMNIST_PARTS[self.usage]:
            try:
                img_path = _find(self.dataset_dir, f"{stem}-images-idx3-ubyte")
                lab_path = _find(self.dataset_dir, f"{stem}-labels-idx2-int")
            except ValueError as e:
                raise ValueError(f"{owner}: {e}") from None
            x, y = read_idx(img_path, owner, 3), read_idx_int32(lab_path, owner, 2)
            if len(x) != len(y) or y.shape[1] != 8:
                raise ValueError(f"{owner}: '{img_path}' holds {len(x)} images but '{lab_path}' a {list(y.shape)} "
                                 "label table (expected N x 8)")
            if (y < 0).any():
                raise ValueError(f"{owner}: '{lab_path}' holds negative label fields")
            if self.usage == "test10k":
                x, y = x[:10000], y[:10000]
            elif self.usage == "test50k":
                x, y = x[10000:], y[10000:]
            images.append(x)
            labels.append(y.astype(np.uint32))
        images, labels = np.concatenate(images), np.concatenate(labels)

        def row(k):
            return images[k][:, :, None], (np.array(labels[k, 0]) if compat else labels[k].copy())

        _build(self, owner, range(len(images)), row, ["image", "label"], num_samples, num_parallel_workers,
               shuffle, sampler, num_shards, shard_id)


def _read_ascii(path, owner):
    """The whole of a text file of digits (bounded by _MAX_BYTES); ValueError naming the file."""
    try:
        with open(path, "rb") as f:
            return f.read(_MAX_BYTES + 1).decode("ascii")
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not ASCII text ({e})") from None


# ---- Semeion ----------------------------------------------------------------------------------

def read_semeion(path, owner="SemeionDataset"):
    """(images (N, 16, 16) uint8 of 0 and 1, labels (N,) uint32) of a semeion.data file: per line
    256 pixel values (0 or 1, as '1.0000') then the digit one-hot in 10 integers. The pixels stay
    0 and 1, as MindSpore reads them (torchvision scales them to 255)."""
    text = _read_ascii(path, owner)
    images, labels = [], []
    for k, line in enumerate(text.splitlines(), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 266:
            raise ValueError(f"{owner}: '{path}':{k}: expected 266 values (256 pixels, 10 label bits), got {len(f)}")
        try:
            pixels = np.array([float(v) for v in f[:256]])
            onehot = [int(v) for v in f[256:]]
        except ValueError:
            raise ValueError(f"{owner}: '{path}':{k}: a value is not a number") from None
        if not ((pixels == 0) | (pixels == 1)).all():
            raise ValueError(f"{owner}: '{path}':{k}: pixels must be 0 or 1")
        if sorted(onehot) != [0] * 9 + [1]:
            raise ValueError(f"{owner}: '{path}':{k}: the last 10 values must be one-hot, got {onehot}")
        images.append(pixels.astype(np.uint8).reshape(16, 16))
        labels.append(onehot.index(1))
    return np.array(images, np.uint8).reshape(-1, 16, 16), np.array(labels, np.uint32)


class SemeionDataset(SourceDataset):
    """Semeion handwritten digits: dataset_dir/semeion.data. Columns image (16, 16) uint8 (ink 1,
    paper 0, as MindSpore's) and label uint32, in file order."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, cache=None):
        owner = "SemeionDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        images, labels = read_semeion(_need_file(os.path.join(self.dataset_dir, "semeion.data"), owner), owner)
        _build(self, owner, range(len(images)), lambda k: (images[k], np.array(labels[k])), ["image", "label"],
               num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- USPS -------------------------------------------------------------------------------------

def read_usps(path, owner="USPSDataset"):
    """(images (N, 16, 16, 1) uint8, labels (N,) uint32) of a USPS file in LIBSVM format: per line
    '<label 1..10> <index 1..256>:<value in [-1, 1]> ...'; a pixel is (value + 1) / 2 * 255 cut
    to an integer, the value read as a float32 first (as MindSpore's stof), an absent index is
    value 0, the label is the digit (label - 1)."""
    text = _read_ascii(path, owner)
    images, labels = [], []
    for k, line in enumerate(text.splitlines(), 1):
        f = line.split()
        if not f:
            continue
        where = f"{owner}: '{path}':{k}"
        try:
            label = float(f[0])
        except ValueError:
            label = 0.0
        if label not in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10):  # the files write labels as '3' or '3.0'
            raise ValueError(f"{where}: the label must be 1..10, got {f[0][:20]!r}")
        values = np.zeros(256)
        for item in f[1:]:
            index, colon, value = item.partition(":")
            try:
                i, v = int(index), float(value)
            except ValueError:
                i, v = 0, 0.0
                colon = ""
            if not colon or not 1 <= i <= 256 or not -1 <= v <= 1:
                raise ValueError(f"{where}: expected '<index 1..256>:<value in [-1, 1]>', got {item[:40]!r}")
            values[i - 1] = np.float32(v)
        images.append(((values + 1.0) / 2.0 * 255.0).astype(np.uint8).reshape(16, 16, 1))
        labels.append(int(label) - 1)
    return np.array(images, np.uint8).reshape(-1, 16, 16, 1), np.array(labels, np.uint32)


class USPSDataset(SourceDataset):
    """USPS handwritten digits: dataset_dir/usps (train, 7291 rows) and usps.t (test, 2007), the
    LIBSVM text files. usage 'train', 'test' or 'all' (None: train then test). Columns image
    (16, 16, 1) uint8 and label uint32 (the digit)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 num_shards=None, shard_id=None, cache=None):
        owner = "USPSDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", ("train", "test", "all"), "all")
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        images, labels = [], []
        for name in {"train": ["usps"], "test": ["usps.t"], "all": ["usps", "usps.t"]}[self.usage]:
            x, y = read_usps(_need_file(os.path.join(self.dataset_dir, name), owner), owner)
            images.append(x)
            labels.append(y)
        images, labels = np.concatenate(images), np.concatenate(labels)
        _build(self, owner, range(len(images)), lambda k: (images[k], np.array(labels[k])), ["image", "label"],
               num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)


# ---- PhotoTour --------------------------------------------------------------------------------

def read_bmp(path, owner="PhotoTourDataset"):
    """The (height, width) uint8 gray image of an uncompressed BMP file: 8-bit with a palette (the
    palette's first channel is the gray level) or 24/32-bit (the blue channel; PhotoTour's files
    are gray, so every channel is equal). Rows are returned top first whichever way they are stored."""
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None

    def fail(what):
        raise ValueError(f"{owner}: '{path}' is not a supported BMP file: {what}")

    if len(data) < 54 or data[:2] != b"BM":
        fail("no 'BM' header")
    offset, header = struct.unpack_from("<II", data, 10)
    if header < 40 or 14 + header > len(data):
        fail(f"info header size {header}")
    width, height, planes, bits, compression, _, _, _, colors = struct.unpack_from("<iiHHIIiiI", data, 18)
    if compression not in (0, 3) or planes != 1 or bits not in (8, 24, 32) or (bits == 8 and compression):
        fail(f"{bits}-bit, compression {compression} (uncompressed 8, 24 or 32-bit only)")
    if width <= 0 or height == 0 or width > 1 << 16 or abs(height) > 1 << 16:
        fail(f"size {width} x {height}")
    stride = (width * bits // 8 + 3) & ~3
    rows = abs(height)
    if offset + stride * rows > len(data):
        fail(f"the pixel data ({stride * rows} bytes at {offset}) runs past the end ({len(data)} bytes)")
    pixels = np.frombuffer(data, np.uint8, stride * rows, offset).reshape(rows, stride)
    if bits == 8:
        colors = colors or 256
        palette_at = 14 + header
        if colors > 256 or palette_at + 4 * colors > offset:
            fail(f"a palette of {colors} colours does not fit before the pixels")
        gray = np.frombuffer(data, np.uint8, 4 * colors, palette_at).reshape(colors, 4)[:, 0]
        index = pixels[:, :width]
        if int(index.max(initial=0)) >= colors:
            fail(f"a pixel indexes colour {int(index.max())} of a {colors}-colour palette")
        image = gray[index]
    else:
        image = pixels[:, :width * bits // 8:bits // 8]
    return np.ascontiguousarray(image[::-1] if height > 0 else image)


_PHOTOTOUR_NAMES = ("notredame", "yosemite", "liberty", "notredame_harris", "yosemite_harris", "liberty_harris")
_PATCH, _PER_SIDE = 64, 16  # 64 x 64 patches, 16 x 16 of them in each 1024 x 1024 BMP
_MATCHES = "m50_100000_100000_0.txt"


class PhotoTourDataset(SourceDataset):
    """Photo Tourism patches (Brown et al.): dataset_dir/<name>/patchesNNNN.bmp (1024 x 1024 gray
    images, each 256 patches of 64 x 64 in row order; files in name order), info.txt (one line per
    patch, its 3D point id first) and m50_100000_100000_0.txt (patch1 point1 _ patch2 point2 _ _
    lines). name notredame, yosemite, liberty or their _harris variants. usage 'train' (None): one
    column image (64, 64, 1) uint8, a row per patch listed in info.txt; usage 'test': image1, image2
    (64, 64, 1) uint8 and matches uint32 (1 when the two patches show the same 3D point)."""

    def __init__(self, dataset_dir, name, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "PhotoTourDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.name = _choice(name, "name", _PHOTOTOUR_NAMES, None)
        self.usage = _choice(usage, "usage", ("train", "test"), "train")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        folder = _need_dir(os.path.join(self.dataset_dir, self.name), owner)
        bmps = sorted(f for f in os.listdir(folder) if f.lower().endswith(".bmp"))
        info = os.path.join(folder, "info.txt")
        n = sum(1 for line in _lines(_need_file(info, owner), owner) if line.strip())
        if n > len(bmps) * _PER_SIDE * _PER_SIDE:
            raise ValueError(f"{owner}: '{info}' lists {n} patches but {folder} holds {len(bmps)} BMP files "
                             f"({len(bmps) * _PER_SIDE * _PER_SIDE} patches)")

        @functools.lru_cache(maxsize=4)
        def sheet(i):
            img = read_bmp(os.path.join(folder, bmps[i]), owner)
            if img.shape != (_PATCH * _PER_SIDE, _PATCH * _PER_SIDE):
                raise ValueError(f"{owner}: '{bmps[i]}' is {img.shape[1]} x {img.shape[0]}; patch files are "
                                 f"{_PATCH * _PER_SIDE} x {_PATCH * _PER_SIDE}")
            return img

        def patch(p):
            sheet_index, cell = divmod(p, _PER_SIDE * _PER_SIDE)
            r, c = divmod(cell, _PER_SIDE)
            return sheet(sheet_index)[r * _PATCH:(r + 1) * _PATCH, c * _PATCH:(c + 1) * _PATCH, None].copy()

        if self.usage == "train":
            _build(self, owner, range(n), lambda p: (patch(p),), ["image"], num_samples, num_parallel_workers,
                   shuffle, sampler, num_shards, shard_id)
            return
        path = _need_file(os.path.join(folder, _MATCHES), owner)
        pairs = []
        for k, line in enumerate(_lines(path, owner), 1):
            f = line.split()
            if not f:
                continue
            if len(f) < 5 or not all(x.isdigit() for x in f[:5]):
                raise ValueError(f"{owner}: '{path}':{k}: expected 'patch1 point1 _ patch2 point2 ...', "
                                 f"got {line[:80]!r}")
            a, b = int(f[0]), int(f[3])
            if a >= n or b >= n:
                raise ValueError(f"{owner}: '{path}':{k}: patch {max(a, b)} past the {n} patches of info.txt")
            pairs.append((a, b, int(f[1] == f[4])))
        _build(self, owner, pairs, lambda r: (patch(r[0]), patch(r[1]), np.array(r[2], np.uint32)),
               ["image1", "image2", "matches"], num_samples, num_parallel_workers, shuffle, sampler, num_shards,
               shard_id)


def _lines(path, owner):
    try:
        with open(path, encoding="ascii") as f:
            return f.read().splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not ASCII text ({e})") from None
