// The sealed-file envelope over OpenSSL's EVP interface (see cipher.h for the layout).
#include "mycel/io/cipher.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

#include "mycel/core/error.h"

namespace mycel::io {

namespace {

constexpr char kMagic[8] = {'M', 'Y', 'C', 'E', 'L', 'E', 'N', 'C'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 8 + 4 + 1 + 1 + 2 + 8;
constexpr size_t kTag = 16;    // GCM tag
constexpr size_t kBlock = 16;  // AES and SM4 block size

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

size_t iv_length(CipherMode mode) { return mode == CipherMode::aes_gcm ? 12 : kBlock; }

const EVP_CIPHER* cipher_for(CipherMode mode, size_t key_len, const std::string& fn) {
  if (mode == CipherMode::sm4_cbc) {
    MYCEL_CHECK(key_len == 16, ValueError, fn, ": SM4-CBC takes a 16-byte key, got ", key_len,
                " bytes");
    const EVP_CIPHER* c = EVP_sm4_cbc();
    MYCEL_CHECK(c != nullptr, RuntimeError, fn, ": this OpenSSL has no SM4");
    return c;
  }
  const bool gcm = mode == CipherMode::aes_gcm;
  switch (key_len) {
    case 16:
      return gcm ? EVP_aes_128_gcm() : EVP_aes_128_cbc();
    case 24:
      return gcm ? EVP_aes_192_gcm() : EVP_aes_192_cbc();
    case 32:
      return gcm ? EVP_aes_256_gcm() : EVP_aes_256_cbc();
    default:
      MYCEL_THROW(ValueError, fn, ": ", cipher_mode_name(mode),
                  " takes a key of 16, 24 or 32 bytes, got ", key_len, " bytes");
  }
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

// EVP takes int lengths: feed the data in chunks so any size works.
constexpr size_t kChunk = size_t{1} << 30;

}  // namespace

CipherMode parse_cipher_mode(const std::string& name, const std::string& fn) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up == "AES-GCM") return CipherMode::aes_gcm;
  if (up == "AES-CBC") return CipherMode::aes_cbc;
  if (up == "SM4-CBC") return CipherMode::sm4_cbc;
  MYCEL_THROW(ValueError, fn, ": the mode must be 'AES-GCM', 'AES-CBC' or 'SM4-CBC', got '", name,
              "'");
}

const char* cipher_mode_name(CipherMode mode) {
  switch (mode) {
    case CipherMode::aes_gcm:
      return "AES-GCM";
    case CipherMode::aes_cbc:
      return "AES-CBC";
    case CipherMode::sm4_cbc:
      return "SM4-CBC";
  }
  return "?";
}

bool is_sealed(std::string_view head) {
  return head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) == 0;
}

std::string seal(std::string_view plain, std::string_view key, CipherMode mode,
                 const std::string& fn) {
  const EVP_CIPHER* cipher = cipher_for(mode, key.size(), fn);
  const bool gcm = mode == CipherMode::aes_gcm;
  const size_t iv_len = iv_length(mode);
  std::string out;
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kVersion);
  put<uint8_t>(out, static_cast<uint8_t>(mode));
  put<uint8_t>(out, static_cast<uint8_t>(iv_len));
  put<uint16_t>(out, 0);
  put<uint64_t>(out, plain.size());
  std::string iv(iv_len, '\0');
  MYCEL_CHECK(RAND_bytes(bytes(iv), static_cast<int>(iv_len)) == 1, RuntimeError, fn,
              ": OpenSSL could not draw a random IV");
  out += iv;

  Ctx ctx(EVP_CIPHER_CTX_new());
  MYCEL_CHECK(ctx && EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr) == 1,
              RuntimeError, fn, ": OpenSSL could not set up ", cipher_mode_name(mode));
  if (gcm)
    EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(iv_len), nullptr);
  MYCEL_CHECK(EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key), bytes(iv)) == 1,
              RuntimeError, fn, ": OpenSSL rejected the key");
  int n = 0;
  if (gcm)  // the header is authenticated data: a flipped length or mode fails the tag
    EVP_EncryptUpdate(ctx.get(), nullptr, &n, bytes(out), static_cast<int>(kHeader));
  const size_t body = out.size();
  out.resize(body + plain.size() + kBlock);
  size_t pos = body;
  for (size_t at = 0; at < plain.size(); at += kChunk) {
    const size_t len = std::min(kChunk, plain.size() - at);
    MYCEL_CHECK(EVP_EncryptUpdate(ctx.get(), bytes(out) + pos, &n, bytes(plain) + at,
                                  static_cast<int>(len)) == 1,
                RuntimeError, fn, ": encryption failed");
    pos += static_cast<size_t>(n);
  }
  MYCEL_CHECK(EVP_EncryptFinal_ex(ctx.get(), bytes(out) + pos, &n) == 1, RuntimeError, fn,
              ": encryption failed");
  pos += static_cast<size_t>(n);
  out.resize(pos);
  if (gcm) {
    unsigned char tag[kTag];
    EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTag, tag);
    out.append(reinterpret_cast<const char*>(tag), kTag);
  }
  return out;
}

