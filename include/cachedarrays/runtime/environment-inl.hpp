// Implementation of environment.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <system_error>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/dax_directory.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/runtime/snapshot_directory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE const std::vector<EnvironmentVariable>& environment_variables() {
  static const std::vector<EnvironmentVariable> variables = {
      {"CACHEDARRAYS_POLICY", "the placement policy", "a registered policy name (train_cnn --help lists them)"},
      {"CACHEDARRAYS_FAST_BYTES", "the fast tier's size",
       "a size: bytes, or with a unit B, KiB/K, MiB/M, GiB/G, TiB/T (powers of 1024), KB, MB, GB, TB (of 1000)"},
      {"CACHEDARRAYS_FAST_FRACTION", "the fast tier as a fraction of the program's footprint",
       "a number in (0, 64]; not with CACHEDARRAYS_FAST_BYTES"},
      {"CACHEDARRAYS_FAST_NODE", "bind the fast tier's DRAM to this NUMA node", "a node number >= 0"},
      {"CACHEDARRAYS_SLOW_BYTES", "the slow tier's size", "a size, as CACHEDARRAYS_FAST_BYTES"},
      {"CACHEDARRAYS_SLOW_PATH", "the slow tier as a DAX file or a directory to make one in",
       "a path whose directory exists (default: a fresh file under /dev/shm); not with CACHEDARRAYS_SLOW_NODE"},
      {"CACHEDARRAYS_SLOW_NODE", "the slow tier as the memory of this NUMA node (CXL expander, far socket)",
       "a node number >= 0; not with CACHEDARRAYS_SLOW_PATH"},
      {"CACHEDARRAYS_EMULATION", "make the slow tier as slow as a device this machine lacks",
       "none, optane, optane-1dimm, cxl"},
      {"CACHEDARRAYS_TRACE",
       "record a trace (runtime_from_environment: of the whole run, written when the runtime "
       "is destroyed; train_cnn: of the last iteration)",
       "a file ending in .json (Chrome trace) or .csv"},
      // Read by every Runtime when it is made (read_runtime_environment).
      {"CACHEDARRAYS_SNAPSHOT_DIR", "write a memory snapshot (JSON) here before an out_of_memory is thrown",
       "an existing directory, or a path where one can be made"},
      {"CACHEDARRAYS_LEAK_REPORT", "print the objects still alive when a Runtime is destroyed", "1 (stderr) or 0"},
      {"CACHEDARRAYS_PROGRAM_OUT",
       "write the program of an iteration, with its kernels' online profiles, when a Runtime is destroyed "
       "(Runtime::set_program_output; cachedarrays-plan --program reads it)",
       "a file ending in .json"},
      // Read by every Runtime when it is made, for the copy engine and the
      // heaps of the whole process (read_process_environment).
      {"CACHEDARRAYS_COPY", "which stores the copy engine's copies use",
       "auto, nt, memcpy (auto measures which copy is faster on this CPU, nt and memcpy force one)"},
      {"CACHEDARRAYS_NT_ISA", "cap the vector width of the copy engine's streaming copies", "avx512, avx2, sse2"},
      {"TMPDIR", "where a DAX heap with no path makes its file when /dev/shm is missing",
       "a directory (one that does not exist is passed over for /tmp)"},
      // Read by the trainer (nn).
      {"CACHEDARRAYS_MPI_TIMEOUT", "the seconds an MPI rank waits for the others before it ends the job",
       "a number above 0 (default 600)"},
      {"OMPI_COMM_WORLD_SIZE", "set by Open MPI's mpirun: the trainer runs data-parallel over MPI", "any value"},
      {"PMI_SIZE", "set by MPICH/Hydra and Slurm's PMI: the trainer runs data-parallel over MPI", "any value"},
      {"PMI_RANK", "set by MPICH/Hydra and Slurm's PMI: the trainer runs data-parallel over MPI", "any value"},
      {"PMIX_RANK", "set by PMIx launchers: the trainer runs data-parallel over MPI", "any value"},
      {"CACHEDARRAYS_FASHION_MNIST_DIR", "where the trainer's Fashion-MNIST files are",
       "a directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] "
       "(default /usr/share/datasets/fashion-mnist)"},
      {"OMP_NUM_THREADS", "the trainer's compute threads when the program sets none (OpenMP's default)",
       "a number above 0, or a list whose first is"},
      {"XDG_CACHE_HOME", "the trainer's kernel-profile cache goes into its cachedarrays/", "a directory"},
      {"HOME", "without XDG_CACHE_HOME, the trainer's kernel-profile cache goes into its .cache/cachedarrays/",
       "a directory"},
  };
  return variables;
}

