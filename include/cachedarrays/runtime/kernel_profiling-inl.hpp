// Implementation of kernel_profiling.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/kernel_profiling.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/runtime/program_tiers.hpp"

namespace cachedarrays {

namespace detail {

// The tiers' bandwidths a kernel's slow-tier cost is read from when the slow
// tier is not emulated: the published DDR4 and Optane figures, the ones
// AutotmPolicy prices such tiers with.
CACHEDARRAYS_INLINE std::pair<emulation::Bandwidth, emulation::Bandwidth> profile_bandwidths() {
  return {emulation::published::ddr4_six_channel, emulation::published::optane_six_dimms};
}

}  // namespace detail

CACHEDARRAYS_INLINE void KernelProfiling::program_installed(const plan::Program* program) {
  // A program that brings its profiles (saved with them) is not timed again.
  armed_ = program != nullptr && program->profiles() == nullptr && iterations_ > 0;
  active_ = false;
  on_.store(false, std::memory_order_relaxed);
  profiler_.start(nullptr);
}

CACHEDARRAYS_INLINE std::shared_ptr<const plan::Program> KernelProfiling::advance(
    bool planned, const std::shared_ptr<const plan::Program>& program, const DataManager& manager) {
  std::shared_ptr<const plan::Program> profiled;
  if (active_ && on()) ++done_;  // a planned iteration was timed to its end
  if (active_ && done_ >= iterations_) {
    active_ = false;
    if (!profiler_.empty()) {
      // The slow tier as the profiles' slow times were derived (add).
      const std::optional<EmulationProfile>& emulated = manager.spec(manager.device_count() - 1).emulation;
      plan::Program with_profiles = *program;
      // Profiles are measured on this runtime's tiers: a program given
      // without tiers (a dry run's) carries them from here on.
      if (with_profiles.tiers().empty()) with_profiles.set_tiers(program_tiers(manager));
      // The kernels ran on the program's own threads, as many as it used.
      with_profiles.set_profiles(
          profiler_.profiles({.cpu = {},
                              .cores = std::max(1U, std::thread::hardware_concurrency()),
                              .onednn = {},
                              .slow_tier = emulated ? emulated->name : std::string("bandwidth model")}));
      profiler_.start(nullptr);
      profiled = std::make_shared<const plan::Program>(std::move(with_profiles));
    }
  }
  if (armed_) {
    armed_ = false;
    active_ = true;
    done_ = 0;
    profiler_.start(profiled != nullptr ? profiled : program);
  }
  on_.store(active_ && planned, std::memory_order_relaxed);
  return profiled;
}

CACHEDARRAYS_INLINE void KernelProfiling::add(const char* name, std::uint64_t index, std::span<Object* const> objects,
                                              std::span<const Access> accesses, double seconds, double emulated_ns,
                                              const DataManager& manager) {
  if (!on()) return;  // the iteration ended meanwhile
  const DeviceId slow = manager.device_count() - 1;
  const std::optional<EmulationProfile>& emulated = manager.spec(slow).emulation;
  double paid = 0;      // the slow-tier cost inside `seconds`
  double all_slow = 0;  // what every argument would pay in the slow tier
  std::uint64_t bytes = 0;
  if (emulated) {
    // The emulated tier's cost is computed, not measured: the charge waited
    // out, and for all arguments the charge each would pay there.
    paid = emulated_ns * 1e-9;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      all_slow += emulation::kernel_extra_ns(*emulated, objects[i]->bytes(), accesses[i]) * 1e-9;
    }
  } else {
    // A real slow tier's cost is inside the measured time and cannot be
    // told apart from the kernel's own: it is read off the tiers'
    // bandwidths, as the roofline reads memory time (bytes over each tier's
    // bandwidth, less the same bytes over the fast tier's).
    const auto [fast_bw, slow_bw] = detail::profile_bandwidths();
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const bool write = accesses[i] == Access::write;
      const double b = static_cast<double>(objects[i]->bytes());
      const double extra = std::max(0.0, b / (write ? slow_bw.write_gbps : slow_bw.read_gbps) -
                                             b / (write ? fast_bw.write_gbps : fast_bw.read_gbps)) *
                           1e-9;
      all_slow += extra;
      if (manager.device(*manager.getprimary(*objects[i])) != 0) paid += extra;
    }
  }
  for (const Object* o : objects) bytes += o->bytes();
  const double fast_seconds = std::max(0.0, seconds - paid);
  profiler_.add(index, name, objects.size(), bytes, fast_seconds, fast_seconds + all_slow);
}

}  // namespace cachedarrays
