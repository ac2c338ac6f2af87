// SentencePiece training and the SentencePieceTokenizer transform (string pieces or int32 ids),
// through libmycel_spm (spm_shim.h), loaded on first use with a symbol scope of
// its own so that SentencePiece's bundled protobuf never meets the system one.
#include "mycel/data/text/sentencepiece.h"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "mycel/data/string_tensor.h"
#include "mycel/data/text/spm_shim.h"
#include "mycel/data/text/text_util.h"

#ifndef MYCEL_SPM_SHIM_PATH
#define MYCEL_SPM_SHIM_PATH ""
#endif

namespace mycel::data::text {
namespace {

struct Shim {
  decltype(&mycel_spm_train) train = nullptr;
  decltype(&mycel_spm_load) load = nullptr;
  decltype(&mycel_spm_encode) encode = nullptr;
  decltype(&mycel_spm_unload) unload = nullptr;
  decltype(&mycel_spm_free) free = nullptr;
};

// dlopen flags: a local scope, and the shim's own symbols first (RTLD_DEEPBIND) so that even a
// process that has the system libprotobuf in its global scope leaves SentencePiece its own
// copy. AddressSanitizer refuses RTLD_DEEPBIND; there the local scope alone must do (it does in
// Python, whose global scope holds no protobuf).
int open_flags() {
#if defined(__SANITIZE_ADDRESS__)
  return RTLD_NOW | RTLD_LOCAL;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return RTLD_NOW | RTLD_LOCAL;
#else
  return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
#else
  return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
}

// The shim next to the library holding this code (an installed wheel), else where the build put
// it (MYCEL_SPM_SHIM_PATH), else wherever MYCEL_SPM_SHIM points.
const Shim& shim() {
  static std::once_flag once;
  static Shim s;
  static std::string error;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("MYCEL_SPM_SHIM")) candidates.push_back(env);
    static const int anchor = 0;  // an address inside the library that holds this code
    Dl_info info;
    if (dladdr(&anchor, &info) && info.dli_fname)
      candidates.push_back(
          (std::filesystem::path(info.dli_fname).parent_path() / "libmycel_spm.so").string());
    if (*MYCEL_SPM_SHIM_PATH) candidates.push_back(MYCEL_SPM_SHIM_PATH);
    void* h = nullptr;
    for (const auto& c : candidates) {
      if (!std::filesystem::exists(c)) continue;
      h = dlopen(c.c_str(), open_flags());
      if (h) break;
      error += std::string(" ") + dlerror();
    }
    if (!h) {
      error = "SentencePiece is not available: libmycel_spm.so was not found (looked in" +
              [&] {
                std::string all;
                for (const auto& c : candidates) all += " " + c;
                return all;
              }() +
              ")" + error;
      return;
    }
    s.train = reinterpret_cast<decltype(s.train)>(dlsym(h, "mycel_spm_train"));
    s.load = reinterpret_cast<decltype(s.load)>(dlsym(h, "mycel_spm_load"));
    s.encode = reinterpret_cast<decltype(s.encode)>(dlsym(h, "mycel_spm_encode"));
    s.unload = reinterpret_cast<decltype(s.unload)>(dlsym(h, "mycel_spm_unload"));
    s.free = reinterpret_cast<decltype(s.free)>(dlsym(h, "mycel_spm_free"));
    if (!s.train || !s.load || !s.encode || !s.unload || !s.free) {
      s = Shim{};
      error = "SentencePiece is not available: libmycel_spm.so lacks its functions";
    }
  });
  if (!s.train) MYCEL_THROW(RuntimeError, error);
  return s;
}

// Takes an error string from the shim and throws it after freeing it.
[[noreturn]] void throw_shim_error(const std::string& who, char* err) {
  std::string msg = err ? err : "unknown error";
  shim().free(err);
  MYCEL_THROW(ValueError, who, msg);
}

// A loaded model, released through the shim.
std::shared_ptr<void> load_model(const std::string& data, bool is_path, const std::string& who) {
  const Shim& s = shim();
  char* err = nullptr;
  void* p = s.load(data.data(), data.size(), is_path ? 1 : 0, &err);
  if (!p) throw_shim_error(who, err);
  return std::shared_ptr<void>(p, [](void* q) { shim().unload(q); });
}

