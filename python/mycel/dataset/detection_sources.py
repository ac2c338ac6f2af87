"""Image sources with annotations, with MindSpore's signatures: VOCDataset (Pascal VOC's folder
tree, XML annotations), CocoDataset (a COCO JSON annotation file) and CelebADataset (CelebA's
attribute and partition lists). The annotation files are parsed when the dataset is built (so a
bad file fails at once, naming it); the images are read when a row is drawn, as raw bytes or
decoded with vision.Decode. Sampling, shuffling and sharding belong to the engine."""
import json
import os
import xml.parsers.expat

import numpy as np

from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _check_type, _engine_args

__all__ = ["VOCDataset", "CocoDataset", "CelebADataset"]


class _LazyRows:
    """Random access to rows whose image is read (and decoded) only when the row is drawn."""

    def __init__(self, owner, records, make_row):
        self.owner, self.records, self.make_row = owner, records, make_row

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.make_row(self.records[i])


def _read_bytes(path, owner):
    try:
        with open(path, "rb") as f:
            return np.frombuffer(f.read(), np.uint8).copy()
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None


def _image(path, owner, decode, decrypt=None):
    """The image file's bytes (1-d uint8), or the decoded (H, W, C) image. decrypt: MindSpore's
    hook for encrypted images, a callable from the file's path to its plain bytes."""
    if decrypt is None:
        data = _read_bytes(path, owner)
    else:
        plain = decrypt(path)
        if not isinstance(plain, (bytes, bytearray, memoryview, np.ndarray)):
            raise TypeError(f"{owner}: decrypt must return the image's bytes, got {type(plain).__name__} "
                            f"for '{path}'")
        data = np.frombuffer(bytes(plain) if not isinstance(plain, np.ndarray) else plain.tobytes(), np.uint8)
    if not decode:
        return data
    from mycel.dataset.vision import Decode  # vision imports the engine; load it on first use
    try:
        return np.asarray(Decode()(data))
    except Exception as e:  # noqa: BLE001  the decoder's own message, re-raised with the file
        raise ValueError(f"{owner}: cannot decode '{path}' ({e})") from None


def _check_decrypt(decrypt):
    if decrypt is not None and not callable(decrypt):
        raise TypeError(f"Argument decrypt with value {decrypt!r} is not callable.")


def _check_metadata(extra_metadata):
    _check_type(extra_metadata, "extra_metadata", bool)
    return extra_metadata


def _with_metadata(extra_metadata, row, columns, filename):
    """extra_metadata=True appends MindSpore's '_meta-filename' column (str: filename(record)); the
    iterators leave '_meta-' columns out until a rename drops the prefix, as MindSpore's do."""
    if not extra_metadata:
        return row, columns
    return (lambda rec: tuple(row(rec)) + (np.array(filename(rec)),)), list(columns) + ["_meta-filename"]


# ---- XML without a DTD: Pascal VOC annotations ---------------------------------------------

class _Node:
    __slots__ = ("tag", "children", "text")

    def __init__(self, tag):
        self.tag, self.children, self.text = tag, [], ""

    def find(self, tag):
        return next((c for c in self.children if c.tag == tag), None)

    def value(self, tag, default=None):
        c = self.find(tag)
        return default if c is None else c.text.strip()


def _parse_xml(data, path, owner):
    """The element tree of an XML document. A document type declaration is refused (it is
    where entity definitions live, the billion-laughs and external-entity attacks), so no
    entity other than the five predefined ones is ever expanded."""
    p = xml.parsers.expat.ParserCreate()
    p.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    root, stack = [], []

    def refuse(*_):
        raise ValueError(f"{owner}: '{path}' has a document type declaration (<!DOCTYPE>/<!ENTITY>); "
                         "annotation files must not define entities")

    def start(tag, _attrs):
        node = _Node(tag)
        (stack[-1].children if stack else root).append(node)
        stack.append(node)

    def end(_tag):
        stack.pop()

    def chars(text):
        if stack:
            stack[-1].text += text

    p.StartDoctypeDeclHandler = refuse
    p.EntityDeclHandler = refuse
    p.ExternalEntityRefHandler = refuse
    p.StartElementHandler, p.EndElementHandler, p.CharacterDataHandler = start, end, chars
    try:
        p.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise ValueError(f"{owner}: '{path}' is not well-formed XML ({e})") from None
    return root[0]


