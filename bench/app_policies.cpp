// app_policies: every policy on the workloads of bench/apps — a stencil, a
// blocked matrix multiply, Zipf-distributed reads, GUPS with a hot set,
// PageRank and k-means, none of them the CNN the policies were tuned on —
// with the slow tier emulated as Optane. Each run is an app executable
// started as a child process with the policy, fast fraction and emulation
// in its environment (as a user would start it), which checks its result
// against plain code and writes its time per iteration and its recorded
// program as JSON. all-fast runs with a fast tier of 1.1 x the footprint.
// The policies run interleaved in --rounds rounds. A run's figure is the
// mean of its --iterations timed iterations (every iteration counts, so the
// auto policy's trials and switches do); a row is the median over rounds.
// auto's row notes the mean of its last iterations too, against the best
// of the others over theirs: what it runs at once it has decided.
//
// An app with phases (app_phases) adds the oracle row: each phase run under
// the built-in policy fastest over that phase's iterations of the same
// round, with no cost to switch between them.
//
// The bound row is what no placement can beat: the larger of all-fast's
// time and the least slow-tier traffic of an iteration at the emulated
// bandwidth. With a fast tier of C bytes and T bytes of objects the
// iteration's kernels touch (each counted once), at least max(0, T - C)
// bytes of them are not in fast memory at some point of every iteration, so
// they are read from or written to the slow tier at least once. Those bytes
// are priced as cheaply as the program allows: bytes of objects the
// iteration only reads at the emulated read bandwidth, and only once those
// are used up, bytes of objects it writes at the emulated write bandwidth
// (a written byte that does not stay in fast memory must reach the slow
// tier). Latency is ignored, and the copies are taken to overlap the
// kernels completely. Whole objects are counted, as the policies move them:
// the memory mode, which moves cache lines, can go below the bound where a
// kernel touches only part of an object.
//
// The modeled column is the model's prediction of each row: the program the
// app recorded, replayed under the row's policy at the row's fast tier
// (sim/capacity_plan.hpp model_point, through sim/saved_program.hpp as
// cachedarrays-plan --program replays it), on the tiers the program ran on
// (plan::Program::tiers: the emulated tier's own bandwidths), its kernels
// priced by the program's online profiles. Its ratio to the measured time is
// how far the model is off for that policy.
//
//   app_policies [--apps LIST] [--fractions LIST] [--policies LIST] [--size test|bench]
//                [--iterations N] [--profile-iterations N] [--rounds R] [--json FILE] [--app-dir DIR]
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/manager/emulation.hpp>

#include "bench_support.hpp"
#include "support/app_run.hpp"

namespace ca = cachedarrays;
namespace bench = cachedarrays::bench;
namespace fs = std::filesystem;