CACHEDARRAYS_INLINE std::optional<std::string> process_environment(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once, before threads start
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

namespace detail {

[[noreturn]] inline void bad_environment(const char* name, const std::string& value, const std::string& why) {
  std::string allowed;
  for (const EnvironmentVariable& v : environment_variables()) {
    if (std::string_view(v.name) == name) allowed = v.allowed;
  }
  throw invalid_argument(fmt::format("{}='{}': {}; allowed: {}", name, value, why, allowed));
}

inline std::uint64_t environment_bytes(const char* name, const std::string& value) {
  const std::optional<std::uint64_t> bytes = parse_bytes(value);
  if (!bytes) bad_environment(name, value, "not a size");
  if (*bytes == 0) bad_environment(name, value, "a tier of 0 bytes holds nothing");
  return *bytes;
}

inline int environment_node(const char* name, const std::string& value) {
  int node = -1;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), node);
  if (ec != std::errc{} || end != value.data() + value.size() || node < 0) {
    bad_environment(name, value, "not a NUMA node number");
  }
  return node;
}

}  // namespace detail

CACHEDARRAYS_INLINE EnvironmentSettings read_environment(const EnvironmentLookup& lookup) {
  EnvironmentSettings env;
  if (auto v = lookup("CACHEDARRAYS_POLICY")) {
    const policy::Registry registry = policy::Registry::builtin();
    if (!registry.contains(*v)) {
      // The registry's own message says which part of a compound name
      // (ca-lm+best-fit, autoswap:bo) is wrong, where there is one.
      try {
        (void)registry.make(*v);
      } catch (const std::exception& e) {
        detail::bad_environment("CACHEDARRAYS_POLICY", *v, e.what());
      }
    }
    env.policy = std::move(*v);
  }
  if (auto v = lookup("CACHEDARRAYS_FAST_BYTES"))
    env.fast_bytes = detail::environment_bytes("CACHEDARRAYS_FAST_BYTES", *v);
  if (auto v = lookup("CACHEDARRAYS_FAST_FRACTION")) {
    double fraction = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), fraction);
    if (ec != std::errc{} || end != v->data() + v->size()) {
      detail::bad_environment("CACHEDARRAYS_FAST_FRACTION", *v, "not a number");
    }
    if (!(fraction > 0 && fraction <= 64)) {
      detail::bad_environment("CACHEDARRAYS_FAST_FRACTION", *v, "out of range");
    }
    if (env.fast_bytes) {
      detail::bad_environment("CACHEDARRAYS_FAST_FRACTION", *v,
                              "CACHEDARRAYS_FAST_BYTES is set too, and the two would disagree");
    }
    env.fast_fraction = fraction;
  }
  if (auto v = lookup("CACHEDARRAYS_FAST_NODE")) env.fast_node = detail::environment_node("CACHEDARRAYS_FAST_NODE", *v);
  if (auto v = lookup("CACHEDARRAYS_SLOW_BYTES"))
    env.slow_bytes = detail::environment_bytes("CACHEDARRAYS_SLOW_BYTES", *v);
  if (auto v = lookup("CACHEDARRAYS_SLOW_PATH")) {
    const std::filesystem::path path(*v);
    std::error_code ec;
    // A directory to make a file in, or a file (new or existing) in one.
    const std::filesystem::path directory = std::filesystem::is_directory(path, ec) ? path
                                            : path.parent_path().empty()            ? "."
                                                                                    : path.parent_path();
    if (!std::filesystem::is_directory(directory, ec)) {
      detail::bad_environment("CACHEDARRAYS_SLOW_PATH", *v, "the directory " + directory.string() + " does not exist");
    }
    env.slow_path = path;
  }
  if (auto v = lookup("CACHEDARRAYS_SLOW_NODE")) {
    env.slow_node = detail::environment_node("CACHEDARRAYS_SLOW_NODE", *v);
    if (env.slow_path) {
      detail::bad_environment("CACHEDARRAYS_SLOW_NODE", *v,
                              "CACHEDARRAYS_SLOW_PATH is set too, and the slow tier is one or the other");
    }
  }
  if (auto v = lookup("CACHEDARRAYS_EMULATION")) {
    try {
      (void)emulation::profile(*v);  // "none" is nullopt; an unknown name throws
    } catch (const std::exception& e) {
      detail::bad_environment("CACHEDARRAYS_EMULATION", *v, "no such profile");
    }
    env.emulation = std::move(*v);
  }
  if (auto v = lookup("CACHEDARRAYS_TRACE")) {
    const std::string extension = std::filesystem::path(*v).extension().string();
    if (extension != ".json" && extension != ".csv") {
      detail::bad_environment("CACHEDARRAYS_TRACE", *v, "the format is chosen by the extension");
    }
    env.trace = std::filesystem::path(*v);
  }
  return env;
}

