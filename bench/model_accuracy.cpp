// model_accuracy: how well the replay simulator's modeled time predicts a
// measured training iteration on this machine (the goal: within ±15%).
// For each small model that runs here and each policy and
// fast budget, one iteration is
//   measured  real training with the slow tier emulated as Optane
//             (bench::measure_training, the run paper_reproduction times),
//             the policies interleaved in --rounds rounds;
//   modeled   its dry-run trace replayed (sim/replay.hpp) on virtual devices
//             of this machine's bandwidths (measured DRAM, the emulated
//             Optane tier) under three kernel time models:
//               profiled      plan::ProfiledTime: each kernel's measured
//                             all-fast / all-slow time from the kernel
//                             profiles (AutoTM section 3.5), interpolated
//                             for mixed placements; the roofline for
//                             kernels without a profile;
//               roofline      plan::Roofline uncalibrated: max(FLOPs / the
//                             measured compute rate, bytes / bandwidth);
//               memory-bound  plan::MemoryBound: bytes / bandwidth alone.
// Copies overlap kernels on the replay's copy timeline in every model. The
// ratio modeled / measured is given per round's measurement: a model is
// "within" ±15% when every round's ratio is, "outside" when none is, else
// "not decided".
//
//   model_accuracy [--quick] [--models LIST] [--cases LIST] [--iterations N] [--rounds N]
//                  [--profile-cache FILE] [--json FILE]
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/manager/emulation.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/profiler.hpp>
#include <cachedarrays/plan/program/profiled_time.hpp>
#include <cachedarrays/sim/replay.hpp>

#include "bench_support.hpp"
#include "training_runs.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace bench = cachedarrays::bench;

