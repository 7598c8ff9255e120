// Running one app of bench/apps as a child process, under the policy, fast
// tier and emulation its environment names, for the benchmarks that compare
// such runs (app_policies, worker_scaling): the app's JSON report, or why
// there is none. A child process per run, so that no run inherits another's
// heaps, threads or caches.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cachedarrays::tools {

/// One child run: the app's --json report when it ran and verified its
/// result, else the reason (its exit status and last line of stderr, or
/// "not verified: ...").
struct AppRun {
  std::optional<nlohmann::json> report;
  std::string failure;
};

/// What the child's environment says, in place of the parent's
/// CACHEDARRAYS_POLICY, CACHEDARRAYS_FAST_* and CACHEDARRAYS_EMULATION.
struct AppRunSettings {
  std::string policy;    ///< empty: the library's default
  double fast_fraction;  ///< of the app's footprint
  std::string emulation;
};

/// Runs `exe` with `args` and `--json <scratch>/run.json`, its standard
/// output and error into files in `scratch` (a directory that exists).
AppRun run_app(const std::filesystem::path& exe, std::vector<std::string> args, const AppRunSettings& settings,
               const std::filesystem::path& scratch);

}  // namespace cachedarrays::tools
