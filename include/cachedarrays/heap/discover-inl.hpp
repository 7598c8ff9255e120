// Implementation of discover.hpp (header-only mode includes it from there;
// the compiled library from src/heap/heap.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/heap/discover.hpp"

#include <fcntl.h>
#include <hwloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays::detail {

using HwlocTopology = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

// hwloc reports only "invalid argument" for an XML file it cannot open;
// open(2) tells a missing file from an unreadable one or a directory.
CACHEDARRAYS_INLINE void check_topology_file(const std::filesystem::path& xml) {
  const int fd = ::open(xml.c_str(), O_RDONLY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    struct stat status {};
    if (::fstat(fd, &status) == 0 && S_ISDIR(status.st_mode)) err = EISDIR;
    ::close(fd);
  }
  if (err != 0) {
    throw invalid_argument("cachedarrays: cannot read topology XML " + xml.string() + ": " + std::strerror(err) +
                           "; give an hwloc XML file (make one with `lstopo --of xml FILE`)");
  }
}

// This machine's topology, or the one in `xml` when it is not empty, with
// memory attributes (hwloc loads them by default).
CACHEDARRAYS_INLINE HwlocTopology load_hwloc_topology(const std::filesystem::path& xml) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    throw error(std::string("cachedarrays: hwloc cannot create a topology: ") + std::strerror(errno));
  }
  HwlocTopology topology(raw, &hwloc_topology_destroy);
  if (xml.empty()) {
    if (hwloc_topology_load(raw) != 0) {
      throw error(std::string("cachedarrays: hwloc cannot read this machine's topology: ") + std::strerror(errno));
    }
    return topology;
  }
  check_topology_file(xml);
  if (hwloc_topology_set_xml(raw, xml.c_str()) != 0 || hwloc_topology_load(raw) != 0) {
    const int err = errno;
    throw invalid_argument("cachedarrays: hwloc rejects topology XML " + xml.string() + " (" + std::strerror(err) +
                           "): not a topology hwloc can load; make one with `lstopo --of xml FILE`");
  }
  return topology;
}

CACHEDARRAYS_INLINE std::string_view subtype_of(hwloc_obj_t node) {
  return node->subtype != nullptr ? std::string_view(node->subtype) : std::string_view();
}

CACHEDARRAYS_INLINE bool is_high_bandwidth_subtype(std::string_view subtype) {
  return subtype == "HBM" || subtype == "MCDRAM";
}

// Subtypes hwloc gives only to memory that has no CPUs of its own.
CACHEDARRAYS_INLINE bool is_cpuless_subtype(std::string_view subtype) {
  return is_high_bandwidth_subtype(subtype) || subtype == "NVM" || subtype == "SPM" || subtype == "GPUMemory" ||
         subtype.starts_with("CXL");
}

// hwloc gives a CPU-less node the locality (cpuset) of the CPUs nearest to
// it, so it cannot be told apart by its cpuset alone: the rule of
// discover_tiers. The cpusets of nodes with CPUs are disjoint; a CPU-less
// node's covers one or more of them.
CACHEDARRAYS_INLINE bool has_own_cpus(hwloc_obj_t node, const std::vector<hwloc_obj_t>& nodes) {
  if (hwloc_bitmap_iszero(node->cpuset) || is_cpuless_subtype(subtype_of(node))) return false;
  for (hwloc_obj_t other : nodes) {
    if (other == node || is_cpuless_subtype(subtype_of(other))) continue;
    if (hwloc_bitmap_isequal(other->cpuset, node->cpuset)) {
      if (other->os_index < node->os_index) return false;
    } else if (hwloc_bitmap_isincluded(other->cpuset, node->cpuset)) {
      return false;
    }
  }
  return true;
}

// An attribute of `node` as seen from its local CPUs, where hwloc's Linux
// backend records the HMAT figures; empty when the firmware gives none.
CACHEDARRAYS_INLINE std::optional<std::uint64_t> node_memattr(hwloc_topology_t topology, hwloc_memattr_id_t attribute,
                                                              hwloc_obj_t node) {
  hwloc_location initiator{};
  initiator.type = HWLOC_LOCATION_TYPE_CPUSET;
  initiator.location.cpuset = node->cpuset;
  hwloc_uint64_t value = 0;
  if (hwloc_memattr_get_value(topology, attribute, node, &initiator, 0, &value) != 0 || value == 0) {
    return std::nullopt;
  }
  return value;
}

// hwloc's bandwidths are in MiB/s; the library's GB/s are 1e9 bytes/s.
CACHEDARRAYS_INLINE std::optional<double> gbps_of_mib_per_second(std::optional<std::uint64_t> mib_per_second) {
  if (!mib_per_second) return std::nullopt;
  return static_cast<double>(*mib_per_second) * 1048576.0 / 1e9;
}

CACHEDARRAYS_INLINE std::optional<std::uint64_t> first_reported(std::optional<std::uint64_t> first,
                                                                std::optional<std::uint64_t> second) {
  return first ? first : second;
}

