"""A small Fashion-MNIST folder for the tutorial programs: the first rows of the Debian
package's train and test sets, written as plain IDX files in MindSpore's MNIST_Data layout
(<root>/train, <root>/test), so that a tutorial's own epochs stay short."""
import gzip
import os

FASHION = "/usr/share/datasets/fashion-mnist"


def have_fashion():
    return os.path.isfile(f"{FASHION}/train-images-idx3-ubyte.gz")


def write_subset(root, n_train=512, n_test=256):
    """<root>/train and <root>/test holding the first n_train / n_test images and labels."""
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        out = os.path.join(root, split)
        os.makedirs(out, exist_ok=True)
        for kind, header, item in (("images-idx3", 16, 784), ("labels-idx1", 8, 1)):
            with gzip.open(f"{FASHION}/{prefix}-{kind}-ubyte.gz", "rb") as f:
                data = f.read(header + n * item)
            head = bytearray(data[:header])
            head[4:8] = n.to_bytes(4, "big")  # the item count of the IDX header
            tmp = os.path.join(out, f".{prefix}-{kind}-ubyte.tmp")
            with open(tmp, "wb") as f:
                f.write(bytes(head) + data[header:])
            os.replace(tmp, os.path.join(out, f"{prefix}-{kind}-ubyte"))
    return root
