"""A FLAC decoder (the format LibriSpeech ships in), in Python with numpy, for files from outside:
every length, count and bit read is checked against the bytes present, so a truncated or forged
file raises ValueError naming it instead of reading past the end (tests/fuzz target 'flac').

The format: 'fLaC', metadata blocks (the first one STREAMINFO: sample rate, channels, bits per
sample), then frames, each a header (block size, channel assignment), one subframe per channel
(constant, verbatim, fixed polynomial or LPC prediction with a Rice-coded residual) and a CRC-16.
Rice codes are located in one pass over the bit positions and their values gathered with numpy;
the predictions run over Python integers, exact at every bit depth."""
import bisect
import operator

import numpy as np

__all__ = ["read_flac"]

_MAX_BYTES = 1 << 32
_BLOCK_SIZES = {1: 192, 2: 576, 3: 1152, 4: 2304, 5: 4608, 8: 256, 9: 512, 10: 1024, 11: 2048, 12: 4096,
                13: 8192, 14: 16384, 15: 32768}
_RATES = {1: 88200, 2: 176400, 3: 192000, 4: 8000, 5: 16000, 6: 22050, 7: 24000, 8: 32000, 9: 44100,
          10: 48000, 11: 96000}
_SIZES = {1: 8, 2: 12, 4: 16, 5: 20, 6: 24, 7: 32}
_FIXED = ((), (1,), (2, -1), (3, -3, 1), (4, -6, 4, -1))  # fixed predictors' coefficients, newest first


class _Bad(Exception):
    """A malformed stream; read_flac turns it into a ValueError naming the file."""


class _Bits:
    """Big-endian bit reader over a numpy array of bits, with bounds checks."""

    def __init__(self, data):
        self.bits = np.unpackbits(np.frombuffer(data, np.uint8))
        self.n = len(self.bits)
        self.pos = 0
        self._ones = None

    def need(self, k):
        if k < 0 or self.pos + k > self.n:
            raise _Bad(f"the stream ends inside a frame (bit {self.pos} + {k} of {self.n})")

    def read(self, k):
        if k == 0:
            return 0
        self.need(k)
        v = 0
        for b in self.bits[self.pos:self.pos + k].tolist():
            v = (v << 1) | b
        self.pos += k
        return v

    def signed(self, k):
        v = self.read(k)
        return v - (1 << k) if k and v >> (k - 1) else v

    def _one_positions(self):
        if self._ones is None:
            self._ones = np.flatnonzero(self.bits).tolist()
        return self._ones

    def unary(self):
        """Zeros before the next one bit (which is consumed)."""
        ones = self._one_positions()
        i = bisect.bisect_left(ones, self.pos)
        if i >= len(ones):
            raise _Bad("the stream ends inside a unary code")
        q = ones[i] - self.pos
        self.pos = ones[i] + 1
        return q

    def align(self):
        self.pos = (self.pos + 7) & ~7

    def rice(self, count, k):
        """count Rice-coded signed values with parameter k: each q zeros, a one, then k bits."""
        if count == 0:
            return []
        ones = self._one_positions()
        i = bisect.bisect_left(ones, self.pos)
        p, stops, qs = self.pos, [], []
        try:
            for _ in range(count):
                while ones[i] < p:  # skips the ones inside the previous code's k low bits
                    i += 1
                o = ones[i]
                qs.append(o - p)
                stops.append(o)
                p = o + 1 + k
        except IndexError:
            raise _Bad("the stream ends inside a residual") from None
        if p > self.n:
            raise _Bad("the stream ends inside a residual")
        if k:
            at = np.array(stops, np.int64)[:, None] + 1 + np.arange(k)
            low = (self.bits[at].astype(np.int64) @ (1 << np.arange(k - 1, -1, -1, dtype=np.int64))).tolist()
        else:
            low = [0] * count
        self.pos = p
        # zigzag: 0, -1, 1, -2, ...; Python ints, since a forged q may pass 2^63
        return [(u >> 1) ^ -(u & 1) for u in ((q << k) | lo for q, lo in zip(qs, low))]


