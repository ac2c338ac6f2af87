"""SummaryCollector (MindSpore's callback of that name): during Model.train it records, every
`collect_freq` steps, the loss, the learning rate, histograms of the weights and the input images
(when the first input is 4-D), once the computation graph of the compiled train step, and writes
the run's hyper-parameters, dataset pipeline graph and lineage beside the event file; what summary
ops in the network recorded goes into the same Event."""
import os
import re
import warnings

import numpy as np

from mycel import _mycel
from mycel import context
from mycel.common.tensor import Tensor
from mycel.train.callback._callback import Callback, loss_value
from mycel.insight import lineage
from mycel.insight.graph_summary import graph_nodes
from mycel.insight.summary_record import SummaryRecord

_DEFAULTS = {"collect_metric": True, "collect_graph": True, "collect_train_lineage": True,
             "collect_eval_lineage": True, "collect_input_data": True,
             "collect_dataset_graph": True, "histogram_regular": None, "collect_landscape": None}
_HISTOGRAM_DEFAULT_COUNT = 5  # MindSpore: without histogram_regular, the first 5 parameters


def _type_name(obj):
    return None if obj is None else type(obj).__name__


def _lr_cell_value(cell, step):
    """The learning rate a step used: a constant or per-step list Parameter read directly,
    a LearningRateSchedule Cell evaluated at the step."""
    p = getattr(cell, "learning_rate", None)
    if isinstance(p, Tensor):
        a = np.asarray(p.asnumpy(), np.float64).reshape(-1)
        return float(a[min(step, a.size - 1)])
    return float(np.asarray(cell(Tensor(np.int32(step))).asnumpy()).reshape(-1)[0])


def learning_rate(optimizer, step):
    """The (first group's) learning rate of `optimizer` at `step` (0-based), or None."""
    lr = getattr(optimizer, "learning_rate", None)
    if lr is None:
        return None
    if not isinstance(lr, Tensor) and hasattr(lr, "__getitem__") and not hasattr(lr, "construct"):
        lr = lr[0]
    if isinstance(lr, Tensor):
        return float(np.asarray(lr.asnumpy()).reshape(-1)[0])
    return _lr_cell_value(lr, step)


