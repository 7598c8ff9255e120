// plan_footprint: the footprint of each offset planner of plan/ against the
// lower bound max-live (the peak of live bytes, which no placement beats):
//   best-fit    Sekiyama et al.'s offset-line heuristic (Sekiyama et al. §3.2),
//   SmartPool   weighted interval colouring, largest first, best-fit holes
//               (SmartPool/AutoSwap §III-C), and its first-fit variant,
//   MIP         Sekiyama et al.'s exact formulation (1)-(6) solved by Cbc from the
//               best heuristic plan, under --mip-seconds; proven optimal, or
//               the gap to its lower bound when it stops at the limit;
//   search      the branch and bound over canonical placements in
//               MiniMalloc's manner (plan/offsets/dsa_search.hpp): the least footprint
//               it finds from the best heuristic within --search-seconds,
//               proven optimal or not; and on a CSV instance, whether it fits
//               the instance's capacity (search_offsets at the capacity, the
//               MiniMalloc question), how fast.
// Instances: the MiniMalloc CSV files (--data DIR, or any --instances FILE...),
// whose file name carries a capacity (A.1048576.csv: 1 MiB) that each plan
// fits or not; and, when the nn library is built, the training programs
// (nn::dry_run_program, one steady-state iteration) of ResNet-18/34/50/101
// and VGG-11/13/16/19 at batch 100, the models of SmartPool's Table I, whose
// published footprint / peak load (1.0005-1.016) is printed beside ours,
// and DenseNet-121/264 (not in Table I).
// Those programs also give the online baseline: the peak extent of the
// trainer's own heap (nn::measure_footprint: best-fit online allocation).
// The MIP runs where it has at most --mip-max-pairs binaries (pairs of
// buffers alive together). The tables give each footprint as its ratio to
// max-live, and each planner's time (heuristics: median of repeated runs,
// --quick: one run).
//
//   plan_footprint [--quick] [--data DIR | --instances FILE...] [--models LIST] [--batch N]
//                  [--image-size N] [--classes N] [--no-models] [--mip-seconds S]
//                  [--mip-max-pairs N] [--search-seconds S] [--json FILE]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cachedarrays/error.hpp>
#include <cachedarrays/plan/offsets/best_fit_offsets.hpp>
#include <cachedarrays/plan/offsets/dsa_mip.hpp>
#include <cachedarrays/plan/offsets/dsa_problem.hpp>
#include <cachedarrays/plan/offsets/dsa_search.hpp>
#include <cachedarrays/plan/offsets/smartpool_offsets.hpp>
#include <cachedarrays/types.hpp>
#ifdef CACHEDARRAYS_BENCH_HAS_NN
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/trainer.hpp>
#endif

#include "bench_support.hpp"

namespace ca = cachedarrays;
namespace plan = cachedarrays::plan;
namespace bench = cachedarrays::bench;

