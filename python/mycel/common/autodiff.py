"""Gradients, MindSpore style: mycel.grad, mycel.value_and_grad and ops.GradOperation.

In GRAPH_MODE the function (or Cell) is parsed into the IR, specialized per input signature, and
its gradient graph is built by the vjp transform in C++ (src/mycel/ad) and compiled to one Program,
cached per signature, so a training loop compiles once. In PYNATIVE_MODE the function runs eagerly
while its ops are recorded into IR, and the recording goes through the same transform
(pynative_grad.py). Gradients are taken w.r.t. input positions and/or
Parameters (weights), as MindSpore's API defines them.
"""
from mycel import _mycel, context
from mycel.common import api, pynative_grad, vmap


def _weights_list(weights):
    if weights is None:
        return None
    if isinstance(weights, (list, tuple)):
        return list(weights)
    return [weights]


def _positions(grad_position, num_args):
    if grad_position is None:
        return [], False
    if isinstance(grad_position, int):
        return [grad_position], False
    return list(grad_position), True


def _is_record(x):
    return getattr(type(x), "_mycel_record", False)


def _record_gradient(arg, grads):
    """A record of arg's class from the tuple of its run-time (tensor) fields' gradients."""
    from mycel.common import records
    from mycel.common.tensor import Tensor
    fields = records.fields_of(arg)
    runtime = [name for name, v in fields if isinstance(v, Tensor)]
    if not isinstance(grads, tuple) or len(grads) != len(runtime):
        return grads
    by_name = dict(zip(runtime, grads))
    values = [v if by_name.get(name) is None else by_name[name] for name, v in fields]
    return records.rebuild(type(arg), [name for name, _ in fields], values)


class _GradFunction:
    """What grad/value_and_grad return: compiles the gradient graph on first call."""

    def __init__(self, fn, grad_position, weights, has_aux, return_value, sens_param=False,
                 all_positions=False, return_ids=False):
        self._fn = fn
        self._return_ids = return_ids
        self._grad_position = grad_position
        self._weights = _weights_list(weights)
        self._has_aux = has_aux
        self._return_value = return_value
        self._sens_param = sens_param
        self._all_positions = all_positions
        self._compiled = {}
        self._recorded = {}  # PYNATIVE_MODE: (number of inputs, positions) -> RecordedGrad
        self._binder = None  # GRAPH_MODE: completes calls with fn's defaults
        self._graph_fallback = set()  # PYNATIVE_MODE keys whose fn takes gradients itself

    def __call__(self, *args):
        result = self._call(args)
        n = len(args) - (1 if self._sens_param else 0)
        if any(_is_record(a) for a in args[:n]):
            result = self._records_back(result, args[:n])
        return self._with_ids(result, n) if self._return_ids else result

    def _records_back(self, result, args):
        """The gradient for a record argument (a CSRTensor, a jit_class object) as a record of its
        class, as MindSpore returns: its tensor fields hold their gradients (a field without one,
        such as a CSRTensor's indices, keeps the argument's value), the others the argument's."""
        if self._all_positions:
            positions, as_tuple = list(range(len(args))), True
        else:
            positions, as_tuple = _positions(self._grad_position, len(args))
        if not positions:
            return result
        value = aux = None
        if self._return_value:
            value, result = result
        elif self._has_aux:
            result, aux = result
        pos_part = result[0] if self._weights is not None else result
        single = not as_tuple and len(positions) == 1
        grads = [pos_part] if single else list(pos_part)
        grads = [_record_gradient(args[p], g) if _is_record(args[p]) else g for p, g in zip(positions, grads)]
        pos_part = grads[0] if single else tuple(grads)
        result = (pos_part, result[1]) if self._weights is not None else pos_part
        if self._return_value:
            return value, result
        return (result, aux) if self._has_aux else result

    def _with_ids(self, result, n):
        """return_ids=True: each gradient paired with its input position or its Parameter's name."""
        if self._all_positions:
            positions, as_tuple = list(range(n)), True
        else:
            positions, as_tuple = _positions(self._grad_position, n)
        value = aux = None
        if self._return_value:
            value, result = result
        elif self._has_aux:
            result, aux = result
        def pos_ids(g):
            if not as_tuple and len(positions) == 1:
                return (positions[0], g)
            return tuple((p, gi) for p, gi in zip(positions, g))
        if self._weights is not None:
            w_ids = tuple((w.name, gw) for w, gw in zip(self._weights, result if not positions else result[1]))
            grads = w_ids if not positions else (pos_ids(result[0]), w_ids)
        else:
            grads = pos_ids(result)
        if self._return_value:
            return value, grads
        return (grads, aux) if self._has_aux else grads

    def _call(self, args):
        n = len(args) - (1 if self._sens_param else 0)
        if self._all_positions:
            positions, as_tuple = list(range(n)), True
        else:
            positions, as_tuple = _positions(self._grad_position, n)
        if not positions and self._weights is None:
            raise ValueError("grad: grad_position is None and no weights given: nothing to differentiate")
        key = (n, tuple(positions))
        if _holds_vmap(self._fn):  # grad(vmap(f)): one chain of transforms, both modes
            return vmap.call_chain(self, args)
        if isinstance(self._fn, _GradFunction):
            return self._nested(key, args)
        if any(_is_record(a) for a in args[:n]):
            self._graph_fallback.add(key)  # the eager recording takes tensors only: graph mode's transform
        if context.get_context("mode") == context.PYNATIVE_MODE and key not in self._graph_fallback:
            # Run fn eagerly while recording its ops; differentiate the recording.
            r = self._recorded.get(key)
            if r is None:
                r = self._recorded[key] = pynative_grad.RecordedGrad(
                    positions, as_tuple, self._weights, self._return_value, self._has_aux,
                    self._sens_param)
            try:
                return r(self._fn, *args)
            except pynative_grad.NestedGrad:
                if pynative_grad.recording():
                    raise  # an outer gradient takes this one into its graph
                # fn takes a gradient itself (a second derivative): the recording cannot nest, so
                # this gradient is taken by graph mode's transform, which differentiates the inner
                # gradient's graph (fn must then be in graph mode's subset).
                self._graph_fallback.add(key)
        g = self._compiled.get(key)
        if g is None:
            g = self._compiled[key] = _mycel.graph.grad(
                self._fn, positions, as_tuple, self._weights, self._return_value, self._has_aux,
                self._sens_param)
        if self._binder is None:
            self._binder = api.ArgBinder(self._fn)
        # Defaults of parameters not passed fill in after the given arguments (positions unchanged).
        if self._sens_param:
            return g(*self._binder.bind(args[:-1], {}), args[-1])
        return g(*self._binder.bind(args, {}))

    def _nested(self, key, args):
        # grad of grad: one graph whose body calls this gradient function; the frontend turns the
        # call into in-graph gradients (expanded inner first, then differentiated again).
        g = self._compiled.get(key)
        if g is None:
            g = self._compiled[key] = _mycel.graph.compile(_nested_entry(self))
        return g(tuple(args))

    def _mycel_grad_spec(self):
        """What graph mode needs to take this gradient inside a graph (see frontend object_node)."""
        positions, as_tuple = _positions(self._grad_position, 0)
        return {"positions": positions, "positions_tuple": as_tuple, "all_positions": self._all_positions,
                "with_weights": self._weights is not None, "return_value": self._return_value,
                "has_aux": self._has_aux, "sens_param": self._sens_param,
                "fn": self._fn, "weights": tuple(self._weights) if self._weights is not None else None}


