"""MindSpore's enc_key/enc_mode and dec_key/dec_mode arguments, checked once for every caller
(save_checkpoint, load_checkpoint, export, load). The ciphers run in C++ on OpenSSL
(src/mycel/io/cipher.h); a wrong key or altered bytes raise ValueError naming the file."""
from mycel import _mycel

MODES = ("AES-GCM", "AES-CBC", "SM4-CBC")


def key_bytes(fn, arg, key):
    """The key as bytes: MindSpore takes bytes (16, 24 or 32 of them for AES, 16 for SM4)."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"{fn}: {arg} must be bytes (16, 24 or 32 for AES, 16 for SM4), "
                    f"got {type(key).__name__}")


def mode_name(fn, arg, mode):
    if not isinstance(mode, str) or mode.upper() not in MODES:
        raise ValueError(f"{fn}: {arg} must be one of {MODES}, got {mode!r}")
    return mode.upper()


def encrypt(fn, blob, key, mode):
    """The sealed envelope of `blob`."""
    return _mycel.io.encrypt_bytes(blob, key_bytes(fn, "enc_key", key),
                                   mode_name(fn, "enc_mode", mode), fn)


def decrypt(fn, blob, key, mode, what):
    """The plain bytes of an envelope read from `what`."""
    return _mycel.io.decrypt_bytes(blob, key_bytes(fn, "dec_key", key),
                                   mode_name(fn, "dec_mode", mode), what)
