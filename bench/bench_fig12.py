"""The MindSpore paper's Fig. 12, predicted by the cost model: ResNet-50 on 8 devices with its
classifier widened from 1K to 1,024K classes, data parallel against the auto-parallel search
(predicted time per step and memory per device; data parallel stops fitting past a width). No
rank runs: the cluster is docs/topologies/fig12_8dev.json. Writes docs/parallel_fig12.md (the
table) and docs/parallel_fig12.png (the plot, drawn with Pillow, a test-only package). Run:

    .venv/bin/python bench/bench_fig12.py [--batch 256] [--topology FILE]"""
import argparse
import math
import os
import tempfile

from mycel.parallel.search import load_topology, simulate
from mycel.parallel.zoo import resnet50

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def atomic_write(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp_")
    with os.fdopen(fd, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.replace(tmp, path)


def measure(batch, topology):
    rows = []
    for k in range(11):
        classes = 1024 * 2 ** k
        m = resnet50(batch=batch, num_classes=classes)
        dp = simulate(m, 8, topology, search_mode="data_parallel")
        auto = simulate(m, 8, topology, search_mode="dynamic_programming")
        fc = next(o for o in auto.ops if o["name"] == "fc")
        rows.append({"classes": classes, "dp": dp, "auto": auto, "fc": fc["strategy"]})
        print(f"{classes // 1024:>5}K  data parallel {dp.step_time * 1e3:9.2f} ms {dp.memory / 2**30:6.2f} GiB"
              f"{'' if dp.fits else ' (out of memory)':<17}  auto {auto.step_time * 1e3:8.2f} ms "
              f"{auto.memory / 2**30:6.2f} GiB  fc {fc['strategy']}")
    return rows


def table(rows, limit, topo_name, batch):
    lines = [f"ResNet-50, global batch {batch}, 8 devices ({topo_name}), memory limit "
             f"{limit / 2**30:.0f} GiB per device; predicted by the cost model "
             "(`bench/bench_fig12.py`).", "",
             "| classes | data parallel step (ms) | data parallel memory (GiB) | auto-parallel step (ms) "
             "| auto-parallel memory (GiB) | speed-up | classifier strategy (auto) |",
             "|---:|---:|---:|---:|---:|---:|:---|"]
    for r in rows:
        dp, auto = r["dp"], r["auto"]
        dp_t = f"{dp.step_time * 1e3:.2f}" + ("" if dp.fits else " (OOM)")
        lines.append(f"| {r['classes'] // 1024}K | {dp_t} | {dp.memory / 2**30:.2f} | {auto.step_time * 1e3:.2f} "
                     f"| {auto.memory / 2**30:.2f} | {dp.step_time / auto.step_time:.2f}x | `{r['fc']}` |")
    return "\n".join(lines) + "\n"


def plot(rows, limit, path):
    from PIL import Image, ImageDraw
    W, H, pad = 1000, 420, 60
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    xs = [math.log2(r["classes"] // 1024) for r in rows]
    panels = [("predicted time per step (ms, log scale)", lambda r, k: math.log10(r[k].step_time * 1e3), True),
              ("memory per device (GiB)", lambda r, k: r[k].memory / 2**30, False)]
    colors = {"dp": (200, 60, 40), "auto": (40, 90, 200)}
    for p, (title, f, log) in enumerate(panels):
        x0, x1, y0, y1 = p * W // 2 + pad, (p + 1) * W // 2 - 20, 40, H - pad
        vals = [f(r, k) for r in rows for k in ("dp", "auto")]
        if not log:
            vals.append(limit / 2**30)
        lo, hi = (min(vals), max(vals)) if log else (0.0, max(vals) * 1.1)
        if log:
            lo, hi = math.floor(lo), math.ceil(hi)
        sx = lambda x: x0 + (x1 - x0) * x / max(xs[-1], 1)
        sy = lambda y: y1 - (y1 - y0) * (y - lo) / (hi - lo or 1)
        d.rectangle([x0, y0, x1, y1], outline="black")
        d.text((x0, 15), title, fill="black")
        for x, r in zip(xs, rows):
            d.line([sx(x), y1, sx(x), y1 + 4], fill="black")
            d.text((sx(x) - 12, y1 + 8), f"{r['classes'] // 1024}K", fill="black")
        ticks = range(int(lo), int(hi) + 1) if log else [hi * i / 4 for i in range(5)]
        for t in ticks:
            d.line([x0 - 4, sy(t), x0, sy(t)], fill="black")
            d.text((x0 - 50, sy(t) - 6), f"{10 ** t:g}" if log else f"{t:.1f}", fill="black")
        d.text(((x0 + x1) // 2 - 40, H - 25), "classifier classes", fill="black")
        if not log:
            d.line([x0, sy(limit / 2**30), x1, sy(limit / 2**30)], fill=(120, 120, 120), width=1)
            d.text((x0 + 5, sy(limit / 2**30) - 14), "memory limit", fill=(120, 120, 120))
        for k in ("dp", "auto"):
            pts = [(sx(x), sy(f(r, k))) for x, r in zip(xs, rows)]
            d.line(pts, fill=colors[k], width=2)
            for (px, py), r in zip(pts, rows):
                if k == "dp" and not r["dp"].fits:
                    d.line([px - 5, py - 5, px + 5, py + 5], fill=colors[k], width=2)
                    d.line([px - 5, py + 5, px + 5, py - 5], fill=colors[k], width=2)
                else:
                    d.ellipse([px - 3, py - 3, px + 3, py + 3], fill=colors[k])
        d.text((x0 + 10, y0 + 8), "data parallel (x: out of memory)", fill=colors["dp"])
        d.text((x0 + 10, y0 + 22), "auto parallel (dynamic programming)", fill=colors["auto"])
    import io
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    atomic_write(path, buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--topology", default=os.path.join(ROOT, "docs", "topologies", "fig12_8dev.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    args = ap.parse_args()
    topo = load_topology(args.topology)
    rows = measure(args.batch, topo)
    limit = topo["memory_per_device_gib"] * 2**30
    atomic_write(os.path.join(args.out, "parallel_fig12.md"),
                 "# Fig. 12: ResNet-50 with a wide classifier\n\n" +
                 table(rows, limit, os.path.basename(args.topology), args.batch) +
                 "\n![Fig. 12](parallel_fig12.png)\n")
    plot(rows, limit, os.path.join(args.out, "parallel_fig12.png"))
    print(f"wrote {args.out}/parallel_fig12.md and parallel_fig12.png")


if __name__ == "__main__":
    main()
