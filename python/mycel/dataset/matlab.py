"""A reader for MATLAB level-5 .mat files (the format SVHN ships in), numeric and char arrays only.

The framework does not depend on scipy at run time, so the few rules of the format are read here:
a 128-byte header, then tagged data elements (8-byte aligned, or packed into 8 bytes when small),
each variable a miMATRIX element (flags, dimensions, name, real part) or a zlib-compressed one.
Every length is checked against the bytes present, so a truncated or forged file raises ValueError
naming it instead of reading past the end."""
import math
import struct
import zlib

import numpy as np

__all__ = ["load_mat"]

# data element types -> numpy dtype (without byte order)
_MI = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8",
       16: "u1"}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
# array classes -> numpy dtype of the variable (char arrays come out as str)
_CLASS = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
_CHAR_CLASS = 4
_MAX_INFLATED = 1 << 32  # a compressed variable may not inflate past 4 GiB (a zlib bomb otherwise)


class _Reader:
    def __init__(self, data, path, order):
        self.data, self.path, self.order = data, path, order

    def fail(self, what):
        raise ValueError(f"load_mat: '{self.path}' is not a MATLAB 5 file: {what}")

    def tag(self, pos, end):
        """(type, nbytes, data start, next element) of the element at pos."""
        if pos + 8 > end:
            self.fail(f"a data element tag at byte {pos} runs past the end ({end})")
        first, second = struct.unpack_from(self.order + "II", self.data, pos)
        if first >> 16:  # small data element: size and type share the first word
            nbytes, kind = first >> 16, first & 0xFFFF
            if nbytes > 4:
                self.fail(f"a small data element at byte {pos} claims {nbytes} bytes (at most 4)")
            return kind, nbytes, pos + 4, pos + 8
        kind, nbytes, start = first, second, pos + 8
        if start + nbytes > end:
            self.fail(f"a data element at byte {pos} of {nbytes} bytes runs past the end ({end})")
        step = nbytes if kind == _MI_COMPRESSED else (nbytes + 7) // 8 * 8
        return kind, nbytes, start, min(start + step, end)

    def numbers(self, pos, end, what):
        kind, nbytes, start, nxt = self.tag(pos, end)
        if kind not in _MI:
            self.fail(f"the {what} has data type {kind}, not a numeric type")
        dt = np.dtype(_MI[kind]).newbyteorder(self.order)
        if nbytes % dt.itemsize:
            self.fail(f"the {what} holds {nbytes} bytes, not a whole number of {dt.itemsize}-byte values")
        return np.frombuffer(self.data, dt, nbytes // dt.itemsize, start), nxt

    def matrix(self, start, end):
        """(name, array or None when the class is not numeric or char) of a miMATRIX body."""
        if start == end:  # an empty element: MATLAB writes these for empty cells
            return None, None
        flags, pos = self.numbers(start, end, "array flags")
        if len(flags) < 2:
            self.fail("the array flags hold fewer than 2 words")
        cls, is_complex = int(flags[0]) & 0xFF, bool(int(flags[0]) & 0x0800)
        dims, pos = self.numbers(pos, end, "dimensions")
        if len(dims) < 2 or (dims < 0).any():
            self.fail(f"dimensions {list(dims)} (need at least 2, none negative)")
        name, pos = self.numbers(pos, end, "array name")
        name = name.tobytes().decode("ascii", "replace")
        if cls not in _CLASS and cls != _CHAR_CLASS:
            return name, None
        shape = tuple(int(d) for d in dims)
        count = math.prod(shape)  # Python ints: a forged shape cannot wrap around
        real, pos = self.numbers(pos, end, f"real part of '{name}'")
        if len(real) != count:
            self.fail(f"'{name}' has dimensions {shape} ({count} values) but holds {len(real)}")
        if cls == _CHAR_CLASS:
            codes = real.reshape(shape, order="F").T.reshape(-1).astype(np.int64)
            if ((codes < 0) | (codes > 0x10FFFF)).any():
                self.fail(f"the char array '{name}' holds a code outside Unicode")
            return name, np.array("".join(map(chr, codes.tolist())))
        out = real.astype(_CLASS[cls], copy=False)  # a view when stored as the class's own type
        if is_complex:
            imag, pos = self.numbers(pos, end, f"imaginary part of '{name}'")
            if len(imag) != count:
                self.fail(f"the imaginary part of '{name}' holds {len(imag)} values, not {count}")
            out = out + 1j * imag.astype(_CLASS[cls])
        return name, out.reshape(shape, order="F")


def load_mat(path):
    """{variable name: ndarray} of a level-5 .mat file (MATLAB's column-major order kept, so
    shapes read as in MATLAB); cell, struct, object and sparse variables are left out."""
    try:
        data = np.fromfile(path, np.uint8)  # writable, so the arrays below can be views of it
    except OSError as e:
        raise ValueError(f"load_mat: cannot read '{path}' ({e})") from None
    if len(data) < 128:
        raise ValueError(f"load_mat: '{path}' is not a MATLAB 5 file: {len(data)} bytes, shorter than "
                         "the 128-byte header")
    if b"\x89HDF" in (data[:4].tobytes(), data[128:132].tobytes(), data[512:516].tobytes()):
        raise ValueError(f"load_mat: '{path}' is a MATLAB 7.3 (HDF5) file; save it with -v7 or older")
    indicator = data[126:128].tobytes()
    if indicator not in (b"IM", b"MI"):
        raise ValueError(f"load_mat: '{path}' is not a MATLAB 5 file: endian indicator {indicator!r}, "
                         "expected b'IM' or b'MI'")
    out = {}
    _elements(_Reader(data, path, "<" if indicator == b"IM" else ">"), 128, len(data), out, True)
    return out


def _elements(r, pos, end, out, top):
    while pos < end:
        if end - pos < 8:  # trailing padding
            break
        kind, nbytes, start, nxt = r.tag(pos, end)
        if kind == _MI_COMPRESSED:
            if not top:
                r.fail("a compressed element nested inside another")
            inflater = zlib.decompressobj()
            try:
                body = inflater.decompress(r.data[start:start + nbytes], _MAX_INFLATED)
            except zlib.error as e:
                r.fail(f"the compressed element at byte {pos} does not inflate ({e})")
            if inflater.unconsumed_tail:
                r.fail(f"the compressed element at byte {pos} inflates past {_MAX_INFLATED} bytes")
            body = np.frombuffer(bytearray(body), np.uint8)
            _elements(_Reader(body, r.path, r.order), 0, len(body), out, False)
        elif kind == _MI_MATRIX:
            name, value = r.matrix(start, start + nbytes)
            if value is not None:
                out[name] = value
        pos = nxt
