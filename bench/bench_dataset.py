"""Dataset pipeline throughput (not a test): run `python bench/bench_dataset.py`.

(a) Fashion-MNIST: MnistDataset -> map(Rescale, Normalize) -> batch(32), rows/s; the same
    pipeline over the images held in memory (NumpySlicesDataset) isolates the engine's cost.
(b) JPEG: 2000 random 320x240 JPEGs (needs Pillow) -> ImageFolderDataset -> Decode ->
    RandomResizedCrop(224) -> RandomHorizontalFlip -> Normalize -> HWC2CHW -> batch(32), with 1
    and 2 workers, images/s; side by side with a PyTorch DataLoader running the same transforms
    written with Pillow + numpy (when torch is installed).
Parts whose classes are missing from this build are skipped with a note.
"""
import argparse
import gzip
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import mycel.dataset as ds

try:
    from mycel.dataset import vision
except ImportError:  # pragma: no cover
    vision = None

MNIST_DIR = "/usr/share/datasets/fashion-mnist"
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def have(module, *names):
    return module is not None and all(hasattr(module, n) for n in names)


def timed(iterator, count_rows):
    t0 = time.perf_counter()
    n = 0
    for row in iterator:
        n += count_rows(row)
    return n, time.perf_counter() - t0


def load_mnist_images():
    with gzip.open(os.path.join(MNIST_DIR, "train-images-idx3-ubyte.gz")) as f:
        data = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(os.path.join(MNIST_DIR, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
    return data.reshape(-1, 28, 28, 1), labels


def mnist_ops():
    if have(vision, "Rescale", "Normalize"):
        return [vision.Rescale(1.0 / 255.0, 0.0), vision.Normalize(mean=[0.2860], std=[0.3530])]
    # No vision transforms in this build: the same arithmetic as one Python operation.
    return [lambda x: ((x.astype(np.float32) / 255.0) - 0.2860) / 0.3530]


def bench_mnist(workers):
    print("\n(a) Fashion-MNIST -> map(Rescale, Normalize) -> batch(32)")
    if not os.path.isdir(MNIST_DIR):
        print(f"  skipped: {MNIST_DIR} missing")
        return
    ops = mnist_ops()
    if not have(vision, "Rescale", "Normalize"):
        print("  note: vision.Rescale/Normalize missing; using a Python map operation instead")
    images, labels = load_mnist_images()
    sources = [("NumpySlicesDataset (in memory)",
                lambda: ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False))]
    if hasattr(ds, "MnistDataset"):
        sources.insert(0, ("MnistDataset", lambda: ds.MnistDataset(MNIST_DIR, usage="train", shuffle=False)))
    else:
        print("  note: MnistDataset missing in this build; in-memory source only")
    for name, make in sources:
        for w in workers:
            d = make().map(ops, input_columns="image", num_parallel_workers=w).batch(32)
            n, dt = timed(d.create_tuple_iterator(num_epochs=1, output_numpy=True), lambda r: len(r[0]))
            print(f"  {name:32s} workers={w}: {n / dt:10.0f} rows/s  ({n} rows, {dt:.2f} s)")


def make_jpegs(root, count, size=(320, 240), classes=4):
    from PIL import Image
    rng = np.random.default_rng(0)
    for c in range(classes):
        os.makedirs(os.path.join(root, f"class{c}"), exist_ok=True)
    base = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
    for i in range(count):
        # Smooth random images compress like photos (pure noise would be unrealistically large).
        img = np.kron(np.roll(base, i, axis=0), np.ones((8, 8, 1), np.uint8))
        img = (img.astype(np.int16) + rng.integers(-20, 20, img.shape)).clip(0, 255).astype(np.uint8)
        Image.fromarray(img).save(os.path.join(root, f"class{i % classes}", f"{i:05d}.jpg"), quality=90)


def mycel_jpeg(root, w, n_images):
    ops = [vision.Decode(), vision.RandomResizedCrop(224), vision.RandomHorizontalFlip(),
           vision.Normalize(mean=MEAN, std=STD), vision.HWC2CHW()]
    d = ds.ImageFolderDataset(root, shuffle=True, num_parallel_workers=w)
    d = d.map(ops, input_columns="image", num_parallel_workers=w).batch(32, num_parallel_workers=w)
    return timed(d.create_tuple_iterator(num_epochs=1, output_numpy=True), lambda r: len(r[0]))


def torch_jpeg(root, w):
    import torch
    from PIL import Image

    class Folder(torch.utils.data.Dataset):
        def __init__(self, root):
            self.items = []
            for c, name in enumerate(sorted(os.listdir(root))):
                for f in sorted(os.listdir(os.path.join(root, name))):
                    self.items.append((os.path.join(root, name, f), c))
            self.mean = np.array(MEAN, np.float32)
            self.std = np.array(STD, np.float32)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            path, label = self.items[i]
            img = Image.open(path).convert("RGB")
            rng = np.random.default_rng()
            W, H = img.size
            area = W * H
            for _ in range(10):  # torchvision's RandomResizedCrop, scale (0.08, 1), ratio (3/4, 4/3)
                a = area * rng.uniform(0.08, 1.0)
                r = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
                cw, ch = int(round(np.sqrt(a * r))), int(round(np.sqrt(a / r)))
                if 0 < cw <= W and 0 < ch <= H:
                    x, y = rng.integers(0, W - cw + 1), rng.integers(0, H - ch + 1)
                    break
            else:
                cw, ch, x, y = W, H, 0, 0
            img = img.resize((224, 224), Image.BILINEAR, box=(x, y, x + cw, y + ch))
            if rng.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
            a = (np.asarray(img, np.float32) - self.mean) / self.std
            return torch.from_numpy(a.transpose(2, 0, 1).copy()), label

    loader = torch.utils.data.DataLoader(Folder(root), batch_size=32, shuffle=True, num_workers=w)
    return timed(loader, lambda b: len(b[0]))


def bench_jpeg(workers, count):
    print(f"\n(b) JPEG: ImageFolder -> Decode -> RandomResizedCrop(224) -> RandomHorizontalFlip -> "
          f"Normalize -> HWC2CHW -> batch(32), {count} images of 320x240")
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("  skipped: Pillow is not installed (pip install pillow)")
        return
    root = tempfile.mkdtemp(prefix="mycel_jpeg_")
    try:
        make_jpegs(root, count)
        ours = hasattr(ds, "ImageFolderDataset") and have(
            vision, "Decode", "RandomResizedCrop", "RandomHorizontalFlip", "Normalize", "HWC2CHW")
        if not ours:
            print("  mycel: skipped (ImageFolderDataset or vision transforms missing in this build)")
        try:
            import torch
            torch.set_num_threads(1)
        except ImportError:
            torch = None
            print("  torch: skipped (not installed)")
        for w in workers:
            line = f"  workers={w}:"
            r_ours = r_torch = None
            if ours:
                n, dt = mycel_jpeg(root, w, count)
                r_ours = n / dt
                line += f"  mycel {r_ours:8.0f} images/s"
            if torch is not None:
                n, dt = torch_jpeg(root, w)
                r_torch = n / dt
                line += f"   torch DataLoader {r_torch:8.0f} images/s"
            if r_ours and r_torch:
                line += f"   ratio {r_ours / r_torch:.2f}x"
            print(line)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--skip-mnist", action="store_true")
    p.add_argument("--skip-jpeg", action="store_true")
    args = p.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if not args.skip_mnist:
        bench_mnist(args.workers)
    if not args.skip_jpeg:
        bench_jpeg(args.workers, args.images)


if __name__ == "__main__":
    main()
