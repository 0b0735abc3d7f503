#include "events/sha256.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>

#include "events/assert.h"

namespace attune {

Digest sha256(std::span<const std::span<const std::uint8_t>> parts) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  ATTUNE_ASSERT(ctx != nullptr, "OpenSSL allocates a digest context");
  int ok = EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  for (const auto& part : parts) {
    ok &= EVP_DigestUpdate(ctx.get(), part.data(), part.size());
  }
  Digest digest{};
  unsigned int length = 0;
  ok &= EVP_DigestFinal_ex(ctx.get(), digest.data(), &length);
  ATTUNE_ASSERT(ok == 1 && length == digest.size(), "OpenSSL computes a SHA-256 digest");
  (void)ok;
  return digest;
}

Digest sha256(std::string_view bytes) {
  std::span<const std::uint8_t> part(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                     bytes.size());
  return sha256(std::span<const std::span<const std::uint8_t>>(&part, 1));
}

Digest hmac_sha256(std::span<const std::uint8_t> key,
                   std::span<const std::span<const std::uint8_t>> parts) {
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                        EVP_MAC_free);
  ATTUNE_ASSERT(mac != nullptr, "OpenSSL provides HMAC");
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(mac.get()),
                                                                EVP_MAC_CTX_free);
  ATTUNE_ASSERT(ctx != nullptr, "OpenSSL allocates a MAC context");
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  int ok = EVP_MAC_init(ctx.get(), key.data(), key.size(), params);
  for (const auto& part : parts) ok &= EVP_MAC_update(ctx.get(), part.data(), part.size());
  Digest digest{};
  std::size_t length = 0;
  ok &= EVP_MAC_final(ctx.get(), digest.data(), &length, digest.size());
  ATTUNE_ASSERT(ok == 1 && length == digest.size(), "OpenSSL computes an HMAC-SHA256");
  return digest;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (std::uint8_t byte : bytes) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 0xf]);
  }
  return hex;
}

}  // namespace attune
