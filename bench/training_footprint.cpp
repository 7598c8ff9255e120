// training_footprint: the memory one training iteration of the trainer
// needs, against the footprints the papers report for the same
// networks (224x224 images, Inception v4 299x299, 1000 classes): AutoTM's
// Table 1 (nGraph: Inception v4 b1024 111 GB and b6144 659 GB, ResNet-200
// b512 132 GB, DenseNet-264 b512 115 GB, VGG-19 b2048 143 GB) and the
// CachedArrays paper's Table III (DenseNet-264 b1536 526 GB, ResNet-200
// b2048 529 GB). GB = 10^9 bytes.
//
// Each model is measured by dry runs on virtual heaps (nothing is
// allocated, so a 500 GB model is measured on this machine in seconds):
//   - online: nn::measure_footprint, the peak extent of the heap under the
//     online allocator (the fast tier all-fast needs);
//   - planned: nn::measure_planned_footprint, the same under an offset plan
//     (ca-lm+best-fit by default, --planner), what `train_cnn --planner`
//     sizes the fast tier by;
//   - max-live: the plan's lower bound (persistent objects plus the peak of
//     the live bytes of one iteration), which no placement goes below.
// The ratio is ours / the paper's: how far the trainer's own graph (what it
// keeps for the backward pass, how it concatenates) is from the papers'.
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/planned_footprint.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace bench = cachedarrays::bench;

namespace {

struct Reference {
  std::string family;
  int depth;
  std::int64_t batch;
  double paper_gb;
  std::string source;
  std::int64_t image_size = 224;
};

const std::vector<Reference> references = {
    {"inception", 4, 1024, 111, "AutoTM Table 1", 299},
    {"resnet", 200, 512, 132, "AutoTM Table 1"},
    {"densenet", 264, 512, 115, "AutoTM Table 1"},
    {"vgg", 19, 2048, 143, "AutoTM Table 1"},
    {"inception", 4, 6144, 659, "AutoTM Table 1 (large)", 299},
    {"densenet", 264, 1536, 526, "CachedArrays Table III"},
    {"resnet", 200, 2048, 529, "CachedArrays Table III"},
};

// The goal: the planned footprint within this factor of the paper's.
constexpr double goal_ratio = 1.10;

struct Options {
  std::string planner = "best-fit";
  std::string json_path;
  bool quick = false;  // batches / 16: the same graphs, in a few seconds
};

double gb(std::uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }

// Measures the footprints of one reference model, prints its row of
// `table`, notes it in `over` when it misses the goal, and returns it as JSON.
nlohmann::json measure_reference(const Reference& r, const Options& o, const ca::plan::OffsetPlanner& planner,
                                 const bench::Table& table, std::vector<std::string>& over) {
  nn::ModelConfig config;
  config.family = r.family;
  config.depth = r.depth;
  config.image_size = r.image_size;
  config.batch = o.quick ? r.batch / 16 : r.batch;
  const double paper = r.paper_gb * static_cast<double>(config.batch) / static_cast<double>(r.batch);
  const auto build = [&] { return nn::build_model(config); };
  std::uint64_t online = 0;
  nn::PlannedFootprint planned;
  const double seconds = bench::seconds_of([&] {
    online = nn::measure_footprint(build);
    planned = nn::measure_planned_footprint(build, nn::dry_run_program(build), planner);
  });
  const std::string model = nn::model_name(config);
  table.print_row(
      {model, std::to_string(config.batch), fmt::format("{:.1f}", paper), r.source, fmt::format("{:.1f}", gb(online)),
       fmt::format("{:.2f}", gb(online) / paper), fmt::format("{:.1f}", gb(planned.footprint)),
       fmt::format("{:.2f}", gb(planned.footprint) / paper), fmt::format("{:.1f}", gb(planned.lower_bound)),
       fmt::format("{:.4f}", static_cast<double>(planned.footprint) / static_cast<double>(planned.lower_bound)),
       fmt::format("{:.1f}", seconds)});
  const nlohmann::json row = {{"model", model},
                              {"batch", config.batch},
                              {"paper_bytes", paper * 1e9},
                              {"source", r.source},
                              {"online_bytes", online},
                              {"planner", o.planner},
                              {"planned_bytes", planned.footprint},
                              {"lower_bound_bytes", planned.lower_bound},
                              {"online_ratio", gb(online) / paper},
                              {"planned_ratio", gb(planned.footprint) / paper},
                              {"seconds", seconds}};
  const double ratio = gb(planned.footprint) / paper;
  if (ratio > goal_ratio) {
    over.push_back(
        fmt::format("{} b{} ({:.2f}x; max-live {:.2f}x)", model, config.batch, ratio, gb(planned.lower_bound) / paper));
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The trainer's footprint per iteration (online allocator and offset plan) against the papers'"};
  Options o;
  app.add_option("--planner", o.planner, "offset planner for the planned column: best-fit, smartpool, mip")
      ->capture_default_str()
      ->check(CLI::IsMember({"best-fit", "smartpool", "mip"}));
  app.add_option("--json", o.json_path, "write one row per model as JSON to this file");
  app.add_flag("--quick", o.quick, "batches divided by 16 (the graphs are the same; the papers' figures scaled)");
  CLI11_PARSE(app, argc, argv);
  bench::print_machine_line();

  const ca::plan::OffsetPlanner planner = ca::plan::parse_offset_planner(o.planner);
  fmt::print(
      "training footprint per iteration, 224x224 (inception-v4 299x299), 1000 classes (dry runs on virtual heaps; GB = "
      "10^9 B){}\n",
      o.quick ? "; --quick: batches / 16, paper figures scaled by the same" : "");
  bench::Table table({{"model", 13, bench::Align::left},
                      {"batch", 5},
                      {"paper GB", 9},
                      {"source", 22, bench::Align::left, 2},
                      {"online GB", 10},
                      {"x paper", 7},
                      {o.planner + " GB", 12},
                      {"x paper", 7},
                      {"max-live GB", 11},
                      {"plan/ml", 7},
                      {"seconds", 7}});
  table.print_header();
  table.print_rule();
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> over;  // rows above the goal
  for (const Reference& r : references) rows.push_back(measure_reference(r, o, planner, table, over));
  // Where max-live (the floor of any placement) is over the goal too, the
  // graph keeps more than the paper's framework did, and no planner can
  // close the gap; the notes say what differs between the frameworks.
  fmt::print("\ngoal: {} footprint at most {:.2f}x the paper's: {}\n", o.planner, goal_ratio,
             over.empty() ? std::string("met by every row") : "missed by " + fmt::format("{}", fmt::join(over, ", ")));
  fmt::print(
      "  below 1.00x (DenseNet): this trainer recomputes DenseNet's concatenations in the backward pass "
      "(memory-efficient DenseNet), the papers' frameworks keep them\n");
  fmt::print(
      "  below 1.00x (Inception v4): this trainer keeps only the convolutions' outputs and the "
      "concatenations, and recomputes every batch norm and ReLU and the average-pool branches' pools in the "
      "backward pass; nGraph (AutoTM) keeps them\n");
  if (!o.json_path.empty()) {
    if (!bench::write_json(o.json_path, rows, "training_footprint")) return 1;
    fmt::print("wrote {}\n", o.json_path);
  }
  return 0;
}
