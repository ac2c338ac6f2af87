// Internal state of the frontend, shared by its files: blocks (Braun-style SSA: one graph per
// straight-line region, phis as graph parameters), function scopes, and the Parser itself.
#pragma once
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mycel/frontend/frontend.h"

namespace mycel::frontend {

using ir::FuncGraph;
using ir::NodePtr;
using ir::Prim;
using ir::SourceLoc;

/// Source of one parsed Python function: file, the lines it spans, and the offsets that map the
/// dedented `ast` positions back to the file.
struct SourceInfo {
  std::shared_ptr<const std::string> file;
  int first_line = 1;  // file line of the source's first line
  int indent = 0;      // columns removed by dedenting
  std::vector<std::shared_ptr<const std::string>> lines;
};

struct Scope;

/// A straight-line region of code: one graph. How it is entered decides how a variable it does
/// not define is read: from its parent (a branch of a switch), through a phi parameter (a jump
/// target), or from the enclosing scope (a function's entry).
struct Block {
  enum Entry { kFunction, kSwitch, kJump };
  FuncGraph* g = nullptr;
  Block* parent = nullptr;  // the immediate dominator; g->parent() is parent->g
  Scope* scope = nullptr;
  Entry entry = kJump;
  bool sealed = false;      // all predecessors known
  bool terminated = false;  // output set (return, jump or switch)
  std::map<std::string, NodePtr> vars;
  std::vector<std::string> phis;                  // parameter i <-> variable phis[i]
  std::vector<std::pair<Block*, NodePtr>> jumps;  // calls of this block: (from, apply)
  std::vector<NodePtr> effects;                   // side effects (print) to keep alive
};

/// One Python function (or lambda) being parsed.
struct Scope {
  Scope* outer = nullptr;      // enclosing function for nested defs and lambdas
  Block* def_block = nullptr;  // where a nested def was defined
  nb::object globals;          // fn.__globals__ (inherited by nested defs)
  nb::dict closure;            // free variable name -> cell contents, of the Python function
  std::set<std::string> locals;
  std::set<std::string> assigned;   // locals the body assigns (parameters it never rebinds are not)
  std::set<std::string> dict_vars;  // locals assigned a dict (read back as dicts after phis)
  std::set<std::string> list_vars;  // locals changed by list methods (read back as sequences)
  Block* entry_block = nullptr;     // the function's first block, where its parameters are bound
  const SourceInfo* src = nullptr;
  std::string name;
  struct Loop {
    Block* header;
    Block* after;  // created at the first break
  };
  std::vector<Loop> loops;
  int hidden = 0;              // counter for hidden variables ($i, $i2, ...)
  nb::object output_dtype;     // a Cell's _output_dtype (amp O1): each return value is cast to it
  nb::object output_strategy;  // a Cell's Cell.shard out_strategy: each return value is hinted
  // The __init__ of a record class (records.cc): `self.f = v` writes the local "self.f", and the
  // function returns make_record(record_class, fields...) instead of None.
  nb::object record_class;
  std::string record_self;                 // the name of its self parameter
  std::vector<std::string> record_fields;  // in source order
  // Forwarding `f(*args, **kwargs)` (forwarding.cc): the function's *args and **kwargs names;
  // when it is parsed for one call's shape, the length of args and the keys of kwargs.
  std::string vararg_name, kwarg_name;
  std::optional<size_t> vararg_len;
  std::optional<std::vector<std::string>> kwarg_keys;
  bool wants_call_shape = false;  // it forwards them, and no call's shape was given
};

/// The shape of one call of a function that forwards its *args and **kwargs: how many extra
/// positional arguments *args collects, and the keywords **kwargs collects (in call order).
struct CallShape {
  size_t vararg_len = 0;
  std::vector<std::string> kwarg_keys;
  bool operator<(const CallShape& o) const {
    return std::tie(vararg_len, kwarg_keys) < std::tie(o.vararg_len, o.kwarg_keys);
  }
};

/// The signature of a parsed graph, for binding call arguments at parse time.
struct Signature {
  std::vector<std::string> names;  // graph parameters in order (positional, *args, keyword-only)
  size_t n_positional = 0;
  int vararg = -1;                // index of the *args parameter, or -1
  int kwarg = -1;                 // index of the **kwargs parameter (it takes a dict), or -1
  std::vector<NodePtr> defaults;  // per name; nullptr = required
};

class Parser {
 public:
  Parser();
  ParsedModule run(nb::handle obj);

