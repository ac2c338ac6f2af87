"""Model: the high-level training API (MindSpore's mindspore.train.Model). It wraps a network,
loss and optimizer into a training step (TrainOneStepCell, with mixed precision and loss scaling
from mycel.amp) and runs it over datasets with callbacks: train, eval, fit, predict.

dataset_sink_mode=True runs sink_size steps (the dataset size when -1) per "epoch", taken from the
dataset repeated endlessly, as MindSpore does; in graph mode the steps of a sink run in one C++
loop over the dataset pipeline's prefetched rows (CompiledGraph.run_sink), and the step
callbacks run once per sink, as in MindSpore. Without sinking, a graph-mode epoch with no
callback implementing a step hook also runs in that loop; otherwise steps run from Python. The
pipeline of such a loop runs on the loop's thread when its tree allows (between the steps, with
no thread competing with the step's: Dataset._create_sink_iterator), or under
OMP_WAIT_POLICY=PASSIVE one batch ahead on a builder thread (MYCEL_DATA_LOOKAHEAD)."""
import sys

from mycel import _mycel, amp, context
from mycel.common import insight_scope as _insight_scope
from mycel.nn.cell import Cell
from mycel.nn.wrap.cell_wrapper import WithEvalCell
from mycel.train import metrics as _metrics
from mycel.train.callback import CallbackList, CallbackParams, ProgressBar, RunContext

_METRIC_NAMES = _metrics.METRIC_NAMES


def _make_metrics(metrics):
    """{name: Metric} from a set/list of names or a dict name -> Metric."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        for name, m in metrics.items():
            if not isinstance(m, _metrics.Metric):
                raise TypeError(f"Model: metrics[{name!r}] must be a Metric, got {type(m).__name__}")
        return dict(metrics)
    if isinstance(metrics, (set, list, tuple)):
        out = {}
        for name in metrics:
            if name not in _METRIC_NAMES:
                raise ValueError(f"Model: unknown metric name {name!r}; known: {sorted(_METRIC_NAMES)}")
            out[name] = _METRIC_NAMES[name]()
        return out
    raise TypeError(f"Model: metrics must be a set of names or a dict of name -> Metric, "
                    f"got {type(metrics).__name__}")


def _check_dataset(who, dataset):
    if not hasattr(dataset, "create_tuple_iterator") or not hasattr(dataset, "get_dataset_size"):
        raise TypeError(f"Model.{who}: the dataset must be a mycel.dataset Dataset, got {type(dataset).__name__}")


def _check_epoch(who, arg, value, lo):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValueError(f"Model.{who}: '{arg}' must be an int >= {lo}, got {value!r}")


def _callbacks(callbacks, default_progress):
    cbs = list(CallbackList(callbacks))
    if default_progress and not any(isinstance(cb, ProgressBar) for cb in cbs):
        stdout = sys.stdout
        if getattr(stdout, "isatty", None) and stdout.isatty():
            cbs.append(ProgressBar())
    return CallbackList(cbs)


# Model's keyword arguments (loss_scale_manager arrives through **kwargs), for "did you mean".
_MODEL_ARGUMENTS = ("network", "loss_fn", "optimizer", "metrics", "eval_network", "eval_indexes",
                    "amp_level", "boost_level", "loss_scale_manager")


def _run_step(net, row):
    """One training step; while a profiler or debugger runs, an eager step is marked (a step-trace
    span; a step end for the debugger): a compiled step's program run marks itself."""
    if not _insight_scope.ACTIVE or context.get_context("mode") == context.GRAPH_MODE:
        return net(*row)
    t0 = _mycel.insight.profiler_now_ns()
    out = net(*row)
    if _mycel.insight.profiler_on():
        _mycel.insight.profiler_span("step", "step", t0, _mycel.insight.profiler_now_ns())
    _insight_scope.step_end()
    return out


