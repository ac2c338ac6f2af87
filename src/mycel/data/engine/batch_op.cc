// batch: groups rows into batches on the dispatcher, then on parallel workers runs the optional
// per_batch_map, pads, and stacks each column into one (B, ...) tensor.
#include <algorithm>
#include <cstring>

#include "mycel/core/parallel.h"
#include "mycel/core/rethrow.h"
#include "mycel/data/engine/engine.h"
#include "mycel/data/engine/map_op.h"
#include "mycel/data/string_tensor.h"

namespace mycel::data::engine {
namespace {

// Copies src (shape s) into the leading corner of dst (shape d, same rank), row-major.
void copy_padded(const char* src, const Shape& s, char* dst, const Shape& d, size_t item) {
  if (s.empty()) {
    std::memcpy(dst, src, item);
    return;
  }
  int64_t inner_s = 1, inner_d = 1;
  for (size_t i = 1; i < s.size(); ++i) inner_s *= s[i], inner_d *= d[i];
  Shape s1(s.begin() + 1, s.end()), d1(d.begin() + 1, d.end());
  for (int64_t i = 0; i < s[0]; ++i) {
    if (s.size() == 1) {
      std::memcpy(dst + i * item, src + i * item, item);
    } else {
      copy_padded(src + i * inner_s * item, s1, dst + i * inner_d * item, d1, item);
    }
  }
}

Tensor stack_plain(const std::vector<Tensor>& items, const PadSpec& pad, const std::string& column);

// Strings padded with a non-empty pad string: each row's strings in the corner of the target
// string shape (the longest per dimension, or pad_info's), the pad string everywhere else.
Tensor stack_strings_padded(const std::vector<Tensor>& items, const PadSpec& pad,
                            const std::string& column, StringKind kind) {
  Shape target = string_shape(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Shape s = string_shape(items[i]);
    MYCEL_CHECK(s.size() == target.size(), ValueError, "batch: cannot pad column '", column,
                "': row 0 has string shape ", shape_str(target), " but row ", i, " has ",
                shape_str(s));
    for (size_t d = 0; d < s.size(); ++d) target[d] = std::max(target[d], s[d]);
  }
  if (!pad.shape.empty()) {
    MYCEL_CHECK(pad.shape.size() == target.size(), ValueError, "batch: pad_info shape for column '",
                column, "' has ", pad.shape.size(), " dimensions but its rows have ",
                target.size());
    for (size_t d = 0; d < target.size(); ++d) {
      if (pad.shape[d] < 0) continue;
      MYCEL_CHECK(pad.shape[d] >= target[d], ValueError, "batch: pad_info shape for column '",
                  column, "' is smaller than a row: dimension ", d, " is ", pad.shape[d],
                  " but a row has ", target[d]);
      target[d] = pad.shape[d];
    }
  }
  int64_t per_row = 1;
  for (int64_t d : target) per_row *= d;
  std::vector<std::string> all;
  all.reserve(static_cast<size_t>(per_row) * items.size());
  std::vector<int64_t> pos(target.size());
  for (const Tensor& t : items) {
    Shape s = string_shape(t);
    std::vector<std::string> strs = string_items(t);
    std::fill(pos.begin(), pos.end(), 0);
    for (int64_t k = 0; k < per_row; ++k) {
      bool inside = true;
      int64_t at = 0;
      for (size_t d = 0; d < pos.size(); ++d) {
        inside &= pos[d] < s[d];
        at = at * s[d] + pos[d];
      }
      all.push_back(inside ? strs[static_cast<size_t>(at)] : pad.text);
      for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
        if (++pos[d] < target[d]) break;
        pos[d] = 0;
      }
    }
  }
  Shape out{static_cast<int64_t>(items.size())};
  out.insert(out.end(), target.begin(), target.end());
  return make_string_tensor(all, out, kind);
}

// Strings of one column: equal string shapes (or pad_info), widths padded with NULs to the
// longest, so each string survives; the batch is tagged like its rows.
Tensor stack_strings(const std::vector<Tensor>& items, const PadSpec& pad,
                     const std::string& column, StringKind kind) {
  if (pad.enabled && !pad.text.empty()) {
    for (size_t i = 0; i < items.size(); ++i)
      MYCEL_CHECK(string_kind(items[i]) == kind, TypeError, "batch: column '", column,
                  "' holds strings in row 0 of the batch but not (or of another kind) in row ", i);
    return stack_strings_padded(items, pad, column, kind);
  }
  int64_t width = 1;
  for (size_t i = 0; i < items.size(); ++i) {
    MYCEL_CHECK(string_kind(items[i]) == kind, TypeError, "batch: column '", column,
                "' holds strings in row 0 of the batch but not (or of another kind) in row ", i);
    width = std::max(width, items[i].shape().back());
  }
  PadSpec p = pad;
  if (p.enabled && !p.shape.empty()) p.shape.push_back(width);
  std::vector<Tensor> widened;
  for (const Tensor& t : items) {
    if (t.shape().back() == width || p.enabled) {
      widened.push_back(t);
      continue;
    }
    // Without pad_info only the width may differ: pad it alone.
    Shape s = t.shape();
    s.back() = width;
    Tensor w = Tensor::zeros(s, DType::uint8);
    copy_padded(static_cast<const char*>(t.data()), t.shape(), static_cast<char*>(w.data()), s, 1);
    widened.push_back(w);
  }
  p.value = 0;  // the empty string
  return tag_string_tensor(stack_plain(widened, p, column), kind);
}

// Stacks numeric rows (padding them when pad is enabled).
Tensor stack_plain(const std::vector<Tensor>& items, const PadSpec& pad,
                   const std::string& column) {
  const Tensor& first = items[0];
  Shape target = first.shape();
  for (size_t i = 1; i < items.size(); ++i) {
    const Tensor& t = items[i];
    MYCEL_CHECK(t.dtype() == first.dtype(), TypeError, "batch: column '", column, "' has dtype ",
                dtype_name(first.dtype()), " in row 0 of the batch but ", dtype_name(t.dtype()),
                " in row ", i);
    if (t.shape() == first.shape()) continue;
    MYCEL_CHECK(pad.enabled, ValueError, "batch: column '", column, "' has shape ",
                shape_str(first.shape()), " in row 0 of the batch but ", shape_str(t.shape()),
                " in row ", i, "; rows must have equal shapes (or give pad_info to pad them)");
    MYCEL_CHECK(t.ndim() == first.ndim(), ValueError, "batch: cannot pad column '", column,
                "': rank differs (shape ", shape_str(first.shape()), " vs ", shape_str(t.shape()),
                ")");
    for (int64_t d = 0; d < t.ndim(); ++d) target[d] = std::max(target[d], t.dim(d));
  }
  if (pad.enabled && !pad.shape.empty()) {
    MYCEL_CHECK(static_cast<int64_t>(pad.shape.size()) == first.ndim(), ValueError,
                "batch: pad_info shape for column '", column, "' has ", pad.shape.size(),
                " dimensions but the rows have shape ", shape_str(first.shape()));
    for (size_t d = 0; d < pad.shape.size(); ++d) {
      if (pad.shape[d] < 0) continue;
      MYCEL_CHECK(pad.shape[d] >= target[d], ValueError, "batch: pad_info shape for column '",
                  column, "' is smaller than a row: dimension ", d, " is ", pad.shape[d],
                  " but a row has ", target[d]);
      target[d] = pad.shape[d];
    }
  }
  Shape out_shape{static_cast<int64_t>(items.size())};
  out_shape.insert(out_shape.end(), target.begin(), target.end());
  Tensor out = Tensor::empty(out_shape, first.dtype());
  size_t item = itemsize(first.dtype());
  int64_t per = 1;
  for (int64_t d : target) per *= d;
  char* dst = static_cast<char*>(out.data());
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i];
    char* slot = dst + i * per * item;
    if (t.shape() == target) {
      std::memcpy(slot, t.data(), t.nbytes());
      continue;
    }
    Tensor fill = Tensor::scalar(pad.value, first.dtype());
    for (int64_t k = 0; k < per; ++k) std::memcpy(slot + k * item, fill.data(), item);
    copy_padded(static_cast<const char*>(t.data()), t.shape(), slot, target, item);
  }
  return out;
}

}  // namespace

