"""LeNet5 training step (value_and_grad over the weights + SGD in Python), batch 64: compile
time and warm step time. Usage: .venv/bin/python bench/bench_grad_lenet5.py"""
import numpy as np, time, mycel
from mycel import nn, ops, Tensor
mycel.set_seed(0)
class LeNet5(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)
class WithLoss(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    def construct(self, x, y):
        return self.loss(self.net(x), y)
net = LeNet5(); wl = WithLoss(net)
params = net.trainable_params()
vg = mycel.value_and_grad(wl, None, params)
rng = np.random.default_rng(0)
x = Tensor(rng.standard_normal((64, 1, 32, 32)).astype(np.float32))
y = Tensor(rng.integers(0, 10, 64).astype(np.int32))
losses, times = [], []
for step in range(30):
    t = time.perf_counter()
    loss, grads = vg(x, y)
    for p, g in zip(params, grads):
        p.set_data(p - 0.05 * g)
    losses.append(float(loss.asnumpy()))
    times.append(time.perf_counter() - t)
print(f"first call (compile + step): {times[0] * 1e3:.1f} ms")
print(f"warm step, median of {len(times) - 5}: {np.median(times[5:]) * 1e3:.2f} ms")
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