def _residual(bits, block, order):
    method = bits.read(2)
    if method > 1:
        raise _Bad(f"residual coding method {method}")
    param_bits, escape = (4, 15) if method == 0 else (5, 31)
    partition_order = bits.read(4)
    parts = 1 << partition_order
    if block % parts or (block >> partition_order) < order:
        raise _Bad(f"partition order {partition_order} does not fit a block of {block} with order {order}")
    out = []
    for part in range(parts):
        count = (block >> partition_order) - (order if part == 0 else 0)
        k = bits.read(param_bits)
        if k == escape:
            width = bits.read(5)
            out += [bits.signed(width) for _ in range(count)]
        else:
            out += bits.rice(count, k)
    return out


def _subframe(bits, block, bps):
    if bits.read(1):
        raise _Bad("a subframe's padding bit is set")
    kind = bits.read(6)
    wasted = 0
    if bits.read(1):
        wasted = bits.unary() + 1
        if wasted >= bps:
            raise _Bad(f"{wasted} wasted bits of {bps}")
    bps -= wasted
    if kind == 0:
        samples = [bits.signed(bps)] * block
    elif kind == 1:
        samples = [bits.signed(bps) for _ in range(block)]
    elif 8 <= kind <= 12 or kind >= 32:
        if kind <= 12:
            order, coefs, shift = kind - 8, _FIXED[kind - 8], 0
        else:
            order = (kind & 31) + 1
        if order > block:
            raise _Bad(f"predictor order {order} for a block of {block}")
        samples = [bits.signed(bps) for _ in range(order)]
        if kind >= 32:
            precision = bits.read(4) + 1
            if precision == 16:
                raise _Bad("LPC coefficient precision 15 (invalid)")
            shift = bits.signed(5)
            if shift < 0:
                raise _Bad(f"negative LPC shift {shift}")
            coefs = [bits.signed(precision) for _ in range(order)]  # the newest sample's first
        residual = _residual(bits, block, order)
        if order == 0:
            samples = residual
        else:
            back = -order - 1
            for r in residual:  # coefs[0] weighs the newest sample
                samples.append(r + (sum(map(operator.mul, coefs, samples[-1:back:-1])) >> shift))
    else:
        raise _Bad(f"reserved subframe type {kind}")
    if wasted:
        samples = [s << wasted for s in samples]
    return samples


def _utf8_number(bits):
    first = bits.read(8)
    if first < 0x80:
        return first
    n = 0
    while first & (0x80 >> n):
        n += 1
    if n < 2 or n > 7:
        raise _Bad("a malformed frame number")
    value = first & (0x7F >> n)
    for _ in range(n - 1):
        byte = bits.read(8)
        if byte >> 6 != 2:
            raise _Bad("a malformed frame number")
        value = (value << 6) | (byte & 0x3F)
    return value


