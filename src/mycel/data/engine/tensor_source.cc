// The source of NumpySlicesDataset: one tensor per column, row i is slice i of each (a view).
#include "mycel/data/engine/tensor_source.h"
#include "mycel/data/engine/engine.h"

namespace mycel::data::engine {
namespace {

class TensorSource : public Source {
 public:
  TensorSource(std::vector<Tensor> cols, std::vector<std::string> names)
      : cols_(std::move(cols)), names_(std::move(names)) {
    MYCEL_CHECK(!cols_.empty(), ValueError, "NumpySlicesDataset: no columns given");
    MYCEL_CHECK(cols_.size() == names_.size(), ValueError, "NumpySlicesDataset: ", cols_.size(),
                " columns but ", names_.size(), " column_names");
    for (size_t i = 0; i < cols_.size(); ++i) {
      MYCEL_CHECK(cols_[i].ndim() >= 1, ValueError, "NumpySlicesDataset: column '", names_[i],
                  "' must have at least one dimension to slice, got a scalar");
      MYCEL_CHECK(cols_[i].dim(0) == cols_[0].dim(0), ValueError, "NumpySlicesDataset: column '",
                  names_[i], "' has ", cols_[i].dim(0), " rows but column '", names_[0], "' has ",
                  cols_[0].dim(0));
    }
  }
  std::vector<std::string> column_names() const override { return names_; }
  int64_t size() const override { return cols_[0].dim(0); }
  Row get(int64_t i) const override {
    Row r;
    for (const Tensor& c : cols_) {
      Shape s(c.shape().begin() + 1, c.shape().end());
      r.push_back(c.narrow0(i, 1).view(s));
    }
    return r;
  }

 private:
  std::vector<Tensor> cols_;
  std::vector<std::string> names_;
};

}  // namespace

std::shared_ptr<Source> tensor_source(std::vector<Tensor> columns, std::vector<std::string> names) {
  return std::make_shared<TensorSource>(std::move(columns), std::move(names));
}

}  // namespace mycel::data::engine
