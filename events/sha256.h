// SHA-256 digests and HMAC-SHA256 (OpenSSL EVP), used for the ledger's hash chain, its keyed
// form, and canonical recipe hashes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace attune {

using Digest = std::array<std::uint8_t, 32>;

// Digest of the concatenation of the given byte ranges.
Digest sha256(std::span<const std::span<const std::uint8_t>> parts);
Digest sha256(std::string_view bytes);

// HMAC-SHA256 under `key` of the concatenation of the given byte ranges.
Digest hmac_sha256(std::span<const std::uint8_t> key,
                   std::span<const std::span<const std::uint8_t>> parts);

std::string to_hex(std::span<const std::uint8_t> bytes);

}  // namespace attune