def _voc_number(node, tag, path, owner, kind=float, default=None):
    text = node.value(tag)
    if text is None or text == "":
        if default is not None:
            return default
        raise ValueError(f"{owner}: '{path}': an object lacks <{tag}>")
    try:
        return kind(float(text)) if kind is int else kind(text)
    except (ValueError, OverflowError):  # int('inf') overflows
        raise ValueError(f"{owner}: '{path}': <{tag}> must be a number, got {text!r}") from None


def _voc_objects(path, owner):
    """[(name, [xmin, ymin, w, h], difficult, truncated)] of one annotation file."""
    with open(path, "rb") as f:
        root = _parse_xml(f.read(), path, owner)
    objects = []
    for obj in (c for c in root.children if c.tag == "object"):
        name = obj.value("name")
        box = obj.find("bndbox")
        if not name or box is None:
            raise ValueError(f"{owner}: '{path}': an <object> lacks <name> or <bndbox>")
        x0, y0, x1, y1 = (_voc_number(box, t, path, owner) for t in ("xmin", "ymin", "xmax", "ymax"))
        if x1 < x0 or y1 < y0:
            raise ValueError(f"{owner}: '{path}': object '{name}' has xmax < xmin or ymax < ymin "
                             f"({x0}, {y0}, {x1}, {y1})")
        flags = [_voc_number(obj, t, path, owner, int, 0) for t in ("difficult", "truncated")]
        if not all(0 <= f <= 0xFFFFFFFF for f in flags):
            raise ValueError(f"{owner}: '{path}': object '{name}' has <difficult>/<truncated> {flags}, "
                             "outside [0, 2^32)")
        objects.append((name, [x0, y0, x1 - x0, y1 - y0], *flags))
    return objects


