"""(inputs, labels) batches from a mycel dataset of two columns or from an (inputs, labels) pair."""
import numpy as np


def batches(owner, name, data):
    if isinstance(data, (tuple, list)) and len(data) == 2:
        x, y = np.asarray(data[0]), np.asarray(data[1])
        if len(x) != len(y):
            raise ValueError(f"{owner}: {name} inputs and labels differ in length: {len(x)} and {len(y)}")
        yield x, y
        return
    it = getattr(data, "create_tuple_iterator", None)
    if it is None:
        raise TypeError(f"{owner}: {name} must be a mycel dataset of (inputs, labels) or an (inputs, labels) pair, "
                        f"got {type(data).__name__}")
    for row in it(output_numpy=True, num_epochs=1):
        if len(row) < 2:
            raise ValueError(f"{owner}: {name} must yield (inputs, labels) rows, got {len(row)} column(s)")
        yield np.asarray(row[0]), np.asarray(row[1])
