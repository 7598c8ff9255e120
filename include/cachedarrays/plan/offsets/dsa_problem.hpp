// The offline dynamic storage allocation (DSA) problem: buffers with a size
// and a lifetime [start, end), all known ahead; a solution gives each buffer
// an offset in one heap so that no two buffers alive at the same time share
// a byte, and the footprint (the highest byte used) is as small as possible.
// It is NP-hard (Sekiyama et al. §3.1, formulation (1)-(6); SmartPool/AutoSwap §III-A);
// the offset planners (best_fit_offsets.hpp, smartpool_offsets.hpp) solve
// it heuristically, and check_plan verifies any solution.
//
// Its lower bound is max-live (SmartPool/AutoSwap's "peak memory load", Definition
// 4): the largest total size of the buffers alive at one moment. Every
// solution's footprint is at least that, whatever the placement.
//
// Problems come from the program of an iteration (from_program) or from the
// MiniMalloc CSV instances (from_csv; data/dsa/README.md).
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::plan {

/// One buffer of a DSA problem: its size and its lifetime.
struct DsaBuffer {
  std::uint64_t size = 0;  ///< bytes, > 0
  /// @name Lifetime
  /// Alive during [start, end): two buffers overlap in time when each starts
  /// before the other ends.
  ///@{
  std::uint32_t start = 0;  ///< the first moment it is alive
  std::uint32_t end = 0;    ///< the first moment after it, > start
  ///@}

  /// Field-wise equality.
  friend bool operator==(const DsaBuffer&, const DsaBuffer&) = default;
};

/// An offline dynamic storage allocation problem: the buffers, checked, with
/// the alignment every offset keeps and the max-live lower bound.
class DsaProblem {
 public:
  DsaProblem() = default;  ///< No buffers, alignment 1.
  /// Throws invalid_argument naming the buffer (by index) and what is wrong:
  /// a size of 0, start >= end, an alignment of 0, or sizes whose aligned
  /// total does not fit in 63 bits (so that no planner's sum overflows).
  /// `alignment`: every offset of a solution is a multiple of it (1: any).
  explicit DsaProblem(std::vector<DsaBuffer> buffers, std::uint64_t alignment = 1);

  /// One buffer per object of the program, same numbering, its size the
  /// object's bytes. Time is counted in program steps, as Sekiyama et al. §4.1
  /// counts it in allocations and frees: time t is the moment after step
  /// t - 1 (t = 0: the iteration's start). An object holds its memory from
  /// its creation to its retirement, not only from its first use to its last,
  /// because that is when a heap allocates and frees it; a plan made of use
  /// intervals could give an object the bytes of one created before the
  /// other's retirement.
  ///   - created by step s: start = s + 1; persistent (alive when the
  ///     iteration begins): start = 0;
  ///   - retired by step r: end = r + 1; never retired in the iteration
  ///     (persistent state, or created for a later iteration): end =
  ///     steps().size() + 1, the iteration's end;
  ///   - an object created and never used still holds its memory between its
  ///     creation and retirement, so it is a buffer like any other.
  ///
  /// A kernel at step s runs at time s + 1, so max_live() >= program.max_live()
  /// (equal unless a moment between kernels holds more than any kernel).
  /// The iteration is a line, not a cycle: an object created here and retired
  /// in the next iteration is, in the next iteration's program, a persistent
  /// object of another number; giving both the same offset is the executor's
  /// concern. `alignment` defaults to 64, DeviceSpec::alignment's default:
  /// every region of a heap starts on a multiple of it.
  [[nodiscard]] static DsaProblem from_program(const Program& program, std::uint64_t alignment = 64);

  /// MiniMalloc's CSV (google/minimalloc, the ASPLOS 2024 instances): a
  /// header line naming the columns buffer, start, end, size (in any order),
  /// then one line per buffer; `end` is exclusive. Buffers are numbered in
  /// file order (the `buffer` column is an identifier, not checked to be a
  /// number). Throws invalid_argument naming the line and column of a
  /// malformed field ("DSA CSV: line 7, column 3 (end): ...").
  [[nodiscard]] static DsaProblem from_csv_text(std::string_view text, std::uint64_t alignment = 1);
  /// from_csv_text of the file at `path`: its invalid_argument adds the path,
  /// and it throws heap_error when the file cannot be read.
  [[nodiscard]] static DsaProblem from_csv(const std::string& path, std::uint64_t alignment = 1);
  /// The same format, `buffer` being the index; from_csv_text reads it back.
  [[nodiscard]] std::string to_csv() const;

  /// The buffers, by index.
  [[nodiscard]] const std::vector<DsaBuffer>& buffers() const noexcept { return buffers_; }
  /// How many buffers.
  [[nodiscard]] std::size_t size() const noexcept { return buffers_.size(); }
  /// Every offset of a solution is a multiple of it (1: any).
  [[nodiscard]] std::uint64_t alignment() const noexcept { return alignment_; }
  /// The peak over time of the bytes alive: the lower bound on any
  /// solution's footprint.
  [[nodiscard]] std::uint64_t max_live() const noexcept { return max_live_; }
  /// A buffer's size rounded up to the alignment: what it takes from the
  /// offsets above it when another buffer is placed right on top.
  [[nodiscard]] std::uint64_t aligned_size(std::size_t buffer) const noexcept;

 private:
  std::vector<DsaBuffer> buffers_;
  std::uint64_t alignment_ = 1;
  std::uint64_t max_live_ = 0;
};

/// A solution of a DsaProblem: where each buffer goes, and the heap size that takes.
struct OffsetPlan {
  std::vector<std::uint64_t> offsets;  ///< offsets[i] is buffer i's first byte
  /// The highest offset + size (0 without buffers): the heap size the plan needs.
  std::uint64_t footprint = 0;

  /// Field-wise equality.
  friend bool operator==(const OffsetPlan&, const OffsetPlan&) = default;
};

/// Throws invalid_argument when `plan` is not a solution of `problem`: a
/// count of offsets other than the buffer count, an offset that is not a
/// multiple of the alignment, a footprint other than the highest offset +
/// size, or two buffers alive at the same time that overlap in address
/// (naming both, their lifetimes and their address ranges). O(n log n).
void check_plan(const DsaProblem& problem, const OffsetPlan& plan);

/// The footprint of these offsets for these buffers: max(offset + size).
/// Throws invalid_argument for a count of offsets other than the buffer
/// count, or a buffer that would end past 2^64.
[[nodiscard]] std::uint64_t footprint_of(const DsaProblem& problem, const std::vector<std::uint64_t>& offsets);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/dsa_problem-inl.hpp"
#endif
