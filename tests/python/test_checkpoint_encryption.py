"""Encrypted checkpoints and models (MindSpore's enc_key/enc_mode, dec_key/dec_mode): round trips in
every mode, the envelope decrypted independently with the `cryptography` package, and wrong keys,
wrong modes and altered or truncated files rejected cleanly."""
import os
import struct

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

cryptography = pytest.importorskip("cryptography")
from cryptography.hazmat.primitives import padding  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402

HEADER = 24  # "MYCELENC" | u32 version | u8 mode | u8 iv_len | u16 | u64 plain_len


def _params():
    rng = np.random.default_rng(0)
    return {"w": Tensor(rng.standard_normal((3, 5)).astype(np.float32)),
            "b": Tensor(np.arange(5, dtype=np.int64)),
            "m": Tensor(np.array([True, False]))}


def _independent_decrypt(blob, key):
    """Opens the envelope with `cryptography`, following the layout in docs/checkpoints.md."""
    assert blob[:8] == b"MYCELENC"
    version, mode, iv_len, _, plain_len = struct.unpack_from("<IBBHQ", blob, 8)
    assert version == 1
    iv = blob[HEADER:HEADER + iv_len]
    body = blob[HEADER + iv_len:]
    if mode == 1:  # AES-GCM, the header as associated data
        return AESGCM(key).decrypt(iv, body, blob[:HEADER])
    algo = algorithms.AES(key) if mode == 2 else algorithms.SM4(key)
    dec = Cipher(algo, modes.CBC(iv)).decryptor()
    padded = dec.update(body) + dec.finalize()
    unpad = padding.PKCS7(128).unpadder()
    plain = unpad.update(padded) + unpad.finalize()
    assert len(plain) == plain_len
    return plain


@pytest.mark.parametrize("mode,key_len", [("AES-GCM", 16), ("AES-GCM", 24), ("AES-GCM", 32),
                                          ("AES-CBC", 16), ("AES-CBC", 32), ("SM4-CBC", 16)])
def test_encrypted_checkpoint_round_trip_and_independent_decryption(tmp_path, mode, key_len):
    key = os.urandom(key_len)
    params = _params()
    enc = str(tmp_path / "enc.ckpt")
    plain = str(tmp_path / "plain.ckpt")
    mycel.save_checkpoint(params, enc, enc_key=key, enc_mode=mode)
    mycel.save_checkpoint(params, plain)
    blob = open(enc, "rb").read()
    # The plain format is deterministic: decrypting must give exactly the unencrypted file.
    assert _independent_decrypt(blob, key) == open(plain, "rb").read()
    assert open(plain, "rb").read()[:16] not in blob  # nothing in the clear
    loaded = mycel.load_checkpoint(enc, dec_key=key, dec_mode=mode.lower())
    assert list(loaded) == list(params)
    for name, t in params.items():
        np.testing.assert_array_equal(loaded[name].asnumpy(), t.asnumpy())
        assert loaded[name].dtype == t.dtype


def test_encrypted_checkpoint_loads_into_a_network(tmp_path):
    key = b"0123456789abcdef"
    net, other = nn.Dense(4, 3), nn.Dense(4, 3)
    path = str(tmp_path / "net")  # ".ckpt" is appended, as for plain checkpoints
    mycel.save_checkpoint(net, path, enc_key=key)
    mycel.load_checkpoint(path + ".ckpt", net=other, dec_key=key)
    np.testing.assert_array_equal(other.weight.asnumpy(), net.weight.asnumpy())
    np.testing.assert_array_equal(other.bias.asnumpy(), net.bias.asnumpy())