namespace {

struct Planner {
  std::string name;   // the JSON's
  std::string title;  // the table's
  std::function<plan::OffsetPlan(const plan::DsaProblem&)> run;
};

const std::vector<Planner>& heuristics() {
  static const std::vector<Planner> all{
      {"best-fit", "best-fit", [](const plan::DsaProblem& p) { return plan::best_fit_offsets(p); }},
      {"smartpool", "SmartPool",
       [](const plan::DsaProblem& p) { return plan::smartpool_offsets(p, plan::HoleFit::best); }},
      {"smartpool-first-fit", "SP first",
       [](const plan::DsaProblem& p) { return plan::smartpool_offsets(p, plan::HoleFit::first); }}};
  return all;
}

// SmartPool's Table I (SmartPool/AutoSwap §VI-A): footprint / peak memory load at
// batch 100. Its models ran on CIFAR-10 (32x32 images, §VI), so its loads
// (389 MB for VGG-11 to 8367 MB for ResNet-101) are not comparable with
// ours at 224x224; the ratios are what a planner is judged by.
struct Published {
  std::string model;
  double ratio;
};
const std::vector<Published> table_i{{"resnet-18", 1.003},   {"resnet-34", 1.001}, {"resnet-50", 1.003},
                                     {"resnet-101", 1.0005}, {"vgg-11", 1.013},    {"vgg-13", 1.016},
                                     {"vgg-16", 1.012},      {"vgg-19", 1.011}};

struct Result {
  std::string planner;
  std::uint64_t footprint = 0;
  double seconds = 0;  // heuristics: the median over the runs
};

// The MIP's outcome on one instance, or why it did not run.
struct MipOutcome {
  std::optional<plan::MipResult> result;
  std::string skipped;  // when !result
};

// The search's outcome on one instance: the least footprint it found, and on
// an instance with a capacity, the answer at the capacity.
struct SearchOutcome {
  plan::FootprintSearchResult minimum;
  std::optional<plan::SearchResult> at_capacity;
};

struct Row {
  std::string instance;
  std::string kind;  // "csv" | "model"
  std::size_t buffers = 0;
  std::size_t pairs = 0;  // colliding pairs: the MIP's binaries
  std::uint64_t max_live = 0;
  std::uint64_t alignment = 1;
  std::optional<std::uint64_t> capacity;  // from a CSV file's name
  std::optional<std::uint64_t> online;    // the trainer's heap extent (models)
  std::optional<double> paper_ratio;      // SmartPool's published ratio (models)
  std::vector<Result> results;            // in heuristics() order
  MipOutcome mip;
  SearchOutcome search;
};

struct Options {
  bool quick = false;
  bool no_models = false;
  std::string data_dir = CACHEDARRAYS_DSA_DATA_DIR;
  std::vector<std::string> instances;
  std::vector<std::string> models{"resnet-18", "resnet-34", "resnet-50", "resnet-101",   "vgg-11",
                                  "vgg-13",    "vgg-16",    "vgg-19",    "densenet-121", "densenet-264"};
  std::int64_t batch = 100;
  std::int64_t image_size = 224;
  std::int64_t classes = 1000;
  double mip_seconds = 10;
  // Cbc's LP work around the search is not bounded by its time limit (its
  // initial LP, the warm start's, the final resolve; see
  // https://github.com/coin-or/Cbc/issues/231): on a program with many more
  // pairs than this, one solve runs far past --mip-seconds.
  std::size_t mip_max_pairs = 20'000;
  // Per instance, for the least footprint and, on a CSV instance, again for
  // the answer at its capacity.
  double search_seconds = 60;
  std::string json_path;
  // A directory to write each model's DSA problem into, in the MiniMalloc
  // CSV format (empty: none), so that other solvers can be run on them.
  std::string write_programs;
};

void add_options(CLI::App& app, Options& o) {
  app.add_flag("--quick", o.quick,
               "one run per planner, the MIP 0.25 s unless --mip-seconds, the search 0.25 s unless "
               "--search-seconds; models ResNet-18 and VGG-11 only, batch 4, 32x32, width 0.25 (a smoke test)");
  app.add_option("--data", o.data_dir, "the directory of the MiniMalloc CSV instances (*.csv)")->capture_default_str();
  app.add_option("--instances", o.instances, "CSV instance files to measure instead of those in --data")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-models", o.no_models, "the CSV instances only");
  app.add_option("--models", o.models, "models as family-depth (SmartPool Table I's by default)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batch", o.batch, "images per iteration (SmartPool Table I: 100)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--image-size", o.image_size, "image side in pixels (ImageNet 224; SmartPool ran CIFAR-10, 32)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--classes", o.classes, "classes of the last layer (ImageNet 1000; CIFAR-10 10)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--mip-seconds", o.mip_seconds, "time limit of the MIP's search per instance")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--mip-max-pairs", o.mip_max_pairs,
                 "skip the MIP on instances with more pairs of buffers alive together (its binaries)")
      ->capture_default_str();
  app.add_option("--search-seconds", o.search_seconds,
                 "time limit of the search per instance (for the least footprint; on a CSV instance as much again "
                 "for its capacity)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--json", o.json_path, "write one row per instance and planner as JSON to this file");
  app.add_option("--write-programs", o.write_programs,
                 "write each model's DSA problem to DIR/<model>-b<batch>-<size>px.csv in the MiniMalloc format "
                 "(buffer,start,end,size), for other solvers; the directory is created");
}

