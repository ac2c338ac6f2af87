"""What both framework workers of the harness share: the workloads (shapes, batch, unit), the
optimizer settings, the Fashion-MNIST preprocessing for the end-to-end row, and the JSON line a
worker prints. Imports no framework: each worker imports only its own."""
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LR, MOMENTUM = 0.01, 0.9
CHECK_STEPS = 3  # losses of the first steps from the shared weights, compared across frameworks

# name: (input shape without batch, batch, unit)
STEPS = {
    "lenet5": ((1, 32, 32), 64, "images/s"),
    "mlp": ((784,), 128, "samples/s"),
    "resnet18": ((3, 32, 32), 32, "images/s"),
    "transformer": ((128, 128), 16, "samples/s"),
}
# bf16 O2 training rows (`--only` names): the float32 workload of the same name, Mycel with
# amp level O2 (bfloat16 compute, float32 master weights) against PyTorch float32 eager and
# PyTorch autocast bfloat16.
BF16_STEPS = {f"{name}_bf16": name for name in ("lenet5", "mlp", "resnet18", "transformer")}
# Agreement of the first losses in bfloat16 (8-bit mantissa: ~0.4% per rounding, accumulated over
# the layers and 3 steps): relative to the loss.
BF16_LOSS_RTOL = 3e-2
# Batch-1 inference (eval mode, random batch-norm statistics so that folding them matters):
# name: (input shape with the batch, model)
INFER = {
    "lenet5_b1": ((1, 1, 32, 32), "lenet5"),
    "resnet18_cifar_b1": ((1, 3, 32, 32), "resnet18_cifar"),
    "resnet18_b1": ((1, 3, 224, 224), "resnet18"),
    "mobilenetv2_b1": ((1, 3, 224, 224), "mobilenetv2"),
}
INFER_RTOL = 1e-3  # outputs must agree within this fraction of the largest |output| (float32)
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_BATCH = 64


def report(result):
    """The worker's result: one JSON line on stdout, last (the parent reads the last line)."""
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()


def timing(times):
    """Median and spread of step times (seconds)."""
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "n": len(times)}


def infer_loop(forward, warmup, iters, budget_s=3.0):
    """Per-call latencies (seconds) of forward() after `warmup` calls: `iters` calls, or fewer
    (never under 10) when they would pass `budget_s`, so that a slow model on a loaded machine
    stays bounded."""
    import time
    for _ in range(warmup):
        forward()
    times, start = [], time.perf_counter()
    while len(times) < iters and (len(times) < 10 or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        forward()
        times.append(time.perf_counter() - t)
    return times


def fashion_arrays(limit=None):
    """Fashion-MNIST train images as the Mycel pipeline makes them (resize 28->32 bilinear,
    /255, normalize, CHW) and labels, in memory: the PyTorch peer's data. Resize is done with
    PIL as the Mycel pipeline's Resize does, once, before timing."""
    import gzip
    import numpy as np
    from PIL import Image
    with gzip.open(os.path.join(FASHION_DIR, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION_DIR, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    if limit:
        images, labels = images[:limit], labels[:limit]
    out = np.empty((len(images), 1, 32, 32), np.float32)
    for i, im in enumerate(images):
        r = np.asarray(Image.fromarray(im).resize((32, 32), Image.BILINEAR), np.float32)
        out[i, 0] = (r / 255.0 - 0.2860) / 0.3530
    return out, labels