CACHEDARRAYS_INLINE RuntimeEnvironment read_runtime_environment(const EnvironmentLookup& lookup) {
  RuntimeEnvironment env;
  if (auto v = lookup("CACHEDARRAYS_SNAPSHOT_DIR")) {
    if (std::string problem = SnapshotDirectory::problem(*v); !problem.empty()) {
      throw invalid_argument("cachedarrays: CACHEDARRAYS_SNAPSHOT_DIR: " + problem +
                             ", or unset the variable for no snapshots");
    }
    env.snapshot_dir = std::filesystem::path(*v);
  }
  if (auto v = lookup("CACHEDARRAYS_LEAK_REPORT")) {
    if (*v != "0" && *v != "1") {
      throw invalid_argument("cachedarrays: CACHEDARRAYS_LEAK_REPORT='" + *v +
                             "' is not allowed; use 1 (report the arrays still alive when a Runtime is destroyed, "
                             "on stderr) or 0 (no report)");
    }
    env.leak_report = *v == "1";
  }
  if (auto v = lookup("CACHEDARRAYS_PROGRAM_OUT")) {
    if (std::filesystem::path(*v).extension() != ".json") {
      throw invalid_argument("cachedarrays: CACHEDARRAYS_PROGRAM_OUT='" + *v +
                             "' is not allowed; give a file ending in .json (the program of an iteration, with its "
                             "kernels' online profiles), or unset the variable");
    }
    env.program_out = std::filesystem::path(*v);
  }
  return env;
}

CACHEDARRAYS_INLINE ProcessEnvironment read_process_environment(const EnvironmentLookup& lookup) {
  ProcessEnvironment env;
  if (auto v = lookup("CACHEDARRAYS_COPY")) {
    if (*v == "auto") {
      env.copy = CopyMode::automatic;
    } else if (*v == "nt") {
      env.copy = CopyMode::nontemporal;
    } else if (*v == "memcpy") {
      env.copy = CopyMode::memcpy;
    } else {
      throw invalid_argument("cachedarrays: CACHEDARRAYS_COPY='" + *v +
                             "' is not allowed; allowed: auto, nt, memcpy (auto measures which copy is faster on "
                             "this CPU, nt and memcpy force one)");
    }
  }
  if (auto v = lookup("CACHEDARRAYS_NT_ISA")) {
    if (*v == "avx512") {
      env.nt_isa = StreamIsa::avx512;
    } else if (*v == "avx2") {
      env.nt_isa = StreamIsa::avx2;
    } else if (*v == "sse2") {
      env.nt_isa = StreamIsa::sse2;
    } else {
      detail::bad_environment("CACHEDARRAYS_NT_ISA", *v, "not a vector path of the streaming copies");
    }
  }
  if (auto v = lookup("TMPDIR")) env.tmpdir = std::filesystem::path(*v);
  return env;
}

CACHEDARRAYS_INLINE void apply_process_environment(const ProcessEnvironment& env) {
  if (env.copy) set_copy_mode(*env.copy);
  if (env.nt_isa) set_stream_isa_cap(*env.nt_isa);
  if (env.tmpdir) set_dax_fallback_directory(*env.tmpdir);
}

CACHEDARRAYS_INLINE void check_copy_environment(const EnvironmentLookup& lookup) {
  static_cast<void>(read_process_environment(lookup));
}

