"""Fuzz targets over the loaders of untrusted files (docs/hardening.md). Each target takes the
fuzzer's bytes, writes them where the loader expects a file, and loads it. A loader may accept
the bytes or reject them with the exception its documentation promises (ALLOWED); anything else
-- another exception type, a crash, a hang -- is a finding.

Shared by run_fuzz.py (atheris, coverage-guided, bounded time) and make_corpus.py (the seeds)."""
import os
import struct
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from crc32c_ref import crc32c  # noqa: E402 (the tests' reference CRC-32C)

# The exceptions each loader documents for a damaged or hostile file.
ALLOWED = (ValueError,)
# The data pipeline reports a source's error as MindSpore does, RuntimeError with the cause.
ALLOWED_PIPELINE = (ValueError, RuntimeError)

_SCRATCH = tempfile.mkdtemp(prefix="mycel-fuzz-")


def _write(name, data):
    path = os.path.join(_SCRATCH, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _fix_ckpt_crc(data):
    """Recomputes the trailing CRC-32, so mutants also reach the header and data checks."""
    if len(data) < 4:
        return data
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


def _fix_mindrecord_crc(data):
    """Re-checksums a MindRecord shard's header, pages, index and footer (layout in
    src/mycel/data/mindrecord/format.h) wherever the fuzzed offsets lie inside the file."""
    n = len(data)
    if n < 16 + 64 or n > 1 << 16:
        return data
    b = bytearray(data)
    foot = n - 64
    data_offset, num_pages, index_offset, index_len, _ = struct.unpack_from("<QQQQQ", b, foot)
    body_len = struct.unpack_from("<I", b, 12)[0]
    if 16 + body_len <= foot:
        struct.pack_into("<I", b, foot + 40, crc32c(b[:16 + body_len]))
    if 16 + body_len >= 36:
        page_size = struct.unpack_from("<I", b, 32)[0]
        p, end = data_offset, data_offset + num_pages * page_size
        while page_size and p + 16 <= min(end, foot):
            unit = max(1, struct.unpack_from("<I", b, p + 8)[0]) * page_size
            if p + unit > foot:
                break
            struct.pack_into("<I", b, p + 4, crc32c(b[p + 8:p + unit]))
            p += unit
    if index_offset + index_len <= foot:
        struct.pack_into("<I", b, foot + 44, crc32c(b[index_offset:index_offset + index_len]))
    struct.pack_into("<I", b, foot + 48, crc32c(b[foot:foot + 48]))
    return bytes(b)


def _fix_mindir_crc(data):
    """Re-checksums the graph and data sections when their (fuzzed) bounds lie inside the file."""
    if len(data) < 56:
        return data
    b = bytearray(data)
    goff, gsize, doff, dsize = struct.unpack_from("<QQQQ", b, 16)
    if goff + gsize <= len(b) and doff + dsize <= len(b) and gsize + dsize <= 1 << 16:
        struct.pack_into("<II", b, 48, crc32c(b[goff:goff + gsize]), crc32c(b[doff:doff + dsize]))
    return bytes(b)


def _split(data):
    """The first byte picks a variant (bit 0: repair checksums); the rest is the file."""
    if not data:
        return 0, b""
    return data[0], data[1:]


def load_ckpt(data):
    import mycel
    flags, body = _split(data)
    if flags & 1:
        body = _fix_ckpt_crc(body)
    mycel.load_checkpoint(_write("f.ckpt", body))


def load_safetensors(data):
    import mycel
    _, body = _split(data)
    mycel.load_checkpoint(_write("f.safetensors", body))


def read_mindrecord(data):
    from mycel.mindrecord import FileReader
    flags, body = _split(data)
    if flags & 1:
        body = _fix_mindrecord_crc(body)
    reader = FileReader(_write("f.mindrecord", body))
    for i in range(min(len(reader), 64)):
        reader.read(i)


def _iterate(dataset, limit=64):
    for i, _ in enumerate(dataset.create_tuple_iterator(output_numpy=True, num_epochs=1)):
        if i >= limit:
            break


def read_idx(data):
    """MNIST IDX files: bit 1 of the first byte says whether the bytes are the labels file (with
    a fixed, valid images file) or the images file (with fixed labels)."""
    import mycel.dataset as ds
    flags, body = _split(data)
    folder = os.path.join(_SCRATCH, "mnist")
    os.makedirs(folder, exist_ok=True)
    images, labels = idx_files(2)
    if flags & 2:
        labels = body
    else:
        images = body
    with open(os.path.join(folder, "train-images-idx3-ubyte"), "wb") as f:
        f.write(images)
    with open(os.path.join(folder, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(labels)
    _iterate(ds.MnistDataset(folder, usage="train", shuffle=False))


def read_cifar(data):
    """A CIFAR batch file: bit 1 of the first byte picks CIFAR-100 (train.bin) over CIFAR-10."""
    import mycel.dataset as ds
    flags, body = _split(data)
    hundred = bool(flags & 2)
    folder = os.path.join(_SCRATCH, "cifar100" if hundred else "cifar10")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "train.bin" if hundred else "data_batch_1.bin"), "wb") as f:
        f.write(body)
    cls = ds.Cifar100Dataset if hundred else ds.Cifar10Dataset
    _iterate(cls(folder, usage="train", shuffle=False))


def decode_image(data):
    from mycel.dataset import vision
    _, body = _split(data)
    vision.Decode()(body)


def load_mindir(data):
    import mycel
    flags, body = _split(data)
    if flags & 1:
        body = _fix_mindir_crc(body)
    mycel.load(_write("f.mindir", body))


def import_onnx(data):
    """An ONNX model's bytes: imported (the wire-format reader, then the op rules, which generate
    the model's construct source) and, when its inputs are declared small and static, run once on
    zeros, so hostile attributes (pads, strides, axes, shapes) reach the compiled program too."""
    from mycel import onnx as mo
    from mycel.onnx import model as onnx_model
    _, body = _split(data)
    m = onnx_model.model(body)
    cell = mo.load_model_from_bytes(body)
    inputs = []
    for vi in m.graph.inputs:
        if vi.name in m.graph.initializers:
            continue
        dtype = onnx_model.NP_DTYPES.get(vi.elem_type)
        if dtype is None or vi.shape is None:
            return
        shape = tuple(2 if isinstance(d, str) else d for d in vi.shape)  # a symbolic batch: 2
        if not all(isinstance(d, int) and 0 <= d for d in shape):
            return
        if np.prod(shape, dtype=np.int64) > 1 << 16:
            return
        inputs.append(np.zeros(shape, dtype))
    cell(*inputs)


def _fix_tfrecord_crcs(data):
    """Re-checksums each TFRecord record (length, masked CRC, payload, masked CRC) that fits."""
    b, pos = bytearray(data), 0
    while len(b) - pos >= 16:
        n = struct.unpack_from("<Q", b, pos)[0]
        if n > len(b) - pos - 16:
            break
        struct.pack_into("<I", b, pos + 8, _masked_crc(bytes(b[pos:pos + 8])))
        struct.pack_into("<I", b, pos + 12 + n, _masked_crc(bytes(b[pos + 12:pos + 12 + n])))
        pos += 16 + n
    return bytes(b)


def _masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(data):
    """An event file as the dashboard reads it: the records, then each graph event's GraphDef."""
    from mycel import _mycel
    flags, body = _split(data)
    if flags & 1:
        body = _fix_tfrecord_crcs(body)
    events, _ = _mycel.insight.read_event_file(_write("events.out.tfevents.1", body))
    for _, _, values in events:
        for v in values:
            if "graph_def" in v:
                _mycel.insight.decode_graph_def(v["graph_def"])


_JIEBA_TEXT = "今天天气很好，我们去北京大学看看。Mycel 2026 年"


def segment_jieba(data):
    """A Jieba dictionary (bit 1 clear) or HMM model (bit 1 set) from the fuzzer, the other file
    from the test data; the tokenizer loads both, then segments a sentence in MIX mode."""
    from mycel.dataset import text
    flags, body = _split(data)
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "data", "jieba")
    dict_path, hmm_path = os.path.join(folder, "dict.utf8"), os.path.join(folder, "hmm_model.utf8")
    if flags & 2:
        hmm_path = _write("hmm_model.utf8", body)
    else:
        dict_path = _write("dict.utf8", body)
    tok = text.JiebaTokenizer(hmm_path, dict_path, mode=text.JiebaMode.MIX, with_offsets=True)
    tok(_JIEBA_TEXT)