Tensor stack_column(const std::vector<Tensor>& items, const PadSpec& pad,
                    const std::string& column) {
  MYCEL_CHECK(!items.empty(), ValueError, "batch: empty batch for column '", column, "'");
  if (auto kind = string_kind(items[0])) return stack_strings(items, pad, column, *kind);
  MYCEL_CHECK(pad.text.empty(), TypeError, "batch: pad_info for column '", column,
              "' gives the pad string '", pad.text, "' but the column holds numbers");
  for (size_t i = 1; i < items.size(); ++i)
    MYCEL_CHECK(!string_kind(items[i]), TypeError, "batch: column '", column,
                "' holds numbers in row 0 of the batch but strings in row ", i);
  return stack_plain(items, pad, column);
}

namespace {

class BatchOp : public ParallelOp {
 public:
  BatchOp(std::shared_ptr<Op> child, int64_t size, bool drop, std::shared_ptr<BatchMap> fn,
          std::vector<int64_t> map_in, Layout layout, std::vector<PadSpec> pads,
          std::vector<std::string> names, int workers)
      : ParallelOp(workers, {std::move(child)}),
        size_(size),
        drop_(drop),
        fn_(std::move(fn)),
        map_in_(std::move(map_in)),
        layout_(std::move(layout)),
        pads_(std::move(pads)),
        names_(std::move(names)) {
    MYCEL_CHECK(size_ >= 1, ValueError, "batch: batch_size must be >= 1, got ", size_);
  }
  std::string name() const override { return "batch"; }
  bool can_run_on_consumer() const override { return !fn_ && children_[0]->can_run_on_consumer(); }

