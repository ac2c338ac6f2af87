"""Generated sources with MindSpore's signatures: FakeImageDataset and RandomDataset. Each row is
drawn from a generator seeded by its index (and the base seed), so a row's content does not depend
on the order rows are read in, on sharding or on shuffling: the same index gives the same row.
The values are not bit-identical to MindSpore's (its generator is C++'s mt19937)."""
import numpy as np

from mycel.dataset.detection_sources import _LazyRows
from mycel.dataset.engine import SourceDataset, config
from mycel.dataset.image_sources import _source
from mycel.dataset.sources import _INT32_MAX, _check_common, _check_interval, _check_type
from mycel.dataset.tfrecord import Schema

__all__ = ["FakeImageDataset", "RandomDataset"]


def _build(self, owner, n, row, columns, num_samples, num_parallel_workers, shuffle, sampler, num_shards,
           shard_id):
    SourceDataset.__init__(self, **_source(owner, _LazyRows(owner, range(n), row), columns, num_samples,
                                           num_parallel_workers, shuffle, sampler, num_shards, shard_id))


class FakeImageDataset(SourceDataset):
    """num_images random images: image of shape image_size (H, W, C) uint8, uniform in [0, 255],
    and label uint32 uniform in [0, num_classes). Row k comes from a generator seeded with
    base_seed + k."""

    def __init__(self, num_images=1000, image_size=(224, 224, 3), num_classes=10, base_seed=0, num_samples=None,
                 num_parallel_workers=None, shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "FakeImageDataset"
        _check_interval(num_images, "num_images", 1, _INT32_MAX)
        _check_type(image_size, "image_size", (list, tuple))
        if len(image_size) != 3:
            raise ValueError(f"Input image_size must be (height, width, channels), got {image_size!r}.")
        for s in image_size:
            _check_interval(s, "image_size", 1, _INT32_MAX)
        _check_interval(num_classes, "num_classes", 1, _INT32_MAX)
        _check_interval(base_seed, "base_seed", 0, _INT32_MAX)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.num_images, self.image_size = num_images, tuple(image_size)
        self.num_classes, self.base_seed = num_classes, base_seed

        def row(k):
            rng = np.random.default_rng(base_seed + k)
            image = rng.integers(0, 256, self.image_size, dtype=np.uint8)
            return image, np.array(rng.integers(0, num_classes), np.uint32)

        _build(self, owner, num_images, row, ["image", "label"], num_samples, num_parallel_workers, shuffle,
               sampler, num_shards, shard_id)


# types RandomDataset draws when no schema is given, and the value range of each kind
_RANDOM_TYPES = ("uint8", "int32", "int64", "float32", "float64", "bool")


def _random_values(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype in ("string", "bytes"):
        letters = rng.integers(ord("a"), ord("z") + 1, shape + (8,)).astype(np.uint8)
        text = np.array([bytes(r).decode("ascii") for r in letters.reshape(-1, 8)]).reshape(shape)
        return text if dtype == "string" else np.char.encode(text, "ascii")
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -(1 << 16)), min(info.max, 1 << 16), shape, endpoint=True).astype(dt)


class RandomDataset(SourceDataset):
    """Rows of random values. schema: a Schema or the path of a schema JSON file; its columns
    give the names, types and shapes (a -1 or missing shape is drawn per row, 1 to 8 per
    dimension); columns_list keeps only the named columns. Without a schema, 1 to 4 columns
    named c0, c1, ... with random types and shapes (rank 1 to 3, 1 to 8 per dimension) are drawn
    once from the pipeline seed. total_rows: the row count (None: the schema's numRows when
    positive, else 1 to 1024 drawn from the pipeline seed). Row k's values come from a generator
    seeded with (pipeline seed, k)."""

    def __init__(self, total_rows=None, schema=None, columns_list=None, num_samples=None,
                 num_parallel_workers=None, cache=None, shuffle=None, num_shards=None, shard_id=None):
        owner = "RandomDataset"
        if total_rows is not None:
            _check_interval(total_rows, "total_rows", 1, _INT32_MAX)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        seed = config.get_seed()
        setup = np.random.default_rng([seed, 0x52414e44])  # 'RAND': schema and row count draws
        if schema is not None and not isinstance(schema, Schema):
            schema = Schema(schema)
        if schema is not None:
            columns = [(c["name"], c["type"], tuple(c.get("shape", [-1]))) for c in schema.columns]
            if not columns:
                raise ValueError(f"{owner}: the schema has no columns")
        else:
            columns = []
            for i in range(int(setup.integers(1, 5))):
                shape = tuple(int(s) for s in setup.integers(1, 9, int(setup.integers(1, 4))))
                columns.append((f"c{i}", _RANDOM_TYPES[int(setup.integers(len(_RANDOM_TYPES)))], shape))
        if columns_list is not None:
            _check_type(columns_list, "columns_list", (list, tuple))
            names = [c[0] for c in columns]
            for n in columns_list:
                _check_type(n, "columns_list", str)
                if n not in names:
                    raise ValueError(f"{owner}: column '{n}' of columns_list is not in the schema ({names})")
            columns = [c for c in columns if c[0] in columns_list]
        if total_rows is None:
            total_rows = schema.num_rows if schema is not None and schema.num_rows > 0 else \
                int(setup.integers(1, 1025))
        self.total_rows, self.columns = total_rows, columns

        def row(k):
            rng = np.random.default_rng([seed, k])
            out = []
            for _, dtype, shape in columns:
                shape = tuple(int(rng.integers(1, 9)) if s == -1 else s for s in shape)
                out.append(_random_values(rng, dtype, shape))
            return tuple(out)

        _build(self, owner, total_rows, row, [c[0] for c in columns], num_samples, num_parallel_workers, shuffle,
               None, num_shards, shard_id)