namespace {

// The apps bench/apps/CMakeLists.txt builds, in its order.
const std::vector<std::string> all_apps = [] {
  std::vector<std::string> names;
  std::string rest = CACHEDARRAYS_APP_NAMES;
  for (std::size_t comma; (comma = rest.find(',')) != std::string::npos; rest.erase(0, comma + 1)) {
    names.push_back(rest.substr(0, comma));
  }
  names.push_back(rest);
  return names;
}();
const std::vector<std::string> all_policies{
    "all-fast", "first-touch", "all-slow",    "2lm:m",         "ca",           "ca-l", "ca-lm", "ca-lmp", "ca-lma",
    "ca-lmpa",  "hw-cache",    "autotm-sync", "autotm-static", "autoswap:aoa", "redl", "auto"};
// all-fast's fast tier: the whole footprint, with room for the heap's holes.
constexpr double all_fast_fraction = 1.1;
constexpr const char* emulation_profile = "optane";

struct Options {
  std::vector<std::string> apps = all_apps;
  std::vector<double> fractions{0.2, 0.5};
  std::vector<std::string> policies = all_policies;
  std::string size = "bench";
  int iterations = 5;
  int profile_iterations = 3;
  int rounds = 1;
  double plan_seconds = 10;
  std::string json = "app_policies.json";
  std::string app_dir = CACHEDARRAYS_APP_DIR;
};

// The all-fast reference (its descriptor says so), which runs with the
// whole footprint in the fast tier.
bool is_all_fast(const std::string& policy) { return ca::policy::Registry::builtin().describe(policy).baseline(); }

using Run = ca::tools::AppRun;

// Runs `app` under `policy` at `fraction` with the emulated slow tier, its
// output into `scratch`.
Run run_app(const Options& o, const std::string& app, const std::string& policy, double fraction,
            const fs::path& scratch) {
  return ca::tools::run_app(fs::path(o.app_dir) / ("app_" + app),
                            {"--size", o.size, "--iterations", std::to_string(o.iterations), "--profile-iterations",
                             std::to_string(o.profile_iterations)},
                            {.policy = policy, .fast_fraction = fraction, .emulation = emulation_profile}, scratch);
}

struct Row {
  std::string app, policy;
  double fraction = 0;
  std::vector<double> round_seconds;
  std::vector<std::vector<double>> round_iterations;  // each round's timed iterations
  std::string failure;                                // empty: every round verified
  std::uint64_t fast_bytes = 0;                       // the fast tier the app made
  std::optional<double> modeled_seconds;              // the model's prediction (see the file comment)
  [[nodiscard]] std::optional<double> seconds() const {
    if (!failure.empty() || round_seconds.empty()) return std::nullopt;
    return bench::median(round_seconds);
  }
  // The mean of the last `last_iterations` timed iterations (all of them
  // when there are fewer than twice as many), median over rounds: what a
  // policy that decides as it runs (auto) runs at once decided.
  static constexpr std::size_t last_iterations = 10;
  [[nodiscard]] std::optional<double> last_seconds() const {
    if (!failure.empty() || round_iterations.empty()) return std::nullopt;
    std::vector<double> rounds;
    for (const std::vector<double>& t : round_iterations) {
      if (t.empty()) continue;
      const std::size_t n = t.size() >= 2 * last_iterations ? last_iterations : t.size();
      rounds.push_back(std::accumulate(t.end() - static_cast<std::ptrdiff_t>(n), t.end(), 0.0) /
                       static_cast<double>(n));
    }
    if (rounds.empty()) return std::nullopt;
    return bench::median(rounds);
  }
};

// The bound of one app at one fast tier (see the file comment).
struct Bound {
  std::uint64_t fast_bytes = 0, touched = 0, read_only = 0, written = 0, slow_read = 0, slow_written = 0;
  double traffic_seconds = 0, all_fast_seconds = 0, seconds = 0;
};

Bound bound_of(const ca::plan::Program& program, std::uint64_t fast_bytes, double all_fast_seconds,
               const ca::EmulationProfile& slow) {
  Bound b;
  b.fast_bytes = fast_bytes;
  b.all_fast_seconds = all_fast_seconds;
  std::map<std::uint32_t, bool> touched;  // object: written
  for (const ca::plan::ProgramKernel& k : program.kernels()) {
    for (const ca::plan::ProgramArg& a : k.args) touched[a.object] = touched[a.object] || a.access == ca::Access::write;
  }
  for (const auto& [object, written] : touched) {
    (written ? b.written : b.read_only) += program.objects().at(object).bytes;
  }
  b.touched = b.read_only + b.written;
  const std::uint64_t excess = b.touched > fast_bytes ? b.touched - fast_bytes : 0;
  b.slow_read = std::min(excess, b.read_only);
  b.slow_written = excess - b.slow_read;
  // GB/s are bytes per nanosecond.
  b.traffic_seconds = 1e-9 * (static_cast<double>(b.slow_read) / slow.read_gbps +
                              static_cast<double>(b.slow_written) / slow.write_gbps);
  b.seconds = std::max(all_fast_seconds, b.traffic_seconds);
  return b;
}

// Every policy's runs of `app` at `fraction`, in --rounds interleaved rounds.
struct Group {
  std::string app;
  double fraction = 0;
  std::vector<Row> rows;
  std::optional<nlohmann::json> program;  // recorded by the first run that verified
  std::uint64_t footprint = 0;
  std::vector<std::string> phases;  // each timed iteration's phase, for an app that has phases
  [[nodiscard]] bool all_verified() const {
    return std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.failure.empty(); });
  }
};