def read_wav(data):
    """A WAV file, read as the audio sources read theirs."""
    from mycel.dataset.audio_sources import read_wav as read
    _, body = _split(data)
    read(_write("f.wav", body))


def _fix_tfrecord_crcs(data):
    """Re-checksums every frame the length fields reach, so mutants reach the Example parser."""
    from mycel.dataset.tfrecord import masked_crc32c
    out, pos = bytearray(data), 0
    while len(out) - pos >= 12:
        (length,) = struct.unpack("<Q", bytes(out[pos:pos + 8]))
        out[pos + 8:pos + 12] = struct.pack("<I", masked_crc32c(bytes(out[pos:pos + 8])))
        if length > len(out) - pos - 16:
            break
        body = bytes(out[pos + 12:pos + 12 + length])
        out[pos + 12 + length:pos + 16 + length] = struct.pack("<I", masked_crc32c(body))
        pos += 16 + length
    return bytes(out)


def read_tfrecord(data):
    """A TFRecord file of tf.train.Example records, every row drawn (TFRecordDataset)."""
    import mycel.dataset as ds
    flags, body = _split(data)
    if flags & 1:
        body = _fix_tfrecord_crcs(body)
    d = ds.TFRecordDataset(_write("f.tfrecord", body), shuffle=False)
    for _ in d.create_tuple_iterator(num_epochs=1, output_numpy=True):
        pass