 protected:
  int64_t size() const { return size_; }

  // On the consumer: dispatch()'s grouping, then work() on this thread (which may spread a
  // batch's rows over the OpenMP pool: MapBatchOp).
  bool pop_direct(Packet& out) override {
    out = Packet();
    if (marker_ != Kind::kRow) {  // the end marker that followed a partial batch
      out.kind = marker_;
      if (marker_ == Kind::kEoe) ++epoch_, id_ = 0;
      marker_ = Kind::kRow;
      return true;
    }
    Job j;
    Packet p;
    while (static_cast<int64_t>(j.rows.size()) < size_) {
      if (!children_[0]->next(p)) return false;
      if (p.kind == Kind::kRow) {
        j.rows.push_back(std::move(p.row));
        continue;
      }
      if (p.kind == Kind::kError) {  // the batch it interrupts is dropped, as in dispatch()
        out = std::move(p);
        return true;
      }
      if (j.rows.empty() || drop_) {
        if (p.kind == Kind::kEoe) ++epoch_, id_ = 0;
        out.kind = p.kind;
        return true;
      }
      marker_ = p.kind;  // a partial last batch now, its marker at the next call
      break;
    }
    j.epoch = epoch_;
    j.id = id_++;
    out.row = work(j, 0);
    return true;
  }

  void dispatch() override {
    int64_t epoch = 0, id = 0;
    Job j;
    Packet p;
    while (pull(p)) {
      if (p.kind == Kind::kRow) {
        j.rows.push_back(std::move(p.row));
        if (static_cast<int64_t>(j.rows.size()) < size_) continue;
      } else if (p.kind == Kind::kError) {
        // The batch it interrupts cannot be completed: the error takes that batch's place.
        Job err;
        err.kind = Kind::kError;
        err.error = p.error;
        send(std::move(err));
        return;
      } else if (j.rows.empty() || drop_) {
        j.rows.clear();
        Job ctl;
        ctl.kind = p.kind;
        if (p.kind == Kind::kEoe) ++epoch, id = 0;
        if (!send(std::move(ctl)) || p.kind == Kind::kEof) return;
        continue;
      }
      // A full batch, or the partial last batch of an epoch (then the marker follows).
      j.epoch = epoch;
      j.id = id++;
      if (!send(std::move(j))) return;
      j = Job();
      if (p.kind != Kind::kRow) {
        Job ctl;
        ctl.kind = p.kind;
        if (p.kind == Kind::kEoe) ++epoch, id = 0;
        if (!send(std::move(ctl)) || p.kind == Kind::kEof) return;
      }
    }
  }

