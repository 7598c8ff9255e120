// Dataset files written by the nn data tests: a scratch directory, and
// CIFAR-10 records and MNIST IDX files with known pixels and labels, which
// the tests then read back or break on purpose, plain or gzipped.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace test {

using Bytes = std::vector<std::uint8_t>;

// A fresh directory, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() : scratch_("nn-data-" + std::to_string(counter_++)) { std::filesystem::create_directories(path()); }

  [[nodiscard]] const std::filesystem::path& path() const { return scratch_.path; }
  std::filesystem::path write(const std::string& name, const Bytes& bytes) const {
    const std::filesystem::path file = path() / name;
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return file;
  }

 private:
  static inline std::atomic<int> counter_{0};
  ScratchPath scratch_;
};

// ---- CIFAR-10 ----------------------------------------------------------------

constexpr std::size_t cifar_image = 3 * 32 * 32;

inline std::uint8_t cifar_pixel(int record, std::size_t i) {
  return static_cast<std::uint8_t>((record * 31 + i * 7) % 256);
}

// Records first..first+count-1, with label (record * 3) % 10.
inline Bytes cifar_records(int first, int count) {
  Bytes bytes;
  for (int r = first; r < first + count; ++r) {
    bytes.push_back(static_cast<std::uint8_t>((r * 3) % 10));
    for (std::size_t i = 0; i < cifar_image; ++i) bytes.push_back(cifar_pixel(r, i));
  }
  return bytes;
}

// ---- MNIST -------------------------------------------------------------------

inline void put32(Bytes& bytes, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(v >> shift));
}

inline std::uint8_t mnist_pixel(std::uint32_t image, std::size_t i) {
  return static_cast<std::uint8_t>((image * 13 + i) % 256);
}

inline Bytes mnist_images(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t columns = 28) {
  Bytes bytes;
  put32(bytes, 0x00000803);
  put32(bytes, count);
  put32(bytes, rows);
  put32(bytes, columns);
  for (std::uint32_t n = 0; n < count; ++n) {
    for (std::size_t i = 0; i < std::size_t{rows} * columns; ++i) bytes.push_back(mnist_pixel(n, i));
  }
  return bytes;
}

inline Bytes mnist_labels(const Bytes& labels) {
  Bytes bytes;
  put32(bytes, 0x00000801);
  put32(bytes, static_cast<std::uint32_t>(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

// ---- gzip --------------------------------------------------------------------
// Written by hand, with deflate's stored (uncompressed) blocks: the tests
// link no zlib of their own (the nn library keeps it private), and a
// stored stream is still one zlib must parse, header, blocks, CRC-32 and
// length. Real deflate is covered by Debian's Fashion-MNIST files.

inline std::uint32_t crc32(const Bytes& bytes) {
  std::uint32_t crc = 0xffffffffu;
  for (std::uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void put32_le(Bytes& bytes, std::uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<std::uint8_t>(v >> shift));
}

// One gzip member holding `raw` in stored blocks of at most `block` bytes.
inline Bytes gzip(const Bytes& raw, std::size_t block = 65535) {
  Bytes gz = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};  // deflate, no flags, no time, unknown OS
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(block, raw.size() - at);
    const bool last = at + n == raw.size();
    gz.push_back(last ? 1 : 0);  // BFINAL, BTYPE 00 (stored), then byte-aligned
    const auto len = static_cast<std::uint16_t>(n);
    for (std::uint16_t v : {len, static_cast<std::uint16_t>(~len)}) {
      gz.push_back(static_cast<std::uint8_t>(v));
      gz.push_back(static_cast<std::uint8_t>(v >> 8));
    }
    gz.insert(gz.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
              raw.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  } while (at < raw.size());
  put32_le(gz, crc32(raw));
  put32_le(gz, static_cast<std::uint32_t>(raw.size()));
  return gz;
}

}  // namespace test
