"""int8 accuracy vs float32 on Fashion-MNIST LeNet5: train float32, then post-training
quantization (per-channel weights; min-max, percentile and KL calibration; with and without bias
correction) and quantization-aware training (fine-tuning the fake-quantized net). Each variant's
accuracy is measured twice: simulated (fake quant in float32) and real int8 (the net exported as
an int8 MINDIR file and run by the lite runtime's int8 kernels over the test set).

A second table does the same for a small ResNet (BasicBlocks [1, 1, 1, 1], widths 8-64, one
input channel) trained on Fashion-MNIST: residual blocks, batch norms folded into int8 convs.

    .venv/bin/python bench/bench_quant.py [--epochs 2] [--qat-epochs 1] [--resnet-epochs 2]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.lite import quant  # noqa: E402
from lenet5 import LeNet5, build_model, create_dataset  # noqa: E402
from models.resnet import BasicBlock, ResNet  # noqa: E402


def accuracy(net):
    m = mycel.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc"})
    return m.eval(create_dataset("test", shuffle=False))["acc"]


def lite_int8_accuracy(net, exact=True, pools=True):
    """Accuracy of net's int8 export run by the lite runtime (int8 kernels) on the test set.
    exact=False: residual sums rounded to the next layer's scale (the fused form);
    pools=False: average poolings left float32 (the export before their scales were recorded)."""
    import mycel.lite
    from mycel.lite import int8
    saved_exact, saved_pools = int8.EXACT_RESIDUAL, getattr(net, "_quant_pools", None)
    int8.EXACT_RESIDUAL = exact
    if not pools:
        object.__setattr__(net, "_quant_pools", [])
    try:
        return _lite_accuracy(net)
    finally:
        int8.EXACT_RESIDUAL = saved_exact
        object.__setattr__(net, "_quant_pools", saved_pools)


def _lite_accuracy(net):
    import mycel.lite
    with tempfile.TemporaryDirectory() as d:
        example = Tensor(np.zeros((1, 1, 32, 32), np.float32))
        path = mycel.export(net, example, file_name=os.path.join(d, "q"), file_format="MINDIR")
        s = mycel.lite.Session.from_file(path)
        right = total = 0
        for batch in create_dataset("test", shuffle=False).create_dict_iterator():
            logits = s.run([batch["image"]])[0].asnumpy()
            right += int((logits.argmax(1) == batch["label"].asnumpy()).sum())
            total += logits.shape[0]
        return right / total


def lite_ms(net, runs=300):
    """Batch-1 latency of net's MINDIR export (its int8 form when net is quantized) in the lite
    runtime, one thread: median CPU ms per run over 3 rounds (process CPU time, the run's own cost
    on a loaded machine) and the median wall ms."""
    import mycel.lite
    with tempfile.TemporaryDirectory() as d:
        x = Tensor(np.random.default_rng(0).standard_normal((1, 1, 32, 32)).astype(np.float32))
        path = mycel.export(net, x, file_name=os.path.join(d, "m"), file_format="MINDIR")
        s = mycel.lite.Session.from_file(path, num_threads=1)
        for _ in range(20):
            s.run([x])
        cpu, wall = [], []
        for _ in range(3):
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(runs):
                s.run([x])
            cpu.append((time.process_time() - c0) / runs * 1e3)
            wall.append((time.perf_counter() - t0) / runs * 1e3)
        return float(np.median(cpu)), float(np.median(wall))


def speed_row(fp32_net, q_net):
    f, fw = lite_ms(fp32_net)
    q, qw = lite_ms(q_net)
    return (f"batch 1, lite runtime, one thread: float32 {f:.3f} ms CPU ({fw:.3f} wall), int8 {q:.3f} ms CPU "
            f"({qw:.3f} wall): int8 speed-up {f / q:.2f}x (CPU)")


def copy_of(net):
    q = LeNet5()
    for (_, a), (_, b) in zip(q.parameters_and_names(), net.parameters_and_names()):
        a.set_data(Tensor(b.asnumpy()))
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--qat-epochs", type=int, default=1)
    ap.add_argument("--resnet-epochs", type=int, default=2)
    ap.add_argument("--skip-lenet", action="store_true")
    a = ap.parse_args()
    if not a.skip_lenet:
        lenet(a)
    if a.resnet_epochs:
        resnet(a)


def small_resnet():
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, in_channels=1, widths=(8, 16, 32, 64))


def resnet(a):
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = small_resnet()
    t = time.time()
    build_model(net, nn.Momentum(net.trainable_params(), 0.01, 0.9)).train(a.resnet_epochs, create_dataset("train"))
    print(f"\nsmall ResNet float32 training: {a.resnet_epochs} epochs in {time.time() - t:.0f} s")
    fp32 = accuracy(net)
    calib = [d["image"] for d in create_dataset("train", num_samples=2048).create_dict_iterator()]
    print("| variant | weights | simulated accuracy | lite int8: residual rounded, pool fp32 | lite int8: exact "
          "residual, int8 pool | drop vs fp32 (points, exact) |")
    print("|---|---|---|---|---|---|")
    print(f"| float32 | fp32 | {fp32:.4f} | - | - | - |")

    def copy():
        q = small_resnet()
        for (_, x), (_, y) in zip(q.parameters_and_names(), net.parameters_and_names()):
            x.set_data(Tensor(y.asnumpy().copy()))
        q.set_train(False)
        return q

    def row(name, q):
        acc, old, real = accuracy(q), lite_int8_accuracy(q, exact=False, pools=False), lite_int8_accuracy(q)
        print(f"| {name} | {quant.WEIGHT_BITS}-bit | {acc:.4f} | {old:.4f} | {real:.4f} | {100 * (fp32 - real):.2f} |",
              flush=True)

    speed = None
    for method in ("minmax", "percentile"):
        q = copy()
        quant.quantize(q, calib, method=method, bias_correction=True)
        row(f"PTQ {method} + bias correction", q)
        speed = speed or speed_row(net, q)
    if a.qat_epochs:
        q = copy()
        quant.quantize(q, calib, method="minmax", bias_correction=True)
        build_model(q, nn.Momentum(q.trainable_params(), 0.002, 0.9)).train(a.qat_epochs, create_dataset("train"))
        row(f"QAT (min-max ranges, {a.qat_epochs} epoch fine-tune)", q)
    print(f"\nsmall ResNet {speed}", flush=True)


def lenet(a):
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = LeNet5()
    t = time.time()
    build_model(net, nn.Momentum(net.trainable_params(), 0.01, 0.9)).train(a.epochs, create_dataset("train"))
    print(f"float32 training: {a.epochs} epochs in {time.time() - t:.0f} s")
    fp32 = accuracy(net)
    calib = [d["image"] for d in create_dataset("train", num_samples=2048).create_dict_iterator()]
    print("| variant | weights | simulated accuracy | lite int8 accuracy | drop vs fp32 (points, lite) |")
    print("|---|---|---|---|---|")
    print(f"| float32 | fp32 | {fp32:.4f} | - | - |")

    def row(name, q, bits):
        acc, real = accuracy(q), lite_int8_accuracy(q)
        print(f"| {name} | {bits}-bit | {acc:.4f} | {real:.4f} | {100 * (fp32 - real):.2f} |", flush=True)

    speed = None
    for method in ("minmax", "percentile", "kl"):
        for bc in (False, True):
            q = quant.quantize(copy_of(net), calib, method=method, bias_correction=bc)
            row(f"PTQ {method}{' + bias correction' if bc else ''}", q, quant.WEIGHT_BITS)
            speed = speed or speed_row(net, q)
    q = quant.quantize(copy_of(net), calib, method="minmax", bias_correction=True, weight_bits=8)
    row("PTQ minmax + bias correction", q, 8)
    q = quant.quantize(copy_of(net), calib, method="minmax", bias_correction=True)
    build_model(q, nn.Momentum(q.trainable_params(), 0.002, 0.9)).train(a.qat_epochs, create_dataset("train"))
    row(f"QAT (min-max ranges, {a.qat_epochs} epoch fine-tune)", q, quant.WEIGHT_BITS)
    print(f"\nLeNet5 {speed}", flush=True)


if __name__ == "__main__":
    main()
