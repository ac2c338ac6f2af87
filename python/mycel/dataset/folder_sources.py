"""Image sources laid out as folders of image files, with MindSpore's signatures: Caltech101Dataset,
Caltech256Dataset, Food101Dataset, LSUNDataset, OmniglotDataset, RenderedSST2Dataset,
SUN397Dataset and LFWDataset. The folder tree and list files are read when the dataset is built
(a missing folder, list or listed image fails at once, naming it); each image file is read when
its row is drawn (raw bytes, or decoded with decode=True). Sampling, shuffling and sharding
belong to the engine."""
import os
import re

import numpy as np

from mycel.dataset.detection_sources import _image, _LazyRows
from mycel.dataset.engine import SourceDataset
from mycel.dataset.image_sources import _source, _text_lines, _usage
from mycel.dataset.matlab import load_mat
from mycel.dataset.sources import _check_common, _check_dir, _check_type

__all__ = ["Caltech101Dataset", "Caltech256Dataset", "Food101Dataset", "LSUNDataset", "OmniglotDataset",
           "RenderedSST2Dataset", "SUN397Dataset", "LFWDataset"]

_IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def _subdirs(folder):
    return sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))


def _images_in(folder):
    return sorted(f for f in os.listdir(folder)
                  if f.lower().endswith(_IMAGE_EXT) and os.path.isfile(os.path.join(folder, f)))


def _need_dir(path, owner):
    if not os.path.isdir(path):
        raise ValueError(f"{owner}: the folder {path} does not exist")
    return path


def _need_file(path, owner):
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    return path


def _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
           num_shards, shard_id):
    SourceDataset.__init__(self, **_source(owner, _LazyRows(owner, records, row), columns, num_samples,
                                           num_parallel_workers, shuffle, sampler, num_shards, shard_id))


def _choice(value, name, valid, default):
    value = default if value is None else value
    _check_type(value, name, str)
    if value not in valid:
        raise ValueError(f"Input {name} is not within the valid set of {list(valid)}.")
    return value


def _check_decode(decode):
    decode = False if decode is None else decode
    _check_type(decode, "decode", bool)
    return decode


# ---- Caltech 101 / 256 ------------------------------------------------------------------------

# Caltech101's annotation folders that are not named as the image folders
_CALTECH_ANNOTATION = {"Faces": "Faces_2", "Faces_easy": "Faces_3", "Motorbikes": "Motorbikes_16",
                       "airplanes": "Airplanes_Side_2"}
_CALTECH_IMAGE = re.compile(r"^image_([0-9]{4})\.jpg$")


class Caltech101Dataset(SourceDataset):
    """Caltech 101: dataset_dir/101_ObjectCategories/<class>/image_NNNN.jpg and
    dataset_dir/Annotations/<class'>/annotation_NNNN.mat (obj_contour, a 2 x K array of contour
    points; four classes' annotation folders are named differently: Faces_2, Faces_3,
    Motorbikes_16, Airplanes_Side_2). Classes are the image folders in name order but
    BACKGROUND_Google, labelled 0..100. target_type 'category' (None): columns image and category
    (uint32); 'annotation': image and annotation (float64 (2, K)); 'all': image, category,
    annotation."""

    def __init__(self, dataset_dir, target_type=None, num_samples=None, num_parallel_workers=1, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None):
        owner = "Caltech101Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        target_type = _choice(target_type, "target_type", ("category", "annotation", "all"), "category")
        self.target_type, self.decode = target_type, _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        image_dir = _need_dir(os.path.join(self.dataset_dir, "101_ObjectCategories"), owner)
        ann_dir = os.path.join(self.dataset_dir, "Annotations")
        self.classes = [c for c in _subdirs(image_dir) if c != "BACKGROUND_Google"]
        records = []
        for label, cls in enumerate(self.classes):
            for f in sorted(os.listdir(os.path.join(image_dir, cls))):
                m = _CALTECH_IMAGE.match(f)
                if not m:
                    continue
                ann = None
                if target_type != "category":
                    ann = _need_file(os.path.join(ann_dir, _CALTECH_ANNOTATION.get(cls, cls),
                                                  f"annotation_{m.group(1)}.mat"), owner)
                records.append((os.path.join(image_dir, cls, f), label, ann))

        def row(rec):
            out = [_image(rec[0], owner, self.decode)]
            if target_type != "annotation":
                out.append(np.array(rec[1], np.uint32))
            if target_type != "category":
                contour = load_mat(rec[2]).get("obj_contour")
                if contour is None:
                    raise ValueError(f"{owner}: '{rec[2]}' has no variable obj_contour")
                out.append(np.asarray(contour))
            return tuple(out)

        columns = {"category": ["image", "category"], "annotation": ["image", "annotation"],
                   "all": ["image", "category", "annotation"]}[target_type]
        _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
               num_shards, shard_id)

    def get_class_indexing(self):
        """{class folder name: category}."""
        return {c: i for i, c in enumerate(self.classes)}