// Each heuristic on `problem`, its plan checked; timed as the median of
// several runs (at least 3 and about 0.2 s in all) unless `quick`.
std::vector<Result> run_heuristics(const plan::DsaProblem& problem, bool quick) {
  std::vector<Result> results;
  for (const Planner& p : heuristics()) {
    plan::OffsetPlan out;
    std::vector<double> samples;
    double total = 0;
    do {
      const double s = bench::seconds_of([&] { out = p.run(problem); });
      samples.push_back(s);
      total += s;
    } while (!quick && (samples.size() < 3 || (total < 0.2 && samples.size() < 50)));
    plan::check_plan(problem, out);  // a planner's footprint only counts if its plan is valid
    results.push_back({p.name, out.footprint, bench::median(samples)});
  }
  return results;
}

// The MIP from the best heuristic plan, once (its time is its limit).
MipOutcome run_mip(const plan::DsaProblem& problem, std::size_t pairs, const Options& o) {
  if (pairs > o.mip_max_pairs) {
    return {std::nullopt, fmt::format("{} pairs > --mip-max-pairs {}", pairs, o.mip_max_pairs)};
  }
  plan::MipOptions options;
  options.time_limit_seconds = o.mip_seconds;
  plan::MipResult r = plan::mip_offsets(problem, options);
  plan::check_plan(problem, r.plan);
  return {std::move(r), {}};
}

// The least footprint the search finds, and whether it fits `capacity`;
// each plan checked.
SearchOutcome run_search(const plan::DsaProblem& problem, std::optional<std::uint64_t> capacity, const Options& o) {
  plan::SearchOptions options;
  options.time_limit_seconds = o.search_seconds;
  SearchOutcome out;
  out.minimum = plan::minimize_footprint(problem, options);
  plan::check_plan(problem, out.minimum.plan);
  if (capacity) {
    out.at_capacity = plan::search_offsets(problem, *capacity, options);
    const plan::SearchResult& a = *out.at_capacity;
    if (a.status == plan::SearchStatus::found) {
      plan::check_plan(problem, a.plan);
      // The search's column shows the better of its two plans.
      if (a.plan.footprint < out.minimum.plan.footprint) {
        out.minimum.plan = a.plan;
        out.minimum.optimal = a.plan.footprint == out.minimum.lower_bound;
      }
    }
  }
  return out;
}

Row row_for(std::string instance, std::string kind, const plan::DsaProblem& problem,
            std::optional<std::uint64_t> capacity, const Options& o) {
  Row row;
  row.instance = std::move(instance);
  row.kind = std::move(kind);
  row.buffers = problem.size();
  row.pairs = plan::colliding_pairs(problem);
  row.max_live = problem.max_live();
  row.alignment = problem.alignment();
  row.results = run_heuristics(problem, o.quick);
  row.mip = run_mip(problem, row.pairs, o);
  row.capacity = capacity;
  row.search = run_search(problem, capacity, o);
  return row;
}

// MiniMalloc names an instance NAME.CAPACITY.csv (A.1048576.csv): the
// capacity in bytes every buffer must fit below.
std::optional<std::uint64_t> capacity_of(const std::filesystem::path& file) {
  const std::string stem = file.stem().string();
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size() ||
      stem.find_first_not_of("0123456789", dot + 1) != std::string::npos || stem.size() - dot > 20) {
    return std::nullopt;
  }
  return std::stoull(stem.substr(dot + 1));
}

std::vector<Row> csv_rows(const Options& o) {
  std::vector<std::filesystem::path> files(o.instances.begin(), o.instances.end());
  if (files.empty()) {
    if (std::filesystem::is_directory(o.data_dir)) {
      for (const auto& entry : std::filesystem::directory_iterator(o.data_dir)) {
        if (entry.path().extension() == ".csv") files.push_back(entry.path());
      }
    }
    if (files.empty()) fmt::print(stderr, "plan_footprint: no *.csv instances in '{}' (--data DIR)\n", o.data_dir);
    std::sort(files.begin(), files.end());
  }
  std::vector<Row> rows;
  for (const std::filesystem::path& file : files) {
    const plan::DsaProblem problem = plan::DsaProblem::from_csv(file.string());
    rows.push_back(row_for(file.filename().string(), "csv", problem, capacity_of(file), o));
  }
  return rows;
}

#ifdef CACHEDARRAYS_BENCH_HAS_NN
namespace nn = cachedarrays::nn;