class VOCDataset(SourceDataset):
    """Pascal VOC: dataset_dir/ImageSets/{Segmentation|Main}/<usage>.txt lists the image ids;
    images are JPEGImages/<id>.jpg.

    task 'Segmentation': columns image and target (SegmentationClass/<id>.png), both the file
    bytes (uint8), or decoded (H, W, 3) uint8 when decode=True. task 'Detection': columns image,
    bbox (N, 4) float32 [xmin, ymin, width, height], label, difficult and truncate (N, 1) uint32
    each, from Annotations/<id>.xml. Labels come from class_indexing ({name: id}; an object of
    another class is an error), or, without it, number the class names found in the
    annotations in sorted order (get_class_indexing)."""

    def __init__(self, dataset_dir, task="Segmentation", usage="train", class_indexing=None,
                 num_samples=None, num_parallel_workers=None, shuffle=None, decode=False, sampler=None,
                 num_shards=None, shard_id=None, cache=None, extra_metadata=False, decrypt=None):
        owner = "VOCDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(task, "task", str)
        if task not in ("Segmentation", "Detection"):
            raise ValueError(f"Invalid task, expected 'Segmentation' or 'Detection', got {task!r}.")
        _check_type(usage, "usage", str)
        _check_type(decode, "decode", bool)
        extra_metadata = _check_metadata(extra_metadata)
        _check_decrypt(decrypt)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        if class_indexing is not None:
            if task != "Detection":
                raise ValueError("class_indexing is not supported in Segmentation task.")
            _check_type(class_indexing, "class_indexing", dict)
            for k, v in class_indexing.items():
                _check_type(k, "class_indexing", str)
                _check_type(v, "class_indexing", int)
                if not 0 <= v <= 0xFFFFFFFF:
                    raise ValueError(f"Input class_indexing value of '{k}' must be in [0, 2^32), got {v}.")
        self.task, self.usage, self.decode = task, usage, decode
        listing = os.path.join(self.dataset_dir, "ImageSets",
                               "Segmentation" if task == "Segmentation" else "Main", usage + ".txt")
        if not os.path.isfile(listing):
            raise ValueError(f"{owner}: the image list {listing} does not exist (usage '{usage}')")
        with open(listing, encoding="utf-8") as f:
            ids = [line.strip() for line in f if line.strip()]
        jpeg = os.path.join(self.dataset_dir, "JPEGImages")
        if task == "Segmentation":
            seg = os.path.join(self.dataset_dir, "SegmentationClass")
            records = [(os.path.join(jpeg, i + ".jpg"), os.path.join(seg, i + ".png")) for i in ids]
            self._class_indexing = None

            def row(rec):
                return _image(rec[0], owner, decode, decrypt), _image(rec[1], owner, decode)

            columns = ["image", "target"]
        else:
            ann = os.path.join(self.dataset_dir, "Annotations")
            parsed = []
            for i in ids:
                path = os.path.join(ann, i + ".xml")
                if not os.path.isfile(path):
                    raise ValueError(f"{owner}: the annotation {path} does not exist")
                parsed.append((os.path.join(jpeg, i + ".jpg"), _voc_objects(path, owner), path))
            if class_indexing is None:
                names = sorted({o[0] for _, objs, _ in parsed for o in objs})
                class_indexing = {n: k for k, n in enumerate(names)}
            self._class_indexing = dict(class_indexing)
            records = []
            for img, objs, path in parsed:
                for o in objs:
                    if o[0] not in class_indexing:
                        raise ValueError(f"{owner}: '{path}': class '{o[0]}' is not in class_indexing "
                                         f"{sorted(class_indexing)}")
                records.append((img, np.array([o[1] for o in objs], np.float32).reshape(-1, 4),
                                np.array([[class_indexing[o[0]]] for o in objs], np.uint32).reshape(-1, 1),
                                np.array([[o[2]] for o in objs], np.uint32).reshape(-1, 1),
                                np.array([[o[3]] for o in objs], np.uint32).reshape(-1, 1)))

            def row(rec):
                return (_image(rec[0], owner, decode, decrypt),) + rec[1:]

            columns = ["image", "bbox", "label", "difficult", "truncate"]
        # the image id, as MindSpore names the row
        row, columns = _with_metadata(extra_metadata, row, columns,
                                      lambda rec: os.path.splitext(os.path.basename(rec[0]))[0])
        super().__init__(_E.py_source(_LazyRows(owner, records, row), columns), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))

    def get_class_indexing(self):
        """{class name: label} of the Detection task."""
        if self.task != "Detection":
            raise NotImplementedError("Only 'Detection' support get_class_indexing.")
        return dict(self._class_indexing)


# ---- COCO ---------------------------------------------------------------------------------

_COCO_COLUMNS = {
    "Detection": ["image", "bbox", "category_id", "iscrowd"],
    "Stuff": ["image", "segmentation", "iscrowd"],
    "Keypoint": ["image", "keypoints", "num_keypoints"],
    "Panoptic": ["image", "bbox", "category_id", "iscrowd", "area"],
    "Captioning": ["image", "captions"],
}


def _json_field(obj, key, where, owner, kinds=(int, float), default=None):
    v = obj.get(key, default) if isinstance(obj, dict) else None
    if v is None or isinstance(v, bool) or not isinstance(v, kinds):
        raise ValueError(f"{owner}: {where}: '{key}' must be {' or '.join(k.__name__ for k in kinds)}, "
                         f"got {v!r}")
    return v