std::string unseal(std::string_view sealed, std::string_view key, CipherMode mode,
                   const std::string& what) {
  const std::string fn = "decrypting '" + what + "'";
  MYCEL_CHECK(is_sealed(sealed), ValueError, "'", what,
              "' is not encrypted (its first bytes are not \"MYCELENC\"); load it without dec_key");
  MYCEL_CHECK(sealed.size() >= kHeader, ValueError, "'", what, "' is truncated: ", sealed.size(),
              " bytes, fewer than the encryption header's ", kHeader);
  uint32_t version;
  uint8_t stored_mode, iv_len;
  uint64_t plain_len;
  std::memcpy(&version, sealed.data() + 8, 4);
  std::memcpy(&stored_mode, sealed.data() + 12, 1);
  std::memcpy(&iv_len, sealed.data() + 13, 1);
  std::memcpy(&plain_len, sealed.data() + 16, 8);
  MYCEL_CHECK(version == kVersion, ValueError, "'", what, "' has encryption format version ",
              version, "; this Mycel reads version ", kVersion);
  MYCEL_CHECK(stored_mode >= 1 && stored_mode <= 3, ValueError, "'", what,
              "' has a corrupt encryption header (mode ", int(stored_mode), ")");
  const auto file_mode = static_cast<CipherMode>(stored_mode);
  MYCEL_CHECK(file_mode == mode, ValueError, "'", what, "' was encrypted with ",
              cipher_mode_name(file_mode), ", but dec_mode is ", cipher_mode_name(mode));
  MYCEL_CHECK(iv_len == iv_length(mode), ValueError, "'", what,
              "' has a corrupt encryption header (IV of ", int(iv_len), " bytes)");
  const bool gcm = mode == CipherMode::aes_gcm;
  const size_t start = kHeader + iv_len;
  MYCEL_CHECK(sealed.size() >= start + (gcm ? kTag : kBlock), ValueError, "'", what,
              "' is truncated: ", sealed.size(), " bytes");
  const size_t body_len = sealed.size() - start - (gcm ? kTag : 0);
  if (gcm)
    MYCEL_CHECK(plain_len == body_len, ValueError, "'", what,
                "' is truncated or corrupt: ", body_len, " encrypted bytes for a plain length of ",
                plain_len);
  else
    MYCEL_CHECK(body_len % kBlock == 0 && plain_len < body_len && body_len - plain_len <= kBlock,
                ValueError, "'", what, "' is truncated or corrupt: ", body_len,
                " encrypted bytes for a plain length of ", plain_len);

  const EVP_CIPHER* cipher = cipher_for(mode, key.size(), fn);
  Ctx ctx(EVP_CIPHER_CTX_new());
  MYCEL_CHECK(ctx && EVP_DecryptInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr) == 1,
              RuntimeError, fn, ": OpenSSL could not set up ", cipher_mode_name(mode));
  if (gcm) EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, iv_len, nullptr);
  MYCEL_CHECK(
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key), bytes(sealed) + kHeader) == 1,
      RuntimeError, fn, ": OpenSSL rejected the key");
  int n = 0;
  if (gcm) EVP_DecryptUpdate(ctx.get(), nullptr, &n, bytes(sealed), static_cast<int>(kHeader));
  std::string plain(body_len + kBlock, '\0');
  size_t pos = 0;
  for (size_t at = 0; at < body_len; at += kChunk) {
    const size_t len = std::min(kChunk, body_len - at);
    MYCEL_CHECK(EVP_DecryptUpdate(ctx.get(), bytes(plain) + pos, &n, bytes(sealed) + start + at,
                                  static_cast<int>(len)) == 1,
                ValueError, fn, ": decryption failed");
    pos += static_cast<size_t>(n);
  }
  if (gcm) {
    unsigned char tag[kTag];
    std::memcpy(tag, sealed.data() + sealed.size() - kTag, kTag);
    EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTag, tag);
  }
  const bool ok = EVP_DecryptFinal_ex(ctx.get(), bytes(plain) + pos, &n) == 1;
  MYCEL_CHECK(ok, ValueError, "'", what, "' could not be decrypted: wrong dec_key, or the file ",
              gcm ? "was altered (AES-GCM tag mismatch)" : "is corrupt (bad padding)");
  pos += static_cast<size_t>(n);
  MYCEL_CHECK(pos == plain_len, ValueError, "'", what,
              "' could not be decrypted: wrong dec_key, or the file is corrupt (", pos,
              " plain bytes, the header says ", plain_len, ")");
  plain.resize(pos);
  return plain;
}

}  // namespace mycel::io
