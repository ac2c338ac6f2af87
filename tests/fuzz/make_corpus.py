"""Writes the seed corpus of each fuzz target (tests/fuzz/corpus/<target>/): small valid files
made by Mycel's own writers (and Pillow for images), each prefixed by the target's flag byte (see
targets.py). Re-run after a format change: python tests/fuzz/make_corpus.py"""
import io
import os
import struct
import sys
import tempfile

import numpy as np

import mycel
from mycel import Tensor, nn
from mycel.mindrecord import FileWriter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import targets  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, flags, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes([flags]) + data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def checkpoints(tmp):
    params = {"w": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
              "b": Tensor(np.array([1, -2], np.int64)), "s": Tensor(np.float16(0.5))}
    for suffix in ("ckpt", "safetensors"):
        path = os.path.join(tmp, "p." + suffix)
        mycel.save_checkpoint(params, path)
        # ckpt: flag 1 re-checksums the mutant; the unrepaired variant tests the CRC itself
        put(suffix, "three_tensors", 1 if suffix == "ckpt" else 0, read(path))
        if suffix == "ckpt":
            put(suffix, "three_tensors_raw_crc", 0, read(path))
    # encrypted checkpoints (native target "sealed"): flag 0 AES-GCM, flag 1 AES-CBC, this key
    for flag, mode in ((0, "AES-GCM"), (1, "AES-CBC")):
        path = os.path.join(tmp, f"e{flag}.ckpt")
        mycel.save_checkpoint(params, path, enc_key=b"mycel-fuzz-key16", enc_mode=mode)
        put("sealed", "three_tensors_" + mode.lower().replace("-", "_"), flag, read(path))


def strategy(tmp):
    from mycel.parallel.strategy_file import save_strategy_file
    layouts = {"fc1.weight": ((2, 4), (1, 0), (16, 6)), "fc1.bias": ((2, 4), (-1,), (16,)),
               "fc2.weight": ((8,), (-1, 0), (10, 16))}
    put("strategy", "three_layouts", 0, read(save_strategy_file(os.path.join(tmp, "s.ckpt"), layouts)))


def mindrecord(tmp):
    schema = {"label": {"type": "int32"}, "x": {"type": "float32", "shape": [2]},
              "blob": {"type": "bytes"}, "name": {"type": "string"}}
    path = os.path.join(tmp, "m.mindrecord")
    w = FileWriter(path, 1)
    w.add_schema(schema, "fuzz seed")
    w.add_index(["label"])
    w.set_page_size(1024)  # the smallest page keeps the seed small
    w.write_raw_data([{"label": i, "x": np.array([i, -i], np.float32), "blob": bytes([i] * i),
                       "name": f"row{i}"} for i in range(3)])
    w.commit()
    put("mindrecord", "three_rows", 1, read(path))  # flag 1: mutants are re-checksummed
    put("mindrecord", "three_rows_raw_crc", 0, read(path))


def datasets():
    images, labels = targets.idx_files(2)
    put("idx", "images", 0, images)
    put("idx", "labels", 2, labels)
    rng = np.random.default_rng(0)
    rows10 = b"".join(bytes([i]) + rng.integers(0, 256, 3072, np.uint8).tobytes() for i in range(2))
    rows100 = b"".join(bytes([i, 3 * i]) + rng.integers(0, 256, 3072, np.uint8).tobytes()
                       for i in range(2))
    put("cifar", "cifar10_two_rows", 0, rows10)
    put("cifar", "cifar100_two_rows", 2, rows100)


def images():
    from PIL import Image  # test-only dependency: an independent encoder for the seeds
    a = (np.arange(8 * 8 * 3).reshape(8, 8, 3) * 5 % 256).astype(np.uint8)
    for fmt, kw in (("PNG", {}), ("JPEG", {"quality": 90})):
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format=fmt, **kw)
        put("image", fmt.lower() + "_8x8", 0, buf.getvalue())
    buf = io.BytesIO()
    Image.fromarray(a[:, :, 0]).save(buf, format="PNG")  # grayscale: another decoder path
    put("image", "png_gray_8x8", 0, buf.getvalue())


def mindir(tmp):
    net = nn.SequentialCell([nn.Dense(3, 2), nn.ReLU()])
    x = Tensor(np.ones((1, 3), np.float32))
    path = mycel.export(net, x, file_name=os.path.join(tmp, "net"), file_format="MINDIR")
    put("mindir", "dense_relu", 1, read(path))
    put("mindir", "dense_relu_raw_crc", 0, read(path))


