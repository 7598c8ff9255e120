// A memory tier described as data (docs/design.md "Core model"): policies see a
// DeviceSpec, never a class per tier. Device 0 is the fastest; the order of
// the specs given to a Runtime or DataManager is the tier order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cachedarrays {

/// Where a device's memory comes from: the kind of heap reserved for it.
enum class DeviceKind {
  dram,  ///< Anonymous mapping, transparent huge pages, optional NUMA binding.
  numa,  ///< Memory of one NUMA node through libnuma (far socket, CXL expander).
  dax,   ///< A file mapped with libpmem: a DAX filesystem, or /dev/shm emulation.
  /// Address space only (an inaccessible reservation): no byte is ever
  /// stored. Copies into or out of it are counted but not made. For the
  /// replay simulator and dry runs of models larger than this machine.
  virtual_address,
};

/// How much slower a device is than this machine's DRAM, for tiers this
/// machine lacks (docs/design.md "Emulated slow tier"). Bandwidths in GB/s
/// (bytes per nanosecond); built-in profiles in cachedarrays/manager/emulation.hpp.
struct EmulationProfile {
  std::string name;       ///< "optane", "cxl": printed wherever emulation is involved.
  double read_gbps = 0;   ///< The emulated device's read bandwidth, GB/s.
  double write_gbps = 0;  ///< The emulated device's write bandwidth, GB/s.
  double latency_ns = 0;  ///< The emulated device's latency of one access, ns.
  /// The machine's own DRAM read bandwidth, measured (GB/s): the reference
  /// the emulated bandwidths are expressed against.
  double dram_read_gbps = 0;
  double dram_write_gbps = 0;  ///< The machine's own DRAM write bandwidth, measured (GB/s).
  /// Intel's 2LM "memory mode" when > 0 (emulation::memory_mode): a
  /// direct-mapped cache of this many bytes of DRAM, in 64-byte lines, sits
  /// in front of the device, invisible to software. Accesses and copies are
  /// streamed through a model of that cache (manager/two_level_memory.hpp)
  /// and charged only its misses at the bandwidths above. A positive multiple
  /// of 64.
  std::uint64_t memory_mode_cache_bytes = 0;
};

/// The kind's name: "dram", "numa", "dax" or "virtual" (the default device name).
[[nodiscard]] constexpr const char* to_string(DeviceKind kind) noexcept {
  switch (kind) {
    case DeviceKind::dram: return "dram";
    case DeviceKind::numa: return "numa";
    case DeviceKind::dax: return "dax";
    case DeviceKind::virtual_address: return "virtual";
  }
  return "?";
}

/// One device (memory tier) of a Runtime or DataManager: its kind, size and
/// where its memory comes from. The helpers dram(), numa_node(), dax_file()
/// and virtual_device() fill in the common cases.
struct DeviceSpec {
  DeviceKind kind = DeviceKind::dram;  ///< Where the memory comes from.
  /// Whole capacity in bytes, reserved from the OS once when the heap is created.
  std::uint64_t capacity = 0;
  /// Shown in stats and error messages; defaults to the kind's name.
  std::string name;
  /// dram: bind the mapping to this node when >= 0. numa: the node (required).
  int numa_node = -1;
  /// dax: a file to map (created if missing, must be at least `capacity` bytes
  /// if it exists) or a directory in which a fresh file is created. Empty:
  /// a fresh file under /dev/shm, or $TMPDIR when /dev/shm is absent. A fresh
  /// file in a directory is unnamed (O_TMPFILE): nothing is left behind even
  /// when the process is killed.
  std::filesystem::path path;
  /// dax: keep the file after shutdown (a fresh file in a directory is then
  /// named `cachedarrays-<pid>-<n>`). Files the library did not create are
  /// never removed.
  bool keep_file = false;
  /// Every region starts on a multiple of this (a power of two, >= 8).
  std::uint64_t alignment = 64;
  /// Touch every page at start-up (in parallel) so that no page fault happens
  /// while the program runs. Off only for tests of huge virtual heaps.
  bool prefault = true;
  /// Makes this device behave like a slower one: copies to and from it take
  /// at least bytes / bandwidth, and kernels reading or writing its data are
  /// charged the extra time (see emulation.hpp). Empty: a real tier.
  std::optional<EmulationProfile> emulation;

  /// `name`, or the kind's name when `name` is empty.
  [[nodiscard]] std::string display_name() const { return name.empty() ? to_string(kind) : name; }
};

/// A DRAM device of `capacity` bytes (an anonymous mapping, bound to no
/// node). The convenience constructors are the spelling the README uses.
[[nodiscard]] inline DeviceSpec dram(std::uint64_t capacity, std::string name = "dram") {
  DeviceSpec spec;
  spec.kind = DeviceKind::dram;
  spec.capacity = capacity;
  spec.name = std::move(name);
  return spec;
}

/// The memory of NUMA node `node`, `capacity` bytes of it; named `numa<node>`
/// unless `name` is given.
[[nodiscard]] inline DeviceSpec numa_node(int node, std::uint64_t capacity, std::string name = {}) {
  DeviceSpec spec;
  spec.kind = DeviceKind::numa;
  spec.capacity = capacity;
  spec.numa_node = node;
  spec.name = name.empty() ? "numa" + std::to_string(node) : std::move(name);
  return spec;
}

/// A DAX heap backed by `path` (file or directory); an empty path picks a
/// fresh unnamed file under /dev/shm (or $TMPDIR), gone at shutdown or death.
[[nodiscard]] inline DeviceSpec dax_file(std::filesystem::path path, std::uint64_t capacity, std::string name = "dax") {
  DeviceSpec spec;
  spec.kind = DeviceKind::dax;
  spec.capacity = capacity;
  spec.path = std::move(path);
  spec.name = std::move(name);
  return spec;
}

/// Address space only, never prefaulted: for simulations of machines larger
/// than this one.
[[nodiscard]] inline DeviceSpec virtual_device(std::uint64_t capacity, std::string name = "virtual") {
  DeviceSpec spec;
  spec.kind = DeviceKind::virtual_address;
  spec.capacity = capacity;
  spec.name = std::move(name);
  spec.prefault = false;
  return spec;
}

}  // namespace cachedarrays
