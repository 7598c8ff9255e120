// offset_planning: the offline dynamic storage allocation planners of plan/
// against the lower bound max-live (the peak of live bytes, which no
// placement beats):
//   best-fit    Sekiyama et al.'s offset-line heuristic (paper 001 §3.2),
//   SmartPool   weighted interval colouring, largest first, best-fit holes
//               (paper 002 §III-C), and its first-fit variant.
// Instances: the six MiniMalloc CSV files (--data DIR) and, when the nn
// library is built, the training programs (nn::dry_run_program, one
// steady-state iteration) of ResNet-18/34/50/101 and VGG-11/13/16/19 at
// batch 100, the models of SmartPool's Table I, whose published footprint /
// peak load (1.0005-1.016) is printed beside ours. Those programs also give
// the online baseline: the peak extent of the trainer's own heap
// (nn::measure_footprint: best-fit online allocation).
// The table gives each footprint and its ratio to max-live, and each
// planner's time (median of repeated runs, --quick: one run).
//
//   offset_planning [--quick] [--data DIR] [--models LIST] [--batch N] [--image-size N]
//                   [--classes N] [--no-models] [--json FILE]
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cachedarrays/plan/best_fit_offsets.hpp>
#include <cachedarrays/plan/dsa_problem.hpp>
#include <cachedarrays/plan/smartpool_offsets.hpp>
#include <cachedarrays/error.hpp>
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
  std::string name;
  std::function<plan::OffsetPlan(const plan::DsaProblem&)> run;
};

const std::vector<Planner>& planners() {
  static const std::vector<Planner> all{
      {"best-fit", [](const plan::DsaProblem& p) { return plan::best_fit_offsets(p); }},
      {"smartpool", [](const plan::DsaProblem& p) { return plan::smartpool_offsets(p, plan::HoleFit::best); }},
      {"smartpool-first-fit",
       [](const plan::DsaProblem& p) { return plan::smartpool_offsets(p, plan::HoleFit::first); }}};
  return all;
}

// SmartPool's Table I (paper 002 §VI-A): footprint / peak memory load at
// batch 100. Its models ran on CIFAR-10 (32x32 images, §VI), so its loads
// (389 MB for VGG-11 to 8367 MB for ResNet-101) are not comparable with
// ours at 224x224; the ratios are what a planner is judged by.
struct Published {
  std::string model;
  double ratio;
};
const std::vector<Published> table_i{{"resnet-18", 1.003}, {"resnet-34", 1.001}, {"resnet-50", 1.003},
                                     {"resnet-101", 1.0005}, {"vgg-11", 1.013},  {"vgg-13", 1.016},
                                     {"vgg-16", 1.012},      {"vgg-19", 1.011}};

struct Result {
  std::string planner;
  std::uint64_t footprint = 0;
  double seconds = 0;  // median over the runs
};

struct Row {
  std::string instance;
  std::string kind;  // "csv" | "model"
  std::size_t buffers = 0;
  std::uint64_t max_live = 0;
  std::uint64_t alignment = 1;
  std::optional<std::uint64_t> online;  // the trainer's heap extent (models)
  std::optional<double> paper_ratio;  // SmartPool's published ratio (models)
  std::vector<Result> results;        // in planners() order
};

struct Options {
  bool quick = false;
  bool no_models = false;
  std::string data_dir = CACHEDARRAYS_DSA_DATA_DIR;
  std::vector<std::string> models{"resnet-18", "resnet-34", "resnet-50", "resnet-101",
                                  "vgg-11",    "vgg-13",    "vgg-16",    "vgg-19"};
  std::int64_t batch = 100;
  std::int64_t image_size = 224;
  std::int64_t classes = 1000;
  std::string json_path;
};

void add_options(CLI::App& app, Options& o) {
  app.add_flag("--quick", o.quick,
               "one run per planner; models ResNet-18 and VGG-11 only, batch 4, 32x32, width 0.25 (a smoke test)");
  app.add_option("--data", o.data_dir, "the directory of the MiniMalloc CSV instances (*.csv)")->capture_default_str();
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
  app.add_option("--json", o.json_path, "write one row per instance and planner as JSON to this file");
}

// Each planner on `problem`, its plan checked; timed as the median of
// several runs (at least 3 and about 0.2 s in all) unless `quick`.
std::vector<Result> run_planners(const plan::DsaProblem& problem, bool quick) {
  std::vector<Result> results;
  for (const Planner& p : planners()) {
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

Row row_for(std::string instance, std::string kind, const plan::DsaProblem& problem) {
  Row row;
  row.instance = std::move(instance);
  row.kind = std::move(kind);
  row.buffers = problem.size();
  row.max_live = problem.max_live();
  row.alignment = problem.alignment();
  return row;
}

std::vector<Row> csv_rows(const Options& o) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(o.data_dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(o.data_dir)) {
      if (entry.path().extension() == ".csv") files.push_back(entry.path());
    }
  }
  if (files.empty()) fmt::print(stderr, "offset_planning: no *.csv instances in '{}' (--data DIR)\n", o.data_dir);
  std::sort(files.begin(), files.end());
  std::vector<Row> rows;
  for (const std::filesystem::path& file : files) {
    const plan::DsaProblem problem = plan::DsaProblem::from_csv(file.string());
    Row row = row_for(file.filename().string(), "csv", problem);
    row.results = run_planners(problem, o.quick);
    rows.push_back(std::move(row));
  }
  return rows;
}

