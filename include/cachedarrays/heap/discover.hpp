// The memory tiers of a machine, found instead of written by hand: NUMA
// nodes from hwloc (DRAM, CXL expanders, HBM, persistent memory onlined as
// system RAM), device-DAX from sysfs and fs-DAX mounts from mountinfo, with
// the bandwidth and latency the firmware reports (ACPI HMAT, which hwloc
// exposes as memory attributes), ordered fastest first and ready to become
// DeviceSpecs:
//
//     std::vector<ca::DeviceSpec> devices = ca::discover();
//     for (ca::DeviceSpec& device : devices) device.capacity /= 2;   // leave the OS its share
//
// tools/cachedarrays_info.cpp prints the same list as a table.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"

namespace cachedarrays {

/// One memory tier as discovery sees it. Bandwidths in GB/s (1e9 bytes per
/// second, as in EmulationProfile), converted from hwloc's MiB/s.
struct MemoryTier {
  /// dram: a NUMA node with CPUs of its own. numa: a CPU-less NUMA node (a
  /// CXL expander, HBM in flat mode, Optane or other DAX memory onlined as
  /// system RAM). dax: a device-DAX character device or an fs-DAX mount.
  DeviceKind kind = DeviceKind::dram;
  /// "dram0", "numa2" (kind and node number), "dax0.0", or the mount point.
  std::string name;
  /// The node's OS number; -1 for DAX.
  int numa_node = -1;
  /// NUMA node: its memory. Device-DAX: the device's size. fs-DAX: the
  /// filesystem's size, 0 when statvfs fails (then `source` says so). The
  /// whole tier: callers leave room for the OS and other programs.
  std::uint64_t capacity = 0;
  /// Read bandwidth in GB/s, as seen from the CPUs local to the node; empty
  /// when the firmware reports none (no HMAT, and always for DAX, which hwloc
  /// does not describe). A firmware that gives only the read/write average
  /// fills both bandwidths.
  std::optional<double> read_gbps;
  std::optional<double> write_gbps;  ///< Write bandwidth in GB/s, as read_gbps.
  /// Access latency in ns from the local CPUs (the read latency when the
  /// firmware gives no average); empty when the firmware reports none.
  std::optional<double> latency_ns;
  /// hwloc's NUMA node subtype when present: "HBM", "MCDRAM", "NVM",
  /// "CXL-DRAM", "GPUMemory" (hwloc 2.10 adds "DRAM" and more).
  std::string subtype;
  /// dax: the device (/dev/dax0.0) or the mount point to create a heap file in.
  std::filesystem::path path;
  /// Where the tier was found, for a person: "NUMA node 0 (4 cores)",
  /// "CPU-less NUMA node 2", "device-DAX /dev/dax0.0",
  /// "fs-DAX mount /mnt/pmem0 (ext4 on /dev/pmem0)".
  std::string source;
};

/// Where discovery looks. The defaults describe this machine; tests and
/// tools point them at other files. An empty path skips that source; a path
/// that does not exist contributes nothing (a machine without the dax driver
/// has no /sys/bus/dax).
struct DiscoverOptions {
  /// An hwloc XML topology (`lstopo --of xml FILE`) instead of this machine.
  /// The DAX paths below still describe this machine: clear them with it.
  std::filesystem::path topology_xml;
  /// fs-DAX: mounts whose mount or superblock options say dax or dax=always.
  std::filesystem::path mountinfo = "/proc/self/mountinfo";
  /// device-DAX: the daxX.Y entries here with a `size` file...
  std::filesystem::path dax_devices = "/sys/bus/dax/devices";
  /// ...whose character device exists here. A device bound to the kmem
  /// driver has none: its memory is a NUMA node already and is listed as one.
  std::filesystem::path dev = "/dev";
};

/// The tiers, fastest first. When every tier has a read bandwidth, by read
/// bandwidth (highest first). Otherwise (DAX tiers never have one) by this
/// rule, which needs no firmware figures:
///   1. HBM nodes (subtype HBM or MCDRAM), by node number;
///   2. nodes with CPUs, by node number;
///   3. CPU-less nodes: those with a latency, lowest first, then the rest by
///      node number;
///   4. DAX: device-DAX by name, then fs-DAX in mount order.
/// Ties keep this order in the bandwidth order too.
///
/// hwloc gives a CPU-less node the locality of the CPUs nearest to it, so
/// "has CPUs" is inferred: a node has CPUs unless its subtype names special
/// memory (HBM, MCDRAM, NVM, SPM, GPUMemory, CXL-*), another node's CPUs lie
/// strictly inside its locality, or a lower-numbered node has the same
/// locality (Linux numbers the nodes with CPUs first).
///
/// NUMA nodes without memory are no tier and are left out; a filesystem
/// mounted twice is listed once. Throws invalid_argument for a topology XML
/// that cannot be read or that hwloc rejects, naming the file; error when
/// hwloc cannot read this machine's topology or a mountinfo file exists but
/// cannot be read.
[[nodiscard]] std::vector<MemoryTier> discover_tiers(const DiscoverOptions& options = {});

/// A DeviceSpec of the tier's whole capacity: dram(capacity) bound to the
/// node, numa_node(node, capacity), or dax_file(path, capacity); named after
/// the tier.
[[nodiscard]] DeviceSpec to_device_spec(const MemoryTier& tier);

/// discover_tiers as ready DeviceSpecs, in the same order (device 0 is the
/// fastest). Callers scale the capacities down to what they may take.
[[nodiscard]] std::vector<DeviceSpec> discover(const DiscoverOptions& options = {});

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/heap/discover-inl.hpp"
#endif
