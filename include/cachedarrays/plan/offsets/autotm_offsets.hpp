// How the DRAM stays of an AutoTM-form plan (AutoTM, SmartPool/AutoSwap, ReDL) pack
// into one heap when known ahead: Sekiyama et al.'s offline dynamic storage
// allocation applied to a plan's stays instead of a program's objects. The
// planners count bytes against a limit; a heap holds blocks and holes. Where
// the packing reaches past the heap at a kernel, the plan is too tight there
// for any layout this heuristic finds, and ReDL's fitting loop
// (policy::fit_to_heap_by_kernel) lowers that kernel's limit.
// (Fitted by the online allocator's replay instead, autotm_dram_extents,
// ReDL's plans model slower than fitted by this packing: the online replay
// reaches less far than the packing, so it lowers fewer kernels, and by
// less; lowering its target uniformly instead, to 90% of the heap, does no
// better: where the limit goes down matters more than how far.)
//
// The stays are those of autotm_dram_extents's replay, in the same order
// (plan/detail/autotm_dram_walk.hpp): an object created into DRAM holds it
// from its creation; a move in (synchronous, or beside a kernel) and an
// argument the plan has in DRAM that is not there yet hold it from their
// kernel; a move out and a retirement free it. Time counts these events.
// The iteration repeats, so the plan's steady state is packed: a persistent
// object the end of the iteration leaves in DRAM is still there, in the
// same bytes, at the start of the next. Such a stay wraps around the
// iteration's end, which a line of time cannot express; the wrapping stays
// are stacked at the bottom of the heap first (each alive at the
// iteration's boundary, they must lie side by side anyway), the
// longest-held lowest, and the other stays are packed above the skyline
// they leave by Sekiyama et al.'s best-fit offset lines (Sekiyama et al. §3.2,
// best_fit_offsets.hpp).
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <vector>

#include "cachedarrays/plan/program/move_plan.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::plan {

/// One DRAM stay of an object: from when it takes its DRAM to when it gives
/// it back, and where in the heap.
struct AutotmStay {
  std::uint32_t object = 0;  ///< the program's object number
  /// The kernel the DRAM is taken for: the one an object is created before
  /// (the next to begin), or a move in is made for (synchronous: before it;
  /// asynchronous: beside it); 0 for a stay held from the iteration's start.
  std::uint32_t kernel = 0;
  std::uint64_t offset = 0;  ///< its first byte in the heap, a multiple of the alignment
  std::uint64_t bytes = 0;   ///< the object's size (unaligned)
  /// In the replay's event time; a wrapping stay has start > end: it holds
  /// its bytes from `start` to the iteration's end and from its start to `end`.
  std::uint32_t start = 0,  ///< the event at which it takes its bytes
      end = 0;              ///< the event at which it gives them back
  bool wraps = false;       ///< held across the iteration's end (see start and end)
};

/// The packing of a plan's DRAM stays into one heap.
struct AutotmOffsets {
  std::vector<AutotmStay> stays;  ///< every stay of the steady iteration, with its offset
  std::uint64_t footprint = 0;    ///< the highest byte of any stay: the heap the packing needs
  std::uint64_t max_live = 0;     ///< the most bytes (aligned) held at one time: no packing needs less
  /// By kernel: the highest byte of the stays held while it runs.
  std::vector<std::uint64_t> extents;
};

/// The stays of `plan` over `program`, each given an offset that is a
/// multiple of `alignment` (a power of two >= 8: the fast heap's
/// DeviceSpec::alignment). Throws invalid_argument for another alignment,
/// and as autotm_dram_extents does for a plan that does not match the program.
[[nodiscard]] AutotmOffsets autotm_dram_offsets(const Program& program, const MovePlan& plan, std::uint64_t alignment);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/autotm_offsets-inl.hpp"
#endif