// `problem` as DIR/NAME.csv; throws heap_error when it cannot be written.
void write_program(const plan::DsaProblem& problem, const std::string& name, const Options& o) {
  std::filesystem::create_directories(o.write_programs);
  const std::filesystem::path path = std::filesystem::path(o.write_programs) / (name + ".csv");
  std::ofstream out(path);
  out << problem.to_csv();
  if (!out) throw ca::heap_error("plan_footprint: cannot write " + path.string());
  fmt::print("wrote {} ({} buffers)\n", path.string(), problem.size());
}

std::vector<Row> model_rows(const Options& o) {
  std::vector<std::string> models = o.models;
  if (o.quick) models = {"resnet-18", "vgg-11"};
  std::vector<Row> rows;
  for (const std::string& name : models) {
    const std::size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash + 1 == name.size() ||
        name.find_first_not_of("0123456789", dash + 1) != std::string::npos) {
      throw ca::invalid_argument("plan_footprint: model \"" + name + "\" is not family-depth (e.g. resnet-50)");
    }
    nn::ModelConfig c;
    c.family = name.substr(0, dash);
    c.depth = std::stoi(name.substr(dash + 1));
    c.batch = o.quick ? 4 : o.batch;
    c.image_size = o.quick ? 32 : o.image_size;
    c.width = o.quick ? 0.25 : 1.0;
    c.classes = o.quick ? 10 : o.classes;
    const std::vector<int> depths = nn::available_depths(c.family);
    if (std::find(depths.begin(), depths.end(), c.depth) == depths.end()) {
      fmt::print("{}: not built by nn (the {} depths are {}); skipped\n", name, c.family, fmt::join(depths, ", "));
      continue;
    }
    const auto build = [&] { return nn::build_model(c); };
    const plan::DsaProblem problem = plan::DsaProblem::from_program(nn::dry_run_program(build));
    if (!o.write_programs.empty()) write_program(problem, fmt::format("{}-b{}-{}px", name, c.batch, c.image_size), o);
    Row row = row_for(fmt::format("{} b{} {}px", name, c.batch, c.image_size), "model", problem, std::nullopt, o);
    row.online = nn::measure_footprint(build);
    for (const Published& p : table_i) {
      if (p.model == name) row.paper_ratio = p.ratio;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}
#endif

double ratio_of(std::uint64_t footprint, std::uint64_t max_live) {
  return static_cast<double>(footprint) / static_cast<double>(std::max<std::uint64_t>(max_live, 1));
}
std::string ratio(std::uint64_t footprint, std::uint64_t max_live) {
  return max_live == 0 ? "-" : fmt::format("{:.4f}", ratio_of(footprint, max_live));
}

// Every planner's footprint on a row, with its JSON name and its table
// abbreviation (for the capacity column): online, the heuristics, the MIP.
struct Footprint {
  std::string planner;
  std::string abbreviation;
  std::uint64_t bytes;
};
std::vector<Footprint> footprints(const Row& r) {
  std::vector<Footprint> all;
  if (r.online) all.push_back({"online", "on", *r.online});
  const std::vector<std::string> abbreviations{"bf", "sp", "spf"};
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    all.push_back({r.results[i].planner, abbreviations[i], r.results[i].footprint});
  }
  if (r.mip.result) all.push_back({"mip", "mip", r.mip.result->plan.footprint});
  all.push_back({"search", "srch", r.search.minimum.plan.footprint});
  return all;
}

// The planners whose footprint is within the capacity, e.g. "bf,mip";
// "none", or "-" without a capacity. The search counts when its plan at the
// capacity was found, even if its least footprint within the time was not.
std::string fits(const Row& r) {
  if (!r.capacity) return "-";
  std::vector<std::string> within;
  for (const Footprint& f : footprints(r)) {
    const bool search_fits =
        f.planner == "search" && r.search.at_capacity && r.search.at_capacity->status == plan::SearchStatus::found;
    if (f.bytes <= *r.capacity || search_fits) within.push_back(f.abbreviation);
  }
  return within.empty() ? "none" : fmt::format("{}", fmt::join(within, ","));
}

// The search's least footprint: proven optimal, or the gap to what it proved.
std::string search_gap(const plan::FootprintSearchResult& s) {
  if (s.optimal) return "optimal";
  const double gap = static_cast<double>(s.plan.footprint - s.lower_bound) / static_cast<double>(s.plan.footprint);
  return gap < 1e-4 ? "<0.01%" : fmt::format("{:.2f}%", gap * 100);
}