def test_wrong_keys_modes_and_damage_are_clean_errors(tmp_path):
    key = bytes(range(16))
    path = str(tmp_path / "a.ckpt")
    mycel.save_checkpoint(_params(), path, enc_key=key)
    with pytest.raises(ValueError, match="wrong dec_key"):
        mycel.load_checkpoint(path, dec_key=bytes(16))
    with pytest.raises(ValueError, match="encrypted with AES-GCM, but dec_mode is SM4-CBC"):
        mycel.load_checkpoint(path, dec_key=key, dec_mode="SM4-CBC")
    with pytest.raises(ValueError, match="is encrypted: pass dec_key"):
        mycel.load_checkpoint(path)
    with pytest.raises(ValueError, match="16, 24 or 32 bytes, got 5"):
        mycel.load_checkpoint(path, dec_key=b"short")
    with pytest.raises(TypeError, match="dec_key must be bytes"):
        mycel.load_checkpoint(path, dec_key="0123456789abcdef")
    with pytest.raises(ValueError, match="dec_mode must be one of"):
        mycel.load_checkpoint(path, dec_key=key, dec_mode="ROT13")
    with pytest.raises(ValueError, match="SM4-CBC takes a 16-byte key"):
        mycel.save_checkpoint(_params(), path, enc_key=bytes(32), enc_mode="SM4-CBC")
    with pytest.raises(ValueError, match="safetensors files are not encrypted"):
        mycel.save_checkpoint(_params(), str(tmp_path / "a.safetensors"), enc_key=key)
    plain = str(tmp_path / "p.ckpt")
    mycel.save_checkpoint(_params(), plain)
    with pytest.raises(ValueError, match="is not encrypted"):
        mycel.load_checkpoint(plain, dec_key=key)

    blob = bytearray(open(path, "rb").read())
    damaged = str(tmp_path / "d.ckpt")
    for at in (12, 16, HEADER + 3, len(blob) // 2, len(blob) - 1):  # mode, length, iv, body, tag
        bad = bytearray(blob)
        bad[at] ^= 0x40
        open(damaged, "wb").write(bytes(bad))
        with pytest.raises(ValueError):
            mycel.load_checkpoint(damaged, dec_key=key)
    for size in (0, 7, HEADER, HEADER + 20, len(blob) - 1):
        open(damaged, "wb").write(bytes(blob[:size]))
        with pytest.raises(ValueError):
            mycel.load_checkpoint(damaged, dec_key=key)
    # A huge plain length in the header is rejected before anything is allocated.
    bad = bytearray(blob)
    bad[16:24] = struct.pack("<Q", 2 ** 62)
    open(damaged, "wb").write(bytes(bad))
    with pytest.raises(ValueError, match="truncated or corrupt"):
        mycel.load_checkpoint(damaged, dec_key=key)


def test_cbc_wrong_key_is_caught_by_the_inner_checksum(tmp_path):
    # CBC has no tag: a wrong key gives bad padding or garbage that the .ckpt CRC rejects.
    key = bytes(range(16))
    path = str(tmp_path / "c.ckpt")
    mycel.save_checkpoint(_params(), path, enc_key=key, enc_mode="AES-CBC")
    for i in range(8):
        with pytest.raises(ValueError):
            mycel.load_checkpoint(path, dec_key=bytes([i + 1] * 16), dec_mode="AES-CBC")


def test_encrypted_mindir_export_and_load(tmp_path):
    if getattr(mycel._mycel, "lite", None) is None:
        pytest.skip("no lite runtime in this build")
    net = nn.SequentialCell([nn.Dense(6, 4), nn.ReLU()])
    net.set_train(False)
    x = Tensor(np.random.default_rng(1).standard_normal((2, 6)).astype(np.float32))
    key = os.urandom(32)
    path = mycel.export(net, x, file_name=str(tmp_path / "m"), file_format="MINDIR", enc_key=key)
    blob = open(path, "rb").read()
    assert blob[:8] == b"MYCELENC"
    mycel._mycel.lite.verify(_independent_decrypt(blob, key))  # a valid MINDIR inside
    graph = nn.GraphCell(mycel.load(path, dec_key=key, dec_mode="AES-GCM"))
    np.testing.assert_allclose(graph(x).asnumpy(), net(x).asnumpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="is encrypted: pass dec_key"):
        mycel.load(path)
    with pytest.raises(ValueError, match="wrong dec_key"):
        mycel.load(path, dec_key=bytes(32))
    with pytest.raises(ValueError, match="MINDIR files only"):
        mycel.export(net, x, file_name=str(tmp_path / "m"), file_format="ONNX", enc_key=key)
