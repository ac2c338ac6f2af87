"""SVG drawings for the dashboard: a line chart of (step, value) points and a histogram's bars,
sized and labelled on the server so the page needs no JavaScript."""
import html
import math

W, H, PAD = 360, 200, 40


def _fmt(v):
    return f"{v:.4g}"


def _scale(lo, hi, a, b):
    if hi == lo:
        return lambda v: (a + b) / 2
    return lambda v: a + (v - lo) * (b - a) / (hi - lo)


def line_chart_svg(points):
    """A polyline of [(step, value)] with min/max labels on both axes; non-finite values skipped."""
    pts = [(s, v) for s, v in points if math.isfinite(v)]
    if not pts:
        return "<svg width='360' height='40'><text x='4' y='20'>no finite values</text></svg>"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    sx, sy = _scale(min(xs), max(xs), PAD, W - 10), _scale(min(ys), max(ys), H - PAD / 2, 10)
    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    return (f"<svg width='{W}' height='{H}' class='scalar'>"
            f"<rect width='{W}' height='{H}' fill='#fafafa'/>"
            f"<polyline fill='none' stroke='#1565c0' stroke-width='1.5' points='{line}'/>"
            f"<text x='2' y='14' font-size='10'>{html.escape(_fmt(max(ys)))}</text>"
            f"<text x='2' y='{H - PAD / 2}' font-size='10'>{html.escape(_fmt(min(ys)))}</text>"
            f"<text x='{PAD}' y='{H - 4}' font-size='10'>step {min(xs)}</text>"
            f"<text x='{W - 70}' y='{H - 4}' font-size='10'>step {max(xs)}</text></svg>")


def histogram_svg(h):
    """Bars of one histogram value dict (bucket_limit, bucket, min): widths follow the edges."""
    edges = [h["min"]] + list(h["bucket_limit"])
    counts = list(h["bucket"])
    if not counts:
        return "<svg width='360' height='40'><text x='4' y='20'>empty</text></svg>"
    sx = _scale(edges[0], edges[-1], PAD, W - 10)
    top = max(counts) or 1
    bars = []
    for k, c in enumerate(counts):
        x0, x1 = sx(edges[k]), sx(edges[k + 1])
        bh = (H - PAD) * c / top
        bars.append(f"<rect x='{x0:.1f}' y='{H - PAD / 2 - bh:.1f}' width='{max(x1 - x0, 1):.1f}' "
                    f"height='{bh:.1f}' fill='#ef6c00'/>")
    return (f"<svg width='{W}' height='{H}' class='histogram'>"
            f"<rect width='{W}' height='{H}' fill='#fafafa'/>"
            + "".join(bars)
            + f"<text x='{PAD}' y='{H - 4}' font-size='10'>{html.escape(_fmt(edges[0]))}</text>"
            f"<text x='{W - 60}' y='{H - 4}' font-size='10'>"
            f"{html.escape(_fmt(edges[-1]))}</text></svg>")
