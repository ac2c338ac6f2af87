"""MindSpore's step-function helpers for custom training loops: data_sink (a function that runs
several steps over a dataset per call), DatasetHelper and connect_network_with_dataset."""
import numbers


def _check_sink_size(who, sink_size):
    if isinstance(sink_size, bool) or not isinstance(sink_size, numbers.Integral) or sink_size < 1:
        raise ValueError(f"{who}: sink_size must be an int >= 1, got {sink_size!r}")
    return int(sink_size)


class DatasetHelper:
    """Iterates a dataset's batches as tuples of Tensors, epoch after epoch (MindSpore's
    DatasetHelper). With dataset_sink_mode, one pass yields sink_size batches (-1: the whole
    dataset), which is what a sinking loop consumes per call."""

    def __init__(self, dataset, dataset_sink_mode=True, sink_size=-1, epoch_num=1):
        if not hasattr(dataset, "create_tuple_iterator"):
            raise TypeError(f"DatasetHelper: dataset must be a mycel.dataset Dataset, got {type(dataset).__name__}")
        if sink_size != -1:
            _check_sink_size("DatasetHelper", sink_size)
        self.dataset, self.dataset_sink_mode = dataset, bool(dataset_sink_mode)
        self._sink_size, self.epoch_num = sink_size, epoch_num
        self._iter = None

    def sink_size(self):
        """Batches per pass: sink_size, or the dataset's size when sink_size is -1."""
        return self.dataset.get_dataset_size() if self._sink_size == -1 else self._sink_size

    def _next(self):
        if self._iter is None:
            self._iter = iter(self.dataset.create_tuple_iterator(num_epochs=-1))
        try:
            return tuple(next(self._iter))
        except StopIteration:  # the end of an epoch: start the next one
            self._iter = iter(self.dataset.create_tuple_iterator(num_epochs=-1))
            return tuple(next(self._iter))

    def __iter__(self):
        n = self.sink_size() if self.dataset_sink_mode else self.dataset.get_dataset_size()
        for _ in range(n):
            yield self._next()

    def __len__(self):
        return self.sink_size() if self.dataset_sink_mode else self.dataset.get_dataset_size()


def connect_network_with_dataset(network, dataset_helper):
    """MindSpore connects a network to the device queue here; Mycel's networks read the batches
    they are given, so the network is returned as it is (after checking the helper)."""
    if not isinstance(dataset_helper, DatasetHelper):
        raise TypeError(f"connect_network_with_dataset: dataset_helper must be a DatasetHelper, "
                        f"got {type(dataset_helper).__name__}")
    return network


def data_sink(fn, dataset, sink_size=1, jit_config=None, input_signature=None):
    """A function that, per call, runs fn on the next sink_size batches of dataset (epochs
    follow one another) and returns the last call's result (MindSpore's data_sink). fn takes a
    batch's columns as arguments; jit it (or give jit_config) to run each step compiled."""
    if not callable(fn):
        raise TypeError(f"data_sink: fn must be callable, got {type(fn).__name__}")
    n = _check_sink_size("data_sink", sink_size)
    step = fn
    if jit_config is not None or input_signature is not None:
        from mycel.common.api import jit
        step = jit(fn, input_signature=input_signature, jit_config=jit_config)
    helper = DatasetHelper(dataset, sink_size=n)

    def sink_process(*args):
        if args:
            raise TypeError("data_sink: the sinking function takes no arguments; the batches come "
                            "from the dataset")
        out = None
        for batch in helper:
            out = step(*batch)
        return out

    sink_process.__name__ = f"data_sink({getattr(fn, '__name__', 'fn')})"
    return sink_process
