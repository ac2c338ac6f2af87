"""Protocol-buffer wire format, just what ONNX files need: a writer for the messages we emit and a
bounds-checked reader that turns any byte string into fields or a ValueError (never a crash or an
endless loop). The framework does not import the `onnx` package; the field numbers below are
onnx.proto's (IR version 8), which the tests check against the real package."""
import struct

# Wire types.
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

# TensorProto.DataType codes.
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE, UINT32, UINT64 = \
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
BFLOAT16 = 16
# AttributeProto.AttributeType codes.
A_FLOAT, A_INT, A_STRING, A_TENSOR, A_GRAPH, A_FLOATS, A_INTS, A_STRINGS = 1, 2, 3, 4, 5, 6, 7, 8

_MASK64 = (1 << 64) - 1


def _varint(n):
    n &= _MASK64  # negative int64 values are sent as their 64-bit two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Writer:
    """Appends fields of one message; nested messages are written first and added as bytes."""

    def __init__(self):
        self._parts = []

    def _key(self, field, wire):
        self._parts.append(_varint(field << 3 | wire))

    def int(self, field, value):
        self._key(field, VARINT)
        self._parts.append(_varint(int(value)))
        return self

    def float(self, field, value):
        self._key(field, FIXED32)
        self._parts.append(struct.pack("<f", value))
        return self

    def bytes(self, field, data):
        if isinstance(data, str):
            data = data.encode()
        self._key(field, LEN)
        self._parts.append(_varint(len(data)))
        self._parts.append(data)
        return self

    def message(self, field, writer):
        return self.bytes(field, writer.finish())

    def packed_ints(self, field, values):
        return self.bytes(field, b"".join(_varint(int(v)) for v in values))

    def packed_floats(self, field, values):
        return self.bytes(field, struct.pack(f"<{len(values)}f", *values))

    def finish(self):
        return b"".join(self._parts)


def parse(data, what="message"):
    """Fields of one message: {field number: [values]} where a varint is an int, a LEN field a
    memoryview, FIXED32/FIXED64 their raw little-endian bytes. Raises ValueError on bad data."""
    buf = memoryview(blob(data, what))
    n = len(buf)
    pos = 0
    fields = {}

    def varint():
        nonlocal pos
        result = shift = 0
        while True:
            if pos >= n:
                raise ValueError(f"{what}: truncated varint at byte {pos} of {n}")
            if shift > 63:
                raise ValueError(f"{what}: varint longer than 10 bytes at byte {pos}")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result & _MASK64

    while pos < n:
        key = varint()
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError(f"{what}: field number 0 at byte {pos}")
        if wire == VARINT:
            value = varint()
        elif wire == LEN:
            size = varint()
            if size > n - pos:
                raise ValueError(f"{what}: field {field} claims {size} bytes, only {n - pos} remain")
            value = buf[pos:pos + size]
            pos += size
        elif wire in (FIXED32, FIXED64):
            size = 4 if wire == FIXED32 else 8
            if size > n - pos:
                raise ValueError(f"{what}: truncated fixed field {field} at byte {pos}")
            value = bytes(buf[pos:pos + size])
            pos += size
        else:
            raise ValueError(f"{what}: unsupported wire type {wire} for field {field}")
        fields.setdefault(field, []).append(value)
    return fields


# The reader is schema-less, so a hostile file can put any wire type where the schema expects
# another; each accessor checks the kind it needs (a mismatch is a damaged file, ValueError).
def blob(v, what="bytes field"):
    """A length-delimited field's bytes, or ValueError for another wire type."""
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise ValueError(f"{what}: expected a length-delimited field, found a varint")
    return v


def integer(v, what="integer field"):
    """A varint field's value (an int), or ValueError for another wire type."""
    if not isinstance(v, int):
        raise ValueError(f"{what}: expected a varint, found a {len(v)}-byte field")
    return v


def signed(v, what="int64 field"):
    """An int64 field's value from its unsigned varint."""
    v = integer(v, what)
    return v - (1 << 64) if v >= 1 << 63 else v


def text(v, what="string field"):
    return bytes(blob(v, what)).decode("utf-8", errors="replace")


def float32(v, what="float field"):
    """A FIXED32 float field's value."""
    if not isinstance(v, bytes) or len(v) != 4:
        raise ValueError(f"{what}: expected a 4-byte fixed field")
    return struct.unpack("<f", v)[0]


def unpack_ints(values):
    """A repeated int64 field, packed or not."""
    out = []
    for v in values:
        if isinstance(v, int):
            out.append(signed(v))
        else:
            for x in parse(bytes(v) and _as_varints(v), "packed ints").get(1, []):
                out.append(signed(x))
    return out


def _as_varints(v):
    # A packed run of varints re-framed as field 1 values so `parse` can read it with its checks.
    data = bytes(v)
    out = bytearray()
    pos = 0
    while pos < len(data):
        out.append(0x08)
        start = pos
        while pos < len(data) and data[pos] & 0x80:
            pos += 1
        if pos >= len(data):
            raise ValueError("packed ints: truncated varint")
        pos += 1
        out += data[start:pos]
    return bytes(out)


def unpack_floats(values):
    """A repeated float field, packed or not."""
    out = []
    for v in values:
        if isinstance(v, int):
            raise ValueError("packed floats: found a varint")
        if len(v) == 4 and isinstance(v, bytes):  # one unpacked FIXED32 element
            out.append(struct.unpack("<f", v)[0])
            continue
        if len(v) % 4:
            raise ValueError(f"packed floats: {len(v)} bytes is not a multiple of 4")
        out.extend(struct.unpack(f"<{len(v) // 4}f", bytes(v)))
    return out