class Caltech256Dataset(SourceDataset):
    """Caltech 256: dataset_dir/<NNN.name>/<NNN_MMMM>.jpg (or .JPEG), one folder per class (257 with
    257.clutter). Labels number the folders in name order from 0. Columns image (file bytes, or
    decoded with decode) and label (uint32); files in name order."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None, decode=False,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "Caltech256Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        records = []
        for label, cls in enumerate(_subdirs(self.dataset_dir)):
            folder = os.path.join(self.dataset_dir, cls)
            # MindSpore's extensions, matched as written: .jpg and .JPEG
            records += [(os.path.join(folder, f), label) for f in _images_in(folder) if f.endswith((".jpg", ".JPEG"))]
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.uint32)),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- Food-101 ---------------------------------------------------------------------------------

class Food101Dataset(SourceDataset):
    """Food-101: dataset_dir/images/<class>/<id>.jpg and dataset_dir/meta/{train,test}.txt, whose
    lines '<class>/<id>' list each part. usage 'train', 'test' or 'all' (None: train then test).
    Columns image (file bytes, or decoded with decode) and label, the class name (str)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "Food101Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, ("train", "test", "all"))
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        records = []
        for part in (("train", "test") if self.usage == "all" else (self.usage,)):
            listing = os.path.join(self.dataset_dir, "meta", part + ".txt")
            for k, line in enumerate(_text_lines(listing, owner), 1):
                line = line.strip()
                if not line:
                    continue
                cls, slash, name = line.partition("/")
                if not slash or not cls or not name:
                    raise ValueError(f"{owner}: '{listing}':{k}: expected '<class>/<image id>', got {line[:80]!r}")
                path = _need_file(os.path.join(self.dataset_dir, "images", cls, name + ".jpg"), owner)
                records.append((path, cls))
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1])),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- LSUN -------------------------------------------------------------------------------------

_LSUN_CLASSES = ("bedroom", "bridge", "church_outdoor", "classroom", "conference_room", "dining_room",
                 "kitchen", "living_room", "restaurant", "tower")


class LSUNDataset(SourceDataset):
    """LSUN scenes exported to image files: dataset_dir/<category>_train/ and <category>_val/
    (every file of each, in name order) and dataset_dir/test/. classes: a category name or list
    of them (None: the ten categories). usage 'train', 'valid', 'test' or 'all' (None: train and
    valid). As in MindSpore (an image folder source over the chosen folders), the label is the
    folder's place among the chosen folders in name order (uint32): with every category and usage
    'train', bedroom_train 0 ... tower_train 9; test images are 0."""

    def __init__(self, dataset_dir, usage=None, classes=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "LSUNDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, ("train", "valid", "test", "all"))
        self.decode = _check_decode(decode)
        if classes is None:
            classes = list(_LSUN_CLASSES)
        elif isinstance(classes, str):
            classes = [classes]
        _check_type(classes, "classes", (list, tuple))
        for c in classes:
            _check_type(c, "classes", str)
            if c not in _LSUN_CLASSES:
                raise ValueError(f"Input classes is not within the valid set of {list(_LSUN_CLASSES)}, got {c!r}.")
        self.classes = list(classes)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        if self.usage == "test":
            folders = [_need_dir(os.path.join(self.dataset_dir, "test"), owner)]
        else:
            splits = {"train": ["_train"], "valid": ["_val"], "all": ["_train", "_val"]}[self.usage]
            wanted = [c + s for c in self.classes for s in splits]
            # a folder is chosen when its name holds <category>_train or <category>_val (as MindSpore
            # matches, so bedroom_train_lmdb counts too)
            folders = [os.path.join(self.dataset_dir, d) for d in _subdirs(self.dataset_dir)
                       if any(w in d for w in wanted)]
            if not folders:
                raise ValueError(f"{owner}: no folder named like {wanted[0]} under {self.dataset_dir} "
                                 f"(usage '{self.usage}', classes {self.classes})")
        records = []
        for label, folder in enumerate(folders):
            records += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))
                        if os.path.isfile(os.path.join(folder, f))]
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.uint32)),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- Omniglot ---------------------------------------------------------------------------------

