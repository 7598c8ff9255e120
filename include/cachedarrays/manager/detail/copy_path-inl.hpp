// The calibration of the copy engine's stores and the choice made from it
// (see copy_path.hpp for why the stores are measured).
#pragma once

#include <fmt/format.h>
#include <sys/mman.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"

namespace cachedarrays::detail {

CACHEDARRAYS_INLINE CopyBand copy_band_of(std::uint64_t bytes) noexcept {
  if (bytes < copy_small_band_end) return CopyBand::small;
  if (bytes < copy_medium_band_end) return CopyBand::medium;
  return CopyBand::large;
}

CACHEDARRAYS_INLINE std::string_view copy_band_name(CopyBand band) noexcept {
  switch (band) {
    case CopyBand::small: return "small";
    case CopyBand::medium: return "medium";
    case CopyBand::large: return "large";
  }
  return "?";
}

CACHEDARRAYS_INLINE std::string_view copy_path_name(CopyPath path) noexcept {
  return path == CopyPath::memcpy ? "memcpy" : "nt";
}

CACHEDARRAYS_INLINE std::string_view copy_candidate_name(CopyCandidate candidate) noexcept {
  switch (candidate) {
    case CopyCandidate::memcpy: return "memcpy";
    case CopyCandidate::nontemporal: return "nt";
    case CopyCandidate::memcpy_split: return "memcpy split";
    case CopyCandidate::nontemporal_split: return "nt split";
  }
  return "?";
}

// The incumbent unless the challenger is measured and faster by the margin;
// `said` gets one clause on why.
CACHEDARRAYS_INLINE bool copy_challenger_wins(std::string_view incumbent, double incumbent_gbps,
                                              std::string_view challenger, double challenger_gbps, std::string& said) {
  if (challenger_gbps <= 0) {
    said = fmt::format("{} (no figure for {})", incumbent, challenger);
    return false;
  }
  if (incumbent_gbps <= 0) {
    // Only the challenger ran: the incumbent's figure is missing, not poor.
    said = fmt::format("{} (no figure for it; {} {:.1f} GB/s)", incumbent, challenger, challenger_gbps);
    return false;
  }
  if (challenger_gbps > incumbent_gbps * copy_switch_margin) {
    said = fmt::format("{} ({:.1f} GB/s > {} {:.1f} GB/s)", challenger, challenger_gbps, incumbent, incumbent_gbps);
    return true;
  }
  said = fmt::format("{} ({:.1f} GB/s; {} {:.1f} GB/s is not {:.0f}% faster)", incumbent, incumbent_gbps, challenger,
                     challenger_gbps, (copy_switch_margin - 1) * 100);
  return false;
}

CACHEDARRAYS_INLINE CopyChoice choose_copy_paths(const CopyTimings& timings) {
  CopyChoice choice;
  for (std::size_t b = 0; b < copy_band_count; ++b) {
    const auto band = static_cast<CopyBand>(b);
    CopyBandChoice& c = choice.bands[b];
    const auto gbps = [&](CopyCandidate candidate) { return timings.get(band, candidate); };

    std::string serial_why;
    c.path =
        copy_challenger_wins("nt", gbps(CopyCandidate::nontemporal), "memcpy", gbps(CopyCandidate::memcpy), serial_why)
            ? CopyPath::memcpy
            : CopyPath::nontemporal;
    std::string split_why;
    c.split_path = copy_challenger_wins("nt split", gbps(CopyCandidate::nontemporal_split), "memcpy split",
                                        gbps(CopyCandidate::memcpy_split), split_why)
                       ? CopyPath::memcpy
                       : CopyPath::nontemporal;
    const double serial_gbps = gbps(c.path == CopyPath::memcpy ? CopyCandidate::memcpy : CopyCandidate::nontemporal);
    const double split_gbps =
        gbps(c.split_path == CopyPath::memcpy ? CopyCandidate::memcpy_split : CopyCandidate::nontemporal_split);
    // The split is the incumbent; one thread wins only when measured faster
    // by the margin (a band whose split was not timed keeps splitting, as
    // it would without a calibration).
    c.split = split_gbps <= 0 || serial_gbps <= split_gbps * copy_switch_margin;
    if (split_gbps <= 0) {
      c.why = "one thread: " + serial_why;
    } else if (c.split) {
      c.why = "split: " + split_why + "; one thread: " + serial_why;
    } else {
      c.why = fmt::format("one thread ({:.1f} GB/s > split {:.1f} GB/s): {}", serial_gbps, split_gbps, serial_why);
    }
  }
  return choice;
}

CACHEDARRAYS_INLINE CopyChoice forced_copy_paths(CopyPath path, std::string_view why) {
  CopyChoice choice;
  for (CopyBandChoice& c : choice.bands) {
    c.path = path;
    c.split = true;
    c.split_path = path;
    c.why = std::string(why);
  }
  return choice;
}

// Anonymous memory whose pages are all present, so that no timed copy pays
// for a page fault; unmapped when it goes. Asked for in huge pages where the
// kernel allows it (transparent huge pages on madvise): faulting a few huge
// pages costs far less of the budget than thousands of small ones.
class CopyScratch {
 public:
  static constexpr std::uint64_t huge_page = std::uint64_t{2} << 20;

