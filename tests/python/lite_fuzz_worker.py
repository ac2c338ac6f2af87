"""Fuzzes MINDIR loading: mutates a valid file N times (byte flips, truncation, splices, header
fields and FlatBuffers offsets set to extremes) and loads each mutant in a forked child with a
time limit. Prints 'crashes K hangs H accepted A rejected R'. Usage: lite_fuzz_worker.py file N seed

Each mutant whose checksums no longer match is re-checksummed with probability 1/2, so the
FlatBuffers verifier and the graph checks see hostile tables too, not only the CRC check."""
import os
import signal
import struct
import sys

import numpy as np

from crc32c_ref import crc32c


def rechecksum(b):
    goff, gsize, doff, dsize = struct.unpack_from("<QQQQ", b, 16)
    if goff + gsize <= len(b) and doff + dsize <= len(b):
        struct.pack_into("<II", b, 48, crc32c(bytes(b[goff:goff + gsize])), crc32c(bytes(b[doff:doff + dsize])))
    return b


def mutate(data, rng):
    b = bytearray(data)
    kind = rng.integers(0, 5)
    if kind == 0:
        for i in rng.integers(0, len(b), rng.integers(1, 8)):
            b[i] = int(rng.integers(0, 256))
    elif kind == 1:
        b = b[:int(rng.integers(0, len(b)))]
    elif kind == 2:  # a 4-byte little-endian field (FlatBuffers offsets, sizes) set to an extreme
        i = int(rng.integers(64, max(65, len(b) - 4)))
        struct.pack_into("<I", b, i, int(rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, len(b)])))
    elif kind == 3:  # a header field set to an extreme
        i = int(rng.choice([8, 12, 16, 24, 32, 40]))
        fmt = "<I" if i < 16 else "<Q"
        struct.pack_into(fmt, b, i, int(rng.choice([0, 64, 1 << 31, (1 << 32) - 1, len(b), len(b) * 2])))
    else:  # splice a copy of a random region elsewhere
        i, j = sorted(rng.integers(64, len(b), 2))
        k = int(rng.integers(64, len(b)))
        b[k:k + (j - i)] = b[i:j]
    if kind != 3 and len(b) >= 64 and rng.random() < 0.5:
        b = rechecksum(b)
    return bytes(b)


def main():
    path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = open(path, "rb").read()
    rng = np.random.default_rng(seed)
    import mycel  # noqa: F401 - loaded once, before forking
    from mycel import Tensor, _mycel
    x = Tensor(np.zeros((1, 1, 32, 32), np.float32))
    crashes = hangs = accepted = rejected = 0
    for _ in range(n):
        m = mutate(data, rng)
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            try:
                s = _mycel.lite.Session.from_bytes(m)
                try:
                    s.run([x])
                except (ValueError, TypeError, RuntimeError):
                    pass
                os._exit(10)
            except (ValueError, TypeError, RuntimeError):
                os._exit(11)
            except BaseException:  # noqa: BLE001 - any other exception is a finding too
                os._exit(12)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            if os.WTERMSIG(status) == signal.SIGALRM:
                hangs += 1
            else:
                crashes += 1
            print("finding:", os.WTERMSIG(status), flush=True)
        elif os.WEXITSTATUS(status) == 10:
            accepted += 1
        elif os.WEXITSTATUS(status) == 11:
            rejected += 1
        else:
            crashes += 1
    print(f"crashes {crashes} hangs {hangs} accepted {accepted} rejected {rejected}")


if __name__ == "__main__":
    main()