// An app with phases: the oracle that runs each phase (each run of timed
// iterations in one phase) under the built-in policy fastest over it, with
// no cost to switch. A round's oracle is the sum of its phases' best, per
// iteration; the figure is the median over rounds.
struct Oracle {
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> choices;  // phase, policy (of the first round)
};

std::optional<Oracle> oracle_of(const Group& g) {
  if (g.phases.empty()) return std::nullopt;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end) of each phase
  for (std::size_t i = 0; i < g.phases.size(); ++i) {
    if (i == 0 || g.phases[i] != g.phases[i - 1]) spans.emplace_back(i, i);
    spans.back().second = i + 1;
  }
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  Oracle oracle;
  std::vector<double> rounds;
  for (std::size_t round = 0;; ++round) {
    double total = 0;
    bool any = false;
    for (const auto& [begin, end] : spans) {
      std::optional<double> best;
      std::string chosen;
      for (const Row& r : g.rows) {
        if (is_all_fast(r.policy) || registry.describe(r.policy).measures_candidates() || !r.failure.empty() ||
            round >= r.round_iterations.size() || r.round_iterations[round].size() != g.phases.size()) {
          continue;
        }
        const auto& t = r.round_iterations[round];
        const double sum = std::accumulate(t.begin() + static_cast<std::ptrdiff_t>(begin),
                                           t.begin() + static_cast<std::ptrdiff_t>(end), 0.0);
        if (!best || sum < *best) {
          best = sum;
          chosen = r.policy;
        }
      }
      if (!best) break;
      any = true;
      total += *best;
      if (round == 0) oracle.choices.emplace_back(g.phases[begin], chosen);
    }
    if (!any) break;
    rounds.push_back(total / static_cast<double>(g.phases.size()));
  }
  if (rounds.empty()) return std::nullopt;
  oracle.seconds = bench::median(rounds);
  return oracle;
}

std::string choices_text(const Oracle& oracle) {
  std::string text;
  for (const auto& [phase, policy] : oracle.choices)
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", phase, policy);
  return text;
}

std::string ratio(std::optional<double> a, std::optional<double> b) {
  return a && b && *b > 0 ? fmt::format("{:.2f}x", *a / *b) : "-";
}

// A row of auto: what it ran at over its last iterations, once decided,
// against the best of the other policies over theirs.
std::string last_note(const Row& row, const std::vector<Row>& rows) {
  const std::optional<double> last = row.last_seconds();
  if (!last) return "";
  std::optional<double> best;
  for (const Row& r : rows) {
    const std::optional<double> s = r.last_seconds();
    if (&r == &row || !s || is_all_fast(r.policy)) continue;
    if (!best || *s < *best) best = s;
  }
  return fmt::format("last {} iterations {:.4f} s, {} the best over its last", Row::last_iterations, *last,
                     ratio(last, best));
}