class SummaryCollector(Callback):
    """Records training data to `summary_dir` for TensorBoard.

    collect_freq: record every this many steps (and at the first step). collect_specified_data:
    a dict overriding what is collected ('collect_metric' for the loss, 'collect_input_data',
    'collect_train_lineage' for the hyper-parameters, 'histogram_regular' a regex selecting the
    weights whose histograms are kept). keep_default_action=False collects only what the dict
    names."""

    def __init__(self, summary_dir, collect_freq=10, num_process=32, collect_specified_data=None,
                 keep_default_action=True, custom_lineage_data=None, collect_tensor_freq=None,
                 max_file_size=None, export_options=None):
        super().__init__()
        who = "SummaryCollector"
        if not isinstance(summary_dir, str) or not summary_dir:
            raise TypeError(f"{who}: 'summary_dir' must be a non-empty str, got {summary_dir!r}")
        if isinstance(collect_freq, bool) or not isinstance(collect_freq, int) or collect_freq < 1:
            raise ValueError(f"{who}: 'collect_freq' must be an int >= 1, got {collect_freq!r}")
        if not isinstance(keep_default_action, bool):
            raise TypeError(f"{who}: 'keep_default_action' must be a bool, "
                            f"got {keep_default_action!r}")
        if collect_specified_data is not None and not isinstance(collect_specified_data, dict):
            raise TypeError(f"{who}: 'collect_specified_data' must be a dict or None, "
                            f"got {type(collect_specified_data).__name__}")
        if custom_lineage_data is not None and not isinstance(custom_lineage_data, dict):
            raise TypeError(f"{who}: 'custom_lineage_data' must be a dict or None, "
                            f"got {type(custom_lineage_data).__name__}")
        specified = dict(collect_specified_data or {})
        unknown = sorted(set(specified) - set(_DEFAULTS))
        if unknown:
            raise ValueError(f"{who}: unknown collect_specified_data keys {unknown}; "
                             f"known: {sorted(_DEFAULTS)}")
        off = {k: (None if k == "histogram_regular" else False) for k in _DEFAULTS}
        self._collect = dict(_DEFAULTS) if keep_default_action else off
        self._collect.update(specified)
        regular = self._collect["histogram_regular"]
        self._histogram_regex = re.compile(regular) if isinstance(regular, str) else None
        self._collect_histograms = keep_default_action or "histogram_regular" in specified
        self.summary_dir = summary_dir
        self.collect_freq = collect_freq
        self._custom_lineage = dict(custom_lineage_data or {})
        # The graph is compiled for it in PyNative mode only when asked for by name.
        self._graph_asked = specified.get("collect_graph") is True
        self._record = None
        self._training = False
        self._last_step = 0
        self._graph_done = False
        self._lineage = None

    # ---- hooks
    def on_train_begin(self, run_context):
        cb = run_context.original_args()
        self._record = SummaryRecord(self.summary_dir)
        self._training = True
        self._graph_done = False
        graph = None
        if self._collect["collect_dataset_graph"] and cb.get("train_dataset") is not None:
            graph = lineage.dataset_graph(cb.train_dataset)
            lineage.write_json_atomic(os.path.join(self.summary_dir, lineage.DATASET_GRAPH_FILE),
                                      graph)
        if self._collect["collect_train_lineage"]:
            info = self._write_hyper_params(cb)
            if graph is None and cb.get("train_dataset") is not None:
                graph = lineage.dataset_graph(cb.train_dataset)
            self._lineage = self._train_lineage(info, graph)
            self._write_lineage()

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        step = cb.cur_step_num
        self._last_step = step
        if self._lineage is not None and cb.get("net_outputs") is not None:
            self._lineage["train_loss"] = float(loss_value(cb.net_outputs))
        if step != 1 and step % self.collect_freq and self._graph_done:
            return
        rec = self._record
        if not self._graph_done:
            self._graph_done = True
            if self._collect["collect_graph"]:
                self._add_graph(cb)
        if step != 1 and step % self.collect_freq:
            rec.record(step)
            return
        if self._collect["collect_metric"] and cb.get("net_outputs") is not None:
            rec.add_value("scalar", "loss/auto", np.float32(loss_value(cb.net_outputs)))
        lr = learning_rate(cb.get("optimizer"), step - 1)
        if lr is not None and self._collect["collect_train_lineage"]:
            rec.add_value("scalar", "learning_rate/auto", np.float32(lr))
        if self._collect["collect_input_data"]:
            image = self._input_image(cb)
            if image is not None:
                rec.add_value("image", "input_data/auto", image)
        if self._collect_histograms:
            for p in self._histogram_params(cb):
                rec.add_value("histogram", f"{p.name}/auto", p)
        rec.record(step)

    def on_train_end(self, run_context):
        self._training = False
        if self._lineage is not None:
            self._lineage["checkpoint"] = self._checkpoint(run_context.original_args())
            self._write_lineage()
        self.close()

    def on_eval_end(self, run_context):
        """Evaluation results (Model.fit's validation, or Model.eval) as scalars eval/<metric>/auto
        at the last training step."""
        if not self._collect["collect_eval_lineage"]:
            return
        metrics = run_context.original_args().get("metrics") or {}
        if self._record is None:
            self._record = SummaryRecord(self.summary_dir)
        for name, value in metrics.items():
            if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                self._record.add_value("scalar", f"eval/{name}/auto", np.float32(value))
                if self._lineage is not None:
                    self._lineage["metrics"][name] = float(value)
        if self._lineage is not None:
            self._write_lineage()
        self._record.record(self._last_step)
        if not self._training:  # Model.eval on its own: the file is complete
            self.close()

    def close(self):
        if self._record is not None:
            self._record.close()
            self._record = None

    # ---- what is collected
    @staticmethod
    def _input_image(cb):
        row = cb.get("train_dataset_element")
        if row is None:
            return None
        first = row[0] if isinstance(row, (tuple, list)) else row
        if isinstance(first, Tensor) and first.ndim == 4 and first.shape[1] in (1, 3, 4):
            return first
        return None

    def _histogram_params(self, cb):
        net = cb.get("train_network") or cb.get("network")
        if net is None:
            return []
        params = [p for p in net.trainable_params()]
        if self._histogram_regex is not None:
            return [p for p in params if self._histogram_regex.search(p.name)]
        return params[:_HISTOGRAM_DEFAULT_COUNT]

    def _write_hyper_params(self, cb):
        """hyper_params.json in summary_dir (written whole: a temporary file renamed over it)."""
        opt = cb.get("optimizer")
        net = cb.get("network")
        info = {
            "epoch": cb.get("epoch_num"),
            "batch_size": cb.get("batch_size"),
            "train_dataset_size": cb.get("batch_num"),
            "learning_rate": learning_rate(opt, 0) if opt is not None else None,
            "optimizer": _type_name(opt),
            "loss_function": _type_name(cb.get("loss_fn")),
            "network": _type_name(net),
            "parameter_count": None if net is None else
            int(sum(int(np.prod(p.shape)) for p in net.trainable_params())),
        }
        info.update(self._custom_lineage)
        lineage.write_json_atomic(os.path.join(self.summary_dir, "hyper_params.json"), info)
        return info

    def _train_lineage(self, info, graph):
        """The run's lineage record: hyper-parameters, dataset, network, loss, optimizer; the
        metrics, last loss and checkpoint are filled in as the run goes."""
        rec = {k: v for k, v in info.items() if k not in self._custom_lineage}
        rec["summary_dir"] = os.path.abspath(self.summary_dir)
        rec["dataset_path"] = lineage.dataset_path(graph) if graph else None
        rec["dataset_pipeline"] = lineage.pipeline_ops(graph) if graph else []
        rec["custom"] = dict(self._custom_lineage)
        rec["metrics"] = {}
        rec["train_loss"] = None
        rec["checkpoint"] = None
        return rec

    def _write_lineage(self):
        lineage.write_json_atomic(os.path.join(self.summary_dir, lineage.LINEAGE_FILE),
                                  self._lineage)

    @staticmethod
    def _checkpoint(cb):
        """The last checkpoint a ModelCheckpoint of this run wrote, or None."""
        for c in getattr(cb.get("list_callback"), "_callbacks", []):
            path = getattr(c, "latest_ckpt_file_name", None)
            if path:
                return os.path.abspath(path)
        return None

    def _add_graph(self, cb):
        """The compiled train step's graph, as a GraphDef event (graph mode; in PyNative mode
        only when collect_graph was asked for by name, as it compiles the step once more)."""
        net = cb.get("train_network") or cb.get("network")
        if net is None:
            return
        graph_mode = context.get_context("mode") == context.GRAPH_MODE
        if not graph_mode and not self._graph_asked:
            return
        compiled = net.__dict__.get("_compiled")
        try:
            row = cb.get("train_dataset_element")
            if row is None:  # sink mode: the step's signature from the dataset's first row
                row = [Tensor(shape=s, dtype=d) for s, d in cb.train_dataset._first_row()]
            args = list(row) if isinstance(row, (tuple, list)) else [row]
            graph = compiled.graph if compiled is not None else _mycel.graph.compile(net)
            data = graph.graph_data(*args)
            self._record.add_value("graph", "train_network/auto", graph_nodes(data, net))
        except Exception as e:  # noqa: BLE001 (control flow: the graph is not straight-line)
            warnings.warn(f"SummaryCollector: the computation graph was not collected: {e}",
                          stacklevel=2)
