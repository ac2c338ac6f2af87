"""te schedules, compute_at: a producer computed inside a loop of its consumer, over only the region
that loop's iteration reads (bounds inferred from the index expressions); results equal numpy and
the unscheduled build, the region buffers are the inferred size, and bad attachments raise errors
naming the tensors and loops."""

import re

import numpy as np
import pytest

from mycel import te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


def region_buffers(src):
    """{producer name: element count} of the region buffers in generated source."""
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"_v\((\d+)\);  // (\S+), computed at", src)}


def blur(n, m):
    x = te.placeholder((n + 2, m + 2), "float32", "x")
    bx = te.compute((n + 2, m), lambda i, j: x[i, j] + x[i, j + 1] + x[i, j + 2], "bx")
    by = te.compute((n, m), lambda i, j: bx[i, j] + bx[i + 1, j] + bx[i + 2, j], "by")
    return x, bx, by


def blur_ref(xv):
    h = xv[:, :-2] + xv[:, 1:-1] + xv[:, 2:]
    return h[:-2] + h[1:-1] + h[2:]


@pytest.mark.parametrize("tile", [8, 7])  # 7 leaves a remainder tile of 40 rows
def test_blur_producer_at_row_tile(tile):
    n, m = 40, 33
    x, bx, by = blur(n, m)
    s = te.create_schedule(by)
    yo, yi = s[by].split(by.axis[0], tile)
    s[by].parallel(yo)
    s[bx].compute_at(s[by], yo)
    s[bx].vectorize(bx.axis[1])
    src = te.lower([x], [by], schedule=s)
    # a tile of `tile` output rows reads tile + 2 rows of bx: the buffer is per thread, that size
    assert region_buffers(src) == {"bx": (tile + 2) * m}
    assert src.index("computed at") > src.index("#pragma omp parallel for")
    xv = np.random.default_rng(0).standard_normal((n + 2, m + 2)).astype(np.float32)
    got = te.build([x], [by], schedule=s)(xv).asnumpy()
    np.testing.assert_allclose(got, blur_ref(xv), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, te.build([x], [by])(xv).asnumpy(), rtol=1e-6, atol=1e-6)


def test_blur_producer_at_inner_loop_is_one_stencil():
    # At the innermost loop, one output element reads a 3 x 1 column of bx.
    n, m = 12, 10
    x, bx, by = blur(n, m)
    s = te.create_schedule(by)
    s[bx].compute_at(s[by], by.axis[1])
    src = te.lower([x], [by], schedule=s)
    assert region_buffers(src) == {"bx": 3}
    xv = np.random.default_rng(1).standard_normal((n + 2, m + 2)).astype(np.float32)
    np.testing.assert_allclose(te.build([x], [by], schedule=s)(xv).asnumpy(), blur_ref(xv), rtol=1e-5, atol=1e-5)


def conv_with_pad(n, c, h, w, oc, k, p):
    x = te.placeholder((n, c, h, w), "float32", "x")
    f = te.placeholder((oc, c, k, k), "float32", "f")
    hp, wp = h + 2 * p, w + 2 * p
    pad = te.compute(
        (n, c, hp, wp),
        lambda b, ch, y, z: te.if_then_else(te.all_of(y >= p, y < h + p, z >= p, z < w + p), x[b, ch, y - p, z - p], 0.0),
        "pad")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    out = te.compute((n, oc, hp - k + 1, wp - k + 1),
                     lambda b, o, y, z: te.sum(pad[b, rc, y + ry, z + rx] * f[o, rc, ry, rx], axis=[rc, ry, rx]),
                     "conv")
    return x, f, pad, out


def conv_ref(xv, fv, p):
    n, c, h, w = xv.shape
    oc, _, k, _ = fv.shape
    xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = h + 2 * p - k + 1, w + 2 * p - k + 1
    out = np.zeros((n, oc, oh, ow))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("bchw,oc->bohw", xp[:, :, dy:dy + oh, dx:dx + ow], fv[:, :, dy, dx])
    return out


