// The copy engine must produce an exact copy whatever the size, the
// alignment of either end, the destination kind and the split into parallel
// chunks, and must never write outside the destination. Every case fills the
// destination with the complement of the expected bytes (so a byte that is
// not copied is always caught) and surrounds it with guard bytes that differ
// from anything near the source (so a write past either end is caught).
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "test_support.hpp"

namespace {

using cachedarrays::detail::copy_bytes;
using cachedarrays::detail::copy_nontemporal;
using cachedarrays::detail::CopyDestination;
using cachedarrays::detail::CopyPath;
using cachedarrays::detail::CopyTuning;

constexpr std::uint64_t cache_line = 64;
constexpr std::uint64_t guard_bytes = 128;  // on each side of the range
constexpr std::byte dst_guard{0x5A};
constexpr std::byte src_surround{0xC3};  // what a read past the source would copy
constexpr std::uint64_t npos = ~std::uint64_t{0};

constexpr std::array<CopyDestination, 3> all_destinations = {CopyDestination::fast, CopyDestination::slow,
                                                             CopyDestination::persistent};

const char* name(CopyDestination where) {
  switch (where) {
    case CopyDestination::fast: return "fast";
    case CopyDestination::slow: return "slow";
    case CopyDestination::persistent: return "persistent";
  }
  return "?";
}

// Small settings so that the parallel path runs on sizes a test can afford;
// split whatever the process's measured choice says.
constexpr CopyTuning small_tuning{
    .parallel_threshold = 64 << 10, .chunk_bytes = 16 << 10, .max_threads = 2, .split = true};

// A source and a destination at chosen offsets from a cache-line boundary,
// each inside a larger buffer whose other bytes are known.
class CopyCase {
 public:
  CopyCase(std::uint64_t bytes, std::uint64_t src_offset, std::uint64_t dst_offset, std::uint64_t seed)
      : bytes_(bytes),
        src_storage_(bytes + 2 * guard_bytes + 2 * cache_line, src_surround),
        dst_storage_(bytes + 2 * guard_bytes + 2 * cache_line) {
    src_ = line_aligned(src_storage_.data()) + guard_bytes + src_offset;
    dst_ = line_aligned(dst_storage_.data()) + guard_bytes + dst_offset;
    // Random, so not periodic in any power of two: a piece copied to the
    // wrong offset cannot match by accident.
    test::Rng rng(seed);
    for (std::uint64_t i = 0; i < bytes_; ++i) src_[i] = static_cast<std::byte>(rng() >> 24);
    std::fill(dst_storage_.begin(), dst_storage_.end(), dst_guard);
    for (std::uint64_t i = 0; i < bytes_; ++i) dst_[i] = ~src_[i];
  }

  std::byte* dst() { return dst_; }
  const std::byte* src() const { return src_; }

  // Index of the first destination byte that differs from the source, or npos.
  std::uint64_t first_wrong_byte() const {
    if (bytes_ == 0 || std::memcmp(dst_, src_, bytes_) == 0) return npos;
    for (std::uint64_t i = 0; i < bytes_; ++i)
      if (dst_[i] != src_[i]) return i;
    return npos;
  }

  // Offset (from the start of the destination storage) of the first guard
  // byte that changed, or npos.
  std::uint64_t first_touched_guard() const {
    const auto begin = static_cast<std::uint64_t>(dst_ - dst_storage_.data());
    for (std::uint64_t i = 0; i < dst_storage_.size(); ++i) {
      if (i == begin) i += bytes_;
      if (i < dst_storage_.size() && dst_storage_[i] != dst_guard) return i;
    }
    return npos;
  }

 private:
  static std::byte* line_aligned(std::byte* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    return p + ((cache_line - address % cache_line) % cache_line);
  }