  explicit CopyScratch(std::uint64_t bytes) : mapped_bytes_(bytes + huge_page) {
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    mapping_ = static_cast<std::byte*>(p);
    const auto address = reinterpret_cast<std::uintptr_t>(mapping_);
    data_ = mapping_ + ((huge_page - address % huge_page) % huge_page);
    static_cast<void>(madvise(data_, bytes, MADV_HUGEPAGE));  // a hint: without it, small pages
    std::memset(data_, 0, bytes);
  }
  ~CopyScratch() {
    if (mapping_ != nullptr) munmap(mapping_, mapped_bytes_);
  }
  CopyScratch(const CopyScratch&) = delete;
  CopyScratch& operator=(const CopyScratch&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }

 private:
  std::uint64_t mapped_bytes_;
  std::byte* mapping_ = nullptr;
  std::byte* data_ = nullptr;
};

CACHEDARRAYS_INLINE CopyTimings calibrate_copy_paths(double budget_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  // Per band: the size of one timed copy, and how many copies make one
  // sample (small copies are batched so that the clock's resolution does not
  // matter). Each candidate gets up to copy_calibration_rounds samples and
  // the best counts: on a shared machine a disturbance only ever slows a
  // sample down. The large sample is as large as the budget allows once the
  // scratch pages have been faulted (which costs more than copying them):
  // large enough that each thread's half of a split copy overflows its L2
  // (smaller, memcpy's chunks would be timed in the cache and look faster
  // than they are for a gigabyte), though on a machine with a large
  // last-level cache it still fits there.
  struct Plan {
    CopyBand band;
    std::uint64_t bytes;
    int batch;
  };
  constexpr std::uint64_t KiB = 1024;
  const Plan plans[] = {
      {CopyBand::large, 8 * KiB * KiB, 1},
      {CopyBand::medium, 2 * KiB * KiB, 1},
      {CopyBand::small, 64 * KiB, 8},
  };
  constexpr int rounds = 3;
  std::uint64_t scratch_bytes = 0;
  for (const Plan& p : plans) scratch_bytes = std::max(scratch_bytes, p.bytes);

  CopyTimings timings;
  const CopyScratch src(scratch_bytes);
  const CopyScratch dst(scratch_bytes);
  if (src.data() == nullptr || dst.data() == nullptr) {
    timings.note = "no scratch memory for the calibration";
    timings.seconds = elapsed();
    return timings;
  }
  for (const Plan& p : plans) timings.sample_bytes[static_cast<std::size_t>(p.band)] = p.bytes;
  // Round by round, every band and every candidate in turn: a slow phase of
  // the machine hits all of them alike. The first round always runs whole
  // (unless there is no budget at all): a choice without a figure for every
  // candidate would be the ISA's guess again, and faulting the scratch pages
  // alone can take the whole budget on a busy machine; the first round's
  // bytes are bounded (a few tens of MiB). Whether a later round's next copy
  // fits in the budget is judged at the band's best rate so far: a copy
  // slowed by a disturbance says little about the next.
  if (budget_seconds <= 0) {
    timings.note = "no budget: nothing was timed";
    timings.seconds = elapsed();
    return timings;
  }
  for (int round = 0; round < rounds; ++round) {
    for (const Plan& p : plans) {
      std::vector<CopyCandidate> candidates = {CopyCandidate::memcpy, CopyCandidate::nontemporal};
      if (p.band != CopyBand::small) {
        candidates.push_back(CopyCandidate::memcpy_split);
        candidates.push_back(CopyCandidate::nontemporal_split);
      }
      const std::uint64_t sample_bytes = p.bytes * static_cast<std::uint64_t>(p.batch);
      for (const CopyCandidate candidate : candidates) {
        double band_gbps = 0;
        for (const double g : timings.gbps[static_cast<std::size_t>(p.band)]) band_gbps = std::max(band_gbps, g);
        if (round > 0 && elapsed() + static_cast<double>(sample_bytes) / (band_gbps * 1e9) > budget_seconds) {
          timings.note =
              fmt::format("the {:.0f} ms budget allowed {} of {} rounds", budget_seconds * 1e3, round, rounds);
          timings.seconds = elapsed();
          return timings;
        }
        const bool split = candidate == CopyCandidate::memcpy_split || candidate == CopyCandidate::nontemporal_split;
        const CopyTuning tuning{.path = candidate == CopyCandidate::memcpy || candidate == CopyCandidate::memcpy_split
                                            ? CopyPath::memcpy
                                            : CopyPath::nontemporal,
                                .split = split};
        const auto t0 = Clock::now();
        for (int i = 0; i < p.batch; ++i) copy_bytes(dst.data(), src.data(), p.bytes, CopyDestination::slow, tuning);
        const double seconds = std::max(std::chrono::duration<double>(Clock::now() - t0).count(), 1e-9);
        timings.bytes += sample_bytes;
        const double gbps = static_cast<double>(sample_bytes) / seconds / 1e9;
        timings.set(p.band, candidate, std::max(timings.get(p.band, candidate), gbps));
      }
    }
  }
  timings.seconds = elapsed();
  return timings;
}

CACHEDARRAYS_INLINE std::string_view copy_mode_name(CopyMode mode) noexcept {
  switch (mode) {
    case CopyMode::automatic: return "auto";
    case CopyMode::nontemporal: return "nt";
    case CopyMode::memcpy: return "memcpy";
  }
  return "?";
}

CACHEDARRAYS_INLINE CopyDecision make_copy_decision() {
  CopyDecision decision;
  decision.mode = copy_mode();
  switch (decision.mode) {
    case CopyMode::nontemporal:
      decision.choice = forced_copy_paths(CopyPath::nontemporal, "forced by CACHEDARRAYS_COPY=nt");
      break;
    case CopyMode::memcpy:
      decision.choice = forced_copy_paths(CopyPath::memcpy, "forced by CACHEDARRAYS_COPY=memcpy");
      break;
    case CopyMode::automatic:
      // Isolated: while this thread waits for the split copies' tasks it
      // must not pick up an unrelated task of the caller's that copies too,
      // which would ask for the decision being made on this very thread.
      tbb::this_task_arena::isolate([&] { decision.timings = calibrate_copy_paths(); });
      decision.choice = choose_copy_paths(decision.timings);
      break;
  }
  return decision;
}

CACHEDARRAYS_INLINE const CopyDecision& process_copy_decision() {
  // A function-local static: made once, by the first caller, while any
  // other caller waits; an exception leaves it unmade, to be tried again by
  // the next call.
  static const CopyDecision decision = make_copy_decision();
  return decision;
}

}  // namespace cachedarrays::detail