def read_voc_xml(data):
    """A Pascal VOC annotation file (VOCDataset's XML reader: no DTDs, no entities)."""
    from mycel.dataset.detection_sources import _voc_objects
    _, body = _split(data)
    _voc_objects(_write("f.xml", body), "VOCDataset")


def read_coco(data):
    """A COCO annotation file (CocoDataset's JSON reader); flag bits 0-1 pick the task."""
    import mycel.dataset as ds
    flags, body = _split(data)
    task = ("Detection", "Stuff", "Keypoint", "Panoptic")[flags & 3]
    ds.CocoDataset(_SCRATCH, _write("ann.json", body), task=task)


def read_mat(data):
    """A MATLAB v5 .mat file (SVHNDataset's reader, compressed variables included)."""
    from mycel.dataset.matlab import load_mat
    _, body = _split(data)
    load_mat(_write("f.mat", body))


def read_idx_python(data):
    """An IDX file through the Python reader of KMnist/EMnist/QMNIST-style sources; flag bit 0
    asks for images (3 dims), else labels (1 dim)."""
    from mycel.dataset.image_sources import read_idx as read
    flags, body = _split(data)
    read(_write("f-idx", body), "KMnistDataset", 3 if flags & 1 else 1)


def read_strategy(data):
    """A MindSpore strategy file (protobuf; load_distributed_checkpoint's train_strategy_filename).
    NotImplementedError is documented for layouts Mycel's merge does not read (optimizer
    sharding, field splits)."""
    from mycel.parallel.strategy_file import load_strategy_file
    _, body = _split(data)
    load_strategy_file(_write("f-strategy.ckpt", body))
def read_qmnist_labels(data):
    """QMNIST's int32 IDX label table (python/mycel/dataset/binary_sources.py)."""
    from mycel.dataset.binary_sources import read_idx_int32
    _, body = _split(data)
    read_idx_int32(_write("f-idx2-int", body), "QMnistDataset", 2)