#ifdef CACHEDARRAYS_BENCH_HAS_NN
namespace nn = cachedarrays::nn;

std::vector<Row> model_rows(const Options& o) {
  std::vector<std::string> models = o.models;
  if (o.quick) models = {"resnet-18", "vgg-11"};
  std::vector<Row> rows;
  for (const std::string& name : models) {
    const std::size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash + 1 == name.size() ||
        name.find_first_not_of("0123456789", dash + 1) != std::string::npos) {
      throw ca::invalid_argument("offset_planning: model \"" + name + "\" is not family-depth (e.g. resnet-50)");
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
    Row row = row_for(fmt::format("{} b{} {}px", name, c.batch, c.image_size), "model", problem);
    row.online = nn::measure_footprint(build);
    for (const Published& p : table_i) {
      if (p.model == name) row.paper_ratio = p.ratio;
    }
    row.results = run_planners(problem, o.quick);
    rows.push_back(std::move(row));
  }
  return rows;
}
#endif

std::string ratio(std::uint64_t footprint, std::uint64_t max_live) {
  return max_live == 0 ? "-" : fmt::format("{:.4f}", static_cast<double>(footprint) / static_cast<double>(max_live));
}

void print(const std::vector<Row>& rows) {
  using bench::Align;
  const bench::Table table({{"instance", 26, Align::left},
                            {"buffers", 7},
                            {"max-live", 11},
                            {"online", 8, Align::right, 2},
                            {"best-fit", 10, Align::right, 2},
                            {"ms", 7},
                            {"SmartPool", 10, Align::right, 2},
                            {"ms", 7},
                            {"SP first", 8, Align::right, 2},
                            {"ms", 7},
                            {"SP paper", 8, Align::right, 2}});
  table.print_header();
  table.print_rule();
  for (const Row& r : rows) {
    std::vector<std::string> cells{r.instance, std::to_string(r.buffers), ca::format_bytes(r.max_live),
                                   r.online ? ratio(*r.online, r.max_live) : "-"};
    for (const Result& res : r.results) {
      cells.push_back(ratio(res.footprint, r.max_live));
      cells.push_back(fmt::format("{:.2f}", res.seconds * 1e3));
    }
    cells.push_back(r.paper_ratio ? fmt::format("{}", *r.paper_ratio) : "-");
    table.print_row(cells);
  }
  fmt::print("\nratios are footprint / max-live; max-live (the peak of live bytes) is the lower bound. online: the "
             "trainer's own heap (best-fit online allocation) at its peak extent. SP paper: SmartPool's Table I "
             "(paper 002), CIFAR-10 at batch 100.\n");
}

nlohmann::json to_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  // seconds: the planner's; null for the online allocator, which is not a
  // planner (its figure comes from a dry run of the trainer).
  const auto row_json = [](const Row& r, const std::string& planner, std::uint64_t footprint,
                           std::optional<double> seconds) {
    return nlohmann::json{{"instance", r.instance},
                          {"kind", r.kind},
                          {"planner", planner},
                          {"buffers", r.buffers},
                          {"alignment", r.alignment},
                          {"footprint_bytes", footprint},
                          {"lower_bound_bytes", r.max_live},
                          {"ratio", static_cast<double>(footprint) / static_cast<double>(std::max<std::uint64_t>(
                                                                         r.max_live, 1))},
                          {"seconds", seconds ? nlohmann::json(*seconds) : nlohmann::json(nullptr)},
                          {"paper_ratio", planner == "smartpool" && r.paper_ratio ? nlohmann::json(*r.paper_ratio)
                                                                                  : nlohmann::json(nullptr)}};
  };
  for (const Row& r : rows) {
    if (r.online) out.push_back(row_json(r, "online", *r.online, std::nullopt));
    for (const Result& res : r.results) out.push_back(row_json(r, res.planner, res.footprint, res.seconds));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Offline DSA: best-fit offset lines (paper 001) and SmartPool (paper 002) against max-live"};
  Options options;
  add_options(app, options);
  CLI11_PARSE(app, argc, argv);
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
  } catch (const ca::error& e) {  // a malformed instance, an unknown model
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  print(rows);
  if (!options.json_path.empty()) {
    if (!bench::write_json(options.json_path, to_json(rows), "offset_planning")) return 1;
    fmt::print("wrote {}\n", options.json_path);
  }
  return 0;
}