def test_padded_conv_pad_computed_per_image_and_per_channel():
    shape = (3, 4, 9, 8, 5, 3, 1)
    x, f, pad, out = conv_with_pad(*shape)
    rng = np.random.default_rng(2)
    xv = rng.standard_normal(shape[:4]).astype(np.float32)
    fv = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    ref = conv_ref(xv, fv, 1)
    plain = te.build([x, f], [out])(xv, fv).asnumpy()
    np.testing.assert_allclose(plain, ref, rtol=1e-4, atol=1e-4)

    # pad of one image, at the (parallel) batch loop: one buffer per thread of c * hp * wp
    s = te.create_schedule(out)
    b, o, y, z = out.axis
    rc, ry, rx = out.reduce_axis
    s[out].reorder(b, rc, ry, rx, o, y, z)
    s[out].parallel(b)
    s[pad].compute_at(s[out], b)
    src = te.lower([x, f], [out], schedule=s)
    assert region_buffers(src) == {"pad": 4 * 11 * 10}
    np.testing.assert_allclose(te.build([x, f], [out], schedule=s)(xv, fv).asnumpy(), ref, rtol=1e-4, atol=1e-4)

    # at the reduce loop over channels: one padded channel plane at a time
    s = te.create_schedule(out)
    s[out].reorder(b, rc, ry, rx, o, y, z)
    s[pad].compute_at(s[out], rc)
    src = te.lower([x, f], [out], schedule=s)
    assert region_buffers(src) == {"pad": 11 * 10}
    np.testing.assert_allclose(te.build([x, f], [out], schedule=s)(xv, fv).asnumpy(), ref, rtol=1e-4, atol=1e-4)


def test_reduction_producer_at_row_loop():
    # softmax: the row max and row sum (reductions) computed per row of the (parallel) output
    x = te.placeholder((33, 17), "float64", "x")
    k = te.reduce_axis((0, 17), "k")
    mx = te.compute((33,), lambda i: te.max(x[i, k], axis=k), "mx")
    e = te.compute((33, 17), lambda i, j: te.exp(x[i, j] - mx[i]), "e")
    k2 = te.reduce_axis((0, 17), "k2")
    tot = te.compute((33,), lambda i: te.sum(e[i, k2], axis=k2), "tot")
    y = te.compute((33, 17), lambda i, j: e[i, j] / tot[i], "y")
    s = te.create_schedule(y)
    s[y].parallel(y.axis[0])
    s[tot].compute_at(s[y], y.axis[0])
    src = te.lower([x], [y], schedule=s)
    assert region_buffers(src) == {"tot": 1}
    xv = np.random.default_rng(3).standard_normal((33, 17))
    ex = np.exp(xv - xv.max(1, keepdims=True))
    np.testing.assert_allclose(te.build([x], [y], schedule=s)(xv).asnumpy(), ex / ex.sum(1, keepdims=True),
                               rtol=1e-12, atol=1e-12)