CACHEDARRAYS_INLINE std::string numa_source(hwloc_topology_t topology, hwloc_obj_t node, bool own_cpus) {
  const std::string number = std::to_string(node->os_index);
  if (own_cpus) {
    const int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topology, node->cpuset, HWLOC_OBJ_CORE);
    return "NUMA node " + number + " (" + std::to_string(cores) + (cores == 1 ? " core)" : " cores)");
  }
  // Linux names the DAX device of persistent memory onlined as system RAM.
  const char* dax_device = hwloc_obj_get_info_by_name(node, "DAXDevice");
  return "CPU-less NUMA node " + number +
         (dax_device != nullptr ? std::string(" (") + dax_device + " as system RAM)" : std::string());
}

CACHEDARRAYS_INLINE MemoryTier numa_tier(hwloc_topology_t topology, hwloc_obj_t node, bool own_cpus) {
  MemoryTier tier;
  tier.kind = own_cpus ? DeviceKind::dram : DeviceKind::numa;
  tier.numa_node = static_cast<int>(node->os_index);
  tier.name = to_string(tier.kind) + std::to_string(node->os_index);
  tier.capacity = node->attr->numanode.local_memory;
  tier.subtype = subtype_of(node);
  const auto average = node_memattr(topology, HWLOC_MEMATTR_ID_BANDWIDTH, node);
  tier.read_gbps =
      gbps_of_mib_per_second(first_reported(node_memattr(topology, HWLOC_MEMATTR_ID_READ_BANDWIDTH, node), average));
  tier.write_gbps =
      gbps_of_mib_per_second(first_reported(node_memattr(topology, HWLOC_MEMATTR_ID_WRITE_BANDWIDTH, node), average));
  // A load waits for a read: the read latency stands in for a missing average.
  if (const auto latency = first_reported(node_memattr(topology, HWLOC_MEMATTR_ID_LATENCY, node),
                                          node_memattr(topology, HWLOC_MEMATTR_ID_READ_LATENCY, node))) {
    tier.latency_ns = static_cast<double>(*latency);
  }
  tier.source = numa_source(topology, node, own_cpus);
  return tier;
}

CACHEDARRAYS_INLINE std::vector<MemoryTier> numa_tiers(const std::filesystem::path& topology_xml) {
  const HwlocTopology topology = load_hwloc_topology(topology_xml);
  std::vector<hwloc_obj_t> nodes;
  for (hwloc_obj_t node = nullptr;
       (node = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, node)) != nullptr;) {
    nodes.push_back(node);
  }
  std::vector<MemoryTier> tiers;
  for (hwloc_obj_t node : nodes) {
    if (node->attr->numanode.local_memory == 0) continue;  // a node without memory is no tier
    tiers.push_back(numa_tier(topology.get(), node, has_own_cpus(node, nodes)));
  }
  return tiers;
}

CACHEDARRAYS_INLINE std::optional<std::uint64_t> read_number_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

CACHEDARRAYS_INLINE std::vector<MemoryTier> device_dax_tiers(const std::filesystem::path& dax_devices,
                                                             const std::filesystem::path& dev) {
  std::vector<MemoryTier> tiers;
  if (dax_devices.empty()) return tiers;
  std::vector<std::string> names;
  std::error_code missing;  // no dax driver: no directory, no devices
  for (const auto& entry : std::filesystem::directory_iterator(dax_devices, missing)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::optional<std::uint64_t> size = read_number_file(dax_devices / name / "size");
    std::error_code ec;
    if (!name.starts_with("dax") || !size || !std::filesystem::exists(dev / name, ec)) continue;
    MemoryTier tier;
    tier.kind = DeviceKind::dax;
    tier.name = name;
    tier.capacity = *size;
    tier.path = dev / name;
    tier.source = "device-DAX " + tier.path.string();
    tiers.push_back(std::move(tier));
  }
  return tiers;
}

CACHEDARRAYS_INLINE std::vector<std::string_view> split_on(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo.
CACHEDARRAYS_INLINE std::string unescape_mount_path(std::string_view escaped) {
  const auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string path;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '\\' && i + 3 < escaped.size() && octal(escaped[i + 1]) && octal(escaped[i + 2]) &&
        octal(escaped[i + 3])) {
      path.push_back(
          static_cast<char>((escaped[i + 1] - '0') * 64 + (escaped[i + 2] - '0') * 8 + (escaped[i + 3] - '0')));
      i += 3;
    } else {
      path.push_back(escaped[i]);
    }
  }
  return path;
}

// dax=inode and dax=never are left out: under them a new heap file is DAX
// only if its directory carries the DAX flag.
CACHEDARRAYS_INLINE bool has_dax_option(std::string_view options) {
  const std::vector<std::string_view> each = split_on(options, ',');
  return std::any_of(each.begin(), each.end(),
                     [](std::string_view option) { return option == "dax" || option == "dax=always"; });
}

