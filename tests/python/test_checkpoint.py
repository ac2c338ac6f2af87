"""Checkpoints: .ckpt and safetensors round trips, the file layout checked against the spec in
docs/checkpoints.md by an independent Python parser, load_param_into_net, corrupt and hostile
files, and atomicity under SIGKILL."""
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.common.parameter import Parameter
from mycel.train.serialization import load_safetensors, save_safetensors

# ---------------------------------------------------------------------------------------------
# Reference data and an independent reader of the .ckpt layout (docs/checkpoints.md).

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
CODES = {name: i for i, name in enumerate(DTYPES)}  # on-disk dtype codes
ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
            "bfloat16": 2, "float32": 4, "float64": 8}
SHAPES = [(), (0,), (3, 0, 2), (7,), (2, 3, 4)]


def reference(dtype, shape, seed):
    """numpy values of `shape` exactly representable in `dtype` (bf16 ones as float32)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        # Multiples of 1/8 up to +-32 are exact in every float type, bfloat16 included.
        a = rng.integers(-256, 256, shape) / 8.0
        if a.size >= 3:
            a.flat[:3] = [np.inf, -np.inf, np.nan]
        return a.astype(np.float32 if dtype == "bfloat16" else dtype)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if a.size >= 2:
        a.flat[:2] = [info.min, info.max]
    return a


def cases():
    """name -> (dtype, numpy reference) for every dtype and shape."""
    out = {}
    for d in DTYPES:
        for k, s in enumerate(SHAPES):
            out[f"{d}.s{k}"] = (d, np.asarray(reference(d, s, seed=len(out))))
    return out


def to_tensor(dtype, a):
    return Tensor(a, dtype=getattr(mycel, "bool_" if dtype == "bool" else dtype))


def parse_ckpt(blob):
    """Fields of a .ckpt file, read with struct from the spec; positions let tests patch them."""
    assert blob[:8] == b"MYCELCKP"
    version, header_len = struct.unpack_from("<IQ", blob, 8)
    pos = 20
    (count,) = struct.unpack_from("<Q", blob, pos)
    pos += 8
    entries = []
    for _ in range(count):
        e = {}
        (n,) = struct.unpack_from("<I", blob, pos)
        e["name"] = blob[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        e["dtype_pos"] = pos
        e["dtype"] = DTYPES[blob[pos]]
        (rank,) = struct.unpack_from("<I", blob, pos + 1)
        pos += 5
        e["dims_pos"] = pos
        e["shape"] = struct.unpack_from(f"<{rank}q", blob, pos)
        pos += 8 * rank
        e["offset_pos"] = pos
        e["offset"], e["nbytes"] = struct.unpack_from("<QQ", blob, pos)
        pos += 16
        entries.append(e)
    assert pos == 20 + header_len
    return {"version": version, "header_len": header_len, "entries": entries}


def with_crc(blob):
    """blob with its trailing CRC-32 recomputed, so only the field a test patched is wrong."""
    body = bytes(blob[:-4])
    return body + struct.pack("<I", zlib.crc32(body))


def patch(blob, pos, fmt, value, fix_crc=True):
    b = bytearray(blob)
    struct.pack_into(fmt, b, pos, value)
    return with_crc(b) if fix_crc else bytes(b)


def small_ckpt(path):
    mycel.save_checkpoint({"w": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
                           "b": Tensor(np.array([1, 2], np.int64))}, str(path))
    return path.read_bytes()


def expect_corrupt(path, blob, match):
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=match) as info:
        mycel.load_checkpoint(str(path))
    assert str(path) in str(info.value)


# ---------------------------------------------------------------------------------------------
# Round trips.

@pytest.mark.parametrize("suffix", [".ckpt", ".safetensors"])
def test_round_trip_every_dtype_and_shape(tmp_path, suffix):
    ref = cases()
    path = str(tmp_path / f"all{suffix}")
    mycel.save_checkpoint({n: to_tensor(d, a) for n, (d, a) in ref.items()}, path)
    loaded = mycel.load_checkpoint(path)
    assert list(loaded) == list(ref)  # file order = save order
    for name, (d, a) in ref.items():
        p = loaded[name]
        assert isinstance(p, Parameter) and p.name == name
        assert str(p.dtype) == str(getattr(mycel, "bool_" if d == "bool" else d))
        assert p.shape == a.shape
        np.testing.assert_array_equal(p.asnumpy(), a)


def test_ckpt_layout_matches_spec(tmp_path):
    ref = cases()
    path = tmp_path / "all.ckpt"
    mycel.save_checkpoint({n: to_tensor(d, a) for n, (d, a) in ref.items()}, str(path))
    blob = path.read_bytes()
    f = parse_ckpt(blob)
    assert f["version"] == 1
    assert [e["name"] for e in f["entries"]] == list(ref)
    end = 20 + f["header_len"]
    for e, (name, (d, a)) in zip(f["entries"], ref.items()):
        assert e["dtype"] == d and e["shape"] == a.shape
        assert e["offset"] % 64 == 0 and e["offset"] >= end and e["offset"] - end < 64
        assert e["nbytes"] == a.size * ITEMSIZE[d]
        raw = blob[e["offset"]:e["offset"] + e["nbytes"]]
        if d == "bfloat16":  # the upper half of each float32: these values are bf16-exact
            expect = (a.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        else:
            expect = a.astype(a.dtype.newbyteorder("<")).tobytes()
        assert raw == expect, name
        end = e["offset"] + e["nbytes"]
    assert len(blob) == end + 4
    assert struct.unpack("<I", blob[-4:])[0] == zlib.crc32(blob[:-4])


def test_empty_checkpoint_round_trips(tmp_path):
    path = str(tmp_path / "empty.ckpt")
    mycel.save_checkpoint({}, path)
    assert mycel.load_checkpoint(path) == {}


def test_save_obj_forms_suffix_append_and_choice(tmp_path):
    a = np.arange(4, dtype=np.float32)
    path = tmp_path / "forms"  # no suffix: ".ckpt" is appended, as in MindSpore
    mycel.save_checkpoint([{"name": "x", "data": Tensor(a)}, {"name": "skip", "data": Tensor(a)}],
                          str(path), append_dict={"epoch": 3, "lr": np.float32(0.5)},
                          choice_func=lambda n: n != "skip")
    assert not path.exists()
    loaded = mycel.load_checkpoint(str(path) + ".ckpt")
    assert list(loaded) == ["x", "epoch", "lr"]
    np.testing.assert_array_equal(loaded["x"].asnumpy(), a)
    assert loaded["epoch"].asnumpy() == 3 and loaded["lr"].asnumpy() == np.float32(0.5)
    only = mycel.load_checkpoint(str(path) + ".ckpt", specify_prefix="e")
    assert list(only) == ["epoch"]
    rest = mycel.load_checkpoint(str(path) + ".ckpt", filter_prefix=["e", "l"])
    assert list(rest) == ["x"]
    chosen = mycel.load_checkpoint(str(path) + ".ckpt", choice_func=lambda n: n == "lr")
    assert list(chosen) == ["lr"]


def test_bad_arguments_raise_type_errors(tmp_path):
    with pytest.raises(TypeError, match="save_obj"):
        mycel.save_checkpoint(42, str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match=r"save_obj\[0\]"):
        mycel.save_checkpoint([{"data": Tensor(np.ones(2))}], str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match="'w'"):
        mycel.save_checkpoint({"w": "not a tensor"}, str(tmp_path / "x.ckpt"))
    with pytest.raises(ValueError, match="does not exist"):
        mycel.load_checkpoint(str(tmp_path / "missing.ckpt"))
    assert os.listdir(tmp_path) == []


def test_save_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "a.ckpt"
    small_ckpt(path)
    mycel.save_checkpoint({"z": Tensor(np.zeros(3, np.float32))}, str(path))
    assert os.listdir(tmp_path) == ["a.ckpt"]
    assert list(mycel.load_checkpoint(str(path))) == ["z"]
    with pytest.raises(RuntimeError, match="cannot create"):
        mycel.save_checkpoint({"z": Tensor(np.zeros(3))}, str(tmp_path / "no_dir" / "b.ckpt"))


def test_threads_saving_to_one_path_do_not_share_a_temporary(tmp_path):
    path = str(tmp_path / "shared.ckpt")
    data = [{"t": Tensor(np.full(1 << 18, i, np.int32))} for i in range(4)]

    def save(i):
        for _ in range(5):
            mycel.save_checkpoint(data[i], path)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(save, range(4)))
    t = mycel.load_checkpoint(path)["t"].asnumpy()
    assert t.shape == (1 << 18,) and (t == t[0]).all() and 0 <= t[0] < 4
    assert os.listdir(tmp_path) == ["shared.ckpt"]


# ---------------------------------------------------------------------------------------------
# Loading into a network.

class Inner(nn.Cell):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weight = Parameter(Tensor(rng.standard_normal((3, 2)).astype(np.float32)))
        self.bias = Parameter(Tensor(rng.standard_normal(3).astype(np.float32)))


class Net(nn.Cell):
    def __init__(self, seed):
        super().__init__()
        self.fc1 = Inner(seed)
        self.fc2 = Inner(seed + 1)
        self.scale = Parameter(Tensor(np.array(float(seed), np.float64)))


def values(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


@pytest.mark.parametrize("suffix", [".ckpt", ".safetensors"])
def test_cell_round_trip(tmp_path, suffix):
    src, dst = Net(0), Net(10)
    expect = values(src)
    path = str(tmp_path / f"net{suffix}")
    mycel.save_checkpoint(src, path)
    params = mycel.load_checkpoint(path)
    assert list(params) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    missing, unexpected = mycel.load_param_into_net(dst, params)
    assert missing == [] and unexpected == []
    got = values(dst)
    for name in expect:
        np.testing.assert_array_equal(got[name], expect[name])
    # load_checkpoint(net=...) loads too.
    other = Net(20)
    mycel.load_checkpoint(path, net=other)
    for name, a in values(other).items():
        np.testing.assert_array_equal(a, expect[name])


def test_load_param_reports_missing_and_unexpected_keys():
    src, dst = Net(0), Net(10)
    before = values(dst)
    params = dict(src.parameters_and_names())
    del params["fc2.bias"]
    params["extra.thing"] = Tensor(np.ones(2, np.float32))
    missing, unexpected = mycel.load_param_into_net(dst, params)
    assert missing == ["fc2.bias"] and unexpected == ["extra.thing"]
    after = values(dst)
    np.testing.assert_array_equal(after["fc2.bias"], before["fc2.bias"])  # untouched
    np.testing.assert_array_equal(after["fc1.weight"], src.fc1.weight.asnumpy())


def test_load_param_shape_mismatch_is_a_clear_error_and_changes_nothing():
    dst = Net(10)
    before = values(dst)
    params = dict(Net(0).parameters_and_names())
    params["fc2.weight"] = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"'fc2.weight' has shape \(3, 2\) in the network but "
                                         r"\(2, 3\) in the checkpoint"):
        mycel.load_param_into_net(dst, params)
    for name, a in values(dst).items():  # fc1 came first but was not written either
        np.testing.assert_array_equal(a, before[name])


def test_load_param_dtype_conversion_and_strict_load():
    dst = Net(10)
    w64 = np.random.default_rng(5).standard_normal((3, 2))  # float64 into a float32 Parameter
    params = {"fc1.weight": Tensor(w64)}
    mycel.load_param_into_net(dst, params)
    np.testing.assert_array_equal(dst.fc1.weight.asnumpy(), w64.astype(np.float32))
    with pytest.raises(ValueError, match=r"'fc1.weight' has dtype float32 in the network but "
                                         r"float64 .*\(strict_load=True\)"):
        mycel.load_param_into_net(dst, params, strict_load=True)
    with pytest.raises(ValueError, match="'fc1.bias' has dtype"):  # int into float: never
        mycel.load_param_into_net(dst, {"fc1.bias": Tensor(np.ones(3, np.int32))})
    with pytest.raises(TypeError, match="net must be a Cell"):
        mycel.load_param_into_net(params, params)


# ---------------------------------------------------------------------------------------------
# Corrupt and hostile .ckpt files: ValueError naming the file, never a crash or a huge allocation.

def test_truncated_files(tmp_path):
    good = tmp_path / "good.ckpt"
    blob = small_ckpt(good)
    bad = tmp_path / "bad.ckpt"
    for cut in [0, 5, 19, 20, 30, 80, len(blob) - 20, len(blob) - 4, len(blob) - 1]:
        expect_corrupt(bad, blob[:cut], "truncated|header|lies outside|describes")


def test_every_single_bit_flip_is_detected(tmp_path):
    blob = small_ckpt(tmp_path / "good.ckpt")
    bad = tmp_path / "bad.ckpt"
    for i in range(len(blob)):
        for bit in (0, 7):
            b = bytearray(blob)
            b[i] ^= 1 << bit
            bad.write_bytes(bytes(b))
            with pytest.raises(ValueError, match="bad.ckpt"):
                mycel.load_checkpoint(str(bad))


def test_flipped_data_bit_fails_the_checksum(tmp_path):
    blob = small_ckpt(tmp_path / "good.ckpt")
    e = parse_ckpt(blob)["entries"][0]
    b = bytearray(blob)
    b[e["offset"] + 5] ^= 0x10
    expect_corrupt(tmp_path / "bad.ckpt", bytes(b), "CRC-32 mismatch")


def test_hostile_fields(tmp_path):
    blob = small_ckpt(tmp_path / "good.ckpt")
    f = parse_ckpt(blob)
    e0, e1 = f["entries"]
    bad = tmp_path / "bad.ckpt"
    expect_corrupt(bad, b"NOTMYCEL" + blob[8:], "not a Mycel checkpoint")
    expect_corrupt(bad, patch(blob, 8, "<I", 99), "version 99")
    expect_corrupt(bad, patch(blob, 12, "<Q", 2**63), "header length")
    expect_corrupt(bad, patch(blob, 12, "<Q", 2**64 - 1), "header length")
    expect_corrupt(bad, patch(blob, 20, "<Q", 2**60), "claims 1152921504606846976 tensors")
    expect_corrupt(bad, patch(blob, e0["dtype_pos"], "<B", 15), "unknown dtype code 15")
    expect_corrupt(bad, patch(blob, e0["dtype_pos"] - 1, "<B", 0xFF), "not valid UTF-8")
    expect_corrupt(bad, patch(blob, e0["dtype_pos"] + 1, "<I", 2**31), "rank")
    expect_corrupt(bad, patch(blob, e0["dims_pos"], "<q", 2**62), "'w'.*(too many|more bytes)")
    expect_corrupt(bad, patch(blob, e0["dims_pos"], "<q", -2), "negative dimension -2")
    expect_corrupt(bad, patch(blob, e0["dims_pos"] + 8, "<q", 2**31), "more bytes than the file")
    expect_corrupt(bad, patch(blob, e0["dims_pos"], "<q", 1), "data length 24 bytes.*needs 12")
    expect_corrupt(bad, patch(blob, e1["offset_pos"], "<Q", len(blob) + 64), "'b'.*offset")
    expect_corrupt(bad, patch(blob, e1["offset_pos"], "<Q", 2**64 - 64), "'b'.*offset")
    expect_corrupt(bad, patch(blob, e1["offset_pos"] + 8, "<Q", 2**64 - 1), "'b'.*data length")
    # The checksum is the last line of defence: a patched field without a new CRC still fails.
    expect_corrupt(bad, patch(blob, e0["dims_pos"], "<q", 2**62, fix_crc=False), "'w'")


def test_random_garbage_with_a_valid_preamble(tmp_path):
    rng = np.random.default_rng(0)
    bad = tmp_path / "bad.ckpt"
    for _ in range(200):
        n = int(rng.integers(0, 400))
        body = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        header_len = int(rng.integers(0, n + 1))
        expect_corrupt(bad, b"MYCELCKP" + struct.pack("<IQ", 1, header_len) + body, "bad.ckpt")


# ---------------------------------------------------------------------------------------------
# Atomicity: a SIGKILL in the middle of a save leaves the previous checkpoint loadable.

CHILD = textwrap.dedent("""
    import sys, numpy as np, mycel
    path, n = sys.argv[1], int(sys.argv[2])
    big = {f"t{i}": mycel.Tensor(np.full(n, i + 1, np.float32)) for i in range(4)}
    print("ready", flush=True)
    while True:
        mycel.save_checkpoint(big, path)
