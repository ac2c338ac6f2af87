// Light ops that run on their consumer's thread: they only move rows around, so a thread and a
// queue each would cost more than the work.
#include <algorithm>

#include "mycel/data/engine/engine.h"

namespace mycel::data::engine {
namespace {

Packet marker(Kind k) {
  Packet p;
  p.kind = k;
  return p;
}

// Reads the child until its end of epoch (zip and take need to stay aligned on epochs); `end`
// receives the packet that ended it, which the caller forwards when it is an error.
bool drain_epoch(Op& child, Packet& end) {
  while (child.next(end))
    if (end.kind != Kind::kRow) return true;
  return false;
}

/// shuffle(buffer_size): a random pick from a buffer refilled from the child; drained at each end
/// of the child's epoch so epochs never mix. The RNG restarts per epoch from (seed, op, epoch).
class ShuffleOp : public Op {
 public:
  ShuffleOp(std::shared_ptr<Op> child, int64_t size) : Op({std::move(child)}), cap_(size) {
    MYCEL_CHECK(size >= 2, ValueError, "shuffle: buffer_size must be >= 2, got ", size);
  }
  std::string name() const override { return "shuffle"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    Op& child = *children_[0];
    if (!rng_) rng_ = std::make_unique<RowRng>(mix_seed(ctx_->seed(), op_id_, 0), epoch_);
    while (!child_eoe_ && static_cast<int64_t>(buf_.size()) < cap_) {
      Packet p;
      if (!child.next(p)) return false;
      if (p.kind == Kind::kRow) {
        buf_.push_back(std::move(p.row));
      } else if (p.kind == Kind::kEoe) {
        child_eoe_ = true;
      } else {
        out = std::move(p);
        return true;
      }
    }
    if (buf_.empty()) {  // child epoch over and buffer drained
      child_eoe_ = false;
      rng_ = std::make_unique<RowRng>(mix_seed(ctx_->seed(), op_id_, 0), ++epoch_);
      out = marker(Kind::kEoe);
      return true;
    }
    size_t r = static_cast<size_t>(rng_->randint(0, static_cast<int64_t>(buf_.size()) - 1));
    out.kind = Kind::kRow;
    out.row = std::move(buf_[r]);
    Packet p;
    if (!child_eoe_) {
      if (!child.next(p)) return false;
      if (p.kind == Kind::kRow) {
        buf_[r] = std::move(p.row);
        return true;
      }
      if (p.kind == Kind::kError) {  // buffered rows have no position to keep: the error goes now
        out = std::move(p);
        return true;
      }
      child_eoe_ = true;  // an end of data mid-epoch cannot happen: every epoch ends with a marker
    }
    if (r + 1 != buf_.size()) buf_[r] = std::move(buf_.back());
    buf_.pop_back();
    return true;
  }

 private:
  int64_t cap_;
  int64_t epoch_ = 0;
  bool child_eoe_ = false;
  std::vector<Row> buf_;
  std::unique_ptr<RowRng> rng_;
};

/// repeat(count): count child epochs make one epoch (the child's epoch counter keeps advancing,
/// so reshuffles differ); count = -1 repeats forever.
class RepeatOp : public Op {
 public:
  RepeatOp(std::shared_ptr<Op> child, int64_t count) : Op({std::move(child)}), count_(count) {
    MYCEL_CHECK(count == -1 || count >= 1, ValueError, "repeat: count must be -1 or >= 1, got ",
                count);
  }
  std::string name() const override { return "repeat"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    while (children_[0]->next(out)) {
      if (out.kind != Kind::kEoe) return true;
      if (count_ > 0 && ++seen_ == count_) {
        seen_ = 0;
        return true;
      }
    }
    return false;
  }

 protected:
  int64_t child_epochs(int64_t e) const override { return e < 0 || count_ < 0 ? -1 : e * count_; }

 private:
  int64_t count_, seen_ = 0;
};

/// take(n) / skip(n) per epoch. take's quota drops the rest of the child's epoch (to stay on
/// its epoch boundaries), except in the last epoch the pipeline runs: there it ends the data at
/// once rather than reading the whole child epoch for nothing.
class TakeSkipOp : public Op {
 public:
  TakeSkipOp(std::shared_ptr<Op> child, int64_t n, bool take)
      : Op({std::move(child)}), n_(n), take_(take) {
    MYCEL_CHECK(n >= -1, ValueError, take ? "take" : "skip", ": count must be >= 0 (or -1), got ",
                n);
  }
  std::string name() const override { return take_ ? "take" : "skip"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    Op& child = *children_[0];
    if (ended_) {  // the last epoch was cut short: its end of data, without the child
      out = marker(Kind::kEof);
      return true;
    }
    while (true) {
      if (take_ && n_ >= 0 && seen_ >= n_) {  // quota reached: drop the rest of the epoch
        seen_ = 0;
        if (epochs_ > 0 && epoch_ + 1 >= epochs_) {
          ended_ = true;
          out = marker(Kind::kEoe);
          return true;
        }
        if (!drain_epoch(child, out)) return false;
        if (out.kind != Kind::kError) out = marker(Kind::kEoe), ++epoch_;
        return true;
      }
      if (!child.next(out)) return false;
      if (out.kind != Kind::kRow) {
        seen_ = 0;
        if (out.kind == Kind::kEoe) ++epoch_;
        return true;
      }
      if (take_ || seen_ >= n_) {
        ++seen_;
        return true;
      }
      ++seen_;
    }
  }

