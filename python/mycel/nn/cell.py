"""Cell: a model or layer. `construct` is the forward computation; calling the Cell runs it
(eagerly, or compiled in GRAPH_MODE). Parameters and sub-Cells assigned as attributes are
registered, so `parameters_and_names()` walks the tree with hierarchical names, as in MindSpore:
a Parameter's `name` follows its attribute path ("conv1.weight") unless auto_prefix is off."""
import weakref
from collections import OrderedDict

from mycel import _mycel, context
from mycel.common import dtype as _mstype
from mycel.common import api as _api
from mycel.common import insight_scope as _insight_scope
from mycel.common.parameter import Parameter


# Graph mode reads a Cell's sub-Cells and plain attributes when it compiles (the attributes fold
# into the program as constants), so an assignment that later changes one must not leave a stale
# program running. Each such assignment bumps the Cell's _structure_version and this epoch; a
# compiled Cell whose epoch is behind rechecks its tree's versions (a walk, only then) and
# recompiles if any moved. Parameters and Tensors written in place change no structure.
_structure_epoch = [0]
_MISSING = object()


def _same_constant(old, new):
    if old is new:
        return True
    if type(old) is not type(new) or not isinstance(new, (bool, int, float, str, bytes, tuple, type(None))):
        return False
    try:
        return bool(old == new)
    except Exception:  # noqa: BLE001 - a tuple holding arrays: not comparable, so changed
        return False


def _structure_changed(cell):
    object.__setattr__(cell, "_structure_version", cell.__dict__.get("_structure_version", 0) + 1)
    _structure_epoch[0] += 1