""")


def test_sigkill_during_save_keeps_previous_checkpoint(tmp_path):
    path = tmp_path / "model.ckpt"
    prev = {"w": np.arange(10, dtype=np.float32)}
    mycel.save_checkpoint({k: Tensor(v) for k, v in prev.items()}, str(path))
    n = 8 << 20  # 4 tensors of 32 MiB: a save takes long enough to be caught in the middle
    killed_mid_save = 0
    for attempt in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(n)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            tmp = tmp_path / f"model.ckpt.tmp-{child.pid}"
            deadline = time.monotonic() + 60
            while not tmp.exists() and time.monotonic() < deadline:
                time.sleep(0.001)
            assert tmp.exists(), "the child never started writing"
            time.sleep(0.02 * attempt)
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
        assert child.returncode == -signal.SIGKILL
        killed_mid_save += tmp.exists()  # the partial file is there: the rename never happened
        loaded = mycel.load_checkpoint(str(path))
        # Either the previous checkpoint or a complete new one: never a partial file.
        if list(loaded) == ["w"]:
            np.testing.assert_array_equal(loaded["w"].asnumpy(), prev["w"])
        else:
            assert list(loaded) == [f"t{i}" for i in range(4)]
            for i in range(4):
                a = loaded[f"t{i}"].asnumpy()
                assert a.shape == (n,) and (a == i + 1).all()
        for leftover in tmp_path.glob("model.ckpt.tmp-*"):
            leftover.unlink()
    assert killed_mid_save > 0  # otherwise the test proved nothing


# ---------------------------------------------------------------------------------------------
# safetensors.

def write_st(path, header, data, pad=0):
    text = json.dumps(header).encode() + b" " * pad
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


ST_NAMES = {"bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "int32": "I32",
            "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
            "float64": "F64"}


def test_safetensors_layout_and_metadata(tmp_path):
    ref = cases()
    path = tmp_path / "all.safetensors"
    save_safetensors({n: to_tensor(d, a) for n, (d, a) in ref.items()}, str(path),
                     metadata={"format": "pt", "note": "héllo"})
    blob = path.read_bytes()
    (n,) = struct.unpack_from("<Q", blob)
    assert n % 8 == 0
    header = json.loads(blob[8:8 + n])
    assert header.pop("__metadata__") == {"format": "pt", "note": "héllo"}
    data = blob[8 + n:]
    for name, (d, a) in ref.items():
        h = header[name]
        assert h["dtype"] == ST_NAMES[d] and tuple(h["shape"]) == a.shape
        b, e = h["data_offsets"]
        if d == "bfloat16":
            expect = (a.view(np.uint32) >> 16).astype("<u2").tobytes()
        else:
            expect = a.tobytes()
        assert data[b:e] == expect, name
    tensors, meta = load_safetensors(str(path), return_metadata=True)
    assert meta == {"format": "pt", "note": "héllo"}
    assert list(tensors) == list(ref)
    for name, (d, a) in ref.items():
        np.testing.assert_array_equal(tensors[name].asnumpy(), a)


def test_safetensors_written_by_hand_loads(tmp_path):
    """A file built from the spec with json + struct (headers padded with spaces, any key order)."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([7, -8], dtype=np.int16)
    path = tmp_path / "hand.safetensors"
    write_st(path, {"b": {"dtype": "I16", "shape": [2], "data_offsets": [24, 28]},
                    "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}},
             a.tobytes() + b.tobytes(), pad=5)
    t = load_safetensors(str(path))
    np.testing.assert_array_equal(t["a"].asnumpy(), a)
    np.testing.assert_array_equal(t["b"].asnumpy(), b)
    assert list(t) == ["a", "b"]  # data order


def test_safetensors_unsigned_and_float8(tmp_path):
    """U16/U32/U64 (written by torch and safetensors' numpy API) load as Mycel's unsigned types;
    float8, a valid dtype Mycel lacks, is NotImplementedError naming it, never a wrong read."""
    arrays = {"U16": np.array([0, 65535], "<u2"), "U32": np.array([1, 2**32 - 1], "<u4"),
              "U64": np.array([3, 2**64 - 1], "<u8")}
    header, data = {}, b""
    for name, a in arrays.items():
        header[name] = {"dtype": name, "shape": [2], "data_offsets": [len(data), len(data) + a.nbytes]}
        data += a.tobytes()
    path = tmp_path / "u.safetensors"
    write_st(path, header, data)
    t = load_safetensors(str(path))
    for name, a in arrays.items():
        assert t[name].asnumpy().dtype == a.dtype.newbyteorder("=")
        np.testing.assert_array_equal(t[name].asnumpy(), a)
    write_st(path, {"f": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\0\0")
    with pytest.raises(NotImplementedError, match="F8_E4M3"):
        load_safetensors(str(path))


@pytest.mark.parametrize("header,data,match", [
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "out of range"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 8, "span 4 bytes"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, "hole"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, "overlap"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 9, "trailing"),
    ({"a": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, "unknown dtype"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, "non-negative"),
    ({"a": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]}}, b"\0" * 4,
     "too many|more bytes"),
    ({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}, b"\0" * 4, "non-negative"),
    ({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, "missing \"data_offsets\""),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"\0" * 4, "begin, end"),
    ({"a": [1, 2]}, b"", "must be an object"),
    ({"__metadata__": {"k": 1}}, b"", "must be a string"),
    ([1, 2], b"", "JSON object"),
    ({"a": {"dtype": "F32", "shape": [[[[[1]]]]], "data_offsets": [0, 4]}}, b"\0" * 4, "nested"),
])
def test_malformed_safetensors(tmp_path, header, data, match):
    path = tmp_path / "bad.safetensors"
    write_st(path, header, data)
    with pytest.raises(ValueError, match=match) as info:
        load_safetensors(str(path))
    assert "bad.safetensors" in str(info.value)


def test_safetensors_hostile_sizes_and_syntax(tmp_path):
    path = tmp_path / "bad.safetensors"
    for blob, match in [(b"\1\2", "truncated"),
                        (struct.pack("<Q", 2**63) + b"{}", "header size"),
                        (struct.pack("<Q", 2**64 - 1) + b"{}", "header size"),
                        (struct.pack("<Q", 10) + b"{}", "header size"),
                        (struct.pack("<Q", 4) + b"{\"a\"", "not valid JSON"),
                        (struct.pack("<Q", 4000) + b"[" * 4000, "nested")]:
        path.write_bytes(blob)
        with pytest.raises(ValueError, match=match):
            load_safetensors(str(path))


@pytest.mark.parametrize("text", [
    b'{"a\xff": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',  # in a name
    b'{\xff"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',  # outside strings
    b'{"__metadata__": {"k": "\xc3("}}',  # a truncated 2-byte sequence in metadata
    b'{"a": 1}    \xed\xa0\x80',  # an encoded surrogate in the padding
])
def test_safetensors_header_not_utf8_names_file_and_offset(tmp_path, text):
    with pytest.raises(UnicodeDecodeError) as ref:  # the reference: Python's UTF-8 decoder
        text.decode("utf-8")
    offset = ref.value.start
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"\0" * 4)
    msg = (rf"safetensors file '.*bad.safetensors': header is not valid UTF-8 "
           rf"\(byte 0x{text[offset]:02x} at header offset {offset}\)")
    with pytest.raises(ValueError, match=msg):
        load_safetensors(str(path))
    with pytest.raises(ValueError, match="bad.safetensors"):
        mycel.load_checkpoint(str(path))


def test_safetensors_package_cross_check(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    ref = {n: a for n, (d, a) in cases().items() if d != "bfloat16"}
    ours = tmp_path / "ours.safetensors"
    save_safetensors({n: Tensor(a) for n, a in ref.items()}, str(ours))
    for name, a in st.load_file(str(ours)).items():
        np.testing.assert_array_equal(a, ref[name])
    theirs = tmp_path / "theirs.safetensors"
    st.save_file(ref, str(theirs), metadata={"k": "v"})
    t, meta = load_safetensors(str(theirs), return_metadata=True)
    assert meta == {"k": "v"}
    for name, a in ref.items():
        np.testing.assert_array_equal(t[name].asnumpy(), a)
