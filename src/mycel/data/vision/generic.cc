// Generic transforms (mycel.dataset.transforms): TypeCast, OneHot, and the composites Compose,
// RandomApply, RandomChoice, which run their children with independent forks of the row's stream
// so that adding a child never changes what the others draw.
#include <algorithm>
#include <cstring>

#include "mycel/data/vision/image.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data::vision {
namespace {

bool any_random(const TransformList& ts) {
  return std::any_of(ts.begin(), ts.end(), [](const auto& t) { return t->is_random(); });
}

// Runs children in order, child i with rng.fork(i).
std::vector<Tensor> run_chain(const TransformList& ts, std::vector<Tensor> row, RowRng& rng,
                              uint32_t salt_base = 0) {
  for (size_t i = 0; i < ts.size(); ++i) {
    RowRng child = rng.fork(salt_base + static_cast<uint32_t>(i));
    row = ts[i]->apply(row, child);
  }
  return row;
}

class Composite : public Transform {
 public:
  Composite(std::string name, TransformList children, bool random)
      : name_(std::move(name)), children_(std::move(children)), random_(random) {
    if (children_.empty()) MYCEL_THROW(ValueError, "[", name_, "] transforms must not be empty");
    for (auto& c : children_)
      if (!c) MYCEL_THROW(ValueError, "[", name_, "] transforms contains None");
  }
  std::string name() const override { return name_; }
  bool is_random() const override { return random_ || any_random(children_); }
  bool takes_strings() const override {
    return std::all_of(children_.begin(), children_.end(),
                       [](const auto& t) { return t->takes_strings(); });
  }

 protected:
  std::string name_;
  TransformList children_;
  bool random_;
};

class Compose : public Composite {
 public:
  explicit Compose(TransformList c) : Composite("Compose", std::move(c), false) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    return run_chain(children_, in, rng);
  }
};

class RandomApply : public Composite {
 public:
  RandomApply(TransformList c, double prob)
      : Composite("RandomApply", std::move(c), true), prob_(prob) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    if (rng.uniform() >= prob_) return in;
    return run_chain(children_, in, rng);
  }

 private:
  double prob_;
};

class RandomChoice : public Composite {
 public:
  explicit RandomChoice(TransformList c) : Composite("RandomChoice", std::move(c), true) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    int64_t k = rng.randint(0, static_cast<int64_t>(children_.size()) - 1);
    RowRng child = rng.fork(static_cast<uint32_t>(k));
    return children_[k]->apply(in, child);
  }
};

// MindSpore's UniformAugment: pick num_ops of the transforms (without replacement, in list
// order) and apply each picked one with probability 1/2.
class UniformAugment : public Composite {
 public:
  UniformAugment(TransformList c, int64_t num_ops)
      : Composite("UniformAugment", std::move(c), true), num_ops_(num_ops) {
    if (num_ops_ < 1 || num_ops_ > static_cast<int64_t>(children_.size()))
      MYCEL_THROW(ValueError, "[UniformAugment] num_ops must be in [1, ", children_.size(),
                  "], got ", num_ops_);
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    // Selection sampling (Knuth's algorithm S): each subset of size num_ops equally likely.
    int64_t n = static_cast<int64_t>(children_.size()), need = num_ops_;
    std::vector<Tensor> row = in;
    for (int64_t i = 0; i < n && need > 0; ++i) {
      if (rng.uniform() * (n - i) >= need) continue;
      --need;
      if (rng.uniform() < 0.5) continue;
      RowRng child = rng.fork(static_cast<uint32_t>(i));
      row = children_[i]->apply(row, child);
    }
    return row;
  }

 private:
  int64_t num_ops_;
};

}  // namespace

MYCEL_REGISTER_DATA(generic) {
  register_transform("Compose", [](const Params&, const TransformList& c) {
    return std::make_shared<Compose>(c);
  });
  register_transform("RandomApply", [](const Params& p, const TransformList& c) {
    double prob = p.get_float("prob", 0.5);
    if (!(prob >= 0 && prob <= 1))
      MYCEL_THROW(ValueError, "[RandomApply] prob must be in [0, 1], got ", prob);
    return std::make_shared<RandomApply>(c, prob);
  });
  register_transform("RandomChoice", [](const Params&, const TransformList& c) {
    return std::make_shared<RandomChoice>(c);
  });
  register_transform("UniformAugment", [](const Params& p, const TransformList& c) {
    return std::make_shared<UniformAugment>(c, p.get_int("num_ops", 2));
  });
  register_transform("TypeCast", [](const Params& p, const TransformList&) {
    DType to = p.get_dtype("data_type");
    std::shared_ptr<PixelStage> stage;
    if (to == DType::float32) {  // the cast a fused image pass can do (pixel_chain.h)
      stage = std::make_shared<PixelStage>();
      stage->kind = PixelStage::Kind::to_float32;
    }
    return image_fn(
        "TypeCast", false,
        [to](const Tensor& x, RowRng&) {
          if (!x.defined()) MYCEL_THROW(ValueError, "[TypeCast] input column is empty");
          return x.dtype() == to ? x : x.to(to);
        },
        stage);
  });
  register_transform("OneHot", [](const Params& p, const TransformList&) {
    int64_t k = p.get_int("num_classes");
    double smooth = p.get_float("smoothing_rate", 0.0);
    if (k <= 0) MYCEL_THROW(ValueError, "[OneHot] num_classes must be positive, got ", k);
    if (smooth < 0 || smooth > 1)
      MYCEL_THROW(ValueError, "[OneHot] smoothing_rate must be in [0, 1], got ", smooth);
    return image_fn("OneHot", false, [k, smooth](const Tensor& x, RowRng&) {
      if (!x.defined() || !is_integral(x.dtype()) || x.ndim() > 1)
        MYCEL_THROW(ValueError, "[OneHot] expected an integer label of shape () or (n,), got ",
                    x.defined() ? dtype_name(x.dtype()) : "None", " of shape ",
                    x.defined() ? shape_str(x.shape()) : "()");
      Shape shape = x.shape();
      shape.push_back(k);
      // Integer labels give integer one-hots (MindSpore); smoothing needs float32.
      DType dt = smooth > 0 ? DType::float32 : x.dtype();
      Tensor l64 = x.to(DType::int64);
      std::vector<double> vals(static_cast<size_t>(x.numel() * k), smooth / k);
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t c = l64.data<int64_t>()[i];
        if (c < 0 || c >= k)
          MYCEL_THROW(ValueError, "[OneHot] label ", c, " out of range [0, ", k, ")");
        vals[i * k + c] = 1.0 - smooth + smooth / k;
      }
      Tensor out = Tensor::empty(shape, dt);
      convert_elements(vals.data(), DType::float64, out.data(), dt,
                       static_cast<int64_t>(vals.size()));
      return out;
    });
  });
}

}  // namespace mycel::data::vision
