// RecordAbs (analysis/abstract_util.h): a record's abstract is a tuple of its run-time fields
// tagged with its class and compile-time fields; join, widening and keys keep the tag.
#include <gtest/gtest.h>

#include "mycel/analysis/abstract_util.h"

namespace mycel::analysis::detail {
namespace {
using namespace ir;

AbstractPtr tensor(Shape s) {
  return std::make_shared<AbstractTensor>(std::move(s), DType::float32);
}

AbstractPtr record(const char* cls, int64_t rows, AbstractPtr values) {
  return std::make_shared<RecordAbs>(string(cls), std::vector<std::string>{"values", "shape"},
                                     std::vector<ValuePtr>{nullptr, tuple({integer(rows)})},
                                     std::vector<AbstractPtr>{std::move(values)});
}

TEST(AnalysisRecord, FieldsAndItems) {
  auto r = record("CSR", 4, tensor({3}));
  auto* ra = as_record(r);
  ASSERT_NE(ra, nullptr);
  EXPECT_EQ(ra->field("shape"), 1);
  EXPECT_EQ(ra->field("nope"), -1);
  EXPECT_EQ(ra->item_of(0), 0u);
  EXPECT_EQ(ra->items().size(), 1u);   // the compile-time shape takes no place in the tuple
  EXPECT_EQ(constant_of(r), nullptr);  // never folds to a plain tuple (the class would be lost)
  EXPECT_NE(r->repr().find("values: f32[3]"), std::string::npos);
}

TEST(AnalysisRecord, JoinKeepsTheClassAndWidensItems) {
  auto j = join(record("CSR", 4, tensor({3})), record("CSR", 4, tensor({5})), {});
  ASSERT_NE(as_record(j), nullptr);
  EXPECT_EQ(as_tensor(as_record(j)->items()[0])->shape(), Shape({kDynamic}));
  // another class, other compile-time fields, or a plain tuple: no join
  EXPECT_EQ(join(record("CSR", 4, tensor({3})), record("COO", 4, tensor({3})), {}), nullptr);
  EXPECT_EQ(join(record("CSR", 4, tensor({3})), record("CSR", 5, tensor({3})), {}), nullptr);
  EXPECT_EQ(join(record("CSR", 4, tensor({3})),
                 std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{tensor({3})}), {}),
            nullptr);
  EXPECT_NE(as_record(widen(record("CSR", 4, tensor({3})), record("CSR", 4, tensor({3})))),
            nullptr);
}

TEST(AnalysisRecord, KeysNameClassAndStatics) {
  const std::string a = key_of(record("CSR", 4, tensor({3})));
  EXPECT_EQ(a, key_of(record("CSR", 4, tensor({3}))));
  EXPECT_NE(a, key_of(record("COO", 4, tensor({3}))));
  EXPECT_NE(a, key_of(record("CSR", 5, tensor({3}))));
  EXPECT_NE(a, key_of(std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{tensor({3})})));
  EXPECT_TRUE(record("CSR", 4, tensor({3}))->equals(*record("CSR", 4, tensor({3}))));
  EXPECT_FALSE(record("CSR", 4, tensor({3}))->equals(*record("CSR", 5, tensor({3}))));
}

}  // namespace
}  // namespace mycel::analysis::detail
