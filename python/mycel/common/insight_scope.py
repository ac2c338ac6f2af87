"""Cell scopes for the profiler and the debugger. While one of them runs (ACTIVE), Cell.__call__
goes through call(): it names the Cell's scope MindSpore's way ("Default/conv1-Conv2d"), tags the
eager launches inside it with that scope (the C++ profiler keeps a per-thread scope stack), and
remembers the outermost Cells called, whose weights and construct lines name the scopes of
compiled instructions afterwards. Off, Cell.__call__ pays one module attribute test (on, it
calls itself once more through call())."""
import threading
import weakref

from mycel import _mycel

ACTIVE = False
_users = 0
_lock = threading.Lock()
_local = threading.local()
tops = weakref.WeakValueDictionary()  # id -> outermost Cell called while active
classes = {}  # scope -> the Cell's class (the step trace finds optimizers by it)
step_listeners = []  # debuggers' step-end callbacks, for steps no compiled run marks (eager)
gradient_listeners = []  # debuggers' callbacks for the gradients an eager optimizer receives


def acquire():
    """A profiler or debugger starts: Cell calls record scopes until the last one releases."""
    global ACTIVE, _users
    with _lock:
        if _users == 0:  # a new session: the Cells of earlier ones may share weight names
            tops.clear()
            classes.clear()
        _users += 1
        ACTIVE = True


def release():
    global ACTIVE, _users
    with _lock:
        _users = max(0, _users - 1)
        ACTIVE = _users > 0


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def current():
    """The innermost Cell scope of this thread, or None outside every Cell."""
    s = _stack()
    return s[-1][1] if s else None


def _child_scope(parent_cell, parent_scope, cell):
    for name, child in parent_cell.__dict__.get("_cells", {}).items():
        if child is cell:
            return f"{parent_scope}/{name}-{type(cell).__name__}"
    return f"{parent_scope}/{type(cell).__name__}"


def entering(cell):
    """True for a Cell call that call() has not wrapped yet (False for call()'s own re-entry)."""
    if getattr(_local, "reentry", None) is cell:
        _local.reentry = None
        return False
    return True


def call(cell, cell_call, inputs, kwargs):
    """Runs cell_call(cell, *inputs, **kwargs) (Cell.__call__, which lets this re-entry through)
    inside the Cell's scope."""
    stack = _stack()
    if stack:
        scope = _child_scope(stack[-1][0], stack[-1][1], cell)
    else:
        scope = "Default"
        tops[id(cell)] = cell
    classes.setdefault(scope, type(cell))
    stack.append((cell, scope))
    _mycel.insight.profiler_push_scope(scope)
    try:
        _local.reentry = cell
        return cell_call(cell, *inputs, **kwargs)
    finally:
        _local.reentry = None
        _mycel.insight.profiler_pop_scope()
        stack.pop()


def scopes_under(cell, base="Default"):
    """{attribute path: scope} of `cell` (whose scope is `base`) and of every Cell under it, named
    as call() names them ("layers.1.fc" -> "<base>/layers-CellList/1-Block/fc-Dense")."""
    scopes = {"": base}
    for name, c in cell.cells_and_names():
        if name:
            parent, _, leaf = name.rpartition(".")
            scopes[name] = f"{scopes.get(parent, base)}/{leaf}-{type(c).__name__}"
    return scopes


def cell_paths():
    """(scope, cell) of every Cell under the outermost Cells called while active."""
    out = []
    for top in list(tops.values()):
        scopes = scopes_under(top)
        out.extend((scopes[name], c) for name, c in top.cells_and_names())
    for scope, c in out:
        classes.setdefault(scope, type(c))
    return out


def step_end():
    """An eager training step ended (Model.train): the debuggers compare weights, count steps."""
    for f in list(step_listeners):
        f()


def gradients(optimizer, grads):
    """An eager optimizer got its gradients (one per parameter, in order)."""
    for f in list(gradient_listeners):
        f(optimizer, grads)