def _uint32(obj, key, where, owner, default=None):
    """An integer field that fills a uint32 column."""
    v = _json_field(obj, key, where, owner, (int,), default)
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"{owner}: {where}: '{key}' must be in [0, 2^32), got {v}")
    return v


def _numbers(v, key, where, owner, length=None):
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                          for x in v) or (length is not None and len(v) != length):
        want = f"a list of {length} numbers" if length else "a list of numbers"
        raise ValueError(f"{owner}: {where}: '{key}' must be {want}, got {str(v)[:80]}")
    return v


def _coco_entry(task, a, where, owner):
    """The per-annotation values of one task (a tuple, one item per non-image column)."""
    if task == "Detection":
        return (_numbers(a.get("bbox"), "bbox", where, owner, 4),
                _uint32(a, "category_id", where, owner),
                _uint32(a, "iscrowd", where, owner, 0))
    if task == "Stuff":
        crowd = _uint32(a, "iscrowd", where, owner, 0)
        seg = a.get("segmentation")
        if crowd:  # run-length encoded: its counts
            if not isinstance(seg, dict):
                raise ValueError(f"{owner}: {where}: 'segmentation' of a crowd must be an RLE object")
            flat = _numbers(seg.get("counts"), "segmentation.counts", where, owner)
        else:  # polygons, concatenated
            if not isinstance(seg, list):
                raise ValueError(f"{owner}: {where}: 'segmentation' must be a list of polygons")
            flat = [x for poly in seg for x in _numbers(poly, "segmentation", where, owner)]
        return flat, crowd
    if task == "Keypoint":
        return (_numbers(a.get("keypoints"), "keypoints", where, owner, 51),
                _uint32(a, "num_keypoints", where, owner))
    if task == "Captioning":
        return (_json_field(a, "caption", where, owner, (str,)),)
    raise AssertionError(task)


def _coco_arrays(task, entries):
    n = len(entries)
    if task == "Detection":
        return (np.array([e[0] for e in entries], np.float32).reshape(n, 4),
                np.array([[e[1]] for e in entries], np.uint32).reshape(n, 1),
                np.array([[e[2]] for e in entries], np.uint32).reshape(n, 1))
    if task == "Stuff":  # rows of different lengths, padded with -1 to the longest
        width = max(len(e[0]) for e in entries)
        seg = np.full((n, width), -1.0, np.float32)
        for k, e in enumerate(entries):
            seg[k, :len(e[0])] = e[0]
        return seg, np.array([[e[1]] for e in entries], np.uint32).reshape(n, 1)
    if task == "Keypoint":
        return (np.array([e[0] for e in entries], np.float32).reshape(n, 51),
                np.array([[e[1]] for e in entries], np.uint32).reshape(n, 1))
    if task == "Panoptic":
        return (np.array([e[0] for e in entries], np.float32).reshape(n, 4),
                np.array([[e[1]] for e in entries], np.uint32).reshape(n, 1),
                np.array([[e[2]] for e in entries], np.uint32).reshape(n, 1),
                np.array([[e[3]] for e in entries], np.uint32).reshape(n, 1))
    return (np.array([e[0] for e in entries]),)  # Captioning: str


