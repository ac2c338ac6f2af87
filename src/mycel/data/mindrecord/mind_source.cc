// The "MindDataset" source: a MindRecord file set as a random-access table of rows.
#include "mycel/data/mindrecord/reader.h"
#include "mycel/data/source.h"
#include "mycel/data/string_tensor.h"
#include "mycel/data/transform.h"

namespace mycel::data {
namespace {

class MindSource : public Source {
 public:
  explicit MindSource(std::shared_ptr<mr::Reader> r) : reader_(std::move(r)) {}
  std::vector<std::string> column_names() const override { return reader_->column_names(); }
  int64_t size() const override { return reader_->size(); }
  // String fields come out as strings (MindSpore's str), bytes fields as uint8 arrays.
  Row get(int64_t index) const override {
    Row row = reader_->get(index);
    const auto& cols = reader_->columns();
    for (size_t i = 0; i < row.size(); ++i) {
      if (reader_->fields()[cols[i]].type != mr::FieldType::string) continue;
      row[i] = make_string_tensor(static_cast<const char*>(row[i].data()), row[i].numel(), {},
                                  StringKind::text);
    }
    return row;
  }

 private:
  std::shared_ptr<mr::Reader> reader_;
};

}  // namespace

MYCEL_REGISTER_DATA(mindrecord) {
  // dataset_files: a str names one shard and brings in its siblings (from its header); a list
  // names exactly the files to read. columns_list: the columns to return, in that order.
  register_source("MindDataset", [](const Params& p) -> std::shared_ptr<Source> {
    MYCEL_CHECK(p.has("dataset_files"), ValueError, "[MindDataset] dataset_files is required");
    bool expand = std::holds_alternative<std::string>(p.values().at("dataset_files"));
    std::vector<std::string> files = p.get_strs("dataset_files");
    std::vector<std::string> cols = p.get_strs("columns_list", std::vector<std::string>{});
    return std::make_shared<MindSource>(std::make_shared<mr::Reader>(files, expand, cols));
  });
}

}  // namespace mycel::data
