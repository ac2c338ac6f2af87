"""mycel.Symbol (MindSpore 2.3's symbolic dim): `Tensor(shape=[Symbol(...), 3], dtype=...)` in
Cell.set_inputs marks a dynamic dim, as None does, and states what sizes it may take: within
[min, max], of the form divisor * N + remainder (N >= 1), and, for a `unique` symbol, one size
for every dim that names it. Graph mode compiles such a dim as any dynamic dim (docs/
dynamic_shape.md); each call checks the given sizes against the symbols before it runs."""


def _int_arg(name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"Symbol: '{name}' must be an int, got {type(v).__name__} {v!r}")
    return v


class Symbol:
    """Symbol(max=0, min=1, divisor=1, remainder=0, unique=False): the sizes a dynamic dim may
    take. max <= min means no upper bound (MindSpore's: max counts only above min)."""

    _mycel_symbol = True  # how Tensor(shape=...) (bind_tensor.cc) tells a symbol from a size

    def __init__(self, max=0, min=1, divisor=1, remainder=0, unique=False, **kwargs):  # noqa: A002
        self.max = _int_arg("max", max)
        self.min = _int_arg("min", min)
        self.divisor = _int_arg("divisor", divisor)
        self.remainder = _int_arg("remainder", remainder)
        if not isinstance(unique, bool):
            raise TypeError(f"Symbol: 'unique' must be a bool, got {type(unique).__name__} {unique!r}")
        self.unique = unique
        if self.min <= 0:
            raise ValueError(f"Symbol: 'min' must be positive, got {self.min}")
        if self.divisor <= 0:
            raise ValueError(f"Symbol: 'divisor' must be positive, got {self.divisor}")
        if not 0 <= self.remainder < self.divisor:
            raise ValueError(f"Symbol: 'remainder' must be in [0, divisor) = [0, {self.divisor}), "
                             f"got {self.remainder}")
        self._kwargs = dict(kwargs)

    def accepts(self, size):
        """Whether a dim of this size fits: min <= size (<= max), size = divisor * N + remainder
        with N >= 1."""
        if size < self.min or (self.max > self.min and size > self.max):
            return False
        n, r = divmod(size - self.remainder, self.divisor)
        return r == 0 and n >= 1

    def __repr__(self):
        return (f"Symbol(max={self.max}, min={self.min}, divisor={self.divisor}, "
                f"remainder={self.remainder}, unique={self.unique})")


def check_symbols(spec, args):
    """Checks call arguments against set_inputs's spec tensors that carry symbols: every
    symbolic dim's size must fit its Symbol, and the dims of one unique Symbol must agree.
    ValueError naming the input, the dim, the size and the symbol otherwise."""
    seen = {}  # id(unique symbol) -> (size, where it was first seen)
    for i, (s, a) in enumerate(zip(spec, args)):
        dims = getattr(s, "_symbolic_shape", None)
        if dims is None or not hasattr(a, "shape"):
            continue
        shape = tuple(a.shape)
        if len(shape) != len(dims):
            continue  # the rank mismatch is graph mode's own error
        for k, (d, n) in enumerate(zip(dims, shape)):
            if not isinstance(d, Symbol):
                continue
            where = f"input {i} dim {k}"
            if not d.accepts(n):
                raise ValueError(f"set_inputs: {where} has size {n}, which {d!r} does not allow "
                                 f"(min <= size <= max when max > min, size = divisor * N + "
                                 f"remainder with N >= 1)")
            if d.unique:
                first = seen.setdefault(id(d), (n, where))
                if first[0] != n:
                    raise ValueError(f"set_inputs: {where} has size {n} but {first[1]} has size "
                                     f"{first[0]}, and they share the unique {d!r}")


def has_symbols(spec):
    return spec is not None and any(getattr(s, "_symbolic_shape", None) is not None for s in spec)