namespace {

constexpr double tolerance = 0.15;

// A policy at a fast budget: "ca-lma@0.2".
struct Case {
  std::string policy;
  double fraction = 1.0;
};

Case parse_case(const std::string& text) {
  const std::size_t at = text.find('@');
  Case c{text.substr(0, at), at == std::string::npos ? 1.0 : std::stod(text.substr(at + 1))};
  (void)ca::policy::Registry::builtin().make(c.policy);  // throws listing the valid names
  if (!(c.fraction > 0 && c.fraction <= 1)) {
    throw ca::invalid_argument("model_accuracy: case '" + text + "': the fast budget after '@' must be in (0, 1]");
  }
  return c;
}

struct Row {
  std::string model;
  Case c;
  std::vector<double> measured;                         // one per round
  double profiled = 0, roofline = 0, memory_bound = 0;  // modeled seconds
  double exposed_copy_seconds = 0;                      // modeled, the profiled model's
  // The profiled replay's breakdown: kernel time, and the bytes copied by
  // the compute thread (synchronous), by the mover, and slid by defrag.
  double kernel_seconds = 0;
  std::uint64_t sync_bytes = 0, async_bytes = 0, defrag_bytes = 0;
  std::string note;
};

// Ratios of `modeled` to each round's measurement: median, lowest, highest,
// and the verdict against ±tolerance.
struct Accuracy {
  double median = 0, low = 0, high = 0;
  std::string verdict;
};
Accuracy accuracy(double modeled, const std::vector<double>& measured) {
  std::vector<double> ratios;
  for (double m : measured) ratios.push_back(modeled / m);
  Accuracy a;
  a.median = bench::median(ratios);
  a.low = *std::min_element(ratios.begin(), ratios.end());
  a.high = *std::max_element(ratios.begin(), ratios.end());
  const auto inside = [](double r) { return r >= 1 - tolerance && r <= 1 + tolerance; };
  const bool all = std::all_of(ratios.begin(), ratios.end(), inside);
  const bool none = std::none_of(ratios.begin(), ratios.end(), inside);
  a.verdict = all ? "within" : none ? "outside" : "not decided";
  return a;
}

struct Options {
  bool quick = false;
  std::vector<std::string> families{"resnet", "densenet", "vgg"};
  std::vector<std::string> cases{"all-fast@1", "all-slow@1", "first-touch@0.2", "ca-lm@0.5",
                                 "ca-lm@0.2",  "ca-lma@0.5", "ca-lma@0.2"};
  int iterations = 2;
  int rounds = 3;
  std::string profile_cache = nn::default_profile_cache();
  std::string json_path;
};

// The modeled and measured rows of one model.
void run_model(const nn::ModelConfig& config, const std::vector<Case>& cases, const Options& o,
               std::vector<Row>& rows) {
  const bench::TrainingSetup setup(config);
  const auto build = [&] { return nn::build_model(config); };
  bool measured_now = false;
  const ca::plan::KernelProfiles profiles =
      nn::profile_model(build, o.profile_cache, bench::profiler_options(), &measured_now);
  const double rate = ca::plan::compute_rate(profiles);
  const ca::EmulationProfile optane = *ca::emulation::profile("optane");
  const ca::emulation::Bandwidth fast{optane.dram_read_gbps, optane.dram_write_gbps};
  const ca::emulation::Bandwidth slow{optane.read_gbps, optane.write_gbps};
  fmt::print(stderr, "{}: footprint {}, {} kernels profiled ({} {}), compute rate {:.1f} GFLOP/s\n",
             bench::label(config), ca::format_bytes(setup.footprint), profiles.kernels().size(),
             measured_now ? "measured into" : "from", o.profile_cache, rate / 1e9);

  const ca::plan::Roofline calibrated(rate, fast, &profiles);
  const ca::plan::ProfiledTime profiled(profiles, fast, slow, calibrated);
  const ca::plan::Roofline roofline(rate, fast);
  const ca::plan::MemoryBound memory_bound;
  const std::vector<ca::DeviceModel> devices{{"fast", fast.read_gbps, fast.write_gbps},
                                             {"slow", slow.read_gbps, slow.write_gbps}};
  // The steady state (sim/replay.hpp steady_window), as the measured runs
  // time iterations after a warm-up.
  const ca::Trace trace = nn::dry_run_trace([&] { return nn::build_model(config); }, {}, nn::steady_trace_iterations);
  const ca::plan::Program program = ca::plan::Program::from_trace(trace, nn::steady_trace_iteration);

  std::vector<Row> model_rows;
  for (const Case& c : cases) {
    Row row{bench::label(config), c, {}, 0, 0, 0, 0, 0, 0, 0, 0, {}};
    const std::uint64_t fast_bytes = ca::fast_tier_bytes(c.fraction, setup.footprint);
    const auto replay = [&](const ca::plan::KernelTimeModel& model) {
      const ca::policy::PolicyDescriptor described = ca::policy::Registry::builtin().describe(c.policy);
      ca::Runtime rt({ca::virtual_device(fast_bytes, "fast"), ca::virtual_device(4 * setup.footprint, "slow")},
                     described.make());
      if (described.needs_program()) rt.set_program(program);
      return ca::steady_iteration(ca::replay(trace, rt, devices, &model));
    };
    try {
      const ca::ReplayIteration r = replay(profiled);
      row.profiled = r.seconds;
      row.exposed_copy_seconds = r.exposed_copy_seconds;
      row.kernel_seconds = r.kernel_seconds;
      row.async_bytes = r.stats.async.bytes / r.iterations;
      row.sync_bytes = (r.stats.total_bytes_copied() - r.stats.async.bytes) / r.iterations;
      for (const auto& device : r.stats.devices) row.defrag_bytes += device.defrag_bytes / r.iterations;
      row.roofline = replay(roofline).seconds;
      row.memory_bound = replay(memory_bound).seconds;
    } catch (const ca::out_of_memory&) {
      row.note = "out of memory";
    }
    model_rows.push_back(std::move(row));
  }
  // Measured, interleaved: a disturbance of this shared machine lands on
  // one round of every case rather than on every round of one.
  for (int round = 0; round < o.rounds; ++round) {
    for (Row& row : model_rows) {
      if (!row.note.empty()) continue;
      try {
        const bench::MeasuredRun m = bench::measure_training(
            setup, row.c.policy, ca::fast_tier_bytes(row.c.fraction, setup.footprint), o.iterations);
        row.measured.push_back(m.seconds);
      } catch (const ca::out_of_memory&) {
        row.note = "out of memory";
      }
    }
  }
  for (Row& row : model_rows) {
    if (row.note.empty()) {
      const Accuracy a = accuracy(row.profiled, row.measured);
      fmt::print(stderr, "  {:<12} {:>4.0f}%  measured {:.4f} s, modeled {:.4f} s ({:.2f}x, {})\n", row.c.policy,
                 100 * row.c.fraction, bench::median(row.measured), row.profiled, a.median, a.verdict);
    }
    rows.push_back(std::move(row));
  }
}

void report(const Options& o, const std::vector<Row>& rows) {
  fmt::print(
      "measured: wall time of one training iteration on this machine (median over {} interleaved rounds of "
      "the median of {} iterations), slow tier emulated as {}\n",
      o.rounds, o.iterations, ca::emulation::describe(*ca::emulation::profile("optane")));
  fmt::print(
      "modeled: the dry-run trace replayed at this machine's bandwidths (measured DRAM, emulated Optane), "
      "copies on the copy timeline; not measurements.\n"
      "         profiled = measured kernel profiles (AutoTM 3.5), roofline = max(FLOPs / rate, bytes / "
      "bandwidth) uncalibrated, memory-bound = bytes / bandwidth\n"
      "         the profiled replay per iteration: kernels (s), bytes copied by the compute thread (sync), by "
      "the mover (async), slid by defrag\n");
  fmt::print("ratio = modeled / measured, median [lowest-highest over rounds]; goal: within ±{:.0f}%\n\n",
             100 * tolerance);
  const bench::Table table({{"model", 17, bench::Align::left},
                            {"policy", 12, bench::Align::left},
                            {"fast%", 6},
                            {"measured", 9},
                            {"profiled", 9},
                            {"ratio", 20},
                            {"verdict", 12, bench::Align::left},
                            {"exposed", 8},
                            {"roofline", 9},
                            {"ratio", 6},
                            {"mem-bound", 9},
                            {"ratio", 6},
                            {"kernels", 8},
                            {"sync", 10},
                            {"async", 10},
                            {"defrag", 10}});
  table.print_header();
  int within = 0, counted = 0;
  for (const Row& r : rows) {
    const std::string fraction = fmt::format("{:.0f}%", 100 * r.c.fraction);
    if (!r.note.empty()) {
      table.print_row({r.model, r.c.policy, fraction, r.note});
      continue;
    }
    const double measured = bench::median(r.measured);
    const Accuracy a = accuracy(r.profiled, r.measured);
    ++counted;
    if (a.verdict == "within") ++within;
    table.print_row({r.model, r.c.policy, fraction, fmt::format("{:.4f}", measured), fmt::format("{:.4f}", r.profiled),
                     fmt::format("{:.2f}x [{:.2f}-{:.2f}]", a.median, a.low, a.high), a.verdict,
                     fmt::format("{:.4f}", r.exposed_copy_seconds), fmt::format("{:.4f}", r.roofline),
                     fmt::format("{:.2f}x", r.roofline / measured), fmt::format("{:.4f}", r.memory_bound),
                     fmt::format("{:.2f}x", r.memory_bound / measured), fmt::format("{:.4f}", r.kernel_seconds),
                     ca::format_bytes(r.sync_bytes), ca::format_bytes(r.async_bytes),
                     ca::format_bytes(r.defrag_bytes)});
  }
  fmt::print("\nprofiled model within ±{:.0f}% of the measurement in every round: {} of {} cases\n", 100 * tolerance,
             within, counted);
}

nlohmann::json to_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json row{{"model", r.model},
                       {"policy", r.c.policy},
                       {"fast_fraction", r.c.fraction},
                       {"measured_round_seconds", r.measured},
                       {"note", r.note}};
    if (r.note.empty()) {
      const Accuracy a = accuracy(r.profiled, r.measured);
      row.update({{"measured_seconds", bench::median(r.measured)},
                  {"modeled_seconds", r.profiled},
                  {"ratio", a.median},
                  {"ratio_low", a.low},
                  {"ratio_high", a.high},
                  {"verdict", a.verdict},
                  {"modeled_exposed_copy_seconds", r.exposed_copy_seconds},
                  {"roofline_seconds", r.roofline},
                  {"memory_bound_seconds", r.memory_bound},
                  {"modeled_kernel_seconds", r.kernel_seconds},
                  {"modeled_sync_copy_bytes", r.sync_bytes},
                  {"modeled_async_copy_bytes", r.async_bytes},
                  {"modeled_defrag_bytes", r.defrag_bytes}});
    }
    out.push_back(std::move(row));
  }
  return out;
}