def test_non_affine_and_disagreeing_reads_take_the_whole_dimension():
    x = te.placeholder((16, 16), "float32", "x")
    p = te.compute((16, 16), lambda i, j: x[i, j] * 2.0, "p")
    # p[i // 2, j] is not affine in i; p[j, i] and p[i, j] disagree on which loop fixes dim 0
    y = te.compute((16, 16), lambda i, j: p[i // 2, j] + p[j, i] + p[i, j], "y")
    s = te.create_schedule(y)
    s[p].compute_at(s[y], y.axis[0])
    src = te.lower([x], [y], schedule=s)
    assert region_buffers(src) == {"p": 16 * 16}
    xv = np.random.default_rng(4).standard_normal((16, 16)).astype(np.float32)
    q = 2 * xv
    ref = q[np.arange(16) // 2, :] + q.T + q
    np.testing.assert_allclose(te.build([x], [y], schedule=s)(xv).asnumpy(), ref, rtol=1e-6, atol=1e-6)


def test_producer_read_through_an_inlined_tensor_and_strided():
    # y reads p through the inlined q; a stride of 2 and the split: a tile of 4 rows reads 7 rows
    x = te.placeholder((20, 6), "float32", "x")
    p = te.compute((20, 6), lambda i, j: x[i, j] + 1.0, "p")
    q = te.compute((10, 6), lambda i, j: p[2 * i, j] * 3.0, "q")
    y = te.compute((8, 6), lambda i, j: q[i, j] - q[i + 2, j], "y")
    s = te.create_schedule(y)
    io, ii = s[y].split(y.axis[0], 4)
    s[p].compute_at(s[y], io)
    src = te.lower([x], [y], schedule=s)
    assert region_buffers(src) == {"p": 11 * 6}  # rows 2*(4t) .. 2*(4t+3+2)
    xv = np.random.default_rng(5).standard_normal((20, 6)).astype(np.float32)
    qv = (xv[0::2] + 1) * 3
    np.testing.assert_allclose(te.build([x], [y], schedule=s)(xv).asnumpy(), qv[:8] - qv[2:10], rtol=1e-6, atol=1e-6)


def test_compute_at_errors():
    n, m = 8, 8
    x, bx, by = blur(n, m)
    s = te.create_schedule(by)
    with pytest.raises(ValueError, match=r"'by' cannot be computed inside its own loops"):
        s[by].compute_at(s[by], by.axis[0])
    with pytest.raises(ValueError, match=r"compute_at: 'k' is not a loop of 'by'"):
        s[bx].compute_at(s[by], te.reduce_axis((0, 3), "k"))
    with pytest.raises(TypeError, match=r"compute_at takes the consumer's stage"):
        s[bx].compute_at(by, by.axis[0])

    s = te.create_schedule(by)
    s[bx].compute_at(s[by], by.axis[0])
    with pytest.raises(ValueError, match=r"'bx' is computed at 'by'.*its own axes stay unsplit"):
        s[bx].split(bx.axis[0], 2)
    with pytest.raises(ValueError, match=r"parallel: 'bx' is computed at 'by'"):
        s[bx].parallel(bx.axis[0])
    s[by].split(by.axis[0], 4)  # the attach loop is gone
    with pytest.raises(ValueError, match=r"'bx' is computed at loop 'i' of 'by', which is no longer one of its loops"):
        te.lower([x], [by], schedule=s)

    s = te.create_schedule(by)
    s[by].vectorize(by.axis[1])
    s[bx].compute_at(s[by], by.axis[1])
    with pytest.raises(ValueError, match=r"'bx' is computed at the vectorized loop"):
        te.lower([x], [by], schedule=s)

    # an output, and a producer with a second reader
    s = te.create_schedule([bx, by])
    s[bx].compute_at(s[by], by.axis[0])
    with pytest.raises(ValueError, match=r"'bx' is an output, so it is computed whole"):
        te.lower([x], [bx, by], schedule=s)
    z = te.compute((n, m), lambda i, j: bx[i, j] + by[i, j], "z")
    s = te.create_schedule(z)
    s[bx].compute_at(s[by], by.axis[0])
    s[z]
    with pytest.raises(ValueError, match=r"'bx' is computed at 'by' but 'z' reads it too"):
        te.lower([x], [z], schedule=s)

    # the consumer needs a stage of its own; levels chain but never form a cycle
    s = te.create_schedule(by)
    s[bx].compute_at(te.create_schedule(by)[by], by.axis[0])
    with pytest.raises(ValueError, match=r"'bx' is computed at 'by', which has no stage"):
        te.lower([x], [by], schedule=s)
    w = te.compute((n, m), lambda i, j: by[i, j] * 2.0, "w")
    s = te.create_schedule(w)
    s[bx].compute_at(s[by], by.axis[0])
    s[by].compute_at(s[bx], bx.axis[0])
    with pytest.raises(ValueError, match=r"a cycle"):
        te.lower([x], [w], schedule=s)


def test_build_refuses_a_schedule_passed_as_name():
    x, bx, by = blur(4, 4)
    with pytest.raises(TypeError, match=r"te.build: name must be a str, got Schedule \(pass a schedule as schedule=s\)"):
        te.build([x], [by], te.create_schedule(by))


def three_stage(n, m):
    """x -> a = exp(x) -> bx: 3-tap row sum of a -> by: 3-tap column sum of bx."""
    x = te.placeholder((n + 2, m + 2), "float32", "x")
    a = te.compute((n + 2, m + 2), lambda i, j: te.exp(x[i, j] * 0.5), "a")
    bx = te.compute((n + 2, m), lambda i, j: a[i, j] + a[i, j + 1] + a[i, j + 2], "bx")
    by = te.compute((n, m), lambda i, j: bx[i, j] + bx[i + 1, j] + bx[i + 2, j], "by")
    return x, a, bx, by


@pytest.mark.parametrize("tile", [8, 5])
def test_two_levels_producer_chain(tile):
    # by's row tiles (parallel); bx over the tile + 2 rows it reads; a, one row of it per row of bx
    n, m = 30, 21
    x, a, bx, by = three_stage(n, m)
    s = te.create_schedule(by)
    yo, yi = s[by].split(by.axis[0], tile)
    s[by].parallel(yo)
    s[bx].compute_at(s[by], yo)
    s[a].compute_at(s[bx], bx.axis[0])
    s[a].vectorize(a.axis[1])
    src = te.lower([x], [by], schedule=s)
    assert region_buffers(src) == {"bx": (tile + 2) * m, "a": m + 2}
    # both buffers are per thread (inside the parallel loop), a's loops inside bx's row loop
    par = src.index("#pragma omp parallel for")
    assert par < src.index("// bx, computed at") < src.index("// a, computed at")
    assert src.index("// bx over the region") < src.index("// a over the region")
    xv = np.random.default_rng(3).standard_normal((n + 2, m + 2)).astype(np.float32)
    got = te.build([x], [by], schedule=s)(xv).asnumpy()
    np.testing.assert_allclose(got, blur_ref(np.exp(xv * 0.5)), rtol=1e-5, atol=1e-5)


def test_two_levels_at_inner_loops_of_a_split_nest():
    # by tiled 4 x 8 with bx at the inner row loop ii (3 rows x 8 columns of bx for one row of a
    # tile), and a at bx's column loop (the 3 elements of a one element of bx reads)
    n, m = 13, 19
    x, a, bx, by = three_stage(n, m)
    s = te.create_schedule(by)
    io, ii = s[by].split(by.axis[0], 4)
    jo, ji = s[by].split(by.axis[1], 8)
    s[by].reorder(io, jo, ii, ji)
    s[bx].compute_at(s[by], ii)
    s[a].compute_at(s[bx], bx.axis[1])
    src = te.lower([x], [by], schedule=s)
    assert region_buffers(src) == {"bx": 3 * 8, "a": 3}
    xv = np.random.default_rng(4).standard_normal((n + 2, m + 2)).astype(np.float32)
    got = te.build([x], [by], schedule=s)(xv).asnumpy()
    np.testing.assert_allclose(got, blur_ref(np.exp(xv * 0.5)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, te.build([x], [by])(xv).asnumpy(), rtol=1e-5, atol=1e-6)


def test_second_level_reduction_and_errors():
    # a reduction (row sums of a) computed per row inside bx's loop, itself at by's tile
    n, m = 9, 6
    x = te.placeholder((n, m), "float32", "x")
    a = te.compute((n, m), lambda i, j: x[i, j] * x[i, j], "a")
    k = te.reduce_axis((0, m), "k")
    rs = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), "rs")
    out = te.compute((n, m), lambda i, j: x[i, j] / (rs[i] + 1.0), "out")
    s = te.create_schedule(out)
    io, ii = s[out].split(out.axis[0], 4)
    s[rs].compute_at(s[out], io)
    s[a].compute_at(s[rs], rs.axis[0])
    src = te.lower([x], [out], schedule=s)
    assert region_buffers(src) == {"rs": 4, "a": m}
    xv = np.random.default_rng(5).standard_normal((n, m)).astype(np.float32)
    np.testing.assert_allclose(te.build([x], [out], schedule=s)(xv).asnumpy(),
                               xv / ((xv * xv).sum(1, keepdims=True) + 1), rtol=1e-5)
    s2 = te.create_schedule(out)
    s2[rs].compute_at(s2[out], out.axis[0])
    s2[a].compute_at(s2[rs], k)  # a reduce axis of rs: not one of its loops at the second level
    with pytest.raises(ValueError, match=r"'a' is computed at 'k' of 'rs'.*attach to one of its axes"):
        te.lower([x], [out], schedule=s2)
