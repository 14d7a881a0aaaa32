#include "dataplane/security/gmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <utility>

#include "core/result.h"

namespace tob::dataplane::security {

Gmac::Gmac(const Key& key) {
  ctx_ = EVP_CIPHER_CTX_new();
  TOB_ASSERT(ctx_ != nullptr);
  const int ok = EVP_EncryptInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key.data(), nullptr);
  TOB_ASSERT(ok == 1);
  // 12 bytes is GCM's default IV length; say so, so that a change of default cannot hash it.
  TOB_ASSERT(EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kIvBytes), nullptr) == 1);
}

Gmac::~Gmac() { EVP_CIPHER_CTX_free(ctx_); }

Gmac::Gmac(Gmac&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}

Gmac& Gmac::operator=(Gmac&& o) noexcept {
  if (this != &o) {
    EVP_CIPHER_CTX_free(ctx_);
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}

bool Gmac::tag(const Iv& iv, std::span<const uint8_t> a, std::span<const uint8_t> b, Tag& out) {
  TOB_ASSERT(ctx_ != nullptr);
  int len = 0;
  // The key schedule stays; only the IV (and with it GHASH's state) is reset.
  if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, iv.data()) != 1) return false;
  if (!a.empty() && EVP_EncryptUpdate(ctx_, nullptr, &len, a.data(), static_cast<int>(a.size())) != 1) return false;
  if (!b.empty() && EVP_EncryptUpdate(ctx_, nullptr, &len, b.data(), static_cast<int>(b.size())) != 1) return false;
  if (EVP_EncryptFinal_ex(ctx_, nullptr, &len) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), out.data()) == 1;
}

bool Gmac::verify(const Iv& iv, std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<const uint8_t> tag_in) {
  if (tag_in.size() != kTagBytes) return false;
  Tag t;
  if (!tag(iv, a, b, t)) return false;
  return CRYPTO_memcmp(t.data(), tag_in.data(), kTagBytes) == 0;
}

}  // namespace tob::dataplane::security