// At the capacity: "found 1.23s", "infeasible 0.10s", "stopped 60.0s"; "-"
// without a capacity.
std::string capacity_answer(const Row& r) {
  if (!r.search.at_capacity) return "-";
  const plan::SearchResult& a = *r.search.at_capacity;
  return fmt::format("{} {:.2f}s", plan::to_string(a.status), a.seconds);
}

std::string mip_gap(const MipOutcome& m) {
  if (!m.result) return "skipped";
  if (m.result->optimal) return "optimal";
  return m.result->gap < 1e-4 ? "<0.01%" : fmt::format("{:.2f}%", m.result->gap * 100);
}

void print_footprints(const std::vector<Row>& rows) {
  using bench::Align;
  const bench::Table table({{"instance", 26, Align::left},
                            {"buffers", 7},
                            {"max-live", 11},
                            {"capacity", 9},
                            {"online", 7},
                            {"best-fit", 8},
                            {"SmartPool", 9},
                            {"SP first", 8},
                            {"MIP", 7},
                            {"MIP gap", 8},
                            {"MIP bound", 9},
                            {"search", 7},
                            {"srch gap", 8},
                            {"fit capacity", 16, Align::left, 2},
                            {"SP paper", 8}});
  table.print_header();
  table.print_rule();
  for (const Row& r : rows) {
    std::vector<std::string> cells{r.instance, std::to_string(r.buffers), ca::format_bytes(r.max_live),
                                   r.capacity ? ratio(*r.capacity, r.max_live) : "-",
                                   r.online ? ratio(*r.online, r.max_live) : "-"};
    for (const Result& res : r.results) cells.push_back(ratio(res.footprint, r.max_live));
    const std::optional<plan::MipResult>& mip = r.mip.result;
    cells.push_back(mip ? ratio(mip->plan.footprint, r.max_live) : "-");
    cells.push_back(mip_gap(r.mip));
    cells.push_back(mip ? ratio(static_cast<std::uint64_t>(mip->lower_bound), r.max_live) : "-");
    cells.push_back(ratio(r.search.minimum.plan.footprint, r.max_live));
    cells.push_back(search_gap(r.search.minimum));
    cells.push_back(fits(r));
    cells.push_back(r.paper_ratio ? fmt::format("{}", *r.paper_ratio) : "-");
    table.print_row(cells);
  }
  fmt::print(
      "\nratios are footprint / max-live; max-live (the peak of live bytes) is the lower bound. capacity: the "
      "instance's (its file name), as a ratio. online: the trainer's own heap (best-fit online allocation) at its "
      "peak extent. MIP: Sekiyama et al.'s (1)-(6) by Cbc from the best heuristic; MIP gap: to its proven lower bound "
      "(MIP bound), when it stopped at the time limit. search: the branch and bound over canonical placements "
      "(MiniMalloc), the least footprint found; srch gap: to what it proved. fit capacity: on online, bf best-fit, "
      "sp SmartPool, spf SP first-fit, srch the search (at the least footprint, or its search at the capacity). SP "
      "paper: SmartPool/AutoSwap Table I, CIFAR-10 at batch 100.\n\n");
}

void print_times(const std::vector<Row>& rows, const Options& o) {
  using bench::Align;
  const bench::Table table({{"instance", 26, Align::left},
                            {"pairs", 9},
                            {"best-fit ms", 11},
                            {"SmartPool ms", 12},
                            {"SP first ms", 11},
                            {"search s", 8},
                            {"probes", 6},
                            {"at capacity", 17, Align::left, 2},
                            {"MIP s", 7},
                            {"MIP status", 10, Align::left, 2}});
  table.print_header();
  table.print_rule();
  for (const Row& r : rows) {
    std::vector<std::string> cells{r.instance, std::to_string(r.pairs)};
    for (const Result& res : r.results) cells.push_back(fmt::format("{:.2f}", res.seconds * 1e3));
    cells.push_back(fmt::format("{:.2f}", r.search.minimum.seconds));
    cells.push_back(std::to_string(r.search.minimum.probes));
    cells.push_back(capacity_answer(r));
    const std::optional<plan::MipResult>& mip = r.mip.result;
    cells.push_back(mip ? fmt::format("{:.2f}", mip->seconds) : "-");
    cells.push_back(mip ? mip->status : "skipped: " + r.mip.skipped);
    table.print_row(cells);
  }
  fmt::print(
      "\npairs: of buffers alive together, the MIP's binaries. MIP limit {} s per instance (--mip-seconds); "
      "its time includes the heuristics that give its warm start. search s: the least footprint's search, "
      "probes: the capacities it tried, at capacity: the search at the instance's capacity; limit {} s each "
      "(--search-seconds).\n",
      o.mip_seconds, o.search_seconds);
}

