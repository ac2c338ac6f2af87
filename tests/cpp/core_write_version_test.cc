// core/write_version.h: versions unique per contents, renewed by tracked writes and by the end of
// an exported view, 0 while a view is alive or for borrowed memory.
#include <gtest/gtest.h>

#include <set>

#include "mycel/core/tensor.h"
#include "mycel/core/write_version.h"

namespace mycel {
namespace {

TEST(WriteVersion, StableUntilWrittenAndUniqueAcrossStorages) {
  Tensor a = Tensor::empty({4}, DType::float32), b = Tensor::empty({4}, DType::float32);
  const uint64_t va = write_version(*a.storage()), vb = write_version(*b.storage());
  EXPECT_NE(va, 0u);
  EXPECT_NE(vb, 0u);
  EXPECT_NE(va, vb);
  EXPECT_EQ(write_version(*a.storage()), va);  // asking does not change it
  note_write(*a.storage());
  const uint64_t va2 = write_version(*a.storage());
  EXPECT_NE(va2, va);
  EXPECT_NE(va2, vb);
  EXPECT_EQ(write_version(*b.storage()), vb);  // only the written storage changes
}

TEST(WriteVersion, ExportedViewsAndBorrowedMemoryAreUntracked) {
  Tensor a = Tensor::empty({4}, DType::float32);
  const uint64_t v = write_version(*a.storage());
  begin_export(*a.storage());
  begin_export(*a.storage());
  EXPECT_EQ(write_version(*a.storage()), 0u);
  end_export(*a.storage());
  EXPECT_EQ(write_version(*a.storage()), 0u);  // one view still alive
  end_export(*a.storage());
  const uint64_t after = write_version(*a.storage());
  EXPECT_NE(after, 0u);
  EXPECT_NE(after, v);  // the views may have written
  float buf[4] = {};
  Tensor borrowed(Storage::borrow(buf, sizeof(buf), [] {}), 0, {4}, DType::float32);
  mark_borrowed(*borrowed.storage());
  EXPECT_EQ(write_version(*borrowed.storage()), 0u);
}

TEST(WriteVersion, ANewStorageAtAFreedAddressGetsANewVersion) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 50; ++i) {  // the caching allocator hands the same block back each time
    Tensor t = Tensor::empty({16}, DType::float32);
    EXPECT_TRUE(seen.insert(write_version(*t.storage())).second) << "iteration " << i;
  }
}

}  // namespace
}  // namespace mycel