class CocoDataset(SourceDataset):
    """COCO: annotation_file (JSON) with 'images' ({id, file_name}, the image being
    dataset_dir/<file_name>), 'annotations' and 'categories'. Rows are the images that have
    annotations, in the order of 'images'; each row holds all of its image's annotations:

    Detection: bbox (N, 4) float32, category_id, iscrowd (N, 1) uint32. Stuff: segmentation
    (N, L) float32 -- each annotation's polygons concatenated (a crowd's RLE counts), padded with
    -1 to the longest -- and iscrowd. Keypoint: keypoints (N, 51) float32, num_keypoints (N, 1)
    uint32. Panoptic (annotations with 'segments_info'): bbox, category_id, iscrowd, area.
    Captioning: captions (N,) str. The image column is the file bytes, or decoded with decode."""

    def __init__(self, dataset_dir, annotation_file, task="Detection", num_samples=None,
                 num_parallel_workers=None, shuffle=None, decode=False, sampler=None, num_shards=None,
                 shard_id=None, cache=None, extra_metadata=False, decrypt=None):
        owner = "CocoDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(annotation_file, "annotation_file", (str, os.PathLike))
        annotation_file = os.fspath(annotation_file)
        if not os.path.isfile(annotation_file):
            raise ValueError(f"The file {annotation_file} does not exist or permission denied!")
        _check_type(task, "task", str)
        if task not in _COCO_COLUMNS:
            raise ValueError(f"Invalid task type, expected one of {list(_COCO_COLUMNS)}, got {task!r}.")
        _check_type(decode, "decode", bool)
        extra_metadata = _check_metadata(extra_metadata)
        _check_decrypt(decrypt)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.task, self.decode = task, decode
        try:
            with open(annotation_file, encoding="utf-8") as f:
                doc = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise ValueError(f"{owner}: '{annotation_file}' is not a JSON document "
                             f"({type(e).__name__}: {e})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{owner}: '{annotation_file}' must hold a JSON object")

        def section(key):
            v = doc.get(key, [])
            if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
                raise ValueError(f"{owner}: '{annotation_file}': '{key}' must be a list of objects")
            return v

        files = {}
        for k, im in enumerate(section("images")):
            where = f"'{annotation_file}' images[{k}]"
            files[_json_field(im, "id", where, owner, (int, str))] = \
                _json_field(im, "file_name", where, owner, (str,))
        per_image = {}
        for k, a in enumerate(section("annotations")):
            where = f"'{annotation_file}' annotations[{k}]"
            image_id = _json_field(a, "image_id", where, owner, (int, str))
            if image_id not in files:
                raise ValueError(f"{owner}: {where}: image_id {image_id!r} is not in 'images'")
            if task == "Panoptic":
                segs = a.get("segments_info")
                if not isinstance(segs, list):
                    raise ValueError(f"{owner}: {where}: 'segments_info' must be a list")
                for j, s in enumerate(segs):
                    w = f"{where}.segments_info[{j}]"
                    per_image.setdefault(image_id, []).append(
                        (_numbers(s.get("bbox") if isinstance(s, dict) else None, "bbox", w, owner, 4),
                         _uint32(s, "category_id", w, owner),
                         _uint32(s, "iscrowd", w, owner, 0),
                         _uint32(s, "area", w, owner)))
            else:
                per_image.setdefault(image_id, []).append(_coco_entry(task, a, where, owner))
        self._class_indexing = {}
        for k, c in enumerate(section("categories")):
            where = f"'{annotation_file}' categories[{k}]"
            name = _json_field(c, "name", where, owner, (str,))
            ids = [_json_field(c, "id", where, owner, (int,))]
            if task == "Panoptic":
                ids.append(_json_field(c, "isthing", where, owner, (int,)))
            self._class_indexing[name] = ids
        records = [(os.path.join(self.dataset_dir, name),) + _coco_arrays(task, per_image[i])
                   for i, name in files.items() if per_image.get(i)]

        def row(rec):
            return (_image(rec[0], owner, decode, decrypt),) + rec[1:]

        # the image's file_name in the annotation file
        row, columns = _with_metadata(extra_metadata, row, _COCO_COLUMNS[task],
                                      lambda rec: os.path.relpath(rec[0], self.dataset_dir))
        super().__init__(_E.py_source(_LazyRows(owner, records, row), columns), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))

    def get_class_indexing(self):
        """{category name: [id]} (Detection) or {name: [id, isthing]} (Panoptic)."""
        if self.task not in ("Detection", "Panoptic"):
            raise NotImplementedError("Only 'Detection' and 'Panoptic' support get_class_indexing.")
        return {k: list(v) for k, v in self._class_indexing.items()}