nlohmann::json to_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  // seconds: the planner's; null for the online allocator, which is not a
  // planner (its figure comes from a dry run of the trainer).
  const auto row_json = [](const Row& r, const Footprint& f, std::optional<double> seconds) {
    nlohmann::json j{{"instance", r.instance},
                     {"kind", r.kind},
                     {"planner", f.planner},
                     {"buffers", r.buffers},
                     {"pairs", r.pairs},
                     {"alignment", r.alignment},
                     {"footprint_bytes", f.bytes},
                     {"lower_bound_bytes", r.max_live},
                     {"ratio", ratio_of(f.bytes, r.max_live)},
                     {"seconds", seconds ? nlohmann::json(*seconds) : nlohmann::json(nullptr)},
                     {"capacity_bytes", r.capacity ? nlohmann::json(*r.capacity) : nlohmann::json(nullptr)},
                     {"fits_capacity", r.capacity ? nlohmann::json(f.bytes <= *r.capacity) : nlohmann::json(nullptr)},
                     {"paper_ratio", f.planner == "smartpool" && r.paper_ratio ? nlohmann::json(*r.paper_ratio)
                                                                               : nlohmann::json(nullptr)}};
    if (f.planner == "mip") {
      const plan::MipResult& m = *r.mip.result;
      j["optimal"] = m.optimal;
      j["gap"] = m.gap;
      j["proven_lower_bound_bytes"] = m.lower_bound;
      j["status"] = m.status;
    }
    if (f.planner == "search") {
      const plan::FootprintSearchResult& m = r.search.minimum;
      j["optimal"] = m.optimal;
      j["proven_lower_bound_bytes"] = m.lower_bound;
      j["nodes"] = m.nodes;
      j["probes"] = m.probes;
      if (r.search.at_capacity) {
        const plan::SearchResult& a = *r.search.at_capacity;
        j["fits_capacity"] = f.bytes <= *r.capacity || a.status == plan::SearchStatus::found;
        j["capacity_search"] = {
            {"status", plan::to_string(a.status)},
            {"seconds", a.seconds},
            {"nodes", a.nodes},
            {"footprint_bytes",
             a.status == plan::SearchStatus::found ? nlohmann::json(a.plan.footprint) : nlohmann::json(nullptr)}};
      }
    }
    return j;
  };
  for (const Row& r : rows) {
    for (const Footprint& f : footprints(r)) {
      std::optional<double> seconds;
      if (f.planner == "mip") seconds = r.mip.result->seconds;
      if (f.planner == "search") seconds = r.search.minimum.seconds;
      for (const Result& res : r.results) {
        if (res.planner == f.planner) seconds = res.seconds;
      }
      out.push_back(row_json(r, f, seconds));
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Offset planners against max-live: best-fit offset lines (Sekiyama et al.), SmartPool, "
      "Sekiyama et al.'s exact MIP (Cbc) and a MiniMalloc-style exact search"};
  Options options;
  add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  bench::print_machine_line();
  if (options.quick && app.count("--mip-seconds") == 0) options.mip_seconds = 0.25;
  if (options.quick && app.count("--search-seconds") == 0) options.search_seconds = 0.25;
  std::vector<Row> rows;
  try {
    rows = csv_rows(options);
#ifdef CACHEDARRAYS_BENCH_HAS_NN
    if (!options.no_models) {
      std::vector<Row> models = model_rows(options);
      rows.insert(rows.end(), models.begin(), models.end());
    }
#else
    if (!options.no_models) fmt::print("models: the nn library is not built; CSV instances only\n");
#endif
  } catch (const ca::error& e) {  // a malformed instance, an unknown model, Cbc failing
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  print_footprints(rows);
  print_times(rows, options);
  if (!options.json_path.empty()) {
    if (!bench::write_json(options.json_path, to_json(rows), "plan_footprint")) return 1;
    fmt::print("wrote {}\n", options.json_path);
  }
  return 0;
}