def _holds_vmap(fn):
    while isinstance(fn, _GradFunction):
        fn = fn._fn
    return isinstance(fn, vmap._VmapFunction)


def _nested_entry(outer):
    def nested_grad(args):  # the arguments come as one tuple (a top-level graph has no *args)
        return outer(*args)
    return nested_grad


def grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """The gradient function of `fn` w.r.t. input `grad_position` (int, tuple, or None) and/or
    `weights` (Parameters). Returns grads (a tuple for a tuple position), or
    (input grads, weight grads) when both are asked for; with has_aux, fn returns (out, aux...),
    only out is differentiated, and the result is (grads, aux). With return_ids, each gradient
    comes as (position, grad) or (Parameter name, grad), for get_grad to look up."""
    return _GradFunction(fn, grad_position, weights, has_aux, return_value=False, return_ids=return_ids)


def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """Like grad, returning (fn's value, grads)."""
    return _GradFunction(fn, grad_position, weights, has_aux, return_value=True, return_ids=return_ids)


def get_grad(gradients, identifier):
    """The gradient for `identifier` (an input position, or a Parameter or its name) out of the
    result of a grad / value_and_grad with return_ids=True."""
    from mycel.common.parameter import Parameter
    key = identifier.name if isinstance(identifier, Parameter) else identifier
    if not isinstance(key, (int, str)) or isinstance(key, bool):
        raise TypeError(f"get_grad: identifier must be an input position (int) or a Parameter, got "
                        f"{type(identifier).__name__}")
    found = []

    def walk(x):
        if isinstance(x, tuple):
            if len(x) == 2 and isinstance(x[0], (int, str)) and not isinstance(x[0], bool) and \
                    not isinstance(x[1], (tuple, int, str)):
                if x[0] == key:
                    found.append(x[1])
                return
            for item in x:
                walk(item)
    walk(gradients)
    if not found:
        raise ValueError(f"get_grad: no gradient for {identifier!r} in these gradients (were they computed "
                         "with return_ids=True, for that position or Parameter?)")
    return found[0]


# Called in parsed code, the frontend makes these transforms in the graph (frontend transform_call).
grad._mycel_transform = "grad"
value_and_grad._mycel_transform = "value_and_grad"


class GradOperation:
    """MindSpore's GradOperation: GradOperation(get_all, get_by_list, sens_param)(fn[, weights])
    gives a function returning the gradient of the first input (default), of all inputs
    (get_all), of the weights (get_by_list) or both ((inputs, weights)); with sens_param the last
    argument is the output sensitivity instead of ones."""

    def __init__(self, get_all=False, get_by_list=False, sens_param=False):
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def _mycel_grad_spec(self):
        """The flags graph mode needs for `self(fn, weights)` inside a graph."""
        by_list_only = self.get_by_list and not self.get_all
        return {"positions": [] if by_list_only else [0], "positions_tuple": False,
                "all_positions": self.get_all, "with_weights": self.get_by_list, "return_value": False,
                "has_aux": False, "sens_param": self.sens_param}

    def __call__(self, fn, weights=None):
        if self.get_by_list and weights is None:
            raise TypeError("GradOperation(get_by_list=True) needs the weights: grad_op(fn, weights)")
        position = None if (self.get_by_list and not self.get_all) else 0
        return _GradFunction(fn, position, weights if self.get_by_list else None, False,
                             return_value=False, sens_param=self.sens_param, all_positions=self.get_all)
