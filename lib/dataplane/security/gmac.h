// AES-256-GMAC (OpenSSL EVP: AES-GCM with the authenticated bytes as additional data and no
// plaintext), the MAC of slot frames (docs/plans/security.md: the cheapest measured, 266 ns per
// 1.5 KB frame and side, the only one under 1 us at 9 KB). The key schedule is expanded once, when
// the context is made (on a control thread); per frame only the IV is set: no allocation, no lock,
// no system call. One Gmac belongs to one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

namespace tob::dataplane::security {

inline constexpr size_t kKeyBytes = 32;  // AES-256
inline constexpr size_t kIvBytes = 12;   // GCM's 96-bit IV: used as J0 directly, never hashed
inline constexpr size_t kTagBytes = 16;  // the full GCM tag

using Key = std::array<uint8_t, kKeyBytes>;
using Iv = std::array<uint8_t, kIvBytes>;
using Tag = std::array<uint8_t, kTagBytes>;

class Gmac {
 public:
  Gmac() = default;
  explicit Gmac(const Key& key);  // aborts when OpenSSL cannot make the context (out of memory)
  ~Gmac();
  Gmac(Gmac&& o) noexcept;
  Gmac& operator=(Gmac&& o) noexcept;
  Gmac(const Gmac&) = delete;
  Gmac& operator=(const Gmac&) = delete;

  bool ready() const { return ctx_ != nullptr; }
  // The tag over a then b (two pieces of additional data, in that order). False only when
  // OpenSSL fails, which it does not for a valid context.
  bool tag(const Iv& iv, std::span<const uint8_t> a, std::span<const uint8_t> b, Tag& out);
  // Computes the tag and compares it in constant time.
  bool verify(const Iv& iv, std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<const uint8_t> tag);

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
};

}  // namespace tob::dataplane::security