CACHEDARRAYS_INLINE MemoryTier fs_dax_tier(std::string mount_point, std::string_view fs_type,
                                           std::string_view fs_source) {
  MemoryTier tier;
  tier.kind = DeviceKind::dax;
  tier.path = mount_point;
  tier.source = "fs-DAX mount " + mount_point + " (" + std::string(fs_type) + " on " + std::string(fs_source) + ")";
  struct statvfs filesystem {};
  if (::statvfs(mount_point.c_str(), &filesystem) == 0) {
    tier.capacity = static_cast<std::uint64_t>(filesystem.f_blocks) * filesystem.f_frsize;
  } else {
    tier.source += "; size unknown: statvfs failed: " + std::string(std::strerror(errno));
  }
  tier.name = std::move(mount_point);
  return tier;
}

// The format is proc(5)'s: ID, parent ID, major:minor, root, mount point,
// mount options, optional fields, "-", filesystem type, source, superblock
// options.
CACHEDARRAYS_INLINE std::vector<MemoryTier> fs_dax_tiers(const std::filesystem::path& mountinfo) {
  std::vector<MemoryTier> tiers;
  std::error_code ec;
  if (mountinfo.empty() || !std::filesystem::exists(mountinfo, ec)) return tiers;
  std::ifstream in(mountinfo);
  if (!in) {
    throw error("cachedarrays: cannot read the mount table " + mountinfo.string() + ": " + std::strerror(errno) +
                "; DiscoverOptions::mountinfo names it (empty: look for no fs-DAX)");
  }
  std::set<std::string, std::less<>> devices_listed;  // a bind mount shows a filesystem again
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string_view> fields = split_on(line, ' ');
    if (fields.size() < 10) continue;
    const auto dash = std::find(fields.begin() + 6, fields.end(), "-");
    if (std::distance(dash, fields.end()) < 4) continue;
    const std::string_view device = fields[2];
    if (!has_dax_option(fields[5]) && !has_dax_option(dash[3])) continue;
    if (!devices_listed.emplace(device).second) continue;
    tiers.push_back(fs_dax_tier(unescape_mount_path(fields[4]), dash[1], dash[2]));
  }
  return tiers;
}

CACHEDARRAYS_INLINE int fallback_rank(const MemoryTier& tier) {
  if (tier.kind == DeviceKind::dax) return 3;
  if (is_high_bandwidth_subtype(tier.subtype)) return 0;
  return tier.kind == DeviceKind::dram ? 1 : 2;
}

// The order documented at discover_tiers.
CACHEDARRAYS_INLINE void order_fastest_first(std::vector<MemoryTier>& tiers) {
  const auto key = [](const MemoryTier& tier) {
    const int rank = fallback_rank(tier);
    const double latency = rank == 2 && tier.latency_ns ? *tier.latency_ns : std::numeric_limits<double>::infinity();
    return std::tuple(rank, latency, tier.numa_node);
  };
  std::stable_sort(tiers.begin(), tiers.end(),
                   [&](const MemoryTier& a, const MemoryTier& b) { return key(a) < key(b); });
  if (std::all_of(tiers.begin(), tiers.end(), [](const MemoryTier& tier) { return tier.read_gbps.has_value(); })) {
    std::stable_sort(tiers.begin(), tiers.end(),
                     [](const MemoryTier& a, const MemoryTier& b) { return *a.read_gbps > *b.read_gbps; });
  }
}

}  // namespace cachedarrays::detail

namespace cachedarrays {

CACHEDARRAYS_INLINE std::vector<MemoryTier> discover_tiers(const DiscoverOptions& options) {
  std::vector<MemoryTier> tiers = detail::numa_tiers(options.topology_xml);
  const auto append = [&tiers](std::vector<MemoryTier> more) {
    tiers.insert(tiers.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  };
  append(detail::device_dax_tiers(options.dax_devices, options.dev));
  append(detail::fs_dax_tiers(options.mountinfo));
  detail::order_fastest_first(tiers);
  return tiers;
}

CACHEDARRAYS_INLINE DeviceSpec to_device_spec(const MemoryTier& tier) {
  switch (tier.kind) {
    case DeviceKind::dram: {
      DeviceSpec spec = dram(tier.capacity, tier.name);
      spec.numa_node = tier.numa_node;
      return spec;
    }
    case DeviceKind::numa: return numa_node(tier.numa_node, tier.capacity, tier.name);
    case DeviceKind::dax: return dax_file(tier.path, tier.capacity, tier.name);
    case DeviceKind::virtual_address: break;
  }
  throw invalid_argument("cachedarrays: tier '" + tier.name + "' is of kind " + to_string(tier.kind) +
                         "; a discovered tier is dram, numa or dax");
}

CACHEDARRAYS_INLINE std::vector<DeviceSpec> discover(const DiscoverOptions& options) {
  const std::vector<MemoryTier> tiers = discover_tiers(options);
  std::vector<DeviceSpec> specs;
  specs.reserve(tiers.size());
  for (const MemoryTier& tier : tiers) specs.push_back(to_device_spec(tier));
  return specs;
}

}  // namespace cachedarrays
