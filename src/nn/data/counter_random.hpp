// Counter-based random numbers for the data side: every number is
// splitmix64's output function of (key, position), so any sample, any
// epoch's order and any sample's augmentation can be drawn on its own, in
// parallel, and bit for bit the same on every standard library (unlike the
// distributions of <random>).
#pragma once

#include <cstdint>

namespace cachedarrays::nn::detail {

inline constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's output function (Steele, Lea & Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The n-th number of the stream `key`. Used as a key itself it opens an
// independent sub-stream (one per epoch, one per sample, ...).
constexpr std::uint64_t stream_at(std::uint64_t key, std::uint64_t n) { return mix64(key + (n + 1) * golden_gamma); }

// In [0, bound), bound >= 1. The modulo's bias, bound / 2^64, is far below
// anything measurable for the sizes here (data sets, image sides).
constexpr std::uint64_t uniform_below(std::uint64_t bits, std::uint64_t bound) { return bits % bound; }

}  // namespace cachedarrays::nn::detail
