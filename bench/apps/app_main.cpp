// The compiled part of app_main.hpp: the flags (CLI11), the runtime the
// environment describes, and the report, once for every app rather than once
// in each app's translation unit.
#include "app_main.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace cachedarrays::apps::detail {

// A Runtime from the environment. The hardware's memory mode (2lm:m) is no
// policy: as train_cnn does, it runs all-fast on the slow tier alone, fronted
// by a DRAM cache as large as the fast tier would have been (the slow tier's
// emulation profile, or Optane's when it has none).
Runtime make_runtime(const RuntimeDefaults& defaults, const EnvironmentSettings& env) {
  const std::string name = env.policy.value_or(defaults.policy);
  const policy::PolicyDescriptor described = policy::Registry::builtin().describe(name);
  if (!described.memory_mode()) return runtime_from_environment(defaults, env);
  if (described.modeled_only()) {
    throw invalid_argument("CACHEDARRAYS_POLICY=" + name + " is a memory mode that is modeled only; 2lm:m runs");
  }
  std::vector<DeviceSpec> devices = devices_from_environment(defaults, env);
  DeviceSpec slow = devices.at(1);
  const EmulationProfile profile = slow.emulation ? *slow.emulation : *emulation::profile("optane");
  slow.emulation = emulation::memory_mode(profile, emulation::memory_mode_cache_within(devices.at(0).capacity));
  return Runtime({slow}, policy::Registry::builtin().make("all-fast"), MoverOptions{},
                 env.trace.value_or(std::filesystem::path{}));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

void write_report(const std::string& path, const Report& r) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  std::string seconds;
  for (const double s : r.seconds) seconds += (seconds.empty() ? "" : ", ") + fmt::format("{}", s);
  std::string phases;
  for (const std::string& p : r.phases) phases += (phases.empty() ? "" : ", ") + json_string(p);
  fmt::print(f,
             "{{\"app\": {}, \"policy\": {}, \"emulation\": {}, \"fast_fraction\": {}, \"fast_bytes\": {}, "
             "\"seconds_per_iteration\": {}, \"seconds\": [{}], \"phases\": [{}], \"iterations\": {}, "
             "\"footprint_bytes\": {}, "
             "\"copied_in_bytes_per_iteration\": {}, \"written_back_bytes_per_iteration\": {}, "
             "\"served_in_place_per_iteration\": {}, \"verified\": {}, \"error\": {}, \"program\": {}}}\n",
             json_string(r.app), json_string(r.policy), json_string(r.emulation), r.fast_fraction, r.fast_bytes,
             r.seconds.empty() ? 0.0 : median(r.seconds), seconds, phases, r.seconds.size(), r.footprint,
             r.copied_in_bytes, r.written_back_bytes, r.served_in_place, r.error.empty() ? "true" : "false",
             json_string(r.error), r.program_json);
  if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + path);
}

std::optional<Options> parse_options(int argc, char** argv, const char* name, const char* description, int& exit_code,
                                     const std::function<void(CLI::App&)>& add_app_flags) {
  Options o;
  CLI::App cli{
      fmt::format("{}: {}. The policy and the fast tier come from CACHEDARRAYS_POLICY and "
                  "CACHEDARRAYS_FAST_FRACTION (or _FAST_BYTES; default half the footprint).",
                  name, description)};
  cli.add_option("--size", o.size, "test: a few MiB; bench: hundreds of MiB")
      ->check(CLI::IsMember({"test", "bench"}))
      ->capture_default_str();
  cli.add_option("--profile-iterations", o.profile_iterations,
                 "iterations after the recorded one whose kernels are timed for the planners (0: none; they "
                 "then price kernels by bytes alone)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cli.add_option("--iterations", o.iterations,
                 "timed iterations, after a warm-up, a recorded one and the profiled ones")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cli.add_option("--json", o.json, "write the run (with the recorded program) to this JSON file");
  cli.add_option("--program-out", o.program_out, "save the recorded program of an iteration to this JSON file");
  if (add_app_flags) add_app_flags(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = cli.exit(e);
    return std::nullopt;
  }
  return o;
}

void print_report(const char* name, const Report& r) {
  const std::string emulated = r.emulation == "none" ? "" : fmt::format(" (emulated {})", r.emulation);
  fmt::print("{}: policy {}, fast {:.0f}% ({}), {:.4f} s/iteration (median of {}), verified{}\n", name, r.policy,
             100 * r.fast_fraction, format_bytes(r.fast_bytes), detail::median(r.seconds), r.seconds.size(), emulated);
  fmt::print(
      "{}: per iteration, copied into fast memory {}, written back {}, {:.1f} moves declined (served in place)\n", name,
      format_bytes(static_cast<std::uint64_t>(r.copied_in_bytes)),
      format_bytes(static_cast<std::uint64_t>(r.written_back_bytes)), r.served_in_place);
}

}  // namespace cachedarrays::apps::detail