  Row work(Job& job, int) override {
    size_t ncol = job.rows[0].size();
    std::vector<std::vector<Tensor>> cols(ncol);
    for (Row& r : job.rows) {
      MYCEL_CHECK(r.size() == ncol, ValueError, "batch: rows have ", ncol, " and ", r.size(),
                  " columns");
      for (size_t c = 0; c < ncol; ++c) cols[c].push_back(std::move(r[c]));
    }
    if (fn_) {
      std::vector<std::vector<Tensor>> in;
      for (int64_t c : map_in_) in.push_back(cols[c]);
      std::vector<std::vector<Tensor>> res;
      try {
        res = fn_->apply(std::move(in), job.id, job.epoch);
      } catch (...) {
        rethrow_with_context("batch: per_batch_map: ");
      }
      std::vector<std::vector<Tensor>> next;
      for (int64_t l : layout_) {
        if (l >= 0) {
          next.push_back(std::move(cols[l]));
          continue;
        }
        MYCEL_CHECK(-l - 1 < static_cast<int64_t>(res.size()), ValueError,
                    "batch: per_batch_map returned ", res.size(),
                    " columns but output_columns names more");
        next.push_back(std::move(res[-l - 1]));
      }
      cols = std::move(next);
    }
    Row out;
    for (size_t c = 0; c < cols.size(); ++c) {
      static const PadSpec kNoPad;
      const PadSpec& pad = c < pads_.size() ? pads_[c] : kNoPad;
      std::string nm = c < names_.size() ? names_[c] : std::to_string(c);
      out.push_back(stack_column(cols[c], pad, nm));
    }
    return out;
  }

 private:
  int64_t size_;
  bool drop_;
  // pop_direct's state: the epoch and id of the next batch, and a marker held back behind a
  // partial batch (kRow: none).
  int64_t epoch_ = 0, id_ = 0;
  Kind marker_ = Kind::kRow;
  std::shared_ptr<BatchMap> fn_;
  std::vector<int64_t> map_in_;
  Layout layout_;
  std::vector<PadSpec> pads_;
  std::vector<std::string> names_;
};

/// Output values of a batch's fused chain from which, on the consumer, its images are split over
/// the OpenMP pool. Below it waking the pool's other thread costs about what it saves: LeNet5's
/// batch (64 images of 32x32, 65K values, ~0.09 ms of chain on one core) took 0.147 ms to build
/// on one thread and 0.191 on two (bench/bench_epoch_consumer.py, load 13); larger images
/// (CIFAR's batch of 128: 393K values) split.
constexpr int64_t kChainParallelOutputs = 256 * 1024;

/// Map-and-batch (map_op.h): the map's transforms run here, row by row, before the stacking. A
/// map that is one fused image chain writes each image straight into its slot of the batch.
class MapBatchOp : public BatchOp {
 public:
  MapBatchOp(std::shared_ptr<MapOp> map, int64_t size, bool drop, Layout layout,
             std::vector<PadSpec> pads, std::vector<std::string> names, int workers)
      : BatchOp(map, size, drop, nullptr, {}, std::move(layout), pads, names, workers),
        map_(std::move(map)),
        chain_(map_->sole_chain()),
        pads_(std::move(pads)),
        names_(std::move(names)) {
    map_->set_inline();
    if (chain_) {  // the output column the chain fills must not be padded (then: stack_column)
      const Layout& ml = map_->layout();
      for (size_t c = 0; c < ml.size(); ++c)
        if (ml[c] < 0 && c < pads_.size() && pads_[c].enabled) chain_ = nullptr;
    }
  }
  // A fused chain is C++ only; other maps may hold Python transforms (they stay on workers).
  bool can_run_on_consumer() const override {
    return chain_ && map_->children()[0]->can_run_on_consumer();
  }

