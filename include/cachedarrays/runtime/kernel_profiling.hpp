// When a Runtime times its program's kernel() kernels, and what it does with
// the times (Runtime::set_profile_iterations): a program installed without
// profiles is timed for a few planned iterations, from the next one on, by
// an OnlineProfiler; at the begin_iteration after the last, the program
// gets the profiles. The Runtime's lock guards everything here but on(),
// which kernel() reads without it.
#pragma once

#include "cachedarrays/config.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/runtime/online_profiler.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

/// The online profiling of one Runtime's programs.
class KernelProfiling {
 public:
  /// Iterations timed per program unless set_iterations says otherwise: a
  /// median of three runs per kernel.
  static constexpr std::uint32_t default_iterations = 3;

  /// How many iterations of the next program installed are timed; 0: none.
  void set_iterations(std::uint32_t iterations) noexcept { iterations_ = iterations; }
  /// Whether kernel() kernels are timed now (one relaxed load; no lock).
  [[nodiscard]] bool on() const noexcept { return on_.load(std::memory_order_relaxed); }

  /// `program` was installed (null: none): timing stops, and one without
  /// profiles is timed from the next planned iteration.
  void program_installed(const plan::Program* program);
  /// At a begin_iteration: counts a timed iteration that ended, and after
  /// the last returns `program` with the profiles of its kernels (and the
  /// tiers of `manager` where it has none) for the caller to install; else
  /// null. Starts timing a program installed meanwhile; kernels are timed
  /// only in a `planned` iteration.
  [[nodiscard]] std::shared_ptr<const plan::Program> advance(bool planned,
                                                             const std::shared_ptr<const plan::Program>& program,
                                                             const DataManager& manager);
  /// A timed kernel ran `seconds` from before its pins to the end of its
  /// callable, waiting out `emulated_ns` of them; its arguments, `objects`
  /// accessed as `accesses`, are still pinned in `manager`. Nothing when
  /// timing stopped meanwhile.
  void add(const char* name, std::uint64_t index, std::span<Object* const> objects, std::span<const Access> accesses,
           double seconds, double emulated_ns, const DataManager& manager);

 private:
  std::uint32_t iterations_ = default_iterations;  // to time per program
  bool armed_ = false;      // a program without profiles came: time from the next planned iteration
  bool active_ = false;     // timing the program's iterations
  std::uint32_t done_ = 0;  // of them ended
  OnlineProfiler profiler_;
  // active_ in a planned iteration, readable without the lock.
  std::atomic<bool> on_{false};
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/kernel_profiling-inl.hpp"
#endif