class OmniglotDataset(SourceDataset):
    """Omniglot: dataset_dir/images_background/<alphabet>/<character>/*.png (background True or None,
    as MindSpore) or dataset_dir/images_evaluation/... (False). Every <alphabet>/<character> folder
    is a class, labelled by its place in name order (int32, MindSpore's image-folder labels).
    Columns image (file bytes, or decoded with decode) and label."""

    def __init__(self, dataset_dir, background=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "OmniglotDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        background = True if background is None else background
        _check_type(background, "background", bool)
        self.background, self.decode = background, _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        root = _need_dir(os.path.join(self.dataset_dir, "images_background" if background else "images_evaluation"),
                         owner)
        classes = sorted(f"{a}/{c}" for a in _subdirs(root) for c in _subdirs(os.path.join(root, a)))
        records = []
        for label, cls in enumerate(classes):
            folder = os.path.join(root, cls)
            records += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))
                        if os.path.isfile(os.path.join(folder, f))]
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.int32)),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- Rendered SST-2 ---------------------------------------------------------------------------

class RenderedSST2Dataset(SourceDataset):
    """Rendered SST-2: dataset_dir/{train,valid,test}/{negative,positive}/*.png. usage 'train',
    'val', 'test' or 'all' (None: the three, in path order: test, train, valid). Columns image (file bytes, or
    decoded with decode) and label (uint32: 0 negative, 1 positive)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 decode=False, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "RenderedSST2Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _usage(usage, ("train", "val", "test", "all"))
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        folders = {"train": "train", "val": "valid", "test": "test"}
        records = []
        # 'all' reads the folders in path order (test, train, valid), as MindSpore does
        for part in (("test", "train", "val") if self.usage == "all" else (self.usage,)):
            for label, name in enumerate(("negative", "positive")):
                folder = os.path.join(self.dataset_dir, folders[part], name)
                if not os.path.isdir(folder):
                    if self.usage == "all":
                        continue
                    raise ValueError(f"{owner}: the folder {folder} does not exist (usage '{self.usage}')")
                records += [(os.path.join(folder, f), label) for f in _images_in(folder)]
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.uint32)),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


# ---- SUN397 -----------------------------------------------------------------------------------

class SUN397Dataset(SourceDataset):
    """SUN397: dataset_dir/ClassName.txt lists the classes ('/a/abbey' lines; the label is the
    line's place, uint32) and each class's images lie in dataset_dir/a/abbey/sun_*.jpg. Columns image
    (file bytes, or decoded with decode) and label, classes in list order, files in name order."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None, decode=False,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "SUN397Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        names = [n.strip() for n in _text_lines(os.path.join(self.dataset_dir, "ClassName.txt"), owner)]
        self.classes = [n for n in names if n]
        records = []
        for label, cls in enumerate(self.classes):
            if not cls.startswith("/") or ".." in cls.split("/"):
                raise ValueError(f"{owner}: ClassName.txt: expected '/<letter>/<class>', got {cls[:80]!r}")
            folder = _need_dir(os.path.join(self.dataset_dir, cls.lstrip("/")), owner)
            records += [(os.path.join(folder, f), label) for f in _images_in(folder)
                        if f.startswith("sun_") and f.endswith(".jpg")]  # the files MindSpore reads
        _build(self, owner, records, lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.uint32)),
               ["image", "label"], num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_class_indexing(self):
        """{class path as listed: label}."""
        return {c: i for i, c in enumerate(self.classes)}


# ---- LFW --------------------------------------------------------------------------------------

_LFW_IMAGES = {"original": "lfw", "funneled": "lfw_funneled", "deepfunneled": "lfw-deepfunneled"}
_LFW_LISTS = {"people": {"train": ["peopleDevTrain.txt"], "test": ["peopleDevTest.txt"],
                         "all": ["peopleDevTrain.txt", "peopleDevTest.txt"], "10fold": ["people.txt"]},
              "pairs": {"train": ["pairsDevTrain.txt"], "test": ["pairsDevTest.txt"],
                        "all": ["pairsDevTrain.txt", "pairsDevTest.txt"], "10fold": ["pairs.txt"]}}


