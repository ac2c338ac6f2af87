"""Feeds random, mostly malformed calls to every registered op. Run by test_fuzz.py in a
subprocess, so a crash shows up as a failed test instead of killing pytest.

Usage: python fuzz_ops.py SEED NUM_CALLS. Prints 'ok <calls> <accepted>' and exits 0 when every
call either succeeded or raised TypeError/ValueError/IndexError/NotImplementedError/OverflowError
(or MemoryError for a size it cannot allocate). Values include extreme integers (+-2**31, +-2**63,
beyond int64) as attributes, scalars and tensor elements, and shapes whose size overflows."""
import os
import random
import sys

import numpy as np

# Extreme sizes make some calls ask for tens of GB (ops.zeros(2**33)): a clean MemoryError is the
# right answer, but an address-space cap must make the allocation fail rather than let the kernel
# touch it on a shared machine. ASan reserves terabytes of address space, so under it the cap is
# its allocator's (scripts/test_sanitize: max_allocation_size_mb, allocator_may_return_null).
MEMORY_CAP = 4 << 30
if "ASAN_OPTIONS" not in os.environ:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

import mycel  # noqa: E402
from mycel import _mycel, ops  # noqa: E402
import mycel.communication  # noqa: E402

mycel.communication.init()  # the collectives need the communicator (here a world of one)

TRACE = bool(os.environ.get("MYCEL_FUZZ_TRACE"))  # print each call first: finds a crashing one
ALLOWED = (TypeError, ValueError, IndexError, NotImplementedError)
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]


# Integers at the edges of the sizes and types the core computes with: where user values meet
# sizes (shapes, windows, paddings, axes) or integer kernels (INT_MIN / -1, shifts, abs).
EXTREME_INTS = [2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32, 2**63 - 1, -2**63, 2**63, 2**64,
                -2**64, 2**62, 2**40, -2**40, 10**30, -10**30]


def extreme_int(r):
    return r.choice(EXTREME_INTS) + r.choice([0, 0, 0, -1, 1])


def huge_shape(r):
    """A shape whose element count or byte size overflows, or with a negative dimension."""
    dims = [r.choice([1, 2, 3]) for _ in range(r.randint(0, 3))]
    dims.insert(r.randint(0, len(dims)), r.choice([2**31, 2**32 + 1, 2**62, 2**63 - 1, -1, -2**63]))
    if r.random() < 0.5:
        dims.append(r.choice([2**31 - 1, 2**33, 2**62]))
    return tuple(dims)


def rand_shape(r):
    return tuple(r.choice([0, 1, 1, 2, 3, 4, 5]) for _ in range(r.choice([0, 1, 1, 2, 2, 3, 4])))


def rand_tensor(r):
    dt = r.choice(DTYPES + ["bfloat16"])
    shape = rand_shape(r)
    rng = np.random.default_rng(r.randrange(1 << 30))
    if dt in DTYPES and dt not in ("bool", "float16", "float32", "float64") and r.random() < 0.3:
        # the integer type's own extremes (and -1, 0): division overflow, abs/neg of the minimum
        info = np.iinfo(dt)
        return mycel.Tensor(rng.choice(np.array([info.min, info.max, -1 if info.min else 0, 0, 1],
                                                dtype=dt), shape))
    a = rng.standard_normal(shape) * r.choice([1, 3, 100])
    if dt == "bfloat16":
        return mycel.Tensor(a.astype(np.float32), dtype=mycel.bfloat16)
    return mycel.Tensor(a.astype(dt))


def rand_value(r):
    kind = r.randrange(12)
    if kind == 0:
        return r.randint(-4, 6)
    if kind == 1:
        return r.choice([0.0, -1.5, 0.5, 2.0, float("nan"), float("inf"), 1e300])
    if kind == 2:
        return tuple(r.randint(-3, 5) for _ in range(r.randint(0, 5)))
    if kind == 3:
        return r.choice(["same", "valid", "pad", "mean", "sum", "none", "tanh", "", "bogus"])
    if kind == 4:
        return r.choice([True, False, None])
    if kind == 5:
        return r.choice([mycel.float32, mycel.int32, mycel.bool_, mycel.float64])
    if kind == 6:
        return [r.randint(-2, 3), 1.5, "x"]
    if kind == 7:
        return object()
    if kind == 8:
        return r.randint(-(1 << 40), 1 << 40)
    if kind == 9:
        return extreme_int(r)
    if kind == 10:
        return huge_shape(r)
    return rand_tensor(r)


def plausible_attr(r, kind):
    if r.random() < 0.15 and kind in ("int", "tuple of int"):  # right type, extreme value
        if kind == "int":
            return extreme_int(r)
        return huge_shape(r) if r.random() < 0.5 else tuple(
            extreme_int(r) if r.random() < 0.5 else r.randint(-2, 4) for _ in range(r.randint(1, 4)))
    if kind == "int":
        return r.randint(-3, 4)
    if kind == "float":
        return r.choice([0.0, 0.5, 1.0, -1.0, 2.0])
    if kind == "bool":
        return r.random() < 0.5
    if kind == "tuple of int":
        return tuple(r.randint(-2, 4) for _ in range(r.randint(0, 4)))
    if kind == "tuple of float":
        return tuple(r.random() for _ in range(r.randint(0, 3)))
    if kind == "dtype":
        return r.choice([mycel.float32, mycel.int64, mycel.float16])
    return r.choice(["same", "valid", "pad", "mean", "sum", "none", "tanh", "constant", "reflect"])


def main(seed, n):
    r = random.Random(seed)
    names = sorted(_mycel.op_handles)
    accepted = 0
    for i in range(n):
        name = r.choice(names)
        h = _mycel.op_handles[name]
        fn = getattr(ops, name)
        n_in = len(h.inputs)
        args = []
        for (_, optional, variadic) in h.inputs:
            if variadic:
                args.append([rand_tensor(r) for _ in range(r.randint(0, 3))])
            elif optional and r.random() < 0.3:
                args.append(None)
            else:
                args.append(rand_tensor(r) if r.random() < 0.85 else rand_value(r))
        if r.random() < 0.15 and args:  # wrong arity
            args = args[:-1] if r.random() < 0.5 else args + [rand_tensor(r)]
        kwargs = {}
        for (aname, akind, _default, has_default) in h.attrs:
            if r.random() < (0.3 if has_default else 0.9):
                kwargs[aname] = plausible_attr(r, akind) if r.random() < 0.7 else rand_value(r)
        if r.random() < 0.05:
            kwargs["no_such_attr"] = 1
        if TRACE:
            print(f"call {i}: ops.{name}(*{args!r}, **{kwargs!r})", flush=True)
        try:
            out = fn(*args, **kwargs)
            accepted += 1
            for t in out if isinstance(out, tuple) else (out,):
                t.asnumpy()
        except ALLOWED:
            pass
        except MemoryError as e:
            if TRACE:
                print(f"call {i}: MemoryError: {e}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"call {i}: ops.{name}(*{args!r}, **{kwargs!r}) raised {type(e).__name__}: {e}")
            sys.exit(3)
    print(f"ok {n} {accepted}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