class SentencePieceTokenizer : public Transform {
 public:
  explicit SentencePieceTokenizer(const Params& p) {
    if (p.has("model")) {
      sp_ = load_model(p.get_str("model"), false,
                       "SentencePieceTokenizer: the vocab holds no valid model: ");
    } else {
      std::string path = p.get_str("model_file");
      sp_ = load_model(path, true,
                       "SentencePieceTokenizer: cannot load the model file '" + path + "': ");
    }
    std::string out = p.get_str("out_type", "string");
    if (out != "string" && out != "int")
      MYCEL_THROW(ValueError, "SentencePieceTokenizer: out_type must be 'string' or 'int', got '",
                  out, "'");
    ids_ = out == "int";
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    std::string s = scalar_text(in, name());
    const Shim& sh = shim();
    char *buf = nullptr, *err = nullptr;
    size_t len = 0, count = 0;
    if (sh.encode(sp_.get(), s.data(), s.size(), ids_ ? 1 : 0, &buf, &len, &count, &err) != 0)
      throw_shim_error(name() + ": encoding failed: ", err);
    std::unique_ptr<char, void (*)(char*)> hold(buf, [](char* q) { shim().free(q); });
    const int64_t n = static_cast<int64_t>(count);
    if (ids_) {
      MYCEL_CHECK(len == count * sizeof(int32_t), RuntimeError, name(), ": shim returned ", len,
                  " bytes for ", count, " ids");
      Tensor t = Tensor::empty({n}, DType::int32);
      if (len) std::memcpy(t.data(), buf, len);
      return {t};
    }
    std::vector<std::string> pieces;
    pieces.reserve(count);
    size_t pos = 0;
    for (size_t i = 0; i < count; ++i) {
      uint32_t k = 0;
      MYCEL_CHECK(pos + sizeof(k) <= len, RuntimeError, name(), ": truncated shim output");
      std::memcpy(&k, buf + pos, sizeof(k));
      pos += sizeof(k);
      MYCEL_CHECK(k <= len - pos, RuntimeError, name(), ": truncated shim output");
      pieces.emplace_back(buf + pos, k);
      pos += k;
    }
    return {make_string_tensor(pieces, {n}, StringKind::text)};
  }
  std::string name() const override { return "SentencePieceTokenizer"; }
  bool takes_strings() const override { return true; }

 private:
  std::shared_ptr<void> sp_;
  bool ids_ = false;
};

}  // namespace

std::string sentencepiece_train(const std::vector<std::string>& sentences,
                                const std::vector<std::string>& files,
                                const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> kw = options;
  kw.emplace("minloglevel", "1");  // the trainer's progress log is not ours to print
  if (sentences.empty()) {
    std::string input;
    for (const auto& f : files) input += (input.empty() ? "" : ",") + f;
    if (input.empty())
      MYCEL_THROW(ValueError, "SentencePieceVocab: no sentences and no files to train on");
    kw["input"] = input;
  }
  std::vector<const char*> s, keys, values;
  std::vector<size_t> lens;
  for (const auto& x : sentences) {
    s.push_back(x.data());
    lens.push_back(x.size());
  }
  for (const auto& [k, v] : kw) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  const Shim& sh = shim();
  char *out = nullptr, *err = nullptr;
  size_t len = 0;
  // The trainer keeps global state (log level, flags): one training at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (sh.train(s.data(), lens.data(), s.size(), keys.data(), values.data(), keys.size(), &out, &len,
               &err) != 0)
    throw_shim_error("SentencePieceVocab: training failed: ", err);
  std::string model(out, len);
  sh.free(out);
  return model;
}

void sentencepiece_check(const std::string& model) {
  load_model(model, false, "SentencePieceVocab: not a valid SentencePiece model: ");
}

MYCEL_REGISTER_DATA(text_sentencepiece) {
  register_transform("SentencePieceTokenizer", [](const Params& p, const TransformList&) {
    return std::make_shared<SentencePieceTokenizer>(p);
  });
}

}  // namespace mycel::data::text
