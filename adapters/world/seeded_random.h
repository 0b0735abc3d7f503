// Deterministic randomness for the simulated world. Every draw is a pure function of a key (seeds
// and labels hashed together), never of a global generator's history, so the same seeds give the
// same draws in any order, on any platform: the standard library's distributions are
// implementation-defined, so the few this world needs are written out here.
//
// Header-only, pure, thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace attune::sim {

// The splitmix64 finalizer: a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Order-sensitive combination of two keys.
constexpr std::uint64_t combine(std::uint64_t a, std::uint64_t b) {
  return mix64(a ^ (mix64(b) + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2)));
}

// FNV-1a over the bytes, then mixed.
constexpr std::uint64_t hash_text(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return mix64(h);
}

// A stream of draws from one key: the i-th draw is a function of (key, i) only.
class SeededStream {
 public:
  explicit constexpr SeededStream(std::uint64_t key) : key_(key) {}

  constexpr std::uint64_t next() { return mix64(key_ ^ mix64(++count_)); }

  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [low, high).
  double uniform(double low, double high) { return low + (high - low) * uniform(); }

  // Standard normal (Box-Muller, one value per pair of uniforms).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: the logarithm stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  // Exponential with the given rate (events per unit).
  double exponential(double rate) { return -std::log(1.0 - uniform()) / rate; }

  // Uniform integer in [0, n). REQUIRES: n > 0.
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t key_;
  std::uint64_t count_ = 0;
};

}  // namespace attune::sim