class _shadowable:
    """A method that a sub-Cell or Parameter of the same name shadows, as an instance attribute
    shadows a method: `forward` is an alias for PyTorch users, and MindSpore code often keeps a
    wrapped network as `self.forward = net` (sub-Cells live in _cells, which normal attribute
    lookup would only reach after the method)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.fn
        d = obj.__dict__
        if self.name in d.get("_cells", ()) or self.name in d.get("_params", ()):
            return obj.__getattr__(self.name)
        return self.fn.__get__(obj, objtype)


class _ClassName:
    """Cell.cls_name, the class's name (MindSpore's attribute; user Cells' error messages use it).
    A non-data descriptor, so a Cell that sets its own cls_name keeps it."""

    def __get__(self, obj, cls):
        return cls.__name__ if obj is None else type(obj).__name__


class Cell:
    """Base class of layers and models."""

    def __new__(cls, *args, **kwargs):
        if kwargs:
            _check_keywords(cls, kwargs)  # nn.Dense(..., has_bais=True): "did you mean 'has_bias'?"
        return object.__new__(cls)

    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "_auto_prefix", auto_prefix)
        object.__setattr__(self, "_float_dtype", None)
        object.__setattr__(self, "requires_grad", False)

    def construct(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.construct is not defined")

    def __call__(self, *inputs, **kwargs):
        if _insight_scope.ACTIVE and _insight_scope.entering(self):
            # a profiler or debugger runs: the call again, inside this Cell's scope
            return _insight_scope.call(self, Cell.__call__, inputs, kwargs)
        float_dtype = self.__dict__.get("_float_dtype")
        if float_dtype is not None:
            inputs = tuple(_cast_float(x, float_dtype) for x in inputs)
            kwargs = {k: _cast_float(v, float_dtype) for k, v in kwargs.items()}
        if context.get_context("mode") != context.GRAPH_MODE:
            if not kwargs and "bprop" in _class_attrs(type(self)) and _mycel.pynative.recording():
                return self._call_recorded_with_bprop(inputs)
            if float_dtype is None and self.__dict__.get("_output_dtype") is None:
                return self.construct(*inputs, **kwargs)
            return self._construct_in_dtype(inputs, kwargs)
        return self._graph_program()(*inputs, **kwargs)

    def _graph_program(self):
        """This Cell's compiled form (graph mode parses construct once and compiles per input
        signature), made anew if a sub-Cell, Parameter or attribute changed since it was made."""
        compiled = self.__dict__.get("_compiled")
        if compiled is not None and self.__dict__.get("_compiled_epoch") != _structure_epoch[0]:
            compiled = self._compiled_if_current()
        if compiled is None:
            compiled = _api._Compiled(self, self.__dict__.get("_input_spec"))
            object.__setattr__(self, "_compiled", compiled)
            object.__setattr__(self, "_compiled_versions", self._structure_versions())
            object.__setattr__(self, "_compiled_epoch", _structure_epoch[0])
        return compiled

    def _structure_versions(self):
        return [(cell, cell.__dict__.get("_structure_version", 0)) for _, cell in self.cells_and_names()]

    def _compiled_if_current(self):
        """The compiled program if no Cell of the tree changed a sub-Cell or attribute since it
        was compiled (then the epoch is brought up to date); else None."""
        old, now = self.__dict__.get("_compiled_versions"), self._structure_versions()
        if old is None or len(old) != len(now) or \
                any(a is not b or va != vb for (a, va), (b, vb) in zip(old, now)):
            object.__setattr__(self, "_compiled", None)
            return None
        object.__setattr__(self, "_compiled_epoch", _structure_epoch[0])
        return self.__dict__["_compiled"]

    def _construct_in_dtype(self, inputs, kwargs):
        # Eager to_float / mixed precision: while construct runs, its trainable floating
        # Parameters read as self.<name> are cast to the Cell's dtype (__getattr__), as graph
        # mode's parser does; the cast is recorded, so gradients reach the float32 Parameter.
        d = self.__dict__
        depth = d.get("_in_construct", 0)
        object.__setattr__(self, "_in_construct", depth + 1)
        try:
            out = self.construct(*inputs, **kwargs)
        finally:
            object.__setattr__(self, "_in_construct", depth)
        out_dtype = d.get("_output_dtype")
        return out if out_dtype is None else _cast_float(out, out_dtype)

    def _call_recorded_with_bprop(self, inputs):
        # Inside an eager grad: one call of the compiled construct, whose gradient is this Cell's
        # own bprop (the recorder differentiates the call like a @jit function).
        out = self._graph_program()(*inputs)
        parsed = self.__dict__.get("_parsed_for_grad")
        if parsed is None:
            parsed = _mycel.frontend.parse(self)
            object.__setattr__(self, "_parsed_for_grad", parsed)
        _mycel.pynative.record_jit_call(parsed, tuple(inputs), out)
        return out

    @_shadowable
    def forward(self, *inputs, **kwargs):
        """PyTorch-style alias of calling the Cell."""
        return self(*inputs, **kwargs)

    cls_name = _ClassName()

    def set_inputs(self, *inputs):
        """Fixes graph mode's input signature; Tensor(shape=[None, ...]) dims accept any size,
        so one compiled Program serves every batch size."""
        object.__setattr__(self, "_input_spec", tuple(inputs))
        object.__setattr__(self, "_compiled", None)

    def compile(self, *inputs, **kwargs):
        """Graph mode: compiles construct for these inputs without running it, so the first call
        finds its Program ready (MindSpore's Cell.compile). PyNative: nothing to do."""
        if context.get_context("mode") == context.GRAPH_MODE:
            compiled = self._graph_program()
            compiled.graph.stats(*compiled.bind(inputs, kwargs))

    def compile_and_run(self, *inputs, **kwargs):
        """MindSpore's name for calling the Cell."""
        return self(*inputs, **kwargs)

    def compile_cache_clear(self):
        """Drops the compiled graphs (assignments to sub-Cells, Parameters and attributes
        already do, see _graph_program; this is for changes it cannot see, e.g. a mutated list)."""
        object.__setattr__(self, "_compiled", None)

    # Attribute registration: Parameters and Cells live in their own tables.
    def __setattr__(self, name, value):
        params = self.__dict__.get("_params")
        cells = self.__dict__.get("_cells")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("call Cell.__init__ before assigning Parameters")
            if value.name is None:
                value.name = name
            if params.get(name) is not value:
                _structure_changed(self)
            cells.pop(name, None)
            self.__dict__.pop(name, None)
            params[name] = value
        elif isinstance(value, Cell):
            if cells is None:
                raise AttributeError("call Cell.__init__ before assigning sub-Cells")
            params.pop(name, None)
            self.__dict__.pop(name, None)
            # A Cell registered twice (an alias) keeps the names of its first attribute.
            rename = self._auto_prefix and not any(c is value for c in cells.values())
            if cells.get(name) is not value:
                _structure_changed(self)
            cells[name] = value
            if rename:
                value.update_parameters_name(name + ".")
        else:
            if params is not None and name in params and isinstance(value, _mycel.Tensor):
                # self.w = tensor writes the Parameter in place, as graph mode's assign does.
                _assign_param(params[name], value)
                return
            if params is not None and name in params:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} to Parameter '{name}'")
                del params[name]
            if cells is not None and name in cells:
                del cells[name]
                _structure_changed(self)
            elif not _same_constant(self.__dict__.get(name, _MISSING), value):
                _structure_changed(self)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_params", ()):
            p = d["_params"][name]
            if d.get("_in_construct") and d.get("_float_dtype") is not None and p is not None \
                    and p.requires_grad:
                return _cast_float(p, d["_float_dtype"])
            return p
        if name in d.get("_cells", ()):
            return d["_cells"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._params:
            del self._params[name]
        elif name in self._cells:
            del self._cells[name]
        else:
            object.__delattr__(self, name)

    def insert_param_to_cell(self, param_name, param, check_name=True):
        """Registers `param` under `param_name` (None removes it)."""
        if not isinstance(param_name, str) or not param_name:
            raise KeyError(f"insert_param_to_cell: param_name must be a non-empty str, got {param_name!r}")
        if check_name and "." in param_name:
            raise KeyError(f"insert_param_to_cell: param_name {param_name!r} must not contain '.'")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"insert_param_to_cell: param must be a Parameter or None, got {type(param).__name__}")
        if param_name in self.__dict__ or param_name in self._cells:
            raise KeyError(f"insert_param_to_cell: attribute {param_name!r} already exists and is not a Parameter")
        if param is None:
            self._params[param_name] = None
        else:
            setattr(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        """Registers `child_cell` under `child_name`."""
        if not isinstance(child_name, str) or not child_name or "." in child_name:
            raise KeyError(f"insert_child_to_cell: child_name must be a non-empty str without '.', got {child_name!r}")
        if child_cell is not None and not isinstance(child_cell, Cell):
            raise TypeError(f"insert_child_to_cell: child_cell must be a Cell or None, got {type(child_cell).__name__}")
        if child_cell is None:
            self._cells[child_name] = None
        else:
            setattr(self, child_name, child_cell)

    def update_parameters_name(self, prefix="", recurse=True):
        """Renames every Parameter to `prefix` + its path in this Cell (called when this Cell
        becomes the child `prefix` of another, so names read "backbone.conv1.weight")."""
        for name, p in self.parameters_and_names(expand=recurse):
            p.name = prefix + name

    def cells_and_names(self, cells=None, name_prefix=""):
        """(name, cell) for this Cell and every Cell below it, each once."""
        seen = set() if cells is None else cells
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._cells.items():
            if cell is not None:
                yield from cell.cells_and_names(seen, f"{name_prefix}.{name}" if name_prefix else name)

    def name_cells(self):
        """The direct sub-Cells by attribute name."""
        return OrderedDict((k, v) for k, v in self._cells.items() if v is not None)

    def cells(self):
        """The direct sub-Cells."""
        return list(self.name_cells().values())

    def parameters_and_names(self, name_prefix="", expand=True):
        """(hierarchical name, Parameter) for every Parameter of the tree, each once."""
        seen = set()
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        for prefix, cell in cells:
            for name, p in cell._params.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{prefix}.{name}" if prefix else name), p

    def get_parameters(self, expand=True):
        """Every Parameter of the tree."""
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse=True):
        """The Parameters with requires_grad=True, in registration order."""
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        """The Parameters with requires_grad=False."""
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def parameters_dict(self, recurse=True):
        """OrderedDict of hierarchical name -> Parameter."""
        return OrderedDict(self.parameters_and_names(expand=recurse))

    def set_train(self, mode=True):
        """Sets training mode on this Cell and every sub-Cell. Graph mode folds `self.training`
        as a constant, so changing it drops the compiled graphs (this Cell's too, which inlines
        the changed ones); a call that changes nothing keeps them: Model.train calls it on every
        call, and re-parsing a training step took ~40 ms of each epoch."""
        mode = bool(mode)
        changed = False
        for _, cell in self.cells_and_names():
            if cell.training != mode:
                object.__setattr__(cell, "training", mode)
                object.__setattr__(cell, "_compiled", None)
                changed = True
        if changed:
            object.__setattr__(self, "_compiled", None)
        return self

    def set_jit_config(self, jit_config):
        """Records compile options (a JitConfig or dict; see common/jit_config.py)."""
        from mycel.common.jit_config import check_jit_config
        object.__setattr__(self, "jit_config", check_jit_config(f"{type(self).__name__}.set_jit_config", jit_config))
        return self

    def set_grad(self, requires_grad=True):
        """Marks the Cell as one whose gradients will be taken (MindSpore's flag)."""
        object.__setattr__(self, "requires_grad", bool(requires_grad))
        return self

    def to_float(self, dst_type):
        """Runs this Cell and its sub-Cells in `dst_type`: floating Tensor inputs are cast to it
        when the Cell is called (MindSpore's to_float; Parameters keep their dtype)."""
        if getattr(dst_type, "name", str(dst_type)) not in ("float16", "bfloat16", "float32", "float64"):
            raise ValueError(f"to_float: dst_type must be a float dtype, got {dst_type!r}")
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "_float_dtype", dst_type)
            object.__setattr__(cell, "_compiled", None)
        return self

    def shard(self, in_strategy, out_strategy=None, parameter_plan=None, device="CPU", level=0):
        """Semi-auto / auto parallel (MindSpore's Cell.shard): the layouts this Cell's inputs are
        consumed with (in_strategy: one tuple of split counts per input of construct, or None to
        leave that input alone), the layouts of what it returns (out_strategy: one per returned
        value) and of some of its weights (parameter_plan: {name: strategy}, a name being the
        weight's attribute path from this Cell, "self." optional, or its Parameter name). In
        GRAPH_MODE under SEMI_AUTO_PARALLEL or AUTO_PARALLEL these become shard_hint nodes, like
        Primitive.shard's: an op reading a hinted value directly takes that split for it, the
        other ops follow by propagation (or the search). Takes effect on the next compile; device
        and level are accepted for MindSpore's signature. Returns self."""
        from mycel.ops.operations import _check_strategy
        name = f"{type(self).__name__}"
        ins = _check_strategy(name, "in_strategy", in_strategy)
        outs = None if out_strategy is None else _check_strategy(name, "out_strategy", out_strategy)
        plans = {}  # owning Cell -> {attribute: strategy}
        if parameter_plan is not None:
            if not isinstance(parameter_plan, dict):
                raise TypeError(f"{name}.shard: parameter_plan must be a dict {{name: strategy}}, got "
                                f"{type(parameter_plan).__name__}")
            for key, strategy in parameter_plan.items():
                owner, attr = self._weight_owner(name, key)
                dims = _check_strategy(name, f"parameter_plan[{key!r}]", (strategy,))[0]
                ndim = len(getattr(owner, attr).shape)
                if dims is None or len(dims) != ndim:
                    raise ValueError(f"{name}.shard: parameter_plan[{key!r}] must give one split count per "
                                     f"dim of the weight ({ndim}), got {strategy!r}")
                plans.setdefault(id(owner), (owner, {}))[1][attr] = dims
        object.__setattr__(self, "_shard_in_strategy", ins)
        object.__setattr__(self, "_shard_out_strategy", outs)
        for owner, plan in plans.values():
            object.__setattr__(owner, "_shard_param_plan", dict(owner.__dict__.get("_shard_param_plan") or {}, **plan))
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "_compiled", None)
        return self

    def _weight_owner(self, name, key):
        """(the Cell holding weight `key`, its attribute name) for Cell.shard's parameter_plan."""
        if not isinstance(key, str):
            raise TypeError(f"{name}.shard: parameter_plan keys must be str, got {key!r}")
        path = key[5:] if key.startswith("self.") else key
        owner, parts = self, path.split(".")
        for part in parts[:-1]:
            owner = getattr(owner, part, None)
            if not isinstance(owner, Cell):
                break
        if isinstance(owner, Cell) and isinstance(owner.__dict__.get("_params", {}).get(parts[-1]), Parameter):
            return owner, parts[-1]
        for prefix, cell in self.cells_and_names():
            for attr, p in cell.__dict__.get("_params", {}).items():
                if p is not None and p.name == key:
                    return cell, attr
        raise ValueError(f"{name}.shard: parameter_plan names no weight of this Cell: {key!r} (give its "
                         f"attribute path, e.g. 'self.dense.weight', or its Parameter name)")

    def apply(self, fn):
        """Calls fn on every sub-Cell (children first) and then on this Cell."""
        for cell in self.cells():
            cell.apply(fn)
        fn(self)
        return self

    def summary(self, *example_inputs):
        """Prints and returns a table of the layers: output shapes (from one eager run on
        example_inputs, in either mode), parameter counts, trainable flags, totals, memory."""
        from mycel.nn.summary import summary  # nn.summary imports context, as Cell does
        text = summary(self, *example_inputs)
        print(text)
        return text

    def extend_repr(self):
        """Extra text shown inside repr(); layers override it with their settings."""
        return ""

    def __repr__(self):
        extra = self.extend_repr()
        lines = [f"{type(self).__name__}<{extra}"]
        for name, cell in self._cells.items():
            lines.append(f"  ({name}): " + repr(cell).replace("\n", "\n  "))
        return "\n".join(lines) + ">" if len(lines) > 1 else f"{type(self).__name__}<{extra}>"


