// Batching rules of ops (vmap), kept beside the bprops: a rule sees one op call whose inputs may
// carry an extra batch dimension (at a known axis, or none) and rewrites it as a call over the
// whole batch -- usually the same op with moved axes or adjusted attributes, or a small composition
// of ops -- returning where the batch dimension of each output ended up. ad::vmap_graph implements
// the builder by emitting IR; an op with no rule is run once per batch item there (correct, slow).
//
// Generic rules come from traits: elementwise ops align every batch dimension to axis 0 and
// broadcast; ops whose attributes name axes shift them by one. Per-op rules cover the rest
// (batch.cc for the generic and shape families, batch_nn.cc for matmul, conv, pooling, losses).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mycel/ops/bprop.h"

namespace mycel {

/// Where a value's batch dimension is: an axis of the batched value, or none (kNotBatched).
constexpr int kNotBatched = -1;

/// What a batching rule builds with (values are GradVar handles, as in bprop rules). Every value,
/// input or built, has a known batched shape (the builder infers each call it emits).
class BatchBuilder {
 public:
  virtual ~BatchBuilder() = default;

  // ---- the call being batched ----
  virtual const OpDef& op() const = 0;
  virtual const Attrs& attrs() const = 0;
  /// Input i as the batched program sees it (undefined for an absent optional input). A variadic
  /// input is a tuple; its items' batch axes come from item_bdims.
  virtual GradVar input(size_t i) = 0;
  /// The batch axis of input i in input(i) (kNotBatched when it does not depend on the batch).
  virtual int bdim(size_t i) const = 0;
  /// The batch axes of the items of variadic input i.
  virtual std::vector<int> item_bdims(size_t i) const = 0;
  virtual size_t num_inputs() const = 0;
  /// The size of the batch dimension.
  virtual int64_t batch_size() const = 0;

  // ---- building ----
  virtual TensorMeta meta(const GradVar& v) const = 0;
  /// Number of items of a tuple value; 1 for a tensor.
  virtual size_t tuple_size(const GradVar& v) const = 0;
  /// Calls a registry op; attributes by name (defaults fill the rest). Multi-output ops give a
  /// tuple.
  virtual GradVar call(const std::string& op, std::vector<GradVar> inputs,
                       const std::map<std::string, AttrValue>& attrs = {}) = 0;
  /// Calls the op being batched with new attributes (the given ones replace the call's own).
  virtual GradVar call_self(std::vector<GradVar> inputs,
                            const std::map<std::string, AttrValue>& attrs = {}) = 0;
  virtual GradVar make_tuple(std::vector<GradVar> items) = 0;
  /// `value`, ordered after `effect`: keeps a call whose outputs nothing reads but whose in-place
  /// update matters (a graph is what its output depends on).
  virtual GradVar after(GradVar value, GradVar effect) = 0;
  virtual GradVar tuple_get(const GradVar& t, size_t i) = 0;
  GradVar reshape_to(GradVar v, const Shape& s) { return call("reshape", {v}, {{"shape", s}}); }
};

/// A rule's answer: the batched value and the batch axis of each output (one for a single output,
/// one per item for tuple outputs; kNotBatched for an output that does not depend on the batch).
struct Batched {
  GradVar value;
  std::vector<int> dims;
};

/// A batching rule. Returning an undefined value means "no rule for this case": the call is then
/// run once per batch item.
using BatchRuleFn = std::function<Batched(BatchBuilder&)>;

/// The rules, by op name (the generic ones included, registered per op from its traits).
class BatchRegistry {
 public:
  static BatchRegistry& get();
  void add(const std::string& op, BatchRuleFn fn);
  /// The op's own rule, else the generic rule its traits give (elementwise), else nullptr.
  const BatchRuleFn* find(const OpDef& op) const;
  bool has_own(const std::string& op) const { return rules_.count(op) > 0; }

 private:
  std::map<std::string, BatchRuleFn> rules_;
};

/// Registers rules at static-initialization time: MYCEL_REGISTER_BATCH_RULES(nn) { b.add(...); }
#define MYCEL_REGISTER_BATCH_RULES(family)                                      \
  static void mycel_register_##family##_batch_rules(::mycel::BatchRegistry& b); \
  static const bool mycel_batch_rules_##family = [] {                           \
    mycel_register_##family##_batch_rules(::mycel::BatchRegistry::get());       \
    return true;                                                                \
  }();                                                                          \
  static void mycel_register_##family##_batch_rules(::mycel::BatchRegistry& b)

namespace batch {

/// v with its batch axis moved from `from` to `to` (a transpose; v itself when they agree).
GradVar move_axis(BatchBuilder& g, GradVar v, int from, int to);
/// v with the batch at axis 0: moved there, or (unbatched) broadcast to batch_size along a new axis
/// 0.
GradVar to_front(BatchBuilder& g, GradVar v, int bdim);
/// Input i with the batch at axis 0 (materialized when it was not batched).
inline GradVar front(BatchBuilder& g, size_t i) { return to_front(g, g.input(i), g.bdim(i)); }
/// Whether any input (variadic items included) is batched.
bool any_batched(const BatchBuilder& g);
/// A logical (unbatched) axis normalized against a logical rank; throws naming the op if out of
/// range.
int64_t norm_axis(const BatchBuilder& g, int64_t axis, int64_t rank);
/// Merges axes 0 and 1 of v (B, N, ...) -> (B*N, ...), and the inverse split of axis 0.
GradVar merge_front(BatchBuilder& g, GradVar v);
GradVar split_front(BatchBuilder& g, GradVar v, int64_t b);

}  // namespace batch
}  // namespace mycel
