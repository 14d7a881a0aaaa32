// The cost of authenticating one slot frame (issue 21: "choose among libsodium, OpenSSL's EVP and
// DPDK's cryptodev, and justify the choice by measured cost per frame at 64 B, 1.5 KB and 9 KB").
// Each iteration computes the tag of one frame of B bytes with a 256-bit key and checks it against
// the tag of the frame as received (both directions of the per-frame work: the sender's compute,
// the receiver's verify). Candidates, all from Debian 12's packages:
//   OpenSSL EVP AES-256-GMAC   (EVP_aes_256_gcm with the frame as AAD, no plaintext; AES-NI, PCLMUL)
//   OpenSSL HMAC-SHA-256       (EVP_MAC "HMAC")
//   libsodium crypto_auth      (HMAC-SHA-512-256)
//   libsodium BLAKE2b keyed    (crypto_generichash, 16-byte tag)
//   libsodium Poly1305         (crypto_onetimeauth: a one-time key per frame, derived here with
//                               crypto_stream_chacha20 from the cluster key and the frame's nonce,
//                               as a real use would have to; the derivation is in the cost)
// DPDK's cryptodev is not measured: on this machine it would be the aesni_gcm/openssl software
// PMDs, the same code behind a queue pair, with enqueue/dequeue on top.
// Reported: ns_per_frame = the time of both (a tag computed and a tag checked) per frame; half of
// it is one side's cost.
// BM_DaemonSeal and BM_DaemonVerify are the daemon's own code (lib/dataplane/security/frame_auth.h)
// on a real slot frame of B bytes on the wire (trailer included): the flag and the CRC resealed,
// the trailer and IV, the tag (seal); the trailer parsed, the key looked up, the tag computed and
// compared (verify). ns_per_frame there is one side.
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/bytes.h"
#include "core/wire.h"
#include "dataplane/security/auth_trailer.h"
#include "dataplane/security/frame_auth.h"

namespace {

constexpr size_t kTag = 16;

std::array<uint8_t, 32> key() {
  std::array<uint8_t, 32> k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i * 7 + 1);
  return k;
}

std::vector<uint8_t> frame(size_t bytes) {
  std::vector<uint8_t> f(bytes);
  for (size_t i = 0; i < bytes; ++i) f[i] = static_cast<uint8_t>(i * 31 + 5);
  return f;
}

void report(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes * 2));
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// AES-256-GMAC: GCM with the frame as additional data and no plaintext. The 12-byte IV would be
// (sender, cycle, segment) in the daemon; here a counter.
// The key schedule is expanded once (EVP_EncryptInit_ex with the key, outside the loop); per frame
// only the IV is set.
bool gmac(EVP_CIPHER_CTX* c, const uint8_t* iv, const uint8_t* data, size_t n, uint8_t* tag) {
  int len = 0;
  if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, iv) != 1) return false;
  if (EVP_EncryptUpdate(c, nullptr, &len, data, static_cast<int>(n)) != 1) return false;
  if (EVP_EncryptFinal_ex(c, nullptr, &len) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kTag, tag) == 1;
}

void BM_OpenSslGmac(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto k = key();
  const auto f = frame(bytes);
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, k.data(), nullptr);
  uint8_t iv[12] = {};
  uint8_t sent[kTag], got[kTag];
  uint64_t n = 0;
  for (auto _ : state) {
    std::memcpy(iv, &++n, sizeof n);
    if (!gmac(c, iv, f.data(), bytes, sent) || !gmac(c, iv, f.data(), bytes, got) ||
        CRYPTO_memcmp(sent, got, kTag) != 0)
      state.SkipWithError("GMAC failed");
  }
  EVP_CIPHER_CTX_free(c);
  report(state, bytes);
}

void BM_OpenSslHmacSha256(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto k = key();
  const auto f = frame(bytes);
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* base = EVP_MAC_CTX_new(mac);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  EVP_MAC_init(base, k.data(), k.size(), params);
  uint8_t sent[32], got[32];
  size_t len = 0;
  for (auto _ : state) {
    for (uint8_t* out : {sent, got}) {
      EVP_MAC_CTX* c = EVP_MAC_CTX_dup(base);  // the keyed state, reused per frame
      EVP_MAC_update(c, f.data(), bytes);
      EVP_MAC_final(c, out, &len, sizeof sent);
      EVP_MAC_CTX_free(c);
    }
    if (CRYPTO_memcmp(sent, got, kTag) != 0) state.SkipWithError("HMAC failed");
  }
  EVP_MAC_CTX_free(base);
  EVP_MAC_free(mac);
  report(state, bytes);
}

