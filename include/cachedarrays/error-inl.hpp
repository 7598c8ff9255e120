// Implementation of error.hpp (header-only mode includes it from there; the
// compiled library from src/types.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

namespace detail {

CACHEDARRAYS_INLINE std::string out_of_memory_message(std::uint64_t requested, const std::vector<DeviceUsage>& devices,
                                                      const std::string& snapshot_path,
                                                      const std::string& snapshot_failure) {
  std::string message = "cachedarrays: out of memory: cannot place an object of " + format_bytes(requested) + " (" +
                        std::to_string(requested) + " bytes); no device has a free block that large:";
  for (const DeviceUsage& d : devices) {
    message += "\n  device " + std::to_string(d.device) + " '" + d.name + "': capacity " + format_bytes(d.capacity) +
               ", in use " + format_bytes(d.bytes_used) + " in " + std::to_string(d.live_regions) + " regions, free " +
               format_bytes(d.bytes_free()) + ", largest free block " + format_bytes(d.largest_free_block);
  }
  message += "\nRetire arrays the program no longer needs, or give the runtime larger devices.";
  if (!snapshot_path.empty()) {
    message += "\nA memory snapshot of this moment is in '" + snapshot_path +
               "' (the cachedarrays source's tools/plot_trace.py --snapshot draws it).";
  }
  if (!snapshot_failure.empty()) message += "\nNo memory snapshot was written: " + snapshot_failure + ".";
  return message;
}

}  // namespace detail

CACHEDARRAYS_INLINE out_of_memory::out_of_memory(std::uint64_t requested, std::vector<DeviceUsage> devices,
                                                 std::string snapshot_path, const std::string& snapshot_failure)
    : error(detail::out_of_memory_message(requested, devices, snapshot_path, snapshot_failure)),
      requested_(requested),
      devices_(std::move(devices)),
      snapshot_path_(std::move(snapshot_path)) {}

}  // namespace cachedarrays
