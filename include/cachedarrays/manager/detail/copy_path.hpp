// Which stores the copy engine uses, chosen by measuring them on this CPU
// rather than by its instruction set. Non-temporal vector stores skip the
// read-for-ownership and keep the cache clean, but whether they beat the C
// library's memcpy depends on the machine: some CPUs have a fast `rep movsb`
// that streams at twice the rate of their vector stores, others the
// reverse. So the first copy that needs the choice times both, serially and
// split over threads the way the engine splits large copies, on scratch
// buffers of a few sizes, within a small wall-time budget; the choice is
// then kept for the life of the process. The decision itself is a pure
// function of the timings (choose_copy_paths), so that it can be tested
// without a machine that behaves one way or the other.
//
// The process's copy mode (manager/copy_settings.hpp, which the runtime
// layer sets from CACHEDARRAYS_COPY=auto|nt|memcpy) overrides it: auto
// measures (the default), nt and memcpy force one kind of store in every
// band without measuring. Copies into real persistent memory keep libpmem whatever is
// chosen. A detail header, installed because header-only users compile the
// engine (copy_path-inl.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cachedarrays/manager/copy_settings.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"

namespace cachedarrays::detail {

// Copies are grouped by size, since which stores win changes with it: a
// small copy stays in the caches, a large one streams from and to memory.
enum class CopyBand : std::uint8_t { small, medium, large };
inline constexpr std::size_t copy_band_count = 3;

// The upper ends (exclusive) of the small and medium bands. The small band
// ends where the engine's default tuning starts to split a copy over
// threads; the medium band where copies stop fitting in the last-level
// cache share of one core on common machines.
inline constexpr std::uint64_t copy_small_band_end = std::uint64_t{1} << 20;
inline constexpr std::uint64_t copy_medium_band_end = std::uint64_t{32} << 20;

[[nodiscard]] CopyBand copy_band_of(std::uint64_t bytes) noexcept;
[[nodiscard]] std::string_view copy_band_name(CopyBand band) noexcept;
[[nodiscard]] std::string_view copy_path_name(CopyPath path) noexcept;

// The four ways to copy that the calibration times in each band.
enum class CopyCandidate : std::uint8_t { memcpy, nontemporal, memcpy_split, nontemporal_split };
inline constexpr std::size_t copy_candidate_count = 4;
[[nodiscard]] std::string_view copy_candidate_name(CopyCandidate candidate) noexcept;

// What the calibration measured: GB/s (1e9 bytes/s) of each candidate in
// each band, 0 where it was not measured (the small band is never split;
// a band the budget did not reach has nothing).
struct CopyTimings {
  std::array<std::array<double, copy_candidate_count>, copy_band_count> gbps{};
  std::array<std::uint64_t, copy_band_count> sample_bytes{};  // the size of each timed copy
  double seconds = 0;                                         // wall time of the whole calibration
  std::uint64_t bytes = 0;                                    // bytes it copied, untimed runs included
  std::string note;                                           // why it measured less than it wanted, if so

  [[nodiscard]] double get(CopyBand band, CopyCandidate candidate) const noexcept {
    return gbps[static_cast<std::size_t>(band)][static_cast<std::size_t>(candidate)];
  }
  void set(CopyBand band, CopyCandidate candidate, double value) noexcept {
    gbps[static_cast<std::size_t>(band)][static_cast<std::size_t>(candidate)] = value;
  }
};

// How one band copies.
struct CopyBandChoice {
  CopyPath path = CopyPath::nontemporal;        // the stores of a copy made on one thread
  bool split = true;                            // split copies at or above the tuning's threshold
  CopyPath split_path = CopyPath::nontemporal;  // the stores of the chunks of a split copy
  std::string why;                              // the figures the choice rests on, for people
};

struct CopyChoice {
  std::array<CopyBandChoice, copy_band_count> bands{};

  [[nodiscard]] const CopyBandChoice& band(CopyBand b) const noexcept { return bands[static_cast<std::size_t>(b)]; }
};

// A challenger replaces the incumbent only when it is faster by more than
// this factor. The calibration is short and the machine may be shared, so a
// few percent either way is noise; and the incumbents (non-temporal stores,
// the split) have a benefit the timing cannot see: they leave the caches to
// the data the program is using, and the split is what the engine was tuned
// for.
inline constexpr double copy_switch_margin = 1.10;

// The choice for each band from measured timings: in each band memcpy
// replaces non-temporal stores, and a single thread replaces the split, only
// when faster by copy_switch_margin; an unmeasured candidate never wins.
[[nodiscard]] CopyChoice choose_copy_paths(const CopyTimings& timings);

// The same kind of store in every band, as CACHEDARRAYS_COPY=nt or memcpy asks.
[[nodiscard]] CopyChoice forced_copy_paths(CopyPath path, std::string_view why);

// How long the calibration's later rounds may run on, all of it (scratch
// memory included); the first round runs whole.
inline constexpr double copy_calibration_budget_seconds = 0.02;

// Times the candidates on scratch buffers whose pages are faulted before any
// timing: one whole round of every band and candidate (bounded in bytes),
// then more rounds while the next timed copy fits in the budget. A budget of
// 0 times nothing.
[[nodiscard]] CopyTimings calibrate_copy_paths(double budget_seconds = copy_calibration_budget_seconds);

// CopyMode's name as CACHEDARRAYS_COPY spells it: "auto", "nt", "memcpy".
[[nodiscard]] std::string_view copy_mode_name(CopyMode mode) noexcept;

// What this process copies with: made once, at the first copy that needs
// it (or the first report), from copy_mode() (manager/copy_settings.hpp)
// and, in auto mode, the calibration. Thread-safe; a thread that asks while
// another calibrates waits for it.
struct CopyDecision {
  CopyMode mode = CopyMode::automatic;
  CopyTimings timings;  // empty unless mode is automatic
  CopyChoice choice;
};
[[nodiscard]] const CopyDecision& process_copy_decision();

}  // namespace cachedarrays::detail

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/detail/copy_path-inl.hpp"
#endif