// One table: every policy's row of `app` at `fraction`, then the bound.
void print_table(const std::string& app, double fraction, const std::vector<Row>& rows, const Bound* bound,
                 const Oracle* oracle) {
  const auto find = [&](const std::string& policy) -> std::optional<double> {
    for (const Row& r : rows) {
      if (r.policy == policy) return r.seconds();
    }
    return std::nullopt;
  };
  const std::optional<double> all_fast = find("all-fast");
  const std::optional<double> ft = find("first-touch"), slow = find("all-slow");
  const std::optional<double> baseline = ft && slow ? std::optional(std::min(*ft, *slow)) : ft ? ft : slow;
  fmt::print("\n{} at fast {:.0f}% of its footprint (emulated {}; all-fast at {:.0f}%):\n", app, 100 * fraction,
             emulation_profile, 100 * all_fast_fraction);
  const bench::Table table({{"policy", 14, bench::Align::left},
                            {"s/iteration", 12},
                            {"x all-fast", 10},
                            {"x min(first-touch, all-slow)", 28},
                            {"modeled s", 10},
                            {"modeled/measured", 16},
                            {"note", 4, bench::Align::left}});
  table.print_header();
  table.print_rule();
  for (const Row& r : rows) {
    const std::optional<double> s = r.seconds();
    table.print_row({r.policy, s ? fmt::format("{:.4f}", *s) : "-", ratio(s, all_fast), ratio(s, baseline),
                     r.modeled_seconds ? fmt::format("{:.4f}", *r.modeled_seconds) : "-", ratio(r.modeled_seconds, s),
                     !r.failure.empty()                                                         ? "failed: " + r.failure
                     : ca::policy::Registry::builtin().describe(r.policy).measures_candidates() ? last_note(r, rows)
                                                                                                : ""});
  }
  if (oracle != nullptr) {
    table.print_row({"oracle", fmt::format("{:.4f}", oracle->seconds), ratio(oracle->seconds, all_fast),
                     ratio(oracle->seconds, baseline), "", "",
                     fmt::format("each phase under its fastest policy, no switch cost: {}; auto {}",
                                 choices_text(*oracle), ratio(find("auto"), oracle->seconds))});
  }
  if (bound != nullptr) {
    table.print_row({"bound", fmt::format("{:.4f}", bound->seconds), ratio(bound->seconds, all_fast),
                     ratio(bound->seconds, baseline), "", "",
                     fmt::format("max(all-fast, {} read + {} written on the slow tier: {:.4f} s)",
                                 ca::format_bytes(bound->slow_read), ca::format_bytes(bound->slow_written),
                                 bound->traffic_seconds)});
  }
}

Options parse(int argc, char** argv) {
  Options o;
  CLI::App cli{"app_policies: every policy on the non-CNN apps of bench/apps, with the slow tier emulated as Optane"};
  cli.add_option("--apps", o.apps, "apps to run")
      ->delimiter(',')
      ->check(CLI::IsMember(all_apps))
      ->capture_default_str();
  cli.add_option("--fractions", o.fractions, "fast tier sizes, as fractions of each app's footprint")
      ->delimiter(',')
      ->check(CLI::Range(0.001, 64.0))
      ->capture_default_str();
  cli.add_option("--policies", o.policies,
                 "policies (registry names); all-fast, first-touch and all-slow give the "
                 "ratios' baselines")
      ->delimiter(',')
      ->capture_default_str();
  cli.add_option("--size", o.size, "the apps' size: test (a few MiB) or bench")
      ->check(CLI::IsMember({"test", "bench"}))
      ->capture_default_str();
  cli.add_option("--iterations", o.iterations, "timed iterations per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cli.add_option("--profile-iterations", o.profile_iterations,
                 "iterations, before the timed ones, whose kernels each app times for the planners (0: the "
                 "planners price kernels by bytes alone)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cli.add_option("--rounds", o.rounds, "interleaved rounds of every policy; rows are the median over rounds")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cli.add_option("--plan-seconds", o.plan_seconds,
                 "time limit of each planned policy's plan in the modeled column's replays")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cli.add_option("--json", o.json, "where to write the results")->capture_default_str();
  cli.add_option("--app-dir", o.app_dir, "where the app executables are")->capture_default_str();
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(cli.exit(e));
  }
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  for (const std::string& p : o.policies) {
    if (!registry.contains(p)) {
      fmt::print(stderr, "app_policies: --policies: '{}' is not a registered policy\n", p);
      std::exit(2);
    }
  }
  return o;
}

// Counts the runs for the progress lines on stderr.
struct Progress {
  std::size_t done = 0, total = 0;
};