  std::uint64_t bytes_;
  std::vector<std::byte> src_storage_;
  std::vector<std::byte> dst_storage_;
  std::byte* src_ = nullptr;
  std::byte* dst_ = nullptr;
};

void check_copy(std::uint64_t bytes, std::uint64_t src_offset, std::uint64_t dst_offset, CopyDestination where,
                const CopyTuning& tuning) {
  CopyCase c(bytes, src_offset, dst_offset, bytes + 31 * src_offset + dst_offset);
  copy_bytes(c.dst(), c.src(), bytes, where, tuning);
  INFO("destination ", name(where), ", ", bytes, " bytes, src offset ", src_offset, ", dst offset ", dst_offset,
       ", threshold ", tuning.parallel_threshold, ", chunk ", tuning.chunk_bytes, ", path ",
       !tuning.path                       ? "measured"
       : *tuning.path == CopyPath::memcpy ? "memcpy"
                                          : "nt",
       ", split ",
       !tuning.split   ? "measured"
       : *tuning.split ? "yes"
                       : "no");
  CHECK(c.first_wrong_byte() == npos);
  CHECK(c.first_touched_guard() == npos);
}

}  // namespace

TEST_CASE("nontemporal_path names one of the three vector paths") {
  const std::string_view path = cachedarrays::detail::nontemporal_path();
  INFO("path: ", std::string(path));
  CHECK((path == "avx512" || path == "avx2" || path == "sse2"));
  // The choice is made once: asking again gives the same answer.
  CHECK(cachedarrays::detail::nontemporal_path() == path);
}

TEST_CASE("copy_bytes: small sizes at every destination alignment") {
  for (const CopyDestination where : all_destinations) {
    for (const std::uint64_t bytes : {0ull, 1ull, 63ull, 64ull, 65ull, 255ull, 256ull, 257ull, 4095ull, 4096ull}) {
      for (std::uint64_t dst_offset = 0; dst_offset < cache_line; ++dst_offset) {
        // Two source offsets per destination offset: the same misalignment,
        // and a different one, so loads are misaligned relative to stores.
        check_copy(bytes, dst_offset, dst_offset, where, small_tuning);
        check_copy(bytes, (dst_offset * 7 + 3) % cache_line, dst_offset, where, small_tuning);
      }
    }
  }
}

TEST_CASE("copy_bytes: odd sizes around the parallel threshold and the chunk size") {
  const std::uint64_t t = small_tuning.parallel_threshold;
  const std::uint64_t k = small_tuning.chunk_bytes;
  const std::array<std::array<std::uint64_t, 2>, 5> offsets = {{{0, 0}, {1, 63}, {63, 1}, {17, 40}, {32, 32}}};
  for (const CopyDestination where : all_destinations) {
    for (const std::uint64_t bytes : {t - 1, t, t + 1, t + 13, t + k - 1, 5 * k + 7, 8 * k + 63, 8 * k + 64}) {
      for (const auto& [src_offset, dst_offset] : offsets) {
        check_copy(bytes, src_offset, dst_offset, where, small_tuning);
      }
    }
  }
}

TEST_CASE("copy_bytes: 16 MiB + 13 bytes, split in parallel and with the default tuning") {
  const std::uint64_t bytes = (std::uint64_t{16} << 20) + 13;
  const std::array<std::array<std::uint64_t, 2>, 3> offsets = {{{0, 0}, {5, 59}, {63, 1}}};
  for (const CopyDestination where : all_destinations) {
    for (const auto& [src_offset, dst_offset] : offsets) {
      check_copy(bytes, src_offset, dst_offset, where, small_tuning);
    }
    check_copy(bytes, 3, 7, where, CopyTuning{});
  }
}

