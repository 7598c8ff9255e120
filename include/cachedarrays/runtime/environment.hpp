// Configuration from the environment: the policy, the tiers'
// sizes and places, the slow tier's emulation and a trace, set without
// recompiling — by a deployment, a job script, or a user trying a policy
// on a program someone else built. Every value is checked when read; a bad
// one is an invalid_argument that names the variable, the value, and what
// is allowed. The README's "Configuration" table lists the same variables
// as environment_variables() does.
//
// Precedence, for the CLIs that read them (train_cnn): a command-line flag
// over the variable over the built-in default.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

/// What the environment set (read_environment); unset variables are nullopt.
struct EnvironmentSettings {
  std::optional<std::string> policy;                  ///< CACHEDARRAYS_POLICY: a registered policy name.
  std::optional<std::uint64_t> fast_bytes;            ///< CACHEDARRAYS_FAST_BYTES: the fast tier's size.
  std::optional<double> fast_fraction;                ///< CACHEDARRAYS_FAST_FRACTION: of the footprint.
  std::optional<int> fast_node;                       ///< CACHEDARRAYS_FAST_NODE: bind fast DRAM here.
  std::optional<std::uint64_t> slow_bytes;            ///< CACHEDARRAYS_SLOW_BYTES: the slow tier's size.
  std::optional<std::filesystem::path> slow_path;     ///< CACHEDARRAYS_SLOW_PATH: a DAX file or directory.
  std::optional<int> slow_node;                       ///< CACHEDARRAYS_SLOW_NODE: the slow tier's NUMA node.
  std::optional<std::string> emulation;               ///< CACHEDARRAYS_EMULATION: an emulation profile.
  std::optional<std::filesystem::path> trace;         ///< CACHEDARRAYS_TRACE: a .json or .csv trace file.
};

/// One variable, for documentation and --help texts.
struct EnvironmentVariable {
  const char* name;     ///< "CACHEDARRAYS_POLICY", ...
  const char* meaning;  ///< What it sets.
  const char* allowed;  ///< The values it takes.
};
/// Every variable the library reads, the Runtime's own included
/// (CACHEDARRAYS_SNAPSHOT_DIR, CACHEDARRAYS_LEAK_REPORT, CACHEDARRAYS_PROGRAM_OUT).
[[nodiscard]] const std::vector<EnvironmentVariable>& environment_variables();

/// A variable's value, or nullopt when unset; an empty value counts as unset
/// (as `VAR= program` is usually meant).
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;
/// The EnvironmentLookup of this process's environment (getenv); read it
/// before other threads start.
[[nodiscard]] std::optional<std::string> process_environment(const char* name);

/// Reads and checks every variable of environment_variables() that this
/// struct holds. Throws invalid_argument for the first bad value (a size
/// that does not parse, a fraction outside (0, 64], a policy the registry
/// does not know, an emulation profile that does not exist, a node below 0,
/// a trace file that is neither .json nor .csv, a slow path whose directory
/// does not exist) or a contradiction (FAST_BYTES with FAST_FRACTION,
/// SLOW_PATH with SLOW_NODE).
[[nodiscard]] EnvironmentSettings read_environment(const EnvironmentLookup& lookup = process_environment);

/// What a program knows before the environment is read: its own defaults.
struct RuntimeDefaults {
  std::string policy = "auto";  ///< The policy when CACHEDARRAYS_POLICY is unset.
  /// The fast tier when the environment sets neither CACHEDARRAYS_FAST_BYTES
  /// nor CACHEDARRAYS_FAST_FRACTION; 0: the environment must set one.
  std::uint64_t fast_bytes = 0;
  /// The program's footprint, what CACHEDARRAYS_FAST_FRACTION is a fraction
  /// of; 0: unknown (the fraction is then refused).
  std::uint64_t footprint = 0;
  /// The slow tier; 0: 1.5 x the footprint plus 64 MiB (room for
  /// fragmentation and the copies a policy keeps), or 4 x the fast tier
  /// when the footprint is unknown.
  std::uint64_t slow_bytes = 0;
  std::string emulation = "none";  ///< The profile when CACHEDARRAYS_EMULATION is unset ("none": a real tier).
};

/// The two tiers the defaults and the environment describe: fast DRAM
/// (bound to CACHEDARRAYS_FAST_NODE if set), and slow either a DAX file
/// (CACHEDARRAYS_SLOW_PATH; default a fresh file under /dev/shm) or a NUMA
/// node (CACHEDARRAYS_SLOW_NODE), emulated as CACHEDARRAYS_EMULATION says.
[[nodiscard]] std::vector<DeviceSpec> devices_from_environment(const RuntimeDefaults& defaults,
                                                               const EnvironmentSettings& env);

/// A Runtime on devices_from_environment, with the policy
/// CACHEDARRAYS_POLICY names (else the default's), recording a trace of the
/// whole run into CACHEDARRAYS_TRACE's file when it is set (written when the
/// runtime is destroyed).
[[nodiscard]] Runtime runtime_from_environment(const RuntimeDefaults& defaults = {},
                                               const EnvironmentSettings& env = read_environment());

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/environment-inl.hpp"
#endif