CACHEDARRAYS_INLINE std::optional<double> mpi_timeout_from_environment(const EnvironmentLookup& lookup) {
  const std::optional<std::string> text = lookup("CACHEDARRAYS_MPI_TIMEOUT");
  if (!text) return std::nullopt;
  char* end = nullptr;
  const double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(seconds > 0)) {
    throw invalid_argument("CACHEDARRAYS_MPI_TIMEOUT='" + *text +
                           "': expected the seconds a rank waits for the others, a number above 0");
  }
  return seconds;
}

CACHEDARRAYS_INLINE bool launched_by_mpi_environment(const EnvironmentLookup& lookup) {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (lookup(variable)) return true;
  }
  return false;
}

CACHEDARRAYS_INLINE std::optional<std::filesystem::path> fashion_mnist_dir_from_environment(
    const EnvironmentLookup& lookup) {
  if (auto v = lookup("CACHEDARRAYS_FASHION_MNIST_DIR")) return std::filesystem::path(*v);
  return std::nullopt;
}

CACHEDARRAYS_INLINE std::optional<int> openmp_threads_from_environment(const EnvironmentLookup& lookup) {
  const std::optional<std::string> value = lookup("OMP_NUM_THREADS");
  if (!value) return std::nullopt;
  // OpenMP reads a list of levels ("8,4"); the first is the program's own.
  int threads = 0;
  const char* first = value->data();
  const auto [end, error] = std::from_chars(first, first + value->size(), threads);
  if (error != std::errc() || end == first || threads <= 0) return std::nullopt;
  return threads;
}

CACHEDARRAYS_INLINE std::optional<std::filesystem::path> user_cache_directory(const EnvironmentLookup& lookup) {
  if (auto xdg = lookup("XDG_CACHE_HOME")) return std::filesystem::path(*xdg) / "cachedarrays";
  if (auto home = lookup("HOME")) return std::filesystem::path(*home) / ".cache" / "cachedarrays";
  return std::nullopt;
}

CACHEDARRAYS_INLINE std::vector<DeviceSpec> devices_from_environment(const RuntimeDefaults& defaults,
                                                                     const EnvironmentSettings& env) {
  std::uint64_t fast = defaults.fast_bytes;
  if (env.fast_bytes) fast = *env.fast_bytes;
  if (env.fast_fraction) {
    if (defaults.footprint == 0) {
      throw invalid_argument(fmt::format(
          "CACHEDARRAYS_FAST_FRACTION={}: this program does not state its footprint, so a fraction of it is "
          "unknown; set CACHEDARRAYS_FAST_BYTES instead",
          *env.fast_fraction));
    }
    fast = std::max<std::uint64_t>(
        4096, static_cast<std::uint64_t>(*env.fast_fraction * static_cast<double>(defaults.footprint)));
  }
  if (fast == 0) {
    throw invalid_argument(
        "no fast-tier size: this program has no default; set CACHEDARRAYS_FAST_BYTES (e.g. 512MiB) or, if the "
        "program states its footprint, CACHEDARRAYS_FAST_FRACTION");
  }
  std::uint64_t slow = defaults.slow_bytes;
  if (slow == 0) slow = defaults.footprint > 0 ? defaults.footprint + defaults.footprint / 2 + (64ull << 20) : 4 * fast;
  if (env.slow_bytes) slow = *env.slow_bytes;

  DeviceSpec fast_tier = dram(fast, "fast");
  if (env.fast_node) fast_tier.numa_node = *env.fast_node;
  DeviceSpec slow_tier = env.slow_node ? numa_node(*env.slow_node, slow, "slow")
                                       : dax_file(env.slow_path.value_or(std::filesystem::path{}), slow, "slow");
  slow_tier.emulation = emulation::profile(env.emulation.value_or(defaults.emulation));
  return {std::move(fast_tier), std::move(slow_tier)};
}

CACHEDARRAYS_INLINE Runtime runtime_from_environment(const RuntimeDefaults& defaults, const EnvironmentSettings& env) {
  return Runtime(devices_from_environment(defaults, env),
                 policy::Registry::builtin().make(env.policy.value_or(defaults.policy)), MoverOptions{},
                 env.trace.value_or(std::filesystem::path{}));
}

}  // namespace cachedarrays