class Model:
    """Model(network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
    amp_level="O0", loss_scale_manager=None). Without loss_fn the network must return the loss
    itself. metrics: a set of names ({"acc", "loss"}) or a dict name -> Metric. eval_network, when
    given, maps (data, label) to (loss, outputs, label); otherwise WithEvalCell(network, loss_fn)."""

    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        if not isinstance(network, Cell):
            raise TypeError(f"Model: network must be a Cell, got {type(network).__name__}")
        loss_scale_manager = kwargs.pop("loss_scale_manager", None)
        if kwargs:
            from mycel.common.suggest import did_you_mean
            key = sorted(kwargs)[0]
            raise TypeError(f"Model: unexpected argument '{key}'" + did_you_mean(key, _MODEL_ARGUMENTS))
        if eval_indexes is not None:
            if len(eval_indexes) != 3:
                raise ValueError(f"Model: eval_indexes must be [loss, output, label] positions, got {eval_indexes!r}")
        self._eval_indexes = tuple(eval_indexes) if eval_indexes is not None else (0, 1, 2)
        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._amp_level = amp_level
        self._metric_fns = _make_metrics(metrics)
        self._predict_network = amp.auto_mixed_precision(network, amp_level)
        self._train_network = None
        if optimizer is not None:
            self._train_network = amp.build_train_network(self._predict_network, optimizer, loss_fn,
                                                          level="O0", loss_scale_manager=loss_scale_manager)
        if eval_network is not None:
            self._eval_network = eval_network
        elif loss_fn is not None:
            self._eval_network = WithEvalCell(self._predict_network, loss_fn,
                                              add_cast_fp32=amp_level != "O0")
        else:
            self._eval_network = None

    def summary(self, *example_inputs):
        """The network's layer table (Cell.summary): printed and returned."""
        return self._network.summary(*example_inputs)

    @property
    def train_network(self):
        return self._train_network

    @property
    def predict_network(self):
        return self._predict_network

    @property
    def eval_network(self):
        return self._eval_network

    # ---- training
    def _params(self, epoch, dataset, sink_mode, sink_size):
        steps = dataset.get_dataset_size()
        batch_size = dataset.get_batch_size() if hasattr(dataset, "get_batch_size") else None
        return CallbackParams(
            train_network=self._train_network, network=self._network, optimizer=self._optimizer,
            loss_fn=self._loss_fn, epoch_num=epoch, batch_num=sink_size if sink_mode and sink_size > 0 else steps,
            cur_epoch_num=0, cur_step_num=0, net_outputs=None, mode="train",
            dataset_sink_mode=sink_mode, train_dataset=dataset, batch_size=batch_size,
            eval_results=None, eval_epoch=None, parallel_mode="stand_alone", device_number=1)

    @staticmethod
    def _step_loop(net):
        """Graph mode: the compiled training step, whose run_sink runs many steps on the dataset
        pipeline's rows in one C++ loop. None in PyNative mode (steps run from Python)."""
        if context.get_context("mode") != context.GRAPH_MODE:
            return None
        return net._graph_program()

    @staticmethod
    def _plan_slices(net, dataset):
        """slice_parameters (SEMI_AUTO/AUTO_PARALLEL, graph mode): the weights the sharding pass
        splits are stored as slices before the step first compiles; the run_sink loop never
        calls the step from Python, so its plan is made here, for the dataset's row shapes."""
        if not net.__dict__.get("_slice_pending"):
            return
        from mycel import ops
        rows = [ops.zeros(tuple(shape), dt) for shape, dt in zip(dataset.output_shapes(), dataset.output_types())]
        net.plan_slices(*rows)

    @staticmethod
    def _endless(it):
        """Rows of `it` (num_epochs=-1) across its epoch ends."""
        while True:
            empty = True
            for row in it:
                empty = False
                yield row
            if empty:
                raise ValueError("Model.train: the training dataset is empty")

    def _train(self, who, epoch, train_dataset, callbacks, sink_mode, sink_size, initial_epoch,
               valid=None):
        if self._train_network is None:
            raise RuntimeError(f"Model.{who}: no optimizer was given, so there is no training network")
        _check_dataset(who, train_dataset)
        _check_epoch(who, "epoch", epoch, 1)
        _check_epoch(who, "initial_epoch", initial_epoch, 0)
        if initial_epoch >= epoch:
            raise ValueError(f"Model.{who}: initial_epoch ({initial_epoch}) must be < epoch ({epoch})")
        if isinstance(sink_size, bool) or not isinstance(sink_size, int) or (sink_size < 1 and sink_size != -1):
            raise ValueError(f"Model.{who}: sink_size must be -1 or an int >= 1, got {sink_size!r}")
        sink_mode = bool(sink_mode)
        cbs = _callbacks(callbacks, default_progress=True)
        cb = self._params(epoch, train_dataset, sink_mode, sink_size)
        cb.list_callback = cbs  # MindSpore's field: SummaryCollector finds the checkpoint callback
        cb.cur_epoch_num = initial_epoch
        cb.cur_step_num = initial_epoch * cb.batch_num
        run = RunContext(cb)
        net = self._train_network
        net.set_train(True)
        if _insight_scope.ACTIVE:  # a graph-mode epoch may never call the Cell: name its scopes
            _insight_scope.tops[id(net)] = net
        self._plan_slices(net, train_dataset)  # before the step is parsed: it reads the slices
        loop = self._step_loop(net)
        # Step hooks nobody implements are skipped; with none at all, a graph-mode epoch runs in
        # one C++ loop over the pipeline (CompiledGraph.run_sink): no Python per step.
        step_begin = cbs.implementing("on_train_step_begin")
        step_end = cbs.implementing("on_train_step_end")
        per_step = len(step_begin) + len(step_end) > 0
        cbs.on_train_begin(run)
        # A callback may resume a run (BackupAndRestore sets the epoch reached): go on from there.
        epochs = epoch - cb.cur_epoch_num
        if epochs < 1:
            cbs.on_train_end(run)
            return
        n = -1 if sink_mode else epochs
        if loop is not None and (sink_mode or not per_step) and hasattr(train_dataset, "_create_sink_iterator"):
            # Only run_sink reads it: the pipeline may run on this thread, between the steps.
            it = train_dataset._create_sink_iterator(num_epochs=n)
        else:
            it = train_dataset.create_tuple_iterator(num_epochs=n)
        rows = self._endless(it) if sink_mode else None
        try:
            for _ in range(epochs):
                cb.cur_epoch_num += 1
                cbs.on_train_epoch_begin(run)
                if sink_mode:
                    self._sink(net, loop, it, rows, cb.batch_num, cb, run, step_begin, step_end)
                elif loop is not None and not per_step:
                    out, done = loop.run_sink(it._pipe, 1 << 62, until_epoch_end=True)
                    cb.cur_step_num += done
                    if out is not None:
                        cb.net_outputs = out
                else:
                    for row in it:
                        cb.cur_step_num += 1
                        cb.train_dataset_element = row  # MindSpore's name: SummaryCollector reads the inputs
                        step_begin.on_train_step_begin(run)
                        cb.net_outputs = _run_step(net, row)
                        step_end.on_train_step_end(run)
                        if run.get_stop_requested():
                            break
                if valid is not None and cb.cur_epoch_num % valid[1] == 0:
                    cb.eval_results = self._eval(valid[0], cbs, in_fit=True)
                    cb.eval_epoch = cb.cur_epoch_num
                    net.set_train(True)
                cbs.on_train_epoch_end(run)
                if run.get_stop_requested():
                    break
            cbs.on_train_end(run)
        finally:
            it.stop()

    @staticmethod
    def _sink(net, loop, it, rows, steps, cb, run, step_begin, step_end):
        """One sink (MindSpore's dataset_sink_mode): `steps` steps taken from the dataset repeated
        endlessly; the step hooks run once around the whole sink, as in MindSpore. Graph mode
        runs the steps in one C++ loop fed by the pipeline's prefetch queue."""
        cb.cur_step_num += steps
        step_begin.on_train_step_begin(run)
        if loop is not None:
            cb.net_outputs, _ = loop.run_sink(it._pipe, steps)
        else:
            for _ in range(steps):
                row = next(rows)
                cb.train_dataset_element = row
                cb.net_outputs = _run_step(net, row)
        step_end.on_train_step_end(run)

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              initial_epoch=0):
        """Trains for epochs initial_epoch+1 .. epoch over train_dataset, calling the callbacks.
        A ProgressBar is added when stdout is a terminal and none is given."""
        self._train("train", epoch, train_dataset, callbacks, dataset_sink_mode, sink_size, initial_epoch)

    def fit(self, epoch, train_dataset, valid_dataset=None, valid_frequency=1, callbacks=None,
            dataset_sink_mode=False, valid_dataset_sink_mode=False, sink_size=-1, initial_epoch=0):
        """train, plus an evaluation on valid_dataset every valid_frequency epochs, before the
        epoch-end callbacks (they read cb_params.eval_results; "loss" is also given as
        "eval_loss")."""
        valid = None
        if valid_dataset is not None:
            _check_dataset("fit", valid_dataset)
            _check_epoch("fit", "valid_frequency", valid_frequency, 1)
            valid = (valid_dataset, valid_frequency)
        self._train("fit", epoch, train_dataset, callbacks, dataset_sink_mode, sink_size, initial_epoch,
                    valid)

    # ---- evaluation and prediction
    def _eval(self, dataset, cbs, in_fit=False):
        who = "fit" if in_fit else "eval"
        if self._eval_network is None:
            raise RuntimeError(f"Model.{who}: no loss_fn or eval_network was given, so there is nothing to evaluate")
        if not self._metric_fns:
            raise RuntimeError(f"Model.{who}: no metrics were given (e.g. metrics={{'acc'}})")
        _check_dataset(who, dataset)
        net = self._eval_network
        net.set_train(False)
        for m in self._metric_fns.values():
            m.clear()
        cb = CallbackParams(eval_network=net, valid_dataset=dataset, mode="eval", cur_step_num=0,
                            batch_num=dataset.get_dataset_size(), net_outputs=None,
                            cur_epoch_num=1, epoch_num=1)
        run = RunContext(cb)
        i_loss, i_out, i_label = self._eval_indexes
        cbs.on_eval_begin(run)
        cbs.on_eval_epoch_begin(run)
        for row in dataset.create_tuple_iterator(num_epochs=1):
            cb.cur_step_num += 1
            cbs.on_eval_step_begin(run)
            outputs = net(*row)
            cb.net_outputs = outputs
            for m in self._metric_fns.values():
                if isinstance(m, _metrics.Loss):
                    m.update(outputs[i_loss])
                else:
                    m.update(outputs[i_out], outputs[i_label])
            cbs.on_eval_step_end(run)
        results = {name: m.eval() for name, m in self._metric_fns.items()}
        if in_fit and "loss" in results:
            results.setdefault("eval_loss", results["loss"])
        cb.metrics = results
        cbs.on_eval_epoch_end(run)
        cbs.on_eval_end(run)
        return results

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """Runs the eval network over valid_dataset and returns {metric name: value}."""
        return self._eval(valid_dataset, _callbacks(callbacks, default_progress=False))

    def predict(self, *predict_data):
        """The network's output for the given inputs (in inference mode)."""
        self._predict_network.set_train(False)
        return self._predict_network(*predict_data)

    # ---- distributed inference: the layouts the sharding pass gives the parameters
    def infer_predict_layout(self, *predict_data, skip_backend_compile=False):
        """{parameter name: [device_matrix, tensor_map, slice_shape, field_size, uniform_split,
        opt_shard_group]} for the parameters the sharding pass splits when the predict network
        runs on predict_data (tensors or Tensor(shape=..., dtype=...) placeholders), without
        building or running it: MindSpore's layout list, the input of load_distributed_checkpoint
        for a predict strategy. SEMI_AUTO_PARALLEL or AUTO_PARALLEL in GRAPH_MODE only."""
        del skip_backend_compile  # nothing is compiled for the backend here anyway
        self._predict_network.set_train(False)
        return _parameter_layouts("infer_predict_layout", self._predict_network, predict_data)

    def infer_train_layout(self, train_dataset, dataset_sink_mode=True, sink_size=-1):
        """The layouts (as infer_predict_layout's) of the parameters the sharding pass splits in
        the training network, for the inputs one training step is fed: with dataset_sink_mode,
        the per-step shapes the sink loop feeds (train_dataset.output_shapes(), which must be
        static: a sinking step has one shape; sink_size steps per sink do not change it);
        without, the dataset's first row."""
        fn = "Model.infer_train_layout"
        _check_dataset("infer_train_layout", train_dataset)
        if isinstance(sink_size, bool) or not isinstance(sink_size, int) or (sink_size < 1 and sink_size != -1):
            raise ValueError(f"{fn}: sink_size must be -1 or an int >= 1, got {sink_size!r}")
        from mycel import ops
        if dataset_sink_mode:
            shapes, types = train_dataset.output_shapes(), train_dataset.output_types()
            for i, shape in enumerate(shapes):
                if any(d is None or int(d) < 0 for d in shape):
                    raise ValueError(f"{fn}: dataset_sink_mode needs static per-step shapes, column {i} has "
                                     f"shape {list(shape)}; batch with drop_remainder=True or pass "
                                     f"dataset_sink_mode=False")
            rows = [ops.zeros(tuple(int(d) for d in shape), dt) for shape, dt in zip(shapes, types)]
        else:
            rows = next(iter(train_dataset.create_tuple_iterator(num_epochs=1)), None)
            if rows is None:
                raise ValueError(f"{fn}: the training dataset is empty")
            rows = list(rows)
        # The backbone's forward on the data columns (the last column is the label when the
        # Model adds the loss): the pass splits the same weights the training step uses.
        return _parameter_layouts("infer_train_layout", self._network,
                                  rows[:-1] if self._loss_fn is not None else rows)


def _parameter_layouts(who, network, inputs):
    """Runs the sharding pass on network's forward for inputs and returns MindSpore's layout
    lists of the parameters it splits (one process's plan; every rank plans the same)."""
    from mycel.parallel import get_auto_parallel_context
    mode = get_auto_parallel_context("parallel_mode")
    if context.get_context("mode") != context.GRAPH_MODE or mode not in ("semi_auto_parallel", "auto_parallel"):
        raise RuntimeError(f"Model.{who}: needs GRAPH_MODE and parallel_mode semi_auto_parallel or "
                           f"auto_parallel, got mode {context.get_context('mode')} and parallel_mode {mode!r}")
    autopar = _mycel.autopar
    autopar.take_planned()  # layouts planned before this call are not this network's
    network._graph_program().graph.plan_sharding(*inputs)
    planned = {autopar.storage_id(t): layout for t, layout in autopar.take_planned()}
    out = {}
    for p in network.get_parameters():
        layout = planned.get(autopar.storage_id(p))
        if layout is None:
            continue
        full = (list(layout[0]), list(layout[1]), list(layout[2]), [])
        out[p.name] = [list(layout[0]), list(layout[1]), list(autopar.slice_shape(full)), 0, True, ""]
    return out
