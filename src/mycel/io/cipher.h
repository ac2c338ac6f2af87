// Encrypted files: MindSpore's enc_key/enc_mode (save_checkpoint, export) and dec_key/dec_mode
// (load_checkpoint, load) over OpenSSL's EVP ciphers. A sealed file is an envelope around the
// plain file's bytes (spec in docs/checkpoints.md, "Encrypted checkpoints"):
//   "MYCELENC" | u32 version | u8 mode | u8 iv_len | u16 zero | u64 plain_len | iv | body
// body = ciphertext | 16-byte tag (AES-GCM, which authenticates the header too) or the
// PKCS#7-padded ciphertext (AES-CBC, SM4-CBC: the plain format's own checksum catches a wrong key).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mycel::io {

/// The cipher of an encrypted file (MindSpore's enc_mode names).
enum class CipherMode : uint8_t { aes_gcm = 1, aes_cbc = 2, sm4_cbc = 3 };

/// "AES-GCM", "AES-CBC" or "SM4-CBC" (case-insensitive); ValueError naming `fn` otherwise.
CipherMode parse_cipher_mode(const std::string& name, const std::string& fn);
/// MindSpore's spelling of a mode.
const char* cipher_mode_name(CipherMode mode);

/// Whether `head` (a file's first bytes) starts a sealed envelope.
bool is_sealed(std::string_view head);

/// Encrypts `plain` with `key` (16, 24 or 32 bytes for AES; 16 for SM4) under a fresh random IV.
std::string seal(std::string_view plain, std::string_view key, CipherMode mode,
                 const std::string& fn);
/// Decrypts an envelope. A wrong key, another mode or altered bytes raise ValueError naming
/// `what` (the file); the envelope's lengths are checked before anything is allocated.
std::string unseal(std::string_view sealed, std::string_view key, CipherMode mode,
                   const std::string& what);

}  // namespace mycel::io
