#include "events/sha256.h"

#include <openssl/evp.h>

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
