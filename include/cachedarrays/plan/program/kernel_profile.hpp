// Kernel profiles as data (docs/design.md "What is known ahead"), after AutoTM
// (Hildebrand et al., ASPLOS 2020) section 3, "AutoTM": every kernel of the
// graph is profiled with its inputs and outputs in each memory pool, and the
// times are kept in a software cache of profiled kernels so that a network
// is profiled once (its section 3.5 then uses the time of the configuration
// each kernel runs in). Two configurations are measured here per kernel —
// every argument in the fast tier and every argument in the slow tier —
// where AutoTM measures every combination; placements in between come from
// the roofline (roofline.hpp). Kernels are keyed by their signature
// (kernel_signature.hpp); the nn profiler (nn/profiler.hpp) measures them.
//
// A profile holds only on the machine it was measured on: the cache file is
// keyed by a MachineKey, and load_or_measure measures again when the key
// differs.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/manager/trace.hpp"

namespace cachedarrays::plan {

/// The measured profile of one kernel: its time in the two configurations
/// measured (every argument fast, every argument slow), its FLOPs and its traffic.
struct KernelProfile {
  double fast_seconds = 0;          ///< median wall time, every argument in the fast tier
  double slow_seconds = 0;          ///< median wall time, every argument in the slow tier
  std::uint64_t flops = 0;          ///< floating-point operations (the signature's flops=; 0: none)
  std::uint64_t bytes_read = 0;     ///< over its input arguments
  std::uint64_t bytes_written = 0;  ///< over its output arguments (scratchpad included)

  /// Field-wise equality.
  friend bool operator==(const KernelProfile&, const KernelProfile&) = default;
};

/// What measured times depend on besides the kernel: the CPU, how many cores
/// run it, the oneDNN build, and which emulated slow tier stood in for slow
/// memory.
struct MachineKey {
  std::string cpu;        ///< "model name" of /proc/cpuinfo
  unsigned cores = 0;     ///< threads the kernels ran on (nn::ProfilerOptions::compute_threads)
  std::string onednn;     ///< dnnl_version(), as "2.6.3 (N/A)"
  std::string slow_tier;  ///< the emulation profile's name ("optane")

  /// Field-wise equality: profiles measured under equal keys are interchangeable.
  friend bool operator==(const MachineKey&, const MachineKey&) = default;
  /// One line for messages, as "AMD EPYC, 2 compute threads, oneDNN 2.6.3 (N/A), slow tier optane".
  [[nodiscard]] std::string describe() const;
};

/// The profiles of one machine's kernels, by signature, with the MachineKey
/// they were measured under; saved and loaded as JSON (the profile cache).
class KernelProfiles {
 public:
  KernelProfiles() = default;  ///< No kernels, an empty machine key.
  /// No kernels yet, measured on `key`.
  explicit KernelProfiles(MachineKey key) : key_(std::move(key)) {}

  /// The machine the profiles were measured on.
  [[nodiscard]] const MachineKey& key() const noexcept { return key_; }
  /// The profile of `signature`, or null when it has none.
  [[nodiscard]] const KernelProfile* find(std::string_view signature) const;
  /// Adds the profile of `signature`, replacing any it had.
  void set(const std::string& signature, const KernelProfile& profile) { kernels_[signature] = profile; }
  /// Every profile, by signature.
  [[nodiscard]] const std::map<std::string, KernelProfile, std::less<>>& kernels() const noexcept { return kernels_; }

  /// The profiles as JSON:
  ///
  ///     {"format": "cachedarrays-kernel-profiles", "version": 1,
  ///      "machine": {"cpu", "cores", "onednn", "slow_tier"},
  ///      "kernels": {"<signature>": {"fast_seconds", "slow_seconds", "flops",
  ///      "bytes_read", "bytes_written"}, ...}}
  [[nodiscard]] std::string to_json() const;
  /// Reads what to_json writes. Throws invalid_argument naming the field
  /// that is missing or wrong ("kernel profiles JSON: machine.cores: ...").
  [[nodiscard]] static KernelProfiles from_json(std::string_view text);
  /// Writes to_json() to `path`. Throws heap_error when the file cannot be
  /// written.
  void save(const std::string& path) const;
  /// Reads a file save() wrote. Throws heap_error when the file cannot be
  /// read, and invalid_argument (naming the file and the field) for a
  /// malformed one.
  [[nodiscard]] static KernelProfiles load(const std::string& path);

  /// Equal machine keys and equal profiles.
  friend bool operator==(const KernelProfiles&, const KernelProfiles&) = default;

 private:
  MachineKey key_;
  std::map<std::string, KernelProfile, std::less<>> kernels_;
};

/// One kernel a trace recorded, begun and ended: its name (the signature),
/// the wall time from its kernel_begin to its kernel_end (pinning done, any
/// emulated slow-tier charge included), and the bytes of the arguments it
/// read and wrote. Scoped read()/write() accesses, which have no end, and
/// kernels still open when the trace ends are left out.
struct TracedKernel {
  std::uint32_t name = 0;           ///< index into Trace::names()
  double seconds = 0;               ///< wall time from kernel_begin to kernel_end
  std::uint64_t bytes_read = 0;     ///< over the arguments it read
  std::uint64_t bytes_written = 0;  ///< over the arguments it wrote
};
/// The kernels `trace` recorded begun and ended (see TracedKernel), in the
/// order they ended.
[[nodiscard]] std::vector<TracedKernel> traced_kernels(const Trace& trace);

/// The profile cache (AutoTM section 3): the profiles of `needed` for
/// `machine`, loaded from `path` when the file was measured on this machine
/// and holds them all; otherwise `measure()` runs, its profiles are merged
/// into the file's (when the machine matches; a file of another machine is
/// replaced) and saved to `path`. A malformed file is not overwritten: it
/// throws invalid_argument naming the file and the field.
[[nodiscard]] KernelProfiles load_or_measure(const std::string& path, const MachineKey& machine,
                                             std::span<const std::string> needed,
                                             const std::function<KernelProfiles()>& measure);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/kernel_profile-inl.hpp"
#endif
