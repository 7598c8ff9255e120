// Configuration from the environment: the policy, the tiers'
// sizes and places, the slow tier's emulation and a trace, set without
// recompiling — by a deployment, a job script, or a user trying a policy
// on a program someone else built. Every value is checked when read; a bad
// one is an invalid_argument that names the variable, the value, and what
// is allowed.
//
// This is the one place the library reads its environment
// (tools/check_environment.py, ctest `environment_reads`, fails on a read
// anywhere else): the layers below take what it read as arguments or as
// process-wide settings it sets (apply_process_environment), and nn asks
// the functions here. environment_variables() lists every variable read,
// and docs/guide/configuration.md lists the same ones (a test compares the
// two both ways).
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
#include "cachedarrays/manager/copy_settings.hpp"

namespace cachedarrays {

/// What the environment set (read_environment); unset variables are nullopt.
struct EnvironmentSettings {
  std::optional<std::string> policy;               ///< CACHEDARRAYS_POLICY: a registered policy name.
  std::optional<std::uint64_t> fast_bytes;         ///< CACHEDARRAYS_FAST_BYTES: the fast tier's size.
  std::optional<double> fast_fraction;             ///< CACHEDARRAYS_FAST_FRACTION: of the footprint.
  std::optional<int> fast_node;                    ///< CACHEDARRAYS_FAST_NODE: bind fast DRAM here.
  std::optional<std::uint64_t> slow_bytes;         ///< CACHEDARRAYS_SLOW_BYTES: the slow tier's size.
  std::optional<std::filesystem::path> slow_path;  ///< CACHEDARRAYS_SLOW_PATH: a DAX file or directory.
  std::optional<int> slow_node;                    ///< CACHEDARRAYS_SLOW_NODE: the slow tier's NUMA node.
  std::optional<std::string> emulation;            ///< CACHEDARRAYS_EMULATION: an emulation profile.
  std::optional<std::filesystem::path> trace;      ///< CACHEDARRAYS_TRACE: a .json or .csv trace file.
};

/// One variable, for documentation and --help texts.
struct EnvironmentVariable {
  const char* name;     ///< "CACHEDARRAYS_POLICY", ...
  const char* meaning;  ///< What it sets.
  const char* allowed;  ///< The values it takes.
};
/// Every variable the library reads: the CACHEDARRAYS_ ones, and the few
/// standard ones it also reads (TMPDIR, HOME, XDG_CACHE_HOME, the MPI
/// launchers').
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

/// What every Runtime reads when it is made (read_runtime_environment);
/// unset variables are nullopt.
struct RuntimeEnvironment {
  std::optional<std::filesystem::path> snapshot_dir;  ///< CACHEDARRAYS_SNAPSHOT_DIR: where out_of_memory snapshots go.
  std::optional<bool> leak_report;                    ///< CACHEDARRAYS_LEAK_REPORT: 1 (true) or 0.
  std::optional<std::filesystem::path> program_out;   ///< CACHEDARRAYS_PROGRAM_OUT: a .json file.
};
/// Reads and checks the Runtime's own variables. Throws invalid_argument
/// naming the variable and its value for a snapshot directory that exists
/// and is not a directory, a leak report other than 0 or 1, and a program
/// output that does not end in .json.
[[nodiscard]] RuntimeEnvironment read_runtime_environment(const EnvironmentLookup& lookup = process_environment);

/// What the layers below the runtime take for the whole process
/// (read_process_environment); unset variables are nullopt.
struct ProcessEnvironment {
  std::optional<CopyMode> copy;                 ///< CACHEDARRAYS_COPY: auto, nt or memcpy.
  std::optional<StreamIsa> nt_isa;              ///< CACHEDARRAYS_NT_ISA: avx512, avx2 or sse2.
  std::optional<std::filesystem::path> tmpdir;  ///< TMPDIR: DAX files' directory where /dev/shm is missing.
};
/// Reads and checks them. Throws invalid_argument naming the variable, its
/// value and the allowed values for a copy mode or an ISA it does not know.
[[nodiscard]] ProcessEnvironment read_process_environment(const EnvironmentLookup& lookup = process_environment);
/// Hands what was set to the layers that use it (set_copy_mode,
/// set_stream_isa_cap, set_dax_fallback_directory), leaving the rest as it
/// is. Every Runtime does so with this process's environment before it
/// reserves its devices; a program that uses a DataManager without a
/// Runtime calls it itself.
void apply_process_environment(const ProcessEnvironment& env = read_process_environment());
/// Checks CACHEDARRAYS_COPY and CACHEDARRAYS_NT_ISA without making the
/// copy engine's choice: throws invalid_argument naming the variable, its
/// value and the allowed values for a bad one. Every Runtime checks them
/// when it is made, so a bad value shows up at once rather than at the
/// first copy.
void check_copy_environment(const EnvironmentLookup& lookup = process_environment);

/// CACHEDARRAYS_MPI_TIMEOUT: the seconds a rank waits for the others, or
/// nullopt when unset. Throws invalid_argument for anything but a number
/// above 0.
[[nodiscard]] std::optional<double> mpi_timeout_from_environment(const EnvironmentLookup& lookup = process_environment);
/// Whether an MPI launcher started this process: Open MPI's mpirun
/// (OMPI_COMM_WORLD_SIZE), MPICH/Hydra and Slurm's PMI (PMI_SIZE, PMI_RANK)
/// or PMIx (PMIX_RANK) set one of their variables.
[[nodiscard]] bool launched_by_mpi_environment(const EnvironmentLookup& lookup = process_environment);
/// CACHEDARRAYS_FASHION_MNIST_DIR: where the trainer's Fashion-MNIST files
/// are, or nullopt when unset.
[[nodiscard]] std::optional<std::filesystem::path> fashion_mnist_dir_from_environment(
    const EnvironmentLookup& lookup = process_environment);
/// OMP_NUM_THREADS's first number (OpenMP's own default for the threads a
/// program computes with, "8" or "8,4"), or nullopt when it is unset or does
/// not start with a number above 0 (OpenMP then uses the hardware threads).
[[nodiscard]] std::optional<int> openmp_threads_from_environment(const EnvironmentLookup& lookup = process_environment);
/// The user's cache directory for cachedarrays: $XDG_CACHE_HOME/cachedarrays,
/// else $HOME/.cache/cachedarrays, else nullopt (neither is set).
[[nodiscard]] std::optional<std::filesystem::path> user_cache_directory(
    const EnvironmentLookup& lookup = process_environment);

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

}  // namespace cachedarrays

// Here, not at the top: the Runtime's implementation reads the environment
// through the declarations above, and in header-only mode runtime.hpp ends
// by including it, which would find this header half read.
#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

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
