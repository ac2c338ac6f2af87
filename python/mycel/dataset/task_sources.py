"""Image sources with per-image targets, with MindSpore's signatures: CityscapesDataset, DIV2KDataset,
KITTIDataset, WIDERFaceDataset and ManifestDataset. Annotation files are parsed when the dataset
is built (a bad or missing file fails at once, naming it); images are read when a row is drawn,
as raw bytes or decoded with decode=True. Sampling, shuffling and sharding belong to the engine."""
import json
import os

import numpy as np

from mycel.dataset.detection_sources import _image, _LazyRows
from mycel.dataset.engine import SourceDataset
from mycel.dataset.folder_sources import _check_decode, _choice, _images_in, _need_dir, _need_file
from mycel.dataset.image_sources import _is_image, _source, _text_lines
from mycel.dataset.sources import _check_common, _check_dir, _check_type

__all__ = ["CityscapesDataset", "DIV2KDataset", "KITTIDataset", "WIDERFaceDataset", "ManifestDataset"]


def _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
           num_shards, shard_id):
    SourceDataset.__init__(self, **_source(owner, _LazyRows(owner, records, row), columns, num_samples,
                                           num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- Cityscapes -------------------------------------------------------------------------------

_CITY_TASK_FILE = {"instance": "instanceIds.png", "semantic": "labelIds.png", "color": "color.png",
                   "polygon": "polygons.json"}


def _polygon_json(path, owner):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{owner}: cannot read the JSON file '{path}' ({e})") from None
    # compact, keys sorted: how MindSpore's JSON library serializes it
    return np.array(json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


class CityscapesDataset(SourceDataset):
    """Cityscapes: dataset_dir/leftImg8bit/<usage>/<city>/<stem>_leftImg8bit.png and the targets
    dataset_dir/gtFine (quality_mode 'fine') or gtCoarse ('coarse') /<usage>/<city>/
    <stem>_gtFine_<kind>, kind instanceIds.png (task 'instance'), labelIds.png ('semantic'),
    color.png ('color') or polygons.json ('polygon'). usage 'train', 'test', 'val' (fine) or
    'train', 'train_extra', 'val' (coarse), or 'all' (those three). Columns image and task: the
    file bytes (decoded with decode) or, for 'polygon', the JSON document as a string."""

    def __init__(self, dataset_dir, usage="train", quality_mode="fine", task="instance", num_samples=None,
                 num_parallel_workers=None, shuffle=None, decode=None, sampler=None, num_shards=None,
                 shard_id=None, cache=None):
        owner = "CityscapesDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.quality_mode = _choice(quality_mode, "quality_mode", ("fine", "coarse"), "fine")
        self.task = _choice(task, "task", tuple(_CITY_TASK_FILE), "instance")
        parts = ("train", "test", "val") if self.quality_mode == "fine" else ("train", "train_extra", "val")
        self.usage = _choice(usage, "usage", parts + ("all",), "train")
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        gt = "gtFine" if self.quality_mode == "fine" else "gtCoarse"
        records = []
        for part in (parts if self.usage == "all" else (self.usage,)):
            root = _need_dir(os.path.join(self.dataset_dir, "leftImg8bit", part), owner)
            for city in sorted(os.listdir(root)):
                folder = os.path.join(root, city)
                if not os.path.isdir(folder):
                    continue
                for f in _images_in(folder):
                    if not f.endswith("_leftImg8bit.png"):
                        continue
                    stem = f[:-len("_leftImg8bit.png")]
                    target = _need_file(os.path.join(self.dataset_dir, gt, part, city,
                                                     f"{stem}_{gt}_{_CITY_TASK_FILE[self.task]}"), owner)
                    records.append((os.path.join(folder, f), target))

        def row(rec):
            if self.task == "polygon":
                return _image(rec[0], owner, self.decode), _polygon_json(rec[1], owner)
            return _image(rec[0], owner, self.decode), _image(rec[1], owner, self.decode)

        _build(self, owner, records, row, ["image", "task"], num_samples, num_parallel_workers, shuffle, sampler,
               num_shards, shard_id)


# ---- DIV2K ------------------------------------------------------------------------------------

class DIV2KDataset(SourceDataset):
    """DIV2K super-resolution pairs: dataset_dir/DIV2K_<usage>_HR/NNNN.png with the low-resolution
    image of the downgrade and scale: DIV2K_<usage>_LR_<bicubic|unknown>/X<s>/NNNNx<s>.png (scale 2,
    3, 4), DIV2K_<usage>_LR_x8/NNNNx8.png (bicubic, scale 8) or DIV2K_<usage>_LR_<mild|difficult|
    wild>/NNNNx4<m|d|w>.png (scale 4). usage 'train', 'valid' or 'all'. Columns hr_image and
    lr_image (file bytes, or decoded with decode), in name order."""

    def __init__(self, dataset_dir, usage="train", downgrade="bicubic", scale=2, num_samples=None,
                 num_parallel_workers=None, shuffle=None, decode=None, sampler=None, num_shards=None,
                 shard_id=None, cache=None):
        owner = "DIV2KDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", ("train", "valid", "all"), "train")
        self.downgrade = _choice(downgrade, "downgrade", ("bicubic", "unknown", "mild", "difficult", "wild"),
                                 "bicubic")
        _check_type(scale, "scale", int)
        if scale not in (2, 3, 4, 8):
            raise ValueError("Input scale is not within the valid set of [2, 3, 4, 8].")
        if scale == 8 and self.downgrade != "bicubic":
            raise ValueError("DIV2KDataset: scale 8 exists only for downgrade 'bicubic'.")
        if self.downgrade in ("mild", "difficult", "wild") and scale != 4:
            raise ValueError(f"DIV2KDataset: downgrade '{self.downgrade}' exists only for scale 4.")
        self.scale, self.decode = scale, _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        records = []
        for part in (("train", "valid") if self.usage == "all" else (self.usage,)):
            hr_dir = _need_dir(os.path.join(self.dataset_dir, f"DIV2K_{part}_HR"), owner)
            for f in _images_in(hr_dir):
                stem = os.path.splitext(f)[0]
                if scale == 8:
                    lr = os.path.join(f"DIV2K_{part}_LR_x8", f"{stem}x8.png")
                elif self.downgrade in ("bicubic", "unknown"):
                    lr = os.path.join(f"DIV2K_{part}_LR_{self.downgrade}", f"X{scale}", f"{stem}x{scale}.png")
                else:
                    lr = os.path.join(f"DIV2K_{part}_LR_{self.downgrade}", f"{stem}x4{self.downgrade[0]}.png")
                records.append((os.path.join(hr_dir, f), _need_file(os.path.join(self.dataset_dir, lr), owner)))
        _build(self, owner, records,
               lambda r: (_image(r[0], owner, self.decode), _image(r[1], owner, self.decode)),
               ["hr_image", "lr_image"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- KITTI ------------------------------------------------------------------------------------

_KITTI_COLUMNS = ["image", "label", "truncated", "occluded", "alpha", "bbox", "dimensions", "location",
                  "rotation_y"]


def _kitti_objects(path, owner):
    """[(class name, 14 numbers)] of one KITTI label file ('<class> truncated occluded alpha left top
    right bottom height width length x y z rotation_y' lines)."""
    out = []
    for k, line in enumerate(_text_lines(path, owner), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 15:
            raise ValueError(f"{owner}: '{path}':{k}: expected '<class> <14 numbers>', got {line[:80]!r}")
        try:
            nums = [float(x) for x in f[1:]]
        except ValueError:
            raise ValueError(f"{owner}: '{path}':{k}: a field is not a number: {line[:80]!r}") from None
        if not -1 <= nums[1] <= 3 or nums[1] != int(nums[1]):
            raise ValueError(f"{owner}: '{path}':{k}: occluded must be -1 (DontCare), 0, 1, 2 or 3, got {f[2]!r}")
        out.append((f[0], nums))
    return out


def _kitti_columns(objects, labels):
    """label (N, 1) uint32, truncated (N, 1) float32, occluded (N, 1) uint32 (DontCare's -1 reads
    4294967295), alpha (N, 1), bbox (N, 4), dimensions (N, 3), location (N, 3), rotation_y (N, 1)
    float32."""
    a = np.array([n for _, n in objects], np.float32).reshape(-1, 14)
    occluded = np.array([int(n[1]) for _, n in objects], np.int64).reshape(-1, 1).astype(np.uint32)
    return (np.array([labels[c] for c, _ in objects], np.uint32).reshape(-1, 1), a[:, 0:1].copy(), occluded,
            a[:, 2:3].copy(), np.ascontiguousarray(a[:, 3:7]), np.ascontiguousarray(a[:, 7:10]),
            np.ascontiguousarray(a[:, 10:13]), a[:, 13:14].copy())


class KITTIDataset(SourceDataset):
    """KITTI object detection: dataset_dir/data_object_image_2/{training,testing}/image_2/NNNNNN.png
    and dataset_dir/data_object_label_2/training/label_2/NNNNNN.txt. usage 'train' (default): columns
    image, label, truncated, occluded, alpha, bbox (left, top, right, bottom), dimensions (height,
    width, length), location (x, y, z), rotation_y, one row per object. As in MindSpore, a label
    numbers the class names found in all the label files in name order (get_class_indexing()), and
    an image whose label file lists no object is left out. usage 'test': image only."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "KITTIDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", ("train", "test"), "train")
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        split = "training" if self.usage == "train" else "testing"
        image_dir = _need_dir(os.path.join(self.dataset_dir, "data_object_image_2", split, "image_2"), owner)
        images = [os.path.join(image_dir, f) for f in _images_in(image_dir)]
        self._class_indexing = {}
        if self.usage == "test":
            records = [(p, None) for p in images]
            row, columns = (lambda r: (_image(r[0], owner, self.decode),)), ["image"]
        else:
            parsed = []
            for p in images:
                label = _need_file(os.path.join(self.dataset_dir, "data_object_label_2", "training", "label_2",
                                                os.path.splitext(os.path.basename(p))[0] + ".txt"), owner)
                objects = _kitti_objects(label, owner)
                if objects:
                    parsed.append((p, objects))
            names = sorted({c for _, objs in parsed for c, _ in objs})
            self._class_indexing = {n: i for i, n in enumerate(names)}
            records = [(p, _kitti_columns(objs, self._class_indexing)) for p, objs in parsed]
            row, columns = (lambda r: (_image(r[0], owner, self.decode),) + r[1]), _KITTI_COLUMNS
        _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
               num_shards, shard_id)

    def get_class_indexing(self):
        """{class name: label} (usage 'train')."""
        return dict(self._class_indexing)


# ---- WIDER FACE -------------------------------------------------------------------------------

_WIDER_COLUMNS = ["image", "bbox", "blur", "expression", "illumination", "occlusion", "pose", "invalid"]
_WIDER_FIELDS = 10  # x y w h and six attributes per face line


def _wider_annotations(path, images, owner):
    """{image path: (bbox (N, 4), blur, expression, illumination, occlusion, pose, invalid (N,))} of a
    wider_face_<part>_bbx_gt.txt file: per image its path line, a count line and that many face
    lines, or one all-zero line when the count is 0 (read as one all-zero face, as MindSpore does).
    The six attributes are fields 4..9 in MindSpore's order (blur, expression, illumination,
    occlusion, pose, invalid; the WIDER FACE readme lists the last three as invalid, occlusion,
    pose)."""
    lines = _text_lines(path, owner)
    out, k = {}, 0
    while k < len(lines):
        name = lines[k].strip()
        k += 1
        if not name:
            continue
        if k >= len(lines) or not lines[k].strip().isdecimal():
            raise ValueError(f"{owner}: '{path}':{k + 1}: expected the face count of {name!r}")
        n = int(lines[k])
        k += 1
        rows = []
        for _ in range(max(n, 1)):
            f = lines[k].split() if k < len(lines) else []
            if len(f) < _WIDER_FIELDS or not all(x.lstrip("-").isdecimal() for x in f[:_WIDER_FIELDS]):
                raise ValueError(f"{owner}: '{path}':{k + 1}: expected {_WIDER_FIELDS} integers for a face of "
                                 f"{name!r}, got {(lines[k] if k < len(lines) else '<end of file>')[:80]!r}")
            rows.append([int(x) for x in f[:_WIDER_FIELDS]])
            k += 1
        a = np.array(rows, np.int64).reshape(-1, _WIDER_FIELDS)
        if (a < 0).any() or (a > 0xFFFFFFFF).any():
            raise ValueError(f"{owner}: '{path}': a face of {name!r} has a value outside [0, 2^32)")
        a = a.astype(np.uint32)
        image = _need_file(os.path.join(images, name), owner)
        out[image] = (np.ascontiguousarray(a[:, 0:4]),) + tuple(a[:, j].copy() for j in range(4, 10))
    return out


_WIDER_NONE = (np.zeros((0, 4), np.uint32),) + tuple(np.zeros(0, np.uint32) for _ in range(6))


class WIDERFaceDataset(SourceDataset):
    """WIDER FACE: the images dataset_dir/WIDER_{train,val,test}/images/<event>/*.jpg (events and
    files in name order) and the annotations dataset_dir/wider_face_split/
    wider_face_{train,val}_bbx_gt.txt. usage 'train', 'valid', 'all' (None: train then valid) give
    columns image, bbox (N, 4: x, y, width, height), blur, expression, illumination, occlusion,
    pose, invalid (N,), all uint32 (an image the file does not annotate has N = 0); usage 'test'
    gives image only."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "WIDERFaceDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", ("train", "test", "valid", "all"), "all")
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        parts = {"train": ("train",), "valid": ("val",), "all": ("train", "val"), "test": ("test",)}[self.usage]
        records = []
        for part in parts:
            root = _need_dir(os.path.join(self.dataset_dir, f"WIDER_{part}", "images"), owner)
            faces = {} if part == "test" else _wider_annotations(
                os.path.join(self.dataset_dir, "wider_face_split", f"wider_face_{part}_bbx_gt.txt"), root, owner)
            for event in sorted(os.listdir(root)):
                folder = os.path.join(root, event)
                if os.path.isdir(folder):
                    records += [(os.path.join(folder, f), faces.get(os.path.join(folder, f), _WIDER_NONE))
                                for f in sorted(os.listdir(folder)) if f.endswith(".jpg")]
        if self.usage == "test":
            row, columns = (lambda r: (_image(r[0], owner, self.decode),)), ["image"]
        else:
            row, columns = (lambda r: (_image(r[0], owner, self.decode),) + r[1]), _WIDER_COLUMNS
        _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
               num_shards, shard_id)


# ---- Manifest ---------------------------------------------------------------------------------

class ManifestDataset(SourceDataset):
    """A ModelArts manifest: dataset_file holds one JSON object per line, {"source": image path,
    "usage": "train" | "eval" | "inference", "annotation": [{"name": class name, ...}, ...]}; a
    relative source is read from the working folder (as MindSpore) or, failing that, the
    manifest's folder. Lines of the chosen usage (compared ignoring case) are read in file order;
    a source that is not a JPEG, PNG, GIF or BMP file is skipped, as in MindSpore. Labels come from class_indexing ({name: id}) or, without
    it, number the class names found in name order. Columns image (file bytes, or decoded with
    decode) and label, the 1-d uint32 array of the line's class ids."""

    def __init__(self, dataset_file, usage="train", num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, class_indexing=None, decode=False, num_shards=None, shard_id=None, cache=None):
        owner = "ManifestDataset"
        _check_type(dataset_file, "dataset_file", (str, os.PathLike))
        self.dataset_file = _need_file(os.fspath(dataset_file), owner)
        self.usage = _choice(usage, "usage", ("train", "eval", "inference"), "train")
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        base = os.path.dirname(os.path.abspath(self.dataset_file))
        entries = []
        for k, line in enumerate(_text_lines(self.dataset_file, owner), 1):
            if not line.strip():
                continue
            where = f"{owner}: '{self.dataset_file}':{k}"
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as e:
                raise ValueError(f"{where}: not a JSON object ({e})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("source"), str):
                raise ValueError(f"{where}: expected an object with a string 'source'")
            if str(obj.get("usage", "")).lower() != self.usage:
                continue
            ann = obj.get("annotation", [])
            if not isinstance(ann, list) or not all(isinstance(a, dict) and isinstance(a.get("name"), str)
                                                    for a in ann):
                raise ValueError(f"{where}: 'annotation' must be a list of objects with a string 'name'")
            path = obj["source"]  # as given (MindSpore opens it from the working folder), else beside the manifest
            if not os.path.isfile(path):
                path = os.path.join(base, path)
            if not os.path.isfile(path):
                raise ValueError(f"{where}: the image {obj['source']} does not exist")
            if _is_image(path, owner):  # other files are skipped, as MindSpore does
                entries.append((path, [a["name"] for a in ann]))
        if class_indexing is None:
            self.class_indexing = {n: i for i, n in enumerate(sorted({n for _, ns in entries for n in ns}))}
        else:
            _check_type(class_indexing, "class_indexing", dict)
            for n, v in class_indexing.items():
                _check_type(n, "class_indexing", str)
                _check_type(v, "class_indexing", int)
                if not 0 <= v <= 0xFFFFFFFF:
                    raise ValueError(f"Input class_indexing value of '{n}' must be in [0, 2^32), got {v}.")
            self.class_indexing = dict(class_indexing)
        records = []
        for path, names in entries:
            unknown = [n for n in names if n not in self.class_indexing]
            if unknown:
                raise ValueError(f"{owner}: '{path}' has the class {unknown[0]!r}, not in class_indexing")
            records.append((path, np.array([self.class_indexing[n] for n in names], np.uint32)))
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), r[1]), ["image", "label"],
               num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_class_indexing(self):
        """{class name: label id}."""
        return dict(self.class_indexing)