def _int_field(text, path, k, owner):
    if not text.isdecimal():
        raise ValueError(f"{owner}: '{path}':{k}: expected a count, got {text[:40]!r}")
    return int(text)


class LFWDataset(SourceDataset):
    """Labeled Faces in the Wild: the images in dataset_dir/lfw (image_set 'original'),
    lfw_funneled ('funneled', None) or lfw-deepfunneled ('deepfunneled'), as
    <Name>/<Name>_NNNN.jpg, and the split lists beside them. task 'people' (None): lists
    peopleDevTrain.txt / peopleDevTest.txt / people.txt ('<Name>\\t<count>' lines after a count
    line, people.txt in folds); rows image, label (uint32: the person's line in lfw-names.txt, or
    without that file the place among the image folders in name order). task 'pairs': lists
    pairsDevTrain.txt / pairsDevTest.txt / pairs.txt ('<Name> <n1> <n2>' for a match, '<Name1> <n1> <Name2> <n2>' otherwise); rows image1, image2,
    label (uint32: 1 same person, 0 not). usage 'train', 'test', '10fold' or 'all' (None: train
    then test)."""

    def __init__(self, dataset_dir, task=None, usage=None, image_set=None, num_samples=None,
                 num_parallel_workers=None, shuffle=None, decode=False, sampler=None, num_shards=None,
                 shard_id=None, cache=None):
        owner = "LFWDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.task = _choice(task, "task", ("people", "pairs"), "people")
        self.usage = _usage(usage, ("10fold", "train", "test", "all"))
        self.image_set = _choice(image_set, "image_set", tuple(_LFW_IMAGES), "funneled")
        self.decode = _check_decode(decode)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        images = _need_dir(os.path.join(self.dataset_dir, _LFW_IMAGES[self.image_set]), owner)
        # a person's label is its line in lfw-names.txt, as MindSpore reads it (the names in order,
        # so the image folders' order when the file is absent)
        names_file = os.path.join(self.dataset_dir, "lfw-names.txt")
        if os.path.isfile(names_file):
            listed = [line.split()[0] for line in _text_lines(names_file, owner) if line.split()]
        else:
            listed = _subdirs(images)
        names = {}
        for n in listed:
            names.setdefault(n, len(names))

        def image_path(name, number, path, k):
            p = os.path.join(images, name, f"{name}_{int(number):04d}.jpg")
            if not os.path.isfile(p):
                raise ValueError(f"{owner}: '{path}':{k}: the image {p} does not exist")
            if self.task == "people" and name not in names:
                raise ValueError(f"{owner}: '{path}':{k}: {name!r} is not in {names_file}")
            return p

        records = []
        for listing in _LFW_LISTS[self.task][self.usage]:
            path = os.path.join(self.dataset_dir, listing)
            for k, line in enumerate(_text_lines(path, owner), 1):
                f = line.split()
                if all(x.isdecimal() for x in f):  # blank, or a count / fold header line
                    continue
                if self.task == "people":
                    if len(f) != 2:
                        raise ValueError(f"{owner}: '{path}':{k}: expected '<Name>\\t<count>', got {line[:80]!r}")
                    for n in range(1, _int_field(f[1], path, k, owner) + 1):
                        records.append((image_path(f[0], n, path, k), names[f[0]]))
                elif len(f) == 3:
                    _int_field(f[1], path, k, owner), _int_field(f[2], path, k, owner)
                    records.append((image_path(f[0], f[1], path, k), image_path(f[0], f[2], path, k), 1))
                elif len(f) == 4:
                    _int_field(f[1], path, k, owner), _int_field(f[3], path, k, owner)
                    records.append((image_path(f[0], f[1], path, k), image_path(f[2], f[3], path, k), 0))
                else:
                    raise ValueError(f"{owner}: '{path}':{k}: expected a pair line, got {line[:80]!r}")
        if self.task == "people":
            row = (lambda r: (_image(r[0], owner, self.decode), np.array(r[1], np.uint32)))
            columns = ["image", "label"]
        else:
            row = (lambda r: (_image(r[0], owner, self.decode), _image(r[1], owner, self.decode),
                              np.array(r[2], np.uint32)))
            columns = ["image1", "image2", "label"]
        _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
               num_shards, shard_id)
