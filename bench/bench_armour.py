"""mycel.armour on LeNet5 / Fashion-MNIST: each attack's success rate and perturbation norms on
test images, accuracy under FGSM and PGD before and after adversarial training, and DP-SGD
(DPModel, per-sample clipping by vmap) accuracy and (eps, delta) from RDPMonitor, with its step
time against plain SGD. Images are in [0, 1] (padded 28 -> 32, not normalized) so attack budgets
are in pixel units: bounds (0, 1).

    .venv/bin/python bench/bench_armour.py [--epochs 1] [--n-attack 500] [--adv-epochs 1]
        [--n-black 50] [--dp-epochs 1] [--dp-sigma 1.1] [--dp-batch 256] [--dp-lr 0.05] [--parts attacks,advtrain,dp]

DP-SGD trains until --dp-epochs or until RDPMonitor's eps passes 3 (delta 1e-5), whichever is first.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
import mycel.dataset as ds  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.armour import (NES, AttackEvaluate, BasicIterativeMethod, BlackModel,  # noqa: E402
                          CarliniWagnerL2Attack, DeepFool, FastGradientSignMethod, GeneticAttack,
                          HopSkipJumpAttack, LeastLikelyClassMethod, MomentumIterativeMethod, PointWiseAttack,
                          ProjectedGradientDescent, SaltAndPepperNoiseAttack)
from mycel.armour.privacy.diff_privacy import DPModel, NoiseMechanismsFactory, RDPMonitor  # noqa: E402
from lenet5 import LeNet5  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def load(split):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(DATA, f"{prefix}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
    return np.pad(x.astype(np.float32) / 255.0, ((0, 0), (0, 0), (2, 2), (2, 2))), y


def predict(net, x, batch=500):
    return np.concatenate([net(Tensor(x[i:i + batch])).asnumpy() for i in range(0, len(x), batch)])


def accuracy(net, x, y):
    return float((predict(net, x).argmax(axis=1) == y).mean())


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def train(net, x, y, epochs, lr=0.01):
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = mycel.Model(net, ce, nn.Momentum(net.trainable_params(), lr, 0.9))
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(64, drop_remainder=True)
    model.train(epochs, data, dataset_sink_mode=False)
    return model


def attacks(net):
    return [
        ("FGSM eps=0.1", FastGradientSignMethod(net, eps=0.1)),
        ("LLC eps=0.1", LeastLikelyClassMethod(net, eps=0.1)),
        ("BIM eps=0.1 step=0.01 x20", BasicIterativeMethod(net, eps=0.1, eps_iter=0.01, nb_iter=20)),
        ("MIM eps=0.1 step=0.01 x20", MomentumIterativeMethod(net, eps=0.1, eps_iter=0.01, nb_iter=20)),
        ("PGD-inf eps=0.1 step=0.01 x20", ProjectedGradientDescent(net, eps=0.1, eps_iter=0.01, nb_iter=20)),
        ("PGD-L2 eps=1.5 step=0.15 x20", ProjectedGradientDescent(net, eps=1.5, eps_iter=0.15, nb_iter=20,
                                                                  norm_level=2)),
        ("DeepFool L2 overshoot=0.02", DeepFool(net, num_classes=10, bounds=(0.0, 1.0))),
        ("CW-L2 3x100 c0=1", CarliniWagnerL2Attack(net, num_classes=10, bin_search_steps=3, max_iterations=100,
                                                   learning_rate=0.01, initial_const=1.0)),
    ]


def run_attacks(net, x, y):
    ok = predict(net, x).argmax(axis=1) == y
    xc, yc = x[ok], y[ok]
    print(f"\nattacks on the {ok.sum()} of {len(x)} test images the model classifies correctly "
          f"(clean accuracy {ok.mean():.4f}); norms are absolute, pixels in [0, 1]")
    print(f"{'attack':34s} {'success':>8s} {'mean L2':>8s} {'mean Linf':>9s} {'conf adv':>8s} {'time s':>7s}")
    for name, attack in attacks(net):
        t = time.perf_counter()
        adv = attack.batch_generate(xc, yc, batch_size=250)
        dt = time.perf_counter() - t
        preds = softmax(predict(net, adv))
        ev = AttackEvaluate(xc, yc, adv, preds)
        hit = preds.argmax(axis=1) != yc
        d = (adv - xc).reshape(len(xc), -1)
        l2 = np.sqrt((d * d).sum(axis=1))[hit].mean() if hit.any() else float("nan")
        linf = np.abs(d).max(axis=1)[hit].mean() if hit.any() else float("nan")
        print(f"{name:34s} {ev.mis_classification_rate():8.4f} {l2:8.3f} {linf:9.3f} "
              f"{ev.avg_conf_adv_class():8.3f} {dt:7.1f}")


class Queried(BlackModel):
    """The network seen through queries: probabilities, or logits (NES reads scores as logits)."""

    def __init__(self, net, logits=False):
        self.net, self.logits = net, logits

    def predict(self, inputs):
        z = predict(self.net, np.asarray(inputs, np.float32))
        return z if self.logits else softmax(z)


def run_black_box(net, x, y, n):
    ok = predict(net, x).argmax(axis=1) == y
    xc, yc = x[ok][:n], y[ok][:n]
    target = (yc + 1) % 10
    probs, logits = Queried(net), Queried(net, logits=True)
    runs = [
        ("Genetic Linf 0.1, pop 10, <=500 gen.", False, lambda: GeneticAttack(
            probs, targeted=False, per_bounds=0.1, pop_size=10, mutation_rate=0.05, step_size=0.5, max_steps=500,
            seed=0).generate(xc, yc)),
        ("HopSkipJump L2, 10 iterations", False, lambda: HopSkipJumpAttack(
            probs, init_num_evals=50, max_num_evals=200, num_iterations=10, seed=0).generate(xc)),
        ("NES Query_Limit Linf 0.1, <=10k q (targeted)", True, lambda: NES(
            logits, "Query_Limit", num_class=10, max_queries=10000, epsilon=0.1, samples_per_draw=100,
            batch_size=100, sigma=1e-2, max_lr=0.02, min_lr=0.002, seed=0).generate(xc, target)),
        ("salt and pepper, 100 densities", False, lambda: SaltAndPepperNoiseAttack(
            probs, max_iter=100, seed=0).generate(xc, yc)),
        ("PointWise L0, <=10 passes", False, lambda: PointWiseAttack(
            probs, max_iter=10, seed=0).generate(xc, yc)),
    ]
    print(f"\nblack-box attacks on the first {len(xc)} correctly classified test images; norms over the "
          f"successful ones, absolute; queries: median per image")
    print(f"{'attack':46s} {'success':>8s} {'mean L2':>8s} {'mean Linf':>9s} {'mean L0':>8s} {'queries':>8s} "
          f"{'time s':>7s}")
    for name, targeted, make in runs:
        t = time.perf_counter()
        hit, adv, queries = make()
        dt = time.perf_counter() - t
        # success as the attack saw it: a point that PointWise or HopSkipJump leave on the boundary can
        # flip when re-evaluated in another batch (other rounding in the convolutions)
        d = (adv - xc).reshape(len(xc), -1)[hit]
        l2 = np.sqrt((d * d).sum(axis=1)).mean() if hit.any() else float("nan")
        linf = np.abs(d).max(axis=1).mean() if hit.any() else float("nan")
        l0 = (d != 0).sum(axis=1).mean() if hit.any() else float("nan")
        print(f"{name:46s} {hit.mean():8.3f} {l2:8.3f} {linf:9.3f} {l0:8.0f} {np.median(queries):8.0f} {dt:7.1f}")


def robust_accuracy(net, x, y):
    fgsm = FastGradientSignMethod(net, eps=0.1).batch_generate(x, y, 250)
    pgd = ProjectedGradientDescent(net, eps=0.1, eps_iter=0.01, nb_iter=20).batch_generate(x, y, 250)
    return accuracy(net, x, y), accuracy(net, fgsm, y), accuracy(net, pgd, y)


def adversarial_training(net, x, y, epochs):
    """Madry-style: each batch is replaced by half clean, half PGD (eps 0.1, 7 steps of 0.025) examples."""
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = mycel.Model(net, ce, nn.Momentum(net.trainable_params(), 0.01, 0.9))
    step = model.train_network
    pgd = ProjectedGradientDescent(net, eps=0.1, eps_iter=0.025, nb_iter=7)
    rng = np.random.default_rng(0)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x) - 63, 64):
            idx = order[i:i + 64]
            xb, yb = x[idx].copy(), y[idx]
            xb[32:] = pgd.generate(xb[32:], yb[32:])
            step(Tensor(xb), Tensor(yb))


def dp_sgd(x, y, xt, yt, epochs, batch=256, sigma=1.1, bound=1.0, lr=0.05):
    net = LeNet5()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    mech = NoiseMechanismsFactory.create("Gaussian", norm_bound=bound, initial_noise_multiplier=sigma)
    model = DPModel(micro_batches=batch, norm_bound=bound, noise_mech=mech, network=net, loss_fn=ce,
                    optimizer=nn.Momentum(net.trainable_params(), lr, 0.9))
    monitor = RDPMonitor(len(x), batch, initial_noise_multiplier=sigma, max_eps=3.0, target_delta=1e-5,
                         noise_decay_mode=None)
    print(f"\nDP-SGD: LeNet5, batch {batch}, per-sample clipping C={bound}, sigma={sigma}, Momentum lr {lr}; "
          f"RDPMonitor allows {monitor.max_epoch_suggest()} epochs at eps <= 3, delta = 1e-5")
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(batch, drop_remainder=True)
    t = time.perf_counter()
    model.train(epochs, data, callbacks=[monitor], dataset_sink_mode=False)
    dt = time.perf_counter() - t
    done = len(monitor.history)          # the monitor stops training once eps passes 3
    steps = done * (len(x) // batch)
    eps = monitor.history[-1][1]
    print(f"DP-SGD after {done} epochs: test accuracy {accuracy(net, xt, yt):.4f}, eps = {eps:.3f} "
          f"(delta 1e-5), {dt / steps * 1000:.1f} ms/step")
    plain = LeNet5()
    pm = mycel.Model(plain, ce, nn.Momentum(plain.trainable_params(), lr, 0.9))
    xb, yb = Tensor(x[:batch]), Tensor(y[:batch])
    step = pm.train_network
    step(xb, yb)
    t = time.perf_counter()
    for _ in range(20):
        step(xb, yb)
    print(f"plain SGD step on the same batch: {(time.perf_counter() - t) / 20 * 1000:.1f} ms/step")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--n-attack", type=int, default=500)
    ap.add_argument("--adv-epochs", type=int, default=1)
    ap.add_argument("--dp-epochs", type=int, default=1)
    ap.add_argument("--dp-sigma", type=float, default=1.1)
    ap.add_argument("--dp-batch", type=int, default=256)
    ap.add_argument("--dp-lr", type=float, default=0.05)
    ap.add_argument("--n-black", type=int, default=50)
    ap.add_argument("--parts", default="attacks,advtrain,dp", help="any of attacks,black,advtrain,dp")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x, y = load("train")
    xt, yt = load("test")
    xa, ya = xt[:a.n_attack], yt[:a.n_attack]
    if parts & {"attacks", "black", "advtrain"}:
        net = LeNet5()
        t = time.perf_counter()
        train(net, x, y, a.epochs)
        print(f"LeNet5 trained {a.epochs} epoch(s) in {time.perf_counter() - t:.0f} s: test accuracy "
              f"{accuracy(net, xt, yt):.4f}")
        if "attacks" in parts:
            run_attacks(net, xa, ya)
        if "black" in parts:
            run_black_box(net, xa, ya, a.n_black)
        if "advtrain" in parts:
            before = robust_accuracy(net, xa, ya)
            t = time.perf_counter()
            adversarial_training(net, x, y, a.adv_epochs)
            after = robust_accuracy(net, xa, ya)
            print(f"\nadversarial training ({a.adv_epochs} epoch(s), half PGD-7 examples, "
                  f"{time.perf_counter() - t:.0f} s); accuracy on {len(xa)} test images:")
            print(f"{'':8s} {'clean':>7s} {'FGSM 0.1':>9s} {'PGD-20 0.1':>11s}")
            print(f"{'before':8s} {before[0]:7.4f} {before[1]:9.4f} {before[2]:11.4f}")
            print(f"{'after':8s} {after[0]:7.4f} {after[1]:9.4f} {after[2]:11.4f}")
    if "dp" in parts:
        dp_sgd(x, y, xt, yt, a.dp_epochs, batch=a.dp_batch, sigma=a.dp_sigma, lr=a.dp_lr)


if __name__ == "__main__":
    main()