 private:
  int64_t n_, seen_ = 0, epoch_ = 0;  // epoch_: the epochs ended so far
  bool take_, ended_ = false;
};

/// project(columns): picks and reorders columns.
class ProjectOp : public Op {
 public:
  ProjectOp(std::shared_ptr<Op> child, std::vector<int64_t> cols)
      : Op({std::move(child)}), cols_(std::move(cols)) {}
  std::string name() const override { return "project"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    Packet p;
    if (!children_[0]->next(p)) return false;
    out.kind = p.kind;
    out.error = p.error;
    out.row.clear();
    if (p.kind == Kind::kRow)
      for (int64_t c : cols_) out.row.push_back(p.row[c]);
    return true;
  }

 private:
  std::vector<int64_t> cols_;
};

/// zip(datasets): joins rows side by side; an epoch ends with the shortest child's epoch.
class ZipOp : public Op {
 public:
  using Op::Op;
  std::string name() const override { return "zip"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    out.kind = Kind::kRow;
    out.row.clear();
    std::vector<bool> at_row(children_.size(), false);
    Kind end = Kind::kRow;
    for (size_t i = 0; i < children_.size(); ++i) {
      Packet p;
      if (!children_[i]->next(p)) return false;
      if (p.kind == Kind::kError) {
        out = std::move(p);
        return true;
      }
      if (p.kind == Kind::kRow) {
        at_row[i] = true;
        for (Tensor& t : p.row) out.row.push_back(std::move(t));
      } else if (end != Kind::kEof) {
        end = p.kind;
      }
    }
    if (end == Kind::kRow) return true;
    if (end == Kind::kEoe)
      for (size_t i = 0; i < children_.size(); ++i) {
        Packet e;
        if (at_row[i] && !drain_epoch(*children_[i], e)) return false;
        if (e.kind == Kind::kError) {
          out = std::move(e);
          return true;
        }
      }
    out = marker(end);
    return true;
  }
};

/// concat(datasets): each epoch is the children's epochs one after another.
class ConcatOp : public Op {
 public:
  using Op::Op;
  std::string name() const override { return "concat"; }
  bool can_run_on_consumer() const override { return children_can_run_on_consumer(); }
  bool pop(Packet& out) override {
    while (true) {
      if (!children_[cur_]->next(out)) return false;
      if (out.kind == Kind::kRow) return true;
      if (out.kind == Kind::kEof || out.kind == Kind::kError) return true;
      if (++cur_ == children_.size()) {
        cur_ = 0;
        return true;
      }
    }
  }

 private:
  size_t cur_ = 0;
};

}  // namespace

std::shared_ptr<Op> shuffle_op(std::shared_ptr<Op> child, int64_t buffer_size) {
  return std::make_shared<ShuffleOp>(std::move(child), buffer_size);
}
std::shared_ptr<Op> repeat_op(std::shared_ptr<Op> child, int64_t count) {
  return std::make_shared<RepeatOp>(std::move(child), count);
}
std::shared_ptr<Op> take_op(std::shared_ptr<Op> child, int64_t count) {
  return std::make_shared<TakeSkipOp>(std::move(child), count, true);
}
std::shared_ptr<Op> skip_op(std::shared_ptr<Op> child, int64_t count) {
  return std::make_shared<TakeSkipOp>(std::move(child), count, false);
}
std::shared_ptr<Op> project_op(std::shared_ptr<Op> child, std::vector<int64_t> columns) {
  return std::make_shared<ProjectOp>(std::move(child), std::move(columns));
}
std::shared_ptr<Op> zip_op(std::vector<std::shared_ptr<Op>> children) {
  MYCEL_CHECK(!children.empty(), ValueError, "zip: needs at least one dataset");
  return std::make_shared<ZipOp>(std::move(children));
}
std::shared_ptr<Op> concat_op(std::vector<std::shared_ptr<Op>> children) {
  MYCEL_CHECK(!children.empty(), ValueError, "concat: needs at least one dataset");
  return std::make_shared<ConcatOp>(std::move(children));
}

}  // namespace mycel::data::engine
