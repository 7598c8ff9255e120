// Implementation of program_tiers.hpp (header-only mode includes it from there;
// the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/program_tiers.hpp"

#include <optional>

#include "cachedarrays/manager/emulation.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE std::vector<plan::ProgramTier> program_tiers(const std::vector<DeviceSpec>& devices) {
  // DRAM's figures: the reference an emulated device was scaled from (this
  // machine's, measured when the profile was made). Without one nothing is
  // measured here: a recording must not cost a bandwidth run.
  std::optional<emulation::Bandwidth> dram;
  for (const DeviceSpec& d : devices) {
    if (d.emulation && d.emulation->dram_read_gbps > 0 && d.emulation->dram_write_gbps > 0) {
      dram = emulation::Bandwidth{d.emulation->dram_read_gbps, d.emulation->dram_write_gbps};
      break;
    }
  }
  std::vector<plan::ProgramTier> tiers;
  for (const DeviceSpec& d : devices) {
    plan::ProgramTier t;
    t.name = d.display_name();
    t.device = d.display_name();
    if (d.emulation) {
      t.name = d.emulation->name;
      t.read_gbps = d.emulation->read_gbps;
      t.write_gbps = d.emulation->write_gbps;
      t.latency_ns = d.emulation->latency_ns;
      t.emulated = true;
    } else if (d.kind == DeviceKind::dram || (d.kind == DeviceKind::dax && d.path.empty())) {
      t.name = "dram";
      if (dram) {
        t.read_gbps = dram->read_gbps;
        t.write_gbps = dram->write_gbps;
      }
    }
    tiers.push_back(std::move(t));
  }
  return tiers;
}

CACHEDARRAYS_INLINE std::vector<plan::ProgramTier> program_tiers(const DataManager& manager) {
  std::vector<DeviceSpec> devices;
  for (DeviceId d = 0; d < manager.device_count(); ++d) devices.push_back(manager.spec(d));
  return program_tiers(devices);
}

}  // namespace cachedarrays
