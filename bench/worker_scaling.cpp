// How a multi-threaded program scales on the library: app_blocks
// (bench/apps, a blocked Jacobi stencil whose blocks are split over worker
// threads, each through rt.kernel) with 1, 2 and 4 workers, at 20% of its
// footprint in fast memory under the default policy, and under all-fast.
// Every run is a child process; the rounds are interleaved (every
// configuration once per round), so a slow stretch of the machine falls on
// all of a round's runs. The speedup of N workers is the paired ratio of a
// round's one-worker time to its N-worker time, reported as the median and
// range over rounds.
//
//   worker_scaling [--workers LIST] [--fraction F] [--size test|bench] [--iterations N]
//                  [--rounds R] [--json FILE] [--app-dir DIR]
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "support/app_run.hpp"

namespace ca = cachedarrays;
namespace bench = cachedarrays::bench;
namespace fs = std::filesystem;

namespace {

// The goal for two workers over one, under each policy.
constexpr double two_workers_goal = 1.6;
// all-fast's fast tier: the whole footprint, with room for the heap's holes.
constexpr double all_fast_fraction = 1.1;
constexpr const char* emulation_profile = "optane";

struct Options {
  std::vector<int> workers{1, 2, 4};
  double fraction = 0.2;
  std::string size = "bench";
  int iterations = 10;
  int rounds = 3;
  std::string json = "worker_scaling.json";
  std::string app_dir = CACHEDARRAYS_APP_DIR;
};

// A policy as the program runs it: its name for the environment (empty:
// the library's default) and its fast tier.
struct Setting {
  std::string label, policy;
  double fraction;
};

// One configuration's runs, a median iteration time per round.
struct Cell {
  Setting setting;
  int workers;
  std::vector<double> seconds;
  std::string failure;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App cli{"worker_scaling: app_blocks over 1, 2 and 4 worker threads, default policy and all-fast"};
  cli.add_option("--workers", o.workers, "worker counts; the first is the baseline of the speedups")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cli.add_option("--fraction", o.fraction, "the default policy's fast tier, as a fraction of the footprint")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cli.add_option("--size", o.size, "the app's size: test (a few MiB) or bench")
      ->check(CLI::IsMember({"test", "bench"}))
      ->capture_default_str();
  cli.add_option("--iterations", o.iterations, "timed iterations per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cli.add_option("--rounds", o.rounds, "interleaved rounds of every configuration")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cli.add_option("--json", o.json, "where to write the results")->capture_default_str();
  cli.add_option("--app-dir", o.app_dir, "where app_blocks is")->capture_default_str();
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(cli.exit(e));
  }
  return o;
}

// Every configuration's runs, round after round.
std::vector<Cell> measure(const Options& o, const fs::path& scratch) {
  const std::vector<Setting> settings{{fmt::format("default at {:g}", o.fraction), "", o.fraction},
                                      {"all-fast", "all-fast", all_fast_fraction}};
  std::vector<Cell> cells;
  for (const Setting& s : settings) {
    for (const int w : o.workers) cells.push_back({s, w, {}, ""});
  }
  const fs::path exe = fs::path(o.app_dir) / "app_blocks";
  for (int round = 1; round <= o.rounds; ++round) {
    for (Cell& c : cells) {
      fmt::print(stderr, "  round {}/{}: {}, {} worker{}\n", round, o.rounds, c.setting.label, c.workers,
                 c.workers == 1 ? "" : "s");
      if (!c.failure.empty()) continue;
      const ca::tools::AppRun run = ca::tools::run_app(
          exe, {"--size", o.size, "--iterations", std::to_string(o.iterations), "--workers", std::to_string(c.workers)},
          {.policy = c.setting.policy, .fast_fraction = c.setting.fraction, .emulation = emulation_profile}, scratch);
      if (run.report) {
        c.seconds.push_back((*run.report)["seconds_per_iteration"].get<double>());
      } else {
        c.failure = run.failure;
      }
    }
  }
  return cells;
}

// The speedups of `c` over `base`, one per round both ran.
std::vector<double> paired_speedups(const Cell& base, const Cell& c) {
  std::vector<double> out;
  for (std::size_t r = 0; r < std::min(base.seconds.size(), c.seconds.size()); ++r) {
    out.push_back(base.seconds[r] / c.seconds[r]);
  }
  return out;
}

// Prints the table and the goal lines; returns the JSON rows.
nlohmann::json report(const Options& o, const std::vector<Cell>& cells) {
  const bench::Table table({{"policy", 16, ca::tools::Align::left},
                            {"workers", 8},
                            {"s/iteration", 12},
                            {"x one worker", 13},
                            {"range", 16}});
  table.print_header();
  table.print_rule();
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> goals;
  for (const Cell& c : cells) {
    const Cell& base = *std::find_if(cells.begin(), cells.end(), [&](const Cell& b) {
      return b.setting.label == c.setting.label && b.workers == o.workers.front();
    });
    if (!c.failure.empty() || !base.failure.empty()) {
      table.print_row({c.setting.label, std::to_string(c.workers), "failed: " + (c.failure + base.failure)});
      rows.push_back({{"policy", c.setting.label}, {"workers", c.workers}, {"failure", c.failure + base.failure}});
      continue;
    }
    const std::vector<double> speedups = paired_speedups(base, c);
    const double speedup = bench::median(speedups);
    const auto [low, high] = std::minmax_element(speedups.begin(), speedups.end());
    table.print_row({c.setting.label, std::to_string(c.workers), fmt::format("{:.4f}", bench::median(c.seconds)),
                     fmt::format("{:.2f}x", speedup), fmt::format("{:.2f}-{:.2f}x", *low, *high)});
    rows.push_back({{"policy", c.setting.label},
                    {"environment_policy", c.setting.policy},
                    {"fast_fraction", c.setting.fraction},
                    {"workers", c.workers},
                    {"round_seconds", c.seconds},
                    {"seconds_per_iteration", bench::median(c.seconds)},
                    {"speedups", speedups},
                    {"speedup", speedup}});
    if (c.workers == 2 && o.workers.front() == 1) {
      goals.push_back(fmt::format("  2 workers / 1, {:<16} {:.2f}x  (goal >= {}x): {}", c.setting.label, speedup,
                                  two_workers_goal, speedup >= two_workers_goal ? "met" : "MISSED"));
    }
  }
  fmt::print("\ngoals:\n");
  for (const std::string& g : goals) fmt::print("{}\n", g);
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  bench::print_machine_line();
  fmt::print(
      "worker_scaling: app_blocks --size {}, {} timed iterations per run, {} interleaved round{}; slow tier "
      "emulated ({}); the speedup is each round's one-worker time over its N-worker time, median and range\n\n",
      o.size, o.iterations, o.rounds, o.rounds == 1 ? "" : "s", emulation_profile);
  const fs::path scratch = fs::temp_directory_path() / fmt::format("worker_scaling.{}", ::getpid());
  fs::create_directories(scratch);
  const std::vector<Cell> cells = measure(o, scratch);
  fs::remove_all(scratch);
  const nlohmann::json rows = report(o, cells);
  const bool failed = std::any_of(cells.begin(), cells.end(), [](const Cell& c) { return !c.failure.empty(); });
  if (!bench::write_json(o.json, rows, "worker_scaling")) return 1;
  return failed ? 1 : 0;
}
