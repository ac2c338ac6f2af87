"""CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) in plain Python: an independent
reference for the checksums the C++ code writes into MindRecord and MINDIR files, used by tests
that check them and by fuzzers that re-checksum mutated files so they reach the parsers."""

def _table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c(data):
    """The CRC-32C of a bytes-like object."""
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
