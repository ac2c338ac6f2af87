// libmycel_spm: SentencePiece behind a C interface (see spm_shim.h for why it is a library of
// its own).
#include "mycel/data/text/spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

char* copy_out(const std::string& s, size_t* len) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  if (len) *len = s.size();
  return p;
}

int fail(const sentencepiece::util::Status& st, char** err) {
  *err = copy_out(st.ToString(), nullptr);
  return -1;
}

class Sentences : public sentencepiece::SentenceIterator {
 public:
  Sentences(const char* const* s, const size_t* len, size_t n) : s_(s), len_(len), n_(n) { load(); }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return cur_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) cur_.assign(s_[i_], len_[i_]);
  }
  const char* const* s_;
  const size_t* len_;
  size_t n_, i_ = 0;
  std::string cur_;
};

}  // namespace

extern "C" {

int mycel_spm_train(const char* const* sentences, const size_t* lengths, size_t n,
                    const char* const* keys, const char* const* values, size_t nkv, char** out,
                    size_t* out_len, char** err) {
  std::unordered_map<std::string, std::string> kw;
  for (size_t i = 0; i < nkv; ++i) kw[keys[i]] = values[i];
  Sentences it(sentences, lengths, n);
  std::string model;
  auto st = sentencepiece::SentencePieceTrainer::Train(kw, n ? &it : nullptr, &model);
  if (!st.ok()) return fail(st, err);
  *out = copy_out(model, out_len);
  return 0;
}

void* mycel_spm_load(const char* data, size_t len, int is_path, char** err) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  auto st = is_path ? sp->Load(std::string(data, len))
                    : sp->LoadFromSerializedProto(std::string(data, len));
  if (!st.ok()) {
    fail(st, err);
    delete sp;
    return nullptr;
  }
  return sp;
}

int mycel_spm_encode(const void* processor, const char* text, size_t len, int ids, char** out,
                     size_t* out_len, size_t* count, char** err) {
  const auto* sp = static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
  std::string buf;
  if (ids) {
    std::vector<int> v;
    auto st = sp->Encode(std::string(text, len), &v);
    if (!st.ok()) return fail(st, err);
    for (int id : v) {
      int32_t x = id;
      buf.append(reinterpret_cast<const char*>(&x), sizeof(x));
    }
    *count = v.size();
  } else {
    std::vector<std::string> v;
    auto st = sp->Encode(std::string(text, len), &v);
    if (!st.ok()) return fail(st, err);
    for (const auto& piece : v) {
      uint32_t n = static_cast<uint32_t>(piece.size());
      buf.append(reinterpret_cast<const char*>(&n), sizeof(n));
      buf += piece;
    }
    *count = v.size();
  }
  *out = copy_out(buf, out_len);
  return 0;
}

void mycel_spm_unload(void* processor) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(processor);
}

void mycel_spm_free(void* p) { std::free(p); }
}
