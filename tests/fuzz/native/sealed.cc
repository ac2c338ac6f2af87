// libFuzzer target: io::load_ckpt with a dec_key on fuzzed encrypted checkpoints (the envelope of
// io/cipher.h around a ".ckpt" file). Bit 0 of the variant byte picks AES-CBC over AES-GCM: the
// fuzzer cannot forge a GCM tag, so GCM exercises the envelope's header and length checks, and
// CBC also feeds the decrypted garbage to the checkpoint parser behind it.
#include "fuzz_common.h"
#include "mycel/io/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  fuzz::Input in = fuzz::split(data, size);
  static const std::string key = "mycel-fuzz-key16";  // the key tests/fuzz/make_corpus.py uses
  const io::CipherMode mode = (in.flags & 1) ? io::CipherMode::aes_cbc : io::CipherMode::aes_gcm;
  std::string path = fuzz::write_file("f.ckpt", in.body);
  fuzz::check<ValueError>([&] { io::load_ckpt(path, key, mode); });
  return 0;
}