void BM_SodiumHmacSha512256(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto k = key();
  const auto f = frame(bytes);
  uint8_t sent[crypto_auth_BYTES];
  for (auto _ : state) {
    crypto_auth(sent, f.data(), bytes, k.data());
    if (crypto_auth_verify(sent, f.data(), bytes, k.data()) != 0) state.SkipWithError("crypto_auth failed");
  }
  report(state, bytes);
}

void BM_SodiumBlake2b(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto k = key();
  const auto f = frame(bytes);
  uint8_t sent[kTag], got[kTag];
  for (auto _ : state) {
    crypto_generichash(sent, kTag, f.data(), bytes, k.data(), k.size());
    crypto_generichash(got, kTag, f.data(), bytes, k.data(), k.size());
    if (sodium_memcmp(sent, got, kTag) != 0) state.SkipWithError("BLAKE2b failed");
  }
  report(state, bytes);
}

void BM_SodiumPoly1305(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto k = key();
  const auto f = frame(bytes);
  uint8_t nonce[crypto_stream_chacha20_NONCEBYTES] = {};
  uint8_t otk[crypto_onetimeauth_KEYBYTES];
  uint8_t sent[crypto_onetimeauth_BYTES];
  uint64_t n = 0;
  for (auto _ : state) {
    std::memcpy(nonce, &++n, sizeof n);
    for (int side = 0; side < 2; ++side) {
      crypto_stream_chacha20(otk, sizeof otk, nonce, k.data());  // the frame's one-time key
      if (side == 0) crypto_onetimeauth(sent, f.data(), bytes, otk);
      else if (crypto_onetimeauth_verify(sent, f.data(), bytes, otk) != 0) state.SkipWithError("Poly1305 failed");
    }
  }
  report(state, bytes);
}

}  // namespace

// A slot frame of `wire_bytes` TOB payload with the trailer: one application batch section.
std::vector<uint8_t> slot_frame(size_t wire_bytes, tob::dataplane::security::KeySet* seal_with) {
  namespace sec = tob::dataplane::security;
  std::vector<uint8_t> buf(wire_bytes);
  tob::core::FrameWriter w(std::span<uint8_t>(buf.data(), wire_bytes - sec::kAuthTrailerBytes));
  tob::core::FrameHeader h;
  h.sender = 1;
  h.cycle = 123456789;
  w.begin(h);
  const auto body = frame(w.room());
  w.add_section(tob::core::SectionType::app_batch, 0, body);
  const size_t n = w.finish();
  if (n + sec::kAuthTrailerBytes != wire_bytes) std::abort();
  if (seal_with != nullptr && sec::seal_frame(buf, n, 0, *seal_with) != wire_bytes) std::abort();
  return buf;
}

tob::dataplane::security::KeySet daemon_keys() {
  tob::dataplane::security::KeyFile f;
  f.count = 1;
  f.keys[0].bytes = key();
  f.keys[0].id = tob::dataplane::security::key_id(f.keys[0].bytes);
  return tob::dataplane::security::KeySet(f);
}

void one_side(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_DaemonSeal(benchmark::State& state) {
  namespace sec = tob::dataplane::security;
  const auto bytes = static_cast<size_t>(state.range(0));
  sec::KeySet keys = daemon_keys();
  std::vector<uint8_t> f = slot_frame(bytes, nullptr);
  uint64_t cycle = 1;
  for (auto _ : state) {
    tob::core::store_be64(f.data() + 8, ++cycle);  // a fresh frame each time (the CRC is resealed)
    if (sec::seal_frame(f, bytes - sec::kAuthTrailerBytes, 0, keys) != bytes) state.SkipWithError("seal failed");
    benchmark::DoNotOptimize(f.data());
  }
  one_side(state, bytes);
}

void BM_DaemonVerify(benchmark::State& state) {
  namespace sec = tob::dataplane::security;
  const auto bytes = static_cast<size_t>(state.range(0));
  sec::KeySet keys = daemon_keys();
  const std::vector<uint8_t> f = slot_frame(bytes, &keys);
  const auto d = tob::core::decode_frame(f);
  if (!d.ok()) std::abort();
  for (auto _ : state)
    if (sec::verify_frame(f, d.view, keys).verdict != sec::AuthVerdict::ok) state.SkipWithError("verify failed");
  one_side(state, bytes);
}

BENCHMARK(BM_DaemonSeal)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_DaemonVerify)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_OpenSslGmac)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_OpenSslHmacSha256)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_SodiumHmacSha512256)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_SodiumBlake2b)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);
BENCHMARK(BM_SodiumPoly1305)->ArgName("bytes")->Arg(64)->Arg(1500)->Arg(9000);

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