def read_semeion(data):
    from mycel.dataset.binary_sources import read_semeion as read
    _, body = _split(data)
    read(_write("semeion.data", body))


def read_usps(data):
    from mycel.dataset.binary_sources import read_usps as read
    _, body = _split(data)
    read(_write("usps", body))


def read_bmp(data):
    """PhotoTourDataset's BMP reader."""
    from mycel.dataset.binary_sources import read_bmp as read
    _, body = _split(data)
    read(_write("f.bmp", body))


def read_sph(data):
    """TedliumDataset's NIST SPHERE reader; flag bit 0 reads a segment (samples 3..40) only."""
    from mycel.dataset.speech_corpus_sources import read_sph as read
    flags, body = _split(data)
    read(_write("f.sph", body), "TedliumDataset", *((3, 40) if flags & 1 else ()))


def read_flac(data):
    """LibriSpeechDataset's FLAC decoder (python/mycel/dataset/flac.py)."""
    from mycel.dataset.flac import read_flac as read
    _, body = _split(data)
    read(_write("f.flac", body))


# name -> (function, allowed exceptions)
TARGETS = {
    "ckpt": (load_ckpt, ALLOWED),
    # a valid dtype Mycel lacks (F8_E4M3, F8_E5M2) is NotImplementedError (docs/checkpoints.md)
    "safetensors": (load_safetensors, (ValueError, NotImplementedError)),
    "mindrecord": (read_mindrecord, ALLOWED_PIPELINE),  # docs/dataset.md: RuntimeError
    "idx": (read_idx, ALLOWED_PIPELINE),
    "cifar": (read_cifar, ALLOWED_PIPELINE),
    "image": (decode_image, ALLOWED_PIPELINE),
    "mindir": (load_mindir, ALLOWED),
    # an unsupported construct is NotImplementedError (mycel.onnx.Unsupported); a model whose ops
    # disagree (shapes, dtypes) fails as the op would in user code, TypeError or ValueError
    "onnx": (import_onnx, (ValueError, TypeError, NotImplementedError)),
    "events": (read_events, ALLOWED),  # the dashboard's event-file reader (mycel.insight)
    "jieba": (segment_jieba, ALLOWED),  # dictionary and HMM loaders (src/mycel/data/text/jieba.cc)
    "wav": (read_wav, ALLOWED),  # YesNoDataset / LJSpeechDataset
    "tfrecord": (read_tfrecord, ALLOWED_PIPELINE),  # TFRecordDataset: framing, CRCs, Examples
    "voc_xml": (read_voc_xml, ALLOWED),  # VOCDataset's annotations
    "coco": (read_coco, ALLOWED),  # CocoDataset's annotations
    "matlab": (read_mat, ALLOWED),  # SVHNDataset's MATLAB v5 reader
    "idx_py": (read_idx_python, ALLOWED),  # KMnist/EMnist's IDX reader (python/mycel/dataset)
    "strategy": (read_strategy, (ValueError, NotImplementedError)),  # MindSpore strategy files
    "qmnist": (read_qmnist_labels, ALLOWED),  # QMnistDataset's int32 label tables
    "semeion": (read_semeion, ALLOWED),  # SemeionDataset
    "usps": (read_usps, ALLOWED),  # USPSDataset's LIBSVM text
    "bmp": (read_bmp, ALLOWED),  # PhotoTourDataset's patch sheets
    "sph": (read_sph, ALLOWED),  # TedliumDataset's NIST SPHERE audio
    "flac": (read_flac, ALLOWED),  # LibriSpeechDataset's FLAC decoder
}


def idx_files(n):
    """A valid pair of IDX files (images n x 28 x 28, labels n), as MNIST stores them."""
    rng = np.random.default_rng(n)
    images = struct.pack(">IIII", 0x803, n, 28, 28) + rng.integers(0, 256, (n, 28, 28), np.uint8).tobytes()
    labels = struct.pack(">II", 0x801, n) + rng.integers(0, 10, n, np.uint8).tobytes()
    return images, labels