TEST_CASE("copy_bytes: unusual tunings still copy exactly") {
  const std::uint64_t bytes = (std::uint64_t{1} << 20) + 333;
  for (const CopyDestination where : all_destinations) {
    // A chunk that is not a whole number of cache lines.
    check_copy(bytes, 9, 21, where,
               CopyTuning{.parallel_threshold = 4096, .chunk_bytes = 10000, .max_threads = 2, .split = true});
    // Chunks smaller than a line, and no thread limit.
    check_copy(bytes, 1, 2, where,
               CopyTuning{.parallel_threshold = 4096, .chunk_bytes = 1, .max_threads = 0, .split = true});
    // A zero chunk size must not divide by zero.
    check_copy(bytes, 0, 3, where,
               CopyTuning{.parallel_threshold = 4096, .chunk_bytes = 0, .max_threads = 0, .split = true});
    // One thread: the whole copy on the calling thread.
    check_copy(bytes, 0, 0, where, CopyTuning{.parallel_threshold = 4096, .chunk_bytes = 4096, .max_threads = 1});
    // More threads than the machine has.
    check_copy(bytes, 4, 60, where,
               CopyTuning{.parallel_threshold = 4096, .chunk_bytes = 8192, .max_threads = 16, .split = true});
  }
}

TEST_CASE("copy_bytes: every store path, split or not, copies exactly at every destination") {
  // memcpy and non-temporal stores each on one thread and split into chunks
  // (the four candidates the calibration times), then the process's own
  // measured choice: sizes around the tiny-copy cut (256), odd sizes, and a
  // copy of many chunks; ends misaligned against each other.
  const std::uint64_t k = small_tuning.chunk_bytes;
  const std::array<std::array<std::uint64_t, 2>, 4> offsets = {{{0, 0}, {1, 63}, {37, 5}, {32, 32}}};
  const std::array<std::uint64_t, 10> sizes = {
      0, 1, 255, 256, 257, 4097, 64 * 1024 - 3, 5 * k + 7, 20 * k + 129, (std::uint64_t{1} << 20) + 333};
  for (const CopyDestination where : all_destinations) {
    for (const CopyPath path : {CopyPath::memcpy, CopyPath::nontemporal}) {
      for (const bool split : {false, true}) {
        CopyTuning tuning = small_tuning;
        tuning.path = path;
        tuning.split = split;
        for (const std::uint64_t bytes : sizes) {
          for (const auto& [src_offset, dst_offset] : offsets) check_copy(bytes, src_offset, dst_offset, where, tuning);
        }
      }
    }
    CopyTuning measured = small_tuning;
    measured.split = std::nullopt;
    for (const std::uint64_t bytes : sizes) {
      check_copy(bytes, 3, 9, where, measured);
      check_copy(bytes, 11, 50, where, CopyTuning{});
    }
  }
}

TEST_CASE("copy_nontemporal: exact copy at every alignment, nothing written outside") {
  // Around the four-page blocks the streamed body is made of (16 KiB).
  for (const std::uint64_t bytes : {0ull, 1ull, 255ull, 256ull, 257ull, 300ull, 4095ull, 16383ull, 16384ull,
                                    16384ull + 65, 3 * 16384ull + 4095, 65536ull + 17}) {
    for (std::uint64_t dst_offset = 0; dst_offset < cache_line; ++dst_offset) {
      const std::uint64_t src_offset = (dst_offset * 5 + 11) % cache_line;
      CopyCase c(bytes, src_offset, dst_offset, bytes ^ dst_offset);
      copy_nontemporal(c.dst(), c.src(), bytes);
      INFO(bytes, " bytes, src offset ", src_offset, ", dst offset ", dst_offset);
      CHECK(c.first_wrong_byte() == npos);
      CHECK(c.first_touched_guard() == npos);
    }
  }
}

TEST_CASE("copy_bytes: concurrent parallel copies from two threads do not interfere") {
  const std::uint64_t bytes = (std::uint64_t{2} << 20) + 5;
  CopyCase a(bytes, 3, 11, 1);
  CopyCase b(bytes, 40, 0, 2);
  std::thread other([&] { copy_bytes(a.dst(), a.src(), bytes, CopyDestination::slow, small_tuning); });
  copy_bytes(b.dst(), b.src(), bytes, CopyDestination::persistent, small_tuning);
  other.join();
  CHECK(a.first_wrong_byte() == npos);
  CHECK(a.first_touched_guard() == npos);
  CHECK(b.first_wrong_byte() == npos);
  CHECK(b.first_touched_guard() == npos);
}
