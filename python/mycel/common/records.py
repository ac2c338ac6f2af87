"""Records: objects that graph-mode code builds at run time. `jit_class` (MindSpore's
`@ms.jit_class`) marks a class whose instances compiled code may create (its __init__ is parsed:
each `self.field = value` makes a field), read (fields, properties), call methods of, pass to
and return from compiled functions. MindSpore's sparse containers (CSRTensor, COOTensor,
RowTensor) are record classes too. In the graph a record is the tuple of its run-time fields,
tagged with its class at compile time (docs/graph_mode_internals.md, "Records")."""

_CLASSES = []  # every record class, for the method names the parser must route (graph_syntax)


def register(cls):
    """Marks cls as a record class (graph mode may build its instances at run time)."""
    cls._mycel_record = True
    if cls not in _CLASSES:
        _CLASSES.append(cls)
    return cls


def jit_class(cls):
    """Decorator: instances of cls may be created and used inside graph-mode code (MindSpore's
    `jit_class`). Fields are the attributes __init__ sets on self; methods and properties are
    parsed like user code with self bound to the record. Fields are set only in __init__."""
    if not isinstance(cls, type):
        raise TypeError(f"jit_class: expects a class, got {type(cls).__name__}")
    from mycel.nn.cell import Cell
    if issubclass(cls, Cell):
        raise TypeError(f"jit_class: {cls.__name__} is a Cell; Cells are compiled as they are and "
                        "need no decorator")
    return register(cls)


def method_names():
    """The names of the methods and properties of every record class."""
    out = set()
    for cls in _CLASSES:
        for klass in cls.__mro__[:-1]:
            out.update(n for n in vars(klass) if not (n.startswith("__") and n.endswith("__")))
    return out


def fields_of(obj):
    """A record object's fields as (name, value) pairs, in order (graph inputs and outputs)."""
    names = getattr(type(obj), "_mycel_fields", None)
    if names is None:
        return list(vars(obj).items())
    return [(n, getattr(obj, n)) for n in names]


def rebuild(cls, names, values):
    """The object of a record returned by compiled code (its __init__ is not run again: the
    record was checked where it was built)."""
    obj = cls.__new__(cls)
    for n, v in zip(names, values):
        object.__setattr__(obj, n, v)
    return obj