 protected:
  Row work(Job& job, int w) override {
    Row out;
    if (chain_ && direct(job, out)) return out;
    for (size_t k = 0; k < job.rows.size(); ++k)
      job.rows[k] = map_->transform(std::move(job.rows[k]), job.epoch,
                                    job.id * size() + static_cast<int64_t>(k));
    return BatchOp::work(job, w);
  }

 private:
  // The batch with the chain's column written in place; false (nothing done) when a row is not
  // the first row's shape and dtype, or the chain declines: then the general path runs.
  bool direct(Job& job, Row& out) {
    const int64_t col = map_->input_columns()[0];
    const std::vector<Row>& rows = job.rows;
    if (rows.empty() || col >= static_cast<int64_t>(rows[0].size())) return false;
    const Tensor& first = rows[0][col];
    vision::PixelPlan plan;
    if (!chain_->plan(first, plan)) return false;
    const Layout& ml = map_->layout();
    for (int64_t l : ml)
      if (l >= static_cast<int64_t>(rows[0].size())) return false;
    for (const Row& r : rows) {
      if (r.size() != rows[0].size()) return false;
      const Tensor& t = r[col];
      if (!t.defined() || t.dtype() != first.dtype() || t.shape() != first.shape() ||
          string_kind(t))
        return false;
    }
    Shape shape{static_cast<int64_t>(rows.size())};
    shape.insert(shape.end(), plan.out_shape.begin(), plan.out_shape.end());
    Tensor batch = Tensor::empty(shape, plan.out_dtype);
    char* dst = static_cast<char*>(batch.data());
    const size_t per = static_cast<size_t>(plan.out_numel) * itemsize(plan.out_dtype);
    const int64_t n = static_cast<int64_t>(rows.size());
    if (on_consumer() && n * plan.out_numel >= kChainParallelOutputs) {
      // Between training steps: the images over the OpenMP pool (the threshold above is the
      // grain here, so every image counts as a full one of parallel_for's)
      std::vector<std::exception_ptr> errors(rows.size());
      parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          try {
            chain_->run_into(rows[k][col], plan, dst + k * per);
          } catch (...) {
            errors[k] = std::current_exception();
          }
        }
      });
      for (const std::exception_ptr& err : errors)
        if (err) std::rethrow_exception(err);
    } else {
      for (size_t k = 0; k < rows.size(); ++k) chain_->run_into(rows[k][col], plan, dst + k * per);
    }
    out.reserve(ml.size());
    static const PadSpec kNoPad;
    std::vector<Tensor> items;
    for (size_t c = 0; c < ml.size(); ++c) {
      if (ml[c] < 0) {
        out.push_back(batch);
        continue;
      }
      items.clear();
      for (const Row& r : rows) items.push_back(r[ml[c]]);
      const PadSpec& pad = c < pads_.size() ? pads_[c] : kNoPad;
      out.push_back(stack_column(items, pad, c < names_.size() ? names_[c] : std::to_string(c)));
    }
    return true;
  }

  std::shared_ptr<MapOp> map_;
  const vision::PixelChain* chain_;
  std::vector<PadSpec> pads_;
  std::vector<std::string> names_;
};

}  // namespace

std::shared_ptr<Op> batch_op(std::shared_ptr<Op> child, int64_t batch_size, bool drop_remainder,
                             std::shared_ptr<BatchMap> per_batch_map,
                             std::vector<int64_t> map_inputs, Layout layout,
                             std::vector<PadSpec> pads, std::vector<std::string> column_names,
                             int workers) {
  if (auto map = std::dynamic_pointer_cast<MapOp>(child);
      map && !per_batch_map && vision::fusion_enabled()) {
    const int n = std::max(workers, map->worker_count());
    return std::make_shared<MapBatchOp>(std::move(map), batch_size, drop_remainder,
                                        std::move(layout), std::move(pads), std::move(column_names),
                                        n);
  }
  return std::make_shared<BatchOp>(
      std::move(child), batch_size, drop_remainder, std::move(per_batch_map), std::move(map_inputs),
      std::move(layout), std::move(pads), std::move(column_names), workers);
}

}  // namespace mycel::data::engine
