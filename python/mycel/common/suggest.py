""""Did you mean ...?" for misspelt names in error messages (keywords, attributes, settings):
difflib's closest match, case-insensitive; the same wording as the C++ side (core/suggest.h)."""
import difflib


def closest_name(given, candidates):
    """The candidate closest to `given`, or None when none is close (difflib ratio < 0.6)."""
    candidates = [c for c in candidates if isinstance(c, str)]
    by_lower = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    match = difflib.get_close_matches(given.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


def did_you_mean(given, candidates):
    """"; did you mean 'x'?" for the closest candidate, else "; expected one of: a, b, c" (short
    lists only: "" when there are no candidates or more than 12)."""
    candidates = list(candidates)
    best = closest_name(given, candidates)
    if best is not None:
        return f"; did you mean '{best}'?"
    if not candidates or len(candidates) > 12:
        return ""
    return "; expected one of: " + ", ".join(candidates)


class MissingAttributeError(AttributeError):
    """AttributeError whose "did you mean" is worked out when the message is read, not when it is
    raised: getattr(module, name, default) and hasattr never read it, so probing stays fast
    (difflib over every op name takes about a millisecond)."""

    def __init__(self, message, given, candidates):
        super().__init__(message)
        self._given, self._candidates = given, candidates

    # tracebacks show it as the AttributeError it is ("AttributeError: module 'mycel.ops' ...")
    __module__, __qualname__ = "builtins", "AttributeError"

    def __str__(self):
        hint = "" if self._given.startswith("__") else did_you_mean(self._given, self._candidates())
        return self.args[0] + hint


def module_getattr(module_name, namespace):
    """A module's __getattr__ (called only for names it lacks) raising MissingAttributeError with
    the closest public name of `namespace` (the module's globals())."""
    def __getattr__(name):
        raise MissingAttributeError(f"module '{module_name}' has no attribute '{name}'", name,
                                    lambda: [n for n in namespace if not n.startswith("_")])
    return __getattr__
