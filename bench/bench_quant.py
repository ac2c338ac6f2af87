"""int8 accuracy vs float32 on Fashion-MNIST LeNet5: train float32, then post-training
quantization (per-channel weights; min-max, percentile and KL calibration; with and without bias
correction) and quantization-aware training (fine-tuning the fake-quantized net). Simulated
int8 (fake quant in float32): this measures accuracy, not int8 kernel speed.

    .venv/bin/python bench/bench_quant.py [--epochs 2] [--qat-epochs 1]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.lite import quant  # noqa: E402
from lenet5 import LeNet5, build_model, create_dataset  # noqa: E402


def accuracy(net):
    m = mycel.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc"})
    return m.eval(create_dataset("test", shuffle=False))["acc"]


def copy_of(net):
    q = LeNet5()
    for (_, a), (_, b) in zip(q.parameters_and_names(), net.parameters_and_names()):
        a.set_data(Tensor(b.asnumpy()))
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--qat-epochs", type=int, default=1)
    a = ap.parse_args()
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = LeNet5()
    t = time.time()
    build_model(net, nn.Momentum(net.trainable_params(), 0.01, 0.9)).train(a.epochs, create_dataset("train"))
    print(f"float32 training: {a.epochs} epochs in {time.time() - t:.0f} s")
    fp32 = accuracy(net)
    calib = [d["image"] for d in create_dataset("train", num_samples=2048).create_dict_iterator()]
    print("| variant | accuracy | drop vs fp32 (points) |\n|---|---|---|")
    print(f"| float32 | {fp32:.4f} | - |")
    ptq = {}
    for method in ("minmax", "percentile", "kl"):
        for bc in (False, True):
            q = quant.quantize(copy_of(net), calib, method=method, bias_correction=bc)
            acc = accuracy(q)
            ptq[(method, bc)] = (acc, q)
            print(f"| PTQ int8 {method}{' + bias correction' if bc else ''} | {acc:.4f} | {100 * (fp32 - acc):.2f} |",
                  flush=True)
    q = quant.quantize(copy_of(net), calib, method="minmax", bias_correction=True)
    build_model(q, nn.Momentum(q.trainable_params(), 0.002, 0.9)).train(a.qat_epochs, create_dataset("train"))
    acc = accuracy(q)
    print(f"| QAT int8 (min-max ranges, {a.qat_epochs} epoch fine-tune) | {acc:.4f} | {100 * (fp32 - acc):.2f} |")


if __name__ == "__main__":
    main()
