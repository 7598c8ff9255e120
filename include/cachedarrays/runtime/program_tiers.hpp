// The tiers a runtime's devices are, as a recorded program carries them
// (plan::Program::tiers): a model elsewhere prices the program's copies at
// the tiers it ran on. Runtime::record_program fills them from its devices.
#pragma once

#include "cachedarrays/config.hpp"

#include <vector>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/plan/program/program_tier.hpp"

namespace cachedarrays {

/// One ProgramTier per device, in the devices' order:
///   - an emulated device: its profile's name, bandwidths and latency,
///     marked emulated;
///   - a DRAM device, or a DAX file under /dev/shm (an empty path), which is
///     DRAM too: "dram", at the DRAM bandwidth an emulated device of the
///     same list was scaled from (EmulationProfile::dram_read_gbps), or not
///     known when none was (nothing is measured here); latency not known;
///   - anything else (a NUMA node, a DAX file elsewhere, a virtual device):
///     its name, with every figure 0 (not known), since nothing here
///     measured it.
[[nodiscard]] std::vector<plan::ProgramTier> program_tiers(const std::vector<DeviceSpec>& devices);
/// program_tiers of `manager`'s devices, fastest first: the tiers a
/// runtime's program ran on.
[[nodiscard]] std::vector<plan::ProgramTier> program_tiers(const DataManager& manager);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/program_tiers-inl.hpp"
#endif