Group measure(const Options& o, const std::string& app, double fraction, const fs::path& scratch, Progress& progress) {
  Group g{app, fraction, {}, std::nullopt, 0, {}};
  for (const std::string& p : o.policies) g.rows.push_back({app, p, fraction, {}, {}, "", 0, std::nullopt});
  for (int round = 0; round < o.rounds; ++round) {
    for (Row& row : g.rows) {
      const Run run = run_app(o, app, row.policy, is_all_fast(row.policy) ? all_fast_fraction : fraction, scratch);
      const std::string where = fmt::format("[{}/{}] {} at {:.0f}% {} (round {})", ++progress.done, progress.total, app,
                                            100 * fraction, row.policy, round + 1);
      if (!run.report) {
        if (row.failure.empty()) row.failure = run.failure;
        fmt::print(stderr, "{}: failed: {}\n", where, run.failure);
        continue;
      }
      // The mean, not the app's median: what the iterations cost in all,
      // so that auto's trials and switches count against it.
      const std::vector<double> iterations = run.report->at("seconds").get<std::vector<double>>();
      const double s = iterations.empty() ? run.report->at("seconds_per_iteration").get<double>()
                                          : std::accumulate(iterations.begin(), iterations.end(), 0.0) /
                                                static_cast<double>(iterations.size());
      row.round_seconds.push_back(s);
      row.round_iterations.push_back(iterations);
      if (g.phases.empty()) g.phases = run.report->value("phases", std::vector<std::string>{});
      row.fast_bytes = run.report->at("fast_bytes").get<std::uint64_t>();
      g.footprint = run.report->at("footprint_bytes").get<std::uint64_t>();
      if (!g.program && !run.report->at("program").is_null()) g.program = run.report->at("program");
      fmt::print(stderr, "{}: {:.4f} s/iteration, verified\n", where, s);
    }
  }
  return g;
}

// The group's bound, when all-fast ran and some run recorded the program.
std::optional<Bound> bound_of(const Group& g, const ca::EmulationProfile& slow) {
  std::optional<double> all_fast;
  for (const Row& r : g.rows) {
    if (is_all_fast(r.policy)) all_fast = r.seconds();
  }
  if (!g.program || !all_fast || g.footprint == 0) return std::nullopt;
  // As the app sizes its fast tier (ca::devices_from_environment).
  const auto fast_bytes =
      std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(g.fraction * static_cast<double>(g.footprint)));
  return bound_of(ca::plan::Program::from_json(g.program->dump()), fast_bytes, *all_fast, slow);
}

// Each row's modeled seconds (see the file comment), or why there are none.
std::string model_rows(Group& g, double plan_seconds) {
  if (!g.program) return "no run recorded the program";
  const ca::plan::Program program = ca::plan::Program::from_json(g.program->dump());
  if (!ca::tier_models(program.tiers())) return "the program carries no tiers with bandwidths";
  // One replay setup per fast tier, for every row modeled there.
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  std::map<std::uint64_t, std::vector<Row*>> by_fast_tier;
  for (Row& r : g.rows) {
    if (r.fast_bytes != 0 && !registry.describe(r.policy).measures_candidates())
      by_fast_tier[r.fast_bytes].push_back(&r);
  }
  for (const auto& [fast_bytes, rows] : by_fast_tier) {
    std::vector<std::string> policies;
    for (const Row* r : rows) policies.push_back(r->policy);
    const std::vector<std::optional<double>> modeled = ca::model_policies(
        program, policies, fast_bytes, plan_seconds, [&](const std::string& policy, const std::string& why) {
          fmt::print(stderr, "{} at {:.0f}%: {} not modeled: {}\n", g.app, 100 * g.fraction, policy, why);
        });
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i]->modeled_seconds = modeled[i];
  }
  return "";
}

// The JSON of every group (docs/benchmarks.md lists its fields).
struct Results {
  nlohmann::json rows = nlohmann::json::array(), bounds = nlohmann::json::array(), oracles = nlohmann::json::array();
  nlohmann::json programs = nlohmann::json::object();