  // ---- blocks and SSA (control.cc) ----
  Block* new_block(Scope* s, Block* parent, Block::Entry entry, const std::string& name);
  NodePtr read(Block* b, const std::string& name, const SourceLoc& loc);
  [[noreturn]] void unbound_error(const SourceLoc& loc, const std::string& name) const;
  void write(Block* b, const std::string& name, NodePtr v) { b->vars[name] = std::move(v); }
  NodePtr jump(Block* from, Block* to, const SourceLoc& loc);
  void seal(Block* b);
  /// True when evaluating n may assign or print (a call of a graph that does): such a value is
  /// kept as an effect of its block even if unused.
  bool has_effects(const NodePtr& n);
  /// A GradOperation or mycel.grad function object met in the source (resolve.cc).
  NodePtr grad_object(Block* b, nb::handle obj, const SourceLoc& loc);
  /// A vmap function (mycel.ops.vmap's result) as a value: vmap_op(fn).
  NodePtr vmap_object(Block* b, nb::handle obj, const SourceLoc& loc);
  /// mycel.grad / value_and_grad / ops.vmap called in parsed code (a function marked
  /// `_mycel_transform`): the transform of its function argument, made in the graph.
  NodePtr transform_call(Block* b, nb::handle fn, std::vector<NodePtr> args,
                         std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  /// fn itself, or a registry op function / primitive instance given as a function value (vmap's
  /// fn) wrapped in a graph of its required inputs (transforms need a graph to transform).
  NodePtr function_value(Block* b, NodePtr fn, const SourceLoc& loc);
  /// ops.vjp(fn, *inputs) in parsed code: (fn(*inputs), a vjp_fn graph nested in the caller).
  NodePtr vjp_call(Block* b, std::vector<NodePtr> args,
                   std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  /// Parses the Cell class's own bprop, if any, and attaches it to its construct graph g.
  void attach_bprop(FuncGraph* g, nb::handle cell, const std::string& name, const SourceLoc& loc);
  void finish(Block* b, NodePtr out);  // sets the output (with effects) and terminates
  /// Keeps n (a call that prints, assigns or raises) alive as an effect of b, once.
  void add_effect(Block* b, const NodePtr& n) {
    if (std::find(b->effects.begin(), b->effects.end(), n) == b->effects.end())
      b->effects.push_back(n);
  }
  NodePtr switch_call(Block* b, NodePtr cond, Block* t, Block* f, const SourceLoc& loc);

  // ---- statements (stmt.cc, control.cc) ----
  Block* stmts(Block* b, nb::handle body);  // returns the block to continue in (nullptr: ended)
  Block* stmt(Block* b, nb::handle s);
  void assign(Block* b, nb::handle target, NodePtr v);
  void assign_starred(Block* b, nb::handle target, NodePtr v, size_t star);
  Block* if_stmt(Block* b, nb::handle s);
  Block* while_stmt(Block* b, nb::handle s);
  Block* for_stmt(Block* b, nb::handle s);
  Block* loop_end(Block* exit, Block* after, nb::handle orelse, const SourceLoc& loc);
  /// An iterable of a `for` loop or a comprehension, read at parse time: a sequence value (tuple,
  /// list, CellList; indexed with tuple_getitem), or zip / enumerate of iterables, lowered without
  /// calling Python's zip: the loop counts over the shortest sequence.
  struct Iter {
    enum Kind { kSeq, kZip, kEnumerate } kind = kSeq;
    NodePtr seq;             // kSeq
    std::vector<Iter> subs;  // kZip: every argument; kEnumerate: the one argument
    NodePtr start;           // kEnumerate: the first index (nullptr: 0)
  };
  Iter iterable(Block* b, nb::handle it, NodePtr fn = nullptr);
  void iter_lens(Block* b, const Iter& it, std::vector<NodePtr>& lens, const SourceLoc& loc);
  NodePtr iter_item(Block* b, const Iter& it, NodePtr i, const SourceLoc& loc);
  int64_t iter_static_len(const Iter& it) const;
  NodePtr comprehension(Block* b, nb::handle e, Prim p);
  /// A comprehension as the nested function Python makes of it, called (comprehension.cc).
  NodePtr comprehension_loop(Block* b, nb::handle e, const char* name);
  NodePtr comprehension_loop(Block* b, nb::handle e, Prim p);
  /// dict(zip(keys, values)) and other dict(pairs) as a dict comprehension; null if not pairs.
  NodePtr dict_of_pairs(Block* b, nb::handle arg);
  Block* loop_jump(Block* b, nb::handle s, bool is_break);
  // ---- raise, assert, del (checks.cc) ----
  Block* raise_stmt(Block* b, nb::handle s);
  Block* assert_stmt(Block* b, nb::handle s);
  void del_target(Block* b, nb::handle target);
  /// Ends b with raise(exc): exc is an exception object or class; b's effects run before it.
  void finish_raise(Block* b, NodePtr exc, const SourceLoc& loc);
  NodePtr nested_def(Block* b, nb::handle def, bool is_lambda);

  // ---- expressions (expr.cc) ----
  NodePtr expr(Block* b, nb::handle e);
  NodePtr binop(Block* b, const std::string& op, NodePtr l, NodePtr r, const SourceLoc& loc);
  NodePtr compare(Block* b, nb::handle e);
  NodePtr boolop(Block* b, nb::handle e);
  NodePtr ifexp(Block* b, nb::handle e);
  NodePtr subscript(Block* b, nb::handle e);
  NodePtr fstring(Block* b, nb::handle e);
  /// One index tensor among the basic items of a tuple key (x[:, idx]): the tensor, and one
  /// letter per key item (i int, s slice, n None, e ..., a the tensor) to place its gather.
  struct KeyIndex {
    NodePtr index;
    std::string kinds;
  };
  std::vector<NodePtr> strided_key(Block* b, nb::handle key, NodePtr* index,
                                   KeyIndex* in_tuple = nullptr);
  /// The key as one Python object when every item is known at parse time and it needs numpy's
  /// advanced indexing (a bool mask, a list, several arrays); else null.
  nb::object constant_advanced_key(Block* b, nb::handle key);
  /// x[key] = v and d[key] = v: rebinds the name to the updated value (assign_item.cc).
  void assign_item(Block* b, nb::handle target, NodePtr v);
  /// self.attr = v: ops.assign for a Parameter, else a located error (assign_item.cc).
  void assign_attribute(Block* b, nb::handle target, NodePtr v);
  /// A function of the mycel package parsed like user code (graph_syntax helpers).
  NodePtr library_graph(const char* module, const char* name, const SourceLoc& loc);
  NodePtr attribute(Block* b, NodePtr base, const std::string& attr, const SourceLoc& loc);
  NodePtr sequence(Block* b, Prim p, std::vector<NodePtr> items, const SourceLoc& loc);
  /// make_dict of constant keys and value nodes (a dict literal, **kwargs).
  NodePtr make_dict(Block* b, std::vector<ir::ValuePtr> keys, std::vector<NodePtr> values,
                    const SourceLoc& loc);
  /// The parameter **kwargs of a def (added last; a dict of the call's other keywords).
  void add_kwarg_param(Block* entry, Signature& sig, nb::handle kwarg);

  // ---- calls (calls.cc) ----
  NodePtr call(Block* b, nb::handle e);
  bool expand_kwargs(Block* b, nb::handle k, std::vector<std::pair<std::string, NodePtr>>& kw);
  bool consumes_iterable(const NodePtr& callee) const;
  NodePtr call_value(Block* b, NodePtr callee, std::vector<NodePtr> args,
                     std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  NodePtr op_call(Block* b, const OpDef& op, const std::vector<AttrValue>& preset,
                  std::vector<NodePtr> args, std::vector<std::pair<std::string, NodePtr>> kw,
                  const SourceLoc& loc);
  /// op_call for a primitive object: adds the shard_hint nodes of Primitive.shard.
  NodePtr sharded_op_call(Block* b, nb::handle prim, const OpDef& op,
                          const std::vector<AttrValue>& preset, std::vector<NodePtr> args,
                          std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  NodePtr op_by_name(Block* b, const std::string& name, std::vector<NodePtr> args,
                     std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  /// x.m(args) on a value only analysis knows: the Tensor method, or, when m is also a method
  /// of a record class, record_method(x, m, ..., thunk of the Tensor method) (records.cc).
  NodePtr tensor_method(Block* b, NodePtr self, const std::string& m, std::vector<NodePtr> args,
                        std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  NodePtr plain_tensor_method(Block* b, NodePtr self, const std::string& m,
                              std::vector<NodePtr> args,
                              std::vector<std::pair<std::string, NodePtr>> kw,
                              const SourceLoc& loc);
  // ---- records (records.cc) ----
  /// cls(args) for a record class (a @jit_class, CSRTensor...): its __init__ parsed to build
  /// the record.
  NodePtr record_construct(Block* b, nb::handle cls, std::vector<NodePtr> args,
                           std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc);
  /// make_record(cls, names, fields...) of the record __init__ being parsed, at its return.
  NodePtr record_value(Block* b, const SourceLoc& loc);
  /// x.attr of a value only analysis knows (record_attr(x, attr, thunk or None)).
  NodePtr value_attribute(Block* b, NodePtr base, const std::string& attr, NodePtr thunk,
                          const SourceLoc& loc);
  /// A graph nested in b with no parameters whose output is made by `body` (evaluated only when
  /// analysis calls it: the Tensor meaning of a name a record class also defines).
  template <class F>
  NodePtr thunk(Block* b, const std::string& name, F body) {
    Block* t = new_block(b->scope, b, Block::kSwitch, b->scope->name + "_" + name);
    finish(t, body(t));
    return constant(ir::graph_value(t->g));
  }
  /// Sets up the scope of a record class's __init__ (parse_function).
  void begin_record_init(Scope* s, Block* entry, nb::handle def, nb::handle self_arg);
  nb::object next_record_class_;  // set while the __init__ of this record class is parsed
  /// lst.append / extend / insert / pop on a local list: rebinds the name (list_methods.cc).
  static bool is_list_method(const std::string& m);
  NodePtr list_method(Block* b, nb::handle base, NodePtr lst, const std::string& m,
                      std::vector<NodePtr> args, std::vector<std::pair<std::string, NodePtr>> kw,
                      const SourceLoc& loc);
  NodePtr builtin(Block* b, const std::string& name, nb::handle fn, std::vector<NodePtr> args,
                  std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc,
                  bool* handled);

  // ---- names and Python objects (resolve.cc) ----
  NodePtr lookup(Block* b, const std::string& name, const SourceLoc& loc);
  NodePtr object_node(Block* b, nb::handle obj, const SourceLoc& loc);
  FuncGraph* function_graph(nb::handle fn, nb::handle self, const SourceLoc& loc);
  FuncGraph* cell_graph(nb::handle cell, const SourceLoc& loc);

  // ---- forwarding f(*args, **kwargs) (forwarding.cc) ----
  /// What analysis needs to bind a call to g that was not bound here (its callee was known only
  /// later: a Cell from a CellList loop, a gradient function): the parameter kinds and the
  /// defaults that are constants.
  void set_analysis_binding(FuncGraph* g, const Signature& sig);
  /// True when v names this function's own *args (kwargs: **kwargs) parameter, never rebound.
  bool forwards_param(Block* b, nb::handle v, bool kwargs) const;
  /// What a forwarding call is when its shape is not known: the function is marked to be parsed
  /// again per call shape, and this parse yields an error raised if it is ever analyzed.
  NodePtr forwarding_without_shape(Block* b, nb::handle call);
  /// The items of a forwarded *args whose length this parse knows.
  std::vector<NodePtr> forwarded_args(Block* b, const NodePtr& args, const SourceLoc& loc);
  /// The (key, value) pairs of a forwarded **kwargs whose keys this parse knows.
  std::vector<std::pair<std::string, NodePtr>> forwarded_kwargs(Block* b, const NodePtr& kwargs,
                                                                const SourceLoc& loc);
  /// g parsed again for one call's shape (cached), when g forwards its *args or **kwargs; else g.
  FuncGraph* shaped_graph(FuncGraph* g, const Signature& sig, size_t n_args,
                          const std::vector<std::pair<std::string, NodePtr>>& kw,
                          const SourceLoc& loc);
  /// A trainable floating Parameter read as an attribute of a Cell with to_float set, cast to the
  /// Cell's dtype (float32 master weights under mixed precision; the cast's gradient is float32).
  NodePtr cast_cell_weight(Block* b, nb::handle cell, nb::handle param, NodePtr node,
                           const SourceLoc& loc);
  /// x through a shard_hint node with `dims` (a sequence of split counts): Primitive.shard and
  /// Cell.shard's layouts, read by the semi-auto parallel pass.
  NodePtr shard_hint(Block* b, NodePtr x, nb::handle dims, const SourceLoc& loc,
                     bool layout_only = false);
  /// A Cell's return value through Cell.shard's out_strategy: one layout per returned tensor (a
  /// returned tuple literal hints each item; None leaves one alone).
  NodePtr hint_outputs(Block* b, NodePtr out, nb::handle strategy, const SourceLoc& loc);
  /// A Cell's weight read as cell.attr, through its Cell.shard parameter_plan layout if it has one.
  NodePtr planned_cell_weight(Block* b, nb::handle cell, const std::string& attr, nb::handle param,
                              NodePtr node, const SourceLoc& loc);
  /// x through mycel.nn.cell._cast_float_input(x, dtype): one cast, or nothing when x is not a
  /// floating tensor of another dtype (decided at analysis).
  NodePtr cast_float(Block* b, NodePtr x, nb::handle dtype, const SourceLoc& loc);
  bool is_user_function(nb::handle fn) const;
  const OpDef* op_of_function(nb::handle fn) const;
  bool op_handle_of(nb::handle obj, const OpDef** op, std::vector<AttrValue>* preset) const;
  NodePtr weight(nb::handle param, const std::string& name);

  // ---- source and errors (errors.cc) ----
  SourceLoc loc_of(nb::handle node) const;
  [[noreturn]] void unsupported(nb::handle node, const std::string& construct,
                                const std::string& instead) const;
  [[noreturn]] void error(const SourceLoc& loc, const std::string& kind,
                          const std::string& msg) const;

  // ---- helpers ----
  NodePtr constant(ir::ValuePtr v);
  NodePtr prim(Block* b, Prim p, std::vector<NodePtr> args, const SourceLoc& loc);
  NodePtr fold_scalar(Block* b, Prim p, const std::vector<NodePtr>& args, const SourceLoc& loc);
  NodePtr apply(Block* b, std::vector<NodePtr> in, const SourceLoc& loc);
  bool is_scalar(const NodePtr& n) const;
  bool is_sequence(const NodePtr& n) const;
  Scope* current_scope = nullptr;
  std::vector<NodePtr> keep_nodes_;  // nodes the raw-pointer sets below refer to
  // What `del name` binds: reading it is a located UnboundLocalError (it never enters a graph).
  NodePtr unbound_ = std::make_shared<ir::Constant>(nullptr, ir::none());

  // Node classes known at parse time (for operators and subscripts).
  std::unordered_set<const ir::Node*> scalar_nodes, seq_nodes, shape_nodes, dict_nodes;
  std::unordered_map<const FuncGraph*, Signature> signatures;
  std::unordered_map<const ir::Node*, std::vector<NodePtr>>
      fstring_parts;  // f-string -> its pieces

 private:
  FuncGraph* parse_function(nb::handle fn, nb::handle self, const std::string& name,
                            FuncGraph* parent, bool entry, const SourceLoc& loc);
  void replace_phi(Block* b, size_t index, NodePtr v);
  void try_remove_trivial(Block* b, const NodePtr& phi);
  NodePtr add_phi(Block* b, const std::string& name);
  void fill_jumps(Block* b);

  std::unique_ptr<ir::Module> module_;
  FuncGraph* top_ = nullptr;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::vector<std::unique_ptr<SourceInfo>> sources_;
  std::vector<NodePtr> applies_;  // every Apply made, for replacing removed phis
  std::map<std::pair<PyObject*, PyObject*>, FuncGraph*> fn_cache_;
  // Functions that forward *args/**kwargs, parsed again per call shape (forwarding.cc).
  struct Forwarder {
    nb::object fn, self;
    std::string name;
    FuncGraph* parent = nullptr;
  };
  std::unordered_map<const FuncGraph*, Forwarder> forwarders_;
  std::map<std::pair<const FuncGraph*, CallShape>, FuncGraph*> shaped_;
  std::optional<CallShape> pending_shape_;  // the next parse_function's call shape
  std::vector<nb::object> keep_alive_;
  std::vector<std::pair<std::string, nb::object>> pending_weights_;  // a Cell's, by name
  std::map<PyObject*, NodePtr> weights_;
  nb::object float_input_cast_;  // mycel.nn.cell._cast_float_input, parsed where it is used
  std::unordered_map<PyObject*, const OpDef*> op_funcs_;
  std::unordered_map<PyObject*, Prim> prim_funcs_;  // ops.assign, ops.depend
  // Parameters the function being parsed has assigned so far: a later read in the same block
  // sees the assigned value (MindSpore's semantics); a read elsewhere (after a branch that may
  // or may not have assigned) is an error, since a step's reads are ordered before its writes.
  struct Assigned {
    SourceLoc loc;
    Block* block = nullptr;
    NodePtr value;
  };
  std::unordered_map<PyObject*, Assigned>* assigned_ = nullptr;
  // Functions that return ops.assign of one of their parameters (assign_add, P.AssignAdd's
  // _call, ...), with that parameter's index: a call passing a Parameter there assigns it, so
  // the caller's later reads see the new value as after a direct ops.assign.
  std::unordered_map<const FuncGraph*, size_t> returns_assigned_param_;
  std::optional<size_t> assigned_param(const FuncGraph* fg, const NodePtr& out) const;
  void note_assigning_call(Block* b, const FuncGraph* callee, const std::vector<NodePtr>& in,
                           const NodePtr& r, const SourceLoc& loc);
  std::vector<std::string> parsed_;
  nb::object builtins_, ast_, inspect_, cell_type_, cell_list_type_, param_type_, prim_type_;
  std::vector<std::string> library_prefixes_;
  nb::object root_cell_;    // the compiled Cell (or a bound method's Cell); None for a function
  nb::object cell_labels_;  // error_frames.CellLabels(root_cell_), made at the first Cell parsed

 public:
  /// How errors name a Cell: its attribute path from the compiled Cell and its repr.
  std::shared_ptr<const std::string> cell_label(nb::handle cell);
};

/// The truth value of a condition known at parse time (a flag attribute, None, a constant):
/// 1 or 0, or -1 when it is only known later.
int constant_truth(const NodePtr& c);
/// The Python object a constant node stands for (for values evaluated at parse time), or null.
nb::object to_python(const NodePtr& n);
/// len() of a Python object.
inline size_t len_of(nb::handle h) { return nb::len(h); }
/// Adds every name `body` binds (Python's rule for what is local to a function).
void collect_locals(nb::handle ast_module, nb::handle body, std::set<std::string>& out);
/// Python type name of an ast node ("Name", "BinOp").
std::string ast_type(nb::handle node);
/// The string attribute `attr` of an object.
std::string str_attr(nb::handle o, const char* attr);

}  // namespace mycel::frontend
