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