  void add(const Group& g, const std::optional<Bound>& bound, const std::optional<Oracle>& oracle) {
    if (oracle) {
      nlohmann::json choices = nlohmann::json::array();
      for (const auto& [phase, policy] : oracle->choices) choices.push_back({{"phase", phase}, {"policy", policy}});
      oracles.push_back({{"app", g.app},
                         {"fast_fraction", g.fraction},
                         {"seconds_per_iteration", oracle->seconds},
                         {"phases", choices}});
    }
    for (const Row& r : g.rows) {
      const std::optional<double> s = r.seconds();
      rows.push_back({{"app", g.app},
                      {"policy", r.policy},
                      {"fast_fraction", is_all_fast(r.policy) ? all_fast_fraction : g.fraction},
                      {"table_fraction", g.fraction},
                      {"seconds_per_iteration", s ? nlohmann::json(*s) : nlohmann::json()},
                      {"round_seconds", r.round_seconds},
                      {"last_seconds", r.last_seconds() ? nlohmann::json(*r.last_seconds()) : nlohmann::json()},
                      {"modeled_seconds", r.modeled_seconds ? nlohmann::json(*r.modeled_seconds) : nlohmann::json()},
                      {"verified", r.failure.empty()},
                      {"failure", r.failure}});
    }
    if (g.program) programs[g.app] = *g.program;
    if (!bound) return;
    bounds.push_back({{"app", g.app},
                      {"fast_fraction", g.fraction},
                      {"fast_bytes", bound->fast_bytes},
                      {"touched_bytes", bound->touched},
                      {"read_only_bytes", bound->read_only},
                      {"written_bytes", bound->written},
                      {"least_slow_read_bytes", bound->slow_read},
                      {"least_slow_written_bytes", bound->slow_written},
                      {"traffic_seconds", bound->traffic_seconds},
                      {"all_fast_seconds", bound->all_fast_seconds},
                      {"bound_seconds", bound->seconds}});
  }
};

void print_preamble(const Options& o, const ca::EmulationProfile& slow) {
  fmt::print("{}\n", bench::machine_line(bench::machine_report()));
  fmt::print("slow tier: {}\n", ca::emulation::describe(slow));
  fmt::print(
      "apps at --size {}, {} timed iterations per run after a warm-up, a recorded one and {} profiled; "
      "median over {} round{}\n",
      o.size, o.iterations, o.profile_iterations, o.rounds, o.rounds == 1 ? "" : "s");
  fmt::print(
      "bound: max(all-fast, least slow-tier bytes / emulated bandwidth): of the bytes the iteration's kernels "
      "touch, those beyond the fast tier cross to the slow tier once, priced at the read bandwidth while "
      "objects only read last, then at the write bandwidth; latency ignored, copies fully overlapped\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const ca::EmulationProfile slow = *ca::emulation::profile(emulation_profile);
  print_preamble(o, slow);
  const fs::path scratch = fs::temp_directory_path() / fmt::format("app_policies-{}", ::getpid());
  fs::create_directories(scratch);
  Results results;
  Progress progress{0, o.apps.size() * o.fractions.size() * o.policies.size() * static_cast<std::size_t>(o.rounds)};
  bool all_verified = true;
  for (const std::string& app : o.apps) {
    for (const double fraction : o.fractions) {
      Group g = measure(o, app, fraction, scratch, progress);
      const std::optional<Bound> bound = bound_of(g, slow);
      const std::optional<Oracle> oracle = oracle_of(g);
      if (const std::string why = model_rows(g, o.plan_seconds); !why.empty()) {
        fmt::print(stderr, "{} at {:.0f}%: not modeled: {}\n", app, 100 * fraction, why);
      }
      print_table(app, fraction, g.rows, bound ? &*bound : nullptr, oracle ? &*oracle : nullptr);
      std::fflush(stdout);  // the table before the next group's progress lines on stderr
      results.add(g, bound, oracle);
      all_verified = all_verified && g.all_verified();
    }
  }
  fs::remove_all(scratch);
  const nlohmann::json out{{"benchmark", "app_policies"},
                           {"emulation", emulation_profile},
                           {"slow_read_gbps", slow.read_gbps},
                           {"slow_write_gbps", slow.write_gbps},
                           {"size", o.size},
                           {"iterations", o.iterations},
                           {"profile_iterations", o.profile_iterations},
                           {"rounds", o.rounds},
                           {"all_fast_fraction", all_fast_fraction},
                           {"rows", results.rows},
                           {"bounds", results.bounds},
                           {"oracles", results.oracles},
                           {"programs", results.programs}};
  if (!bench::write_json(o.json, out, "app_policies")) return 1;
  fmt::print("\nwrote {}{}\n", o.json, all_verified ? "" : "; some runs failed (see their rows)");
  return all_verified ? 0 : 1;
}