# Cell class -> names its __init__ accepts by keyword (None: it takes **kwargs); weak, so classes
# made on the fly (in tests, in functions) are not kept alive.
_INIT_KEYWORDS = weakref.WeakKeyDictionary()


def _check_keywords(cls, kwargs):
    """Raises Python's TypeError for an unknown constructor keyword, with the closest valid name."""
    names = _INIT_KEYWORDS.get(cls, ())
    if names == ():
        import inspect
        try:
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        except (TypeError, ValueError):  # no signature to check against: leave it to Python
            params = [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
        names = None if any(p.kind == p.VAR_KEYWORD for p in params) else [
            p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        _INIT_KEYWORDS[cls] = names
    if names is None:
        return
    for key in kwargs:
        if key not in names:
            from mycel.common.suggest import did_you_mean
            raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument '{key}'"
                            + did_you_mean(key, names))


def _class_attrs(cls):
    """Names defined by cls and its bases below Cell (a user's bprop, not Cell's)."""
    names = set()
    for k in cls.__mro__:
        if k is Cell:
            break
        names.update(k.__dict__)
    return names


def _cast_float(x, dtype):
    """x cast to dtype when it is a floating Tensor; anything else unchanged."""
    from mycel import _mycel
    if isinstance(x, _mycel.Tensor) and x.dtype.name in ("float16", "bfloat16", "float32", "float64") \
            and x.dtype != dtype:
        return _mycel.ops.cast(x, dtype)
    return x


_FLOAT_DTYPES = (_mstype.float16, _mstype.bfloat16, _mstype.float32, _mstype.float64)


def _assign_param(param, value):
    from mycel.ops.effects import assign  # mycel.ops imports nn
    assign(param, value)


def _cast_float_input(x, dtype):
    """Graph mode's _cast_float: the frontend calls it on each input of a Cell with to_float set,
    on entry to its construct (Parser::parse_function), on the trainable Parameters such a Cell
    reads (Parser::cast_cell_weight) and on the return values of a Cell with _output_dtype.
    Parsed like user code; the isinstance and dtype tests are compile-time constants, so each
    call folds to one cast or to nothing."""
    if isinstance(x, _mycel.Tensor) and x.dtype in _FLOAT_DTYPES and x.dtype not in (dtype,):
        return _mycel.ops.cast(x, dtype)
    return x  # scalars, None (an optional mask left out), sequences: unchanged


class CellList(Cell):
    """A list of Cells, registered as sub-Cells "0", "1", ...; iterate over it in construct."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if args:
            self.extend(args[0])

    def _renumber(self, cells):
        for c in cells:
            if not isinstance(c, Cell):
                raise TypeError(f"CellList items must be Cells, got {type(c).__name__}")
        self._cells.clear()
        for i, c in enumerate(cells):
            self.insert_child_to_cell(str(i), c)

    def __getitem__(self, index):
        items = list(self._cells.values())
        if isinstance(index, slice):
            return CellList(items[index])
        return items[index]

    def __setitem__(self, index, cell):
        items = list(self._cells.values())
        items[index] = cell
        self._renumber(items)

    def __delitem__(self, index):
        items = list(self._cells.values())
        del items[index]
        self._renumber(items)

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(list(self._cells.values()))

    def append(self, cell):
        self._renumber(list(self._cells.values()) + [cell])
        return self

    def extend(self, cells):
        self._renumber(list(self._cells.values()) + list(cells))
        return self

    def insert(self, index, cell):
        items = list(self._cells.values())
        items.insert(index, cell)
        self._renumber(items)

    def __iadd__(self, cells):
        """`cell_list += [a, b]` (or another CellList): extend, as MindSpore's CellList does."""
        return self.extend(cells)

    def construct(self, *inputs):
        raise NotImplementedError("CellList is a container; iterate over it in a construct")


class SequentialCell(Cell):
    """Runs its Cells one after another: the output of each is the input of the next."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self.insert_child_to_cell(name, cell)
        else:
            cells = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple, CellList)) else args
            for i, cell in enumerate(cells):
                if not isinstance(cell, Cell):
                    raise TypeError(f"SequentialCell items must be Cells, got {type(cell).__name__}")
                self.insert_child_to_cell(str(i), cell)

    @property
    def cell_list(self):
        return list(self._cells.values())

    def __getitem__(self, index):
        items = list(self._cells.values())
        if isinstance(index, slice):
            return SequentialCell(items[index])
        return items[index]

    def __setitem__(self, index, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"SequentialCell items must be Cells, got {type(cell).__name__}")
        key = list(self._cells.keys())[index]
        self.insert_child_to_cell(key, cell)

    def __delitem__(self, index):
        items = list(self._cells.values())
        del items[index]
        self._renumber(items)

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(list(self._cells.values()))

    def _renumber(self, cells):
        self._cells.clear()
        for i, c in enumerate(cells):
            self.insert_child_to_cell(str(i), c)

    def append(self, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"SequentialCell items must be Cells, got {type(cell).__name__}")
        self.insert_child_to_cell(str(len(self._cells)), cell)
        return self

    def extend(self, cells):
        for c in cells:
            self.append(c)
        return self

    def insert(self, index, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"SequentialCell items must be Cells, got {type(cell).__name__}")
        items = list(self._cells.values())
        items.insert(index, cell)
        self._renumber(items)

    def construct(self, input_data):
        for cell in self.cell_list:
            input_data = cell(input_data)
        return input_data