def _frame(bits, rate, channels, bps):
    """The frame's channels as lists of ints, or None at the end of the stream."""
    bits.align()
    if bits.pos + 16 > bits.n:
        return None
    if bits.read(15) != 0x7FFC:
        raise _Bad(f"no frame sync code at byte {bits.pos // 8 - 2}")
    bits.read(1)  # blocking strategy
    size_code, rate_code, assignment, size_bits = bits.read(4), bits.read(4), bits.read(4), bits.read(3)
    if bits.read(1):
        raise _Bad("a frame header's reserved bit is set")
    _utf8_number(bits)
    if size_code == 0:
        raise _Bad("reserved block size code 0")
    block = bits.read(8) + 1 if size_code == 6 else bits.read(16) + 1 if size_code == 7 else _BLOCK_SIZES[size_code]
    if rate_code == 12:
        bits.read(8)
    elif rate_code in (13, 14):
        bits.read(16)
    elif rate_code == 15:
        raise _Bad("invalid sample rate code 15")
    if size_bits in (3,):
        raise _Bad("reserved sample size code 3")
    frame_bps = bps if size_bits == 0 else _SIZES[size_bits]
    if frame_bps != bps:
        raise _Bad(f"a frame of {frame_bps}-bit samples in a {bps}-bit stream")
    bits.read(8)  # header CRC-8
    if assignment < 8:
        n = assignment + 1
        if n != channels:
            raise _Bad(f"a frame of {n} channels in a {channels}-channel stream")
        out = [_subframe(bits, block, bps) for _ in range(n)]
    elif assignment <= 10:
        if channels != 2:
            raise _Bad(f"stereo decorrelation in a {channels}-channel stream")
        a = _subframe(bits, block, bps + (assignment == 9))
        b = _subframe(bits, block, bps + (assignment != 9))
        if assignment == 8:  # left, side
            out = [a, [x - s for x, s in zip(a, b)]]
        elif assignment == 9:  # side, right
            out = [[s + y for s, y in zip(a, b)], b]
        else:  # mid, side
            mids = [(m << 1) | (s & 1) for m, s in zip(a, b)]
            out = [[(m + s) >> 1 for m, s in zip(mids, b)], [(m - s) >> 1 for m, s in zip(mids, b)]]
    else:
        raise _Bad(f"reserved channel assignment {assignment}")
    bits.align()
    bits.read(16)  # frame CRC-16
    return out


def read_flac(path, owner="read_flac"):
    """(waveform (channels, samples) float32 in [-1, 1), sample_rate) of a FLAC file (native
    FLAC stream, 4 to 32 bits per sample); ValueError naming the file when it is not one."""
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None
    try:
        if data[:4] != b"fLaC":
            raise _Bad("no 'fLaC' marker")
        pos, info, last = 4, None, False
        while not last:
            if pos + 4 > len(data):
                raise _Bad("the metadata blocks run past the end")
            last, kind = bool(data[pos] & 0x80), data[pos] & 0x7F
            length = int.from_bytes(data[pos + 1:pos + 4], "big")
            if pos + 4 + length > len(data):
                raise _Bad(f"a metadata block of {length} bytes runs past the end")
            if kind == 0:
                if length < 34:
                    raise _Bad(f"STREAMINFO of {length} bytes")
                info = int.from_bytes(data[pos + 14:pos + 22], "big")
            elif info is None:
                raise _Bad("the first metadata block is not STREAMINFO")
            pos += 4 + length
        if info is None:
            raise _Bad("no STREAMINFO block")
        rate, channels, bps, total = info >> 44, ((info >> 41) & 7) + 1, ((info >> 36) & 31) + 1, info & (2 ** 36 - 1)
        if rate == 0 or bps < 4:
            raise _Bad(f"STREAMINFO says {rate} Hz, {bps} bits per sample")
        bits = _Bits(data[pos:])
        # silence compresses to ~12 bytes per 4096 samples; a forged stream of tiny frames must not
        # make the decoder build more than that ratio allows
        cap = 1024 * len(data) + 65536
        chans, got = [[] for _ in range(channels)], 0
        while got < (total or cap):
            frame = _frame(bits, rate, channels, bps)
            if frame is None:
                break
            got += len(frame[0])
            if got > cap:
                raise _Bad(f"the frames hold more than {cap} samples")
            limit = 1 << (bps - 1)
            for c, s in zip(chans, frame):
                if s and (max(s) >= limit or min(s) < -limit):
                    raise _Bad(f"a decoded sample lies outside the {bps}-bit range")
                c.append(np.array(s, np.int64))
        chans = [np.concatenate(c) if c else np.zeros(0, np.int64) for c in chans]
        if total and total < len(chans[0]):
            chans = [c[:total] for c in chans]
    except _Bad as e:
        raise ValueError(f"{owner}: '{path}' is not a supported FLAC file: {e}") from None
    x = np.stack(chans).astype(np.float64) / float(1 << (bps - 1))
    return x.astype(np.float32), rate