void add_options(CLI::App& app, Options& o) {
  app.add_flag("--quick", o.quick, "tiny models, one round (a smoke test, not a measurement)");
  app.add_option("--models", o.families, "model families to run")
      ->check(CLI::IsMember({"resnet", "densenet", "vgg", "inception"}))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--cases", o.cases, "policy@fast-fraction pairs to measure and model")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "timed iterations per measured run (its median is the run's time)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "rounds of interleaved measured runs (quick: 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--profile-cache", o.profile_cache,
                 "the kernel profile cache file (nn::profile_model): measured once per machine, then loaded")
      ->capture_default_str();
  app.add_option("--json", o.json_path, "write the rows as JSON to this file");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Modeled (replay + kernel time models) against measured training iterations on this machine"};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  bench::print_machine_line();
  if (o.quick) o.rounds = 1;
  std::vector<Case> cases;
  try {
    for (const std::string& text : o.cases) cases.push_back(parse_case(text));
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  std::vector<Row> rows;
  for (const std::string& family : o.families) run_model(bench::small_config(family, o.quick), cases, o, rows);
  report(o, rows);
  if (!o.json_path.empty()) {
    if (!bench::write_json(o.json_path, to_json(rows), "model_accuracy")) return 1;
    fmt::print("\nwrote {}\n", o.json_path);
  }
  return 0;
}
