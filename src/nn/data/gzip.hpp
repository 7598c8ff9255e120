// Inflating the gzip files data sets are shipped in (Debian's
// dataset-fashion-mnist installs *-ubyte.gz), through zlib.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cachedarrays::nn::detail {

// Whether `bytes` start with gzip's magic number, 1f 8b.
[[nodiscard]] bool is_gzip(std::span<const std::uint8_t> bytes);

// The content of a gzip file (all its members, as gunzip does). Throws
// invalid_argument starting with `file` (e.g. "cachedarrays::nn: MNIST
// image file '/x.gz'") followed by what is wrong: the stream ends early
// (truncated), is corrupt (zlib's reason: bad header, CRC mismatch, ...),
// or is followed by bytes that are not another gzip member.
[[nodiscard]] std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& file);

}  // namespace cachedarrays::nn::detail