def mindir_int8(tmp):
    """A quantized conv net (average pooling, max pooling, a ReduceMean instance) as int8 MINDIR:
    quantize_linear, qconv2d, qavg_pool2d, max_pool2d and reshape on uint8, qdense."""
    from mycel import ops
    from mycel.lite import quant

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 2, 3, pad_mode="same", has_bias=True)
            self.pool = nn.AvgPool2d(2, 2)
            self.c2 = nn.Conv2d(2, 2, 3, pad_mode="same", has_bias=True)
            self.mp = nn.MaxPool2d(2, 2)
            self.mean = ops.ReduceMean(keep_dims=True)
            self.fc = nn.Dense(2, 3)
            self.relu = nn.ReLU()

        def construct(self, x):
            x = self.mp(self.relu(self.c2(self.pool(self.relu(self.c1(x))))))
            return self.fc(ops.reshape(self.mean(x, (2, 3)), (-1, 2)))
    rng = np.random.default_rng(0)
    net = quant.quantize(Net(), [Tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))])
    path = mycel.export(net, Tensor(np.ones((1, 1, 8, 8), np.float32)), file_name=os.path.join(tmp, "q"),
                        file_format="MINDIR")
    put("mindir", "int8_pools", 1, read(path))


def onnx_dropout():
    """Dropout in training mode (a seed, ratio and training_mode constants, the mask output)."""
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    z = helper.make_tensor_value_info("z", TensorProto.BOOL, [2, 3])
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "r"), numpy_helper.from_array(np.array(True), "t")]
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "z"], seed=3)
    g = helper.make_graph([node], "g", [x], [y, z], inits)
    put("onnx", "dropout_training", 0,
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def onnx(tmp):
    """A small convolutional net and an MLP, exported as ONNX by Mycel."""
    conv = nn.SequentialCell([nn.Conv2d(1, 2, 3, pad_mode="pad", padding=1), nn.ReLU(),
                              nn.MaxPool2d(2, 2), nn.Flatten(), nn.Dense(2 * 4 * 4, 3), nn.Softmax()])
    mlp = nn.SequentialCell([nn.Dense(4, 3), nn.Tanh(), nn.Dense(3, 2)])
    for name, net, shape in (("conv_pool_dense", conv, (1, 1, 8, 8)), ("mlp", mlp, (2, 4))):
        x = Tensor(np.ones(shape, np.float32))
        path = mycel.export(net, x, file_name=os.path.join(tmp, name), file_format="ONNX")
        put("onnx", name, 0, read(path))


def events(tmp):
    """An event file with every kind of value the dashboard reads, and a graph event."""
    from mycel.insight import SummaryRecord
    rng = np.random.default_rng(0)
    with SummaryRecord(os.path.join(tmp, "run")) as rec:
        for step in range(2):
            rec.add_value("scalar", "loss", Tensor(np.float32(1.0 / (step + 1))))
            rec.add_value("histogram", "w", Tensor(np.arange(6.0)))
            rec.add_value("image", "img", Tensor(rng.integers(0, 256, (1, 3, 2, 2)).astype(np.uint8)))
            rec.add_value("tensor", "t", Tensor(np.arange(4, dtype=np.int32).reshape(2, 2)))
            rec.record(step)
        rec.add_value("graph", "g", [("Default/x", "Input", [], {"T": mycel.float32}),
                                     ("Default/relu-op1", "ReLU", ["Default/x"], {"ints": [1, 2]})])
        rec.record(2)
    folder = os.path.join(tmp, "run")
    path = os.path.join(folder, next(f for f in os.listdir(folder) if "tfevents" in f))
    put("events", "scalar_histogram_image_tensor_graph", 1, read(path))
    put("events", "raw_crc", 0, read(path))


def jieba():
    """The tests' tiny Jieba dictionary (flag 0) and HMM model (flag 2)."""
    folder = os.path.join(os.path.dirname(CORPUS), "..", "python", "data", "jieba")
    put("jieba", "dict", 0, read(os.path.join(folder, "dict.utf8")))
    put("jieba", "hmm_model", 2, read(os.path.join(folder, "hmm_model.utf8")))


def wav(tmp):
    """16-bit stereo and 8-bit mono PCM files written by Python's wave module."""
    import wave
    for name, width, channels in (("pcm16_stereo", 2, 2), ("pcm8_mono", 1, 1)):
        path = os.path.join(tmp, name + ".wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(width)
            w.setframerate(8000)
            w.writeframes(bytes(range(0, 240, 3))[:16 * width * channels])
        put("wav", name, 0, read(path))


def tfrecord():
    """Examples of each list kind (Mycel's writer; the protobuf library writes the same bytes),
    two records per file; flag 1 re-checksums mutants."""
    from mycel.dataset.tfrecord import encode_example, masked_crc32c

    def frames(payloads):
        out = b""
        for p in payloads:
            head = struct.pack("<Q", len(p))
            out += head + struct.pack("<I", masked_crc32c(head)) + p + struct.pack("<I", masked_crc32c(p))
        return out
    rows = [encode_example({"image": b"\x01\x02\x03", "label": [3, -1], "score": [0.5, 2.0]}),
            encode_example({"image": b"", "label": [1 << 40, 0], "score": [-1.0, 1e-3]})]
    put("tfrecord", "examples", 1, frames(rows))
    put("tfrecord", "examples_raw", 0, frames(rows[:1]))


def voc_xml():
    """A VOC annotation with two objects."""
    put("voc_xml", "annotation", 0, (
        b"<annotation><filename>2007_000027.jpg</filename><size><width>486</width></size>"
        b"<object><name>person</name><difficult>0</difficult><truncated>1</truncated><bndbox>"
        b"<xmin>174</xmin><ymin>101</ymin><xmax>349</xmax><ymax>351</ymax></bndbox></object>"
        b"<object><name>dog</name><bndbox><xmin>1.5</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"
        b"</bndbox></object></annotation>"))


def coco():
    """COCO annotation files for the Detection, Stuff, Keypoint and Panoptic tasks (flags 0-3)."""
    import json
    images = [{"id": 1, "file_name": "1.jpg"}, {"id": 2, "file_name": "2.jpg"}]
    cats = [{"id": 1, "name": "a", "isthing": 1}, {"id": 2, "name": "b", "isthing": 0}]
    anns = [{"image_id": 1, "bbox": [1, 2, 3, 4], "category_id": 1, "iscrowd": 0,
             "segmentation": [[1, 2, 3, 4, 5, 6]], "keypoints": list(range(51)), "num_keypoints": 3},
            {"image_id": 2, "bbox": [0, 0, 1, 1], "category_id": 2, "iscrowd": 1,
             "segmentation": {"counts": [1, 2], "size": [2, 2]}, "keypoints": [0] * 51, "num_keypoints": 0}]
    doc = {"images": images, "annotations": anns, "categories": cats}
    pan = {"images": images, "categories": cats, "annotations": [{"image_id": 1, "segments_info": [
        {"category_id": 1, "iscrowd": 0, "bbox": [1, 1, 2, 2], "area": 4}]}]}
    for name, flags, d in (("detection", 0, doc), ("stuff", 1, doc), ("keypoint", 2, doc), ("panoptic", 3, pan)):
        put("coco", name, flags, json.dumps(d).encode())


def matlab(tmp):
    """.mat files as scipy writes them (SVHN's layout), plain and compressed."""
    import scipy.io
    rng = np.random.default_rng(0)
    for name, compress in (("svhn_plain", False), ("svhn_compressed", True)):
        path = os.path.join(tmp, name + ".mat")
        scipy.io.savemat(path, {"X": rng.integers(0, 256, (4, 4, 3, 2), np.uint8),
                                "y": np.array([[1], [10]], np.uint8)}, do_compression=compress)
        put("matlab", name, 0, read(path))


def idx_py():
    """IDX images (flag 1) and labels (flag 0) for the Python reader."""
    images, labels = targets.idx_files(2)
    put("idx_py", "images", 1, images)
    put("idx_py", "labels", 0, labels)


def compat15_sources():
    """Seeds of the qmnist, semeion, usps, bmp, sph and flac targets (python/mycel/dataset)."""
    from PIL import Image
    rng = np.random.default_rng(15)
    table = rng.integers(0, 1000, (3, 8)).astype(">i4")
    put("qmnist", "labels", 0, struct.pack(">BBBBII", 0, 0, 0x0C, 2, 3, 8) + table.tobytes())
    line = " ".join(f"{v:.4f}" for v in rng.integers(0, 2, 256)) + " 0 0 1 0 0 0 0 0 0 0\n"
    put("semeion", "two_rows", 0, (line * 2).encode())
    put("usps", "two_rows", 0, b"3 1:-1 2:0.5 256:0.25\n10 7:-0.75\n")
    for mode, name in (("L", "gray8"), ("RGB", "rgb24")):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (6, 5, 3) if mode == "RGB" else (6, 5), np.uint8), mode).save(
            buf, format="BMP")
        put("bmp", name, 0, buf.getvalue())
    head = (b"NIST_1A\n   1024\nsample_count -i 64\nsample_rate -i 16000\nchannel_count -i 1\n"
            b"sample_n_bytes -i 2\nsample_byte_format -s2 01\nsample_coding -s3 pcm\nend_head\n")
    body = rng.integers(-3000, 3000, 64).astype("<i2").tobytes()
    put("sph", "pcm16", 0, head.ljust(1024, b" ") + body)
    put("sph", "pcm16_segment", 1, head.ljust(1024, b" ") + body)
    import soundfile  # libsndfile's FLAC encoder (a test-only package)
    for subtype, channels, n in (("PCM_16", 1, 300), ("PCM_24", 2, 200)):
        buf = io.BytesIO()
        x = np.sin(np.arange(n * channels).reshape(n, channels) / 7.0) * 0.5 + rng.uniform(-0.05, 0.05, (n, channels))
        soundfile.write(buf, x, 8000, subtype=subtype, format="FLAC")
        put("flac", f"{subtype.lower()}_{channels}ch", 0, buf.getvalue())


def main():
    with tempfile.TemporaryDirectory() as tmp:
        checkpoints(tmp)
        mindrecord(tmp)
        datasets()
        images()
        mindir(tmp)
        mindir_int8(tmp)
        onnx(tmp)
        onnx_dropout()
        events(tmp)
        jieba()
        wav(tmp)
        tfrecord()
        voc_xml()
        coco()
        matlab(tmp)
        idx_py()
        strategy(tmp)
        compat15_sources()
    for t in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, t))
        print(t, len(files), sum(os.path.getsize(os.path.join(CORPUS, t, f)) for f in files), "bytes")


if __name__ == "__main__":
    main()