# ---- CelebA -------------------------------------------------------------------------------

_CELEBA_USAGE = {"train": 0, "valid": 1, "test": 2}


class CelebADataset(SourceDataset):
    """CelebA: dataset_dir holds the images, list_attr_celeba.txt (an image count, the
    attribute names, then '<file> v1 ... vk' with v = 1 or -1) and, for usage 'train', 'valid'
    or 'test', list_eval_partition.txt ('<file> 0|1|2'). Columns image (file bytes, or decoded
    with decode) and attr (k,) uint32 with -1 read as 0. extensions keeps only the files whose
    extension is listed (ignoring case)."""

    def __init__(self, dataset_dir, num_parallel_workers=None, shuffle=None, usage="all", sampler=None,
                 decode=False, extensions=None, num_samples=None, num_shards=None, shard_id=None,
                 cache=None, decrypt=None):
        owner = "CelebADataset"
        self.dataset_dir = _check_dir(dataset_dir)
        _check_type(usage, "usage", str)
        if usage not in ("train", "valid", "test", "all"):
            raise ValueError("Input usage is not within the valid set of ['train', 'valid', 'test', 'all'].")
        _check_type(decode, "decode", bool)
        _check_decrypt(decrypt)
        if extensions is not None:
            _check_type(extensions, "extensions", (list, tuple))
            for e in extensions:
                _check_type(e, "extensions", str)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.usage, self.decode = usage, decode
        attr_path = os.path.join(self.dataset_dir, "list_attr_celeba.txt")
        lines = self._lines(attr_path, owner)
        if len(lines) < 2:
            raise ValueError(f"{owner}: '{attr_path}' needs a count line and an attribute-name line")
        try:
            count = int(lines[0])
        except ValueError:
            raise ValueError(f"{owner}: '{attr_path}':1: expected the image count, got {lines[0]!r}") from None
        self.attr_names = lines[1].split()
        body = lines[2:]
        if count != len(body):
            raise ValueError(f"{owner}: '{attr_path}' declares {count} images but lists {len(body)}")
        keep = None
        if usage != "all":
            part_path = os.path.join(self.dataset_dir, "list_eval_partition.txt")
            keep = set()
            for k, line in enumerate(self._lines(part_path, owner), 1):
                f = line.split()
                if len(f) != 2 or f[1] not in ("0", "1", "2"):
                    raise ValueError(f"{owner}: '{part_path}':{k}: expected '<file> 0|1|2', got {line!r}")
                if int(f[1]) == _CELEBA_USAGE[usage]:
                    keep.add(f[0])
        exts = None if not extensions else {e.lower() for e in extensions}
        records = []
        for k, line in enumerate(body, 3):
            f = line.split()
            if len(f) != len(self.attr_names) + 1 or any(v not in ("1", "-1", "0") for v in f[1:]):
                raise ValueError(f"{owner}: '{attr_path}':{k}: expected a file name and "
                                 f"{len(self.attr_names)} values of 1 or -1, got {line[:80]!r}")
            if keep is not None and f[0] not in keep:
                continue
            if exts is not None and os.path.splitext(f[0])[1].lower() not in exts:
                continue
            records.append((os.path.join(self.dataset_dir, f[0]),
                            np.array([1 if v == "1" else 0 for v in f[1:]], np.uint32)))

        def row(rec):
            return _image(rec[0], owner, decode, decrypt), rec[1]

        super().__init__(_E.py_source(_LazyRows(owner, records, row), ["image", "attr"]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))

    @staticmethod
    def _lines(path, owner):
        if not os.path.isfile(path):
            raise ValueError(f"{owner}: {path} does not exist")
        try:
            with open(path, encoding="utf-8") as f:
                return [line.strip() for line in f if line.strip()]
        except UnicodeDecodeError as e:
            raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None
