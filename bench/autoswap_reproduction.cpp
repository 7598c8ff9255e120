// autoswap_reproduction: AutoSwap's closing figures (SmartPool/AutoSwap, Zhang et al.,
// "Efficient Memory Management for GPU-based Deep Learning Systems", §VI-B)
// from plan::autoswap_plan on the trainer's programs:
//   - Table II: for ResNet-18/34/50/101 and VGG-11/13/16/19 at batch 100 on
//     CIFAR-10 (32x32 images, 10 classes, as the paper), the peak memory load
//     of one iteration and, for each priority score (DOA, AOA, WDOA, SWDOA,
//     and BO, their combination by Bayesian optimisation), the lowest memory
//     load limit at which the modeled overhead stays within --threshold of
//     the iteration (1%: "without overhead"), found by bisection on the limit;
//     the reduction 1 - limit / peak next to the paper's;
//   - Fig. 9: VGG-16's overhead under each score over a sweep of limits.
//
// Everything here is a model, not a measurement: kernels take a roofline
// (plan::Roofline) of a compute rate fitted so that VGG-16's modeled
// iteration lasts as long as the paper measured (Table I: 122 ms with
// cudaMalloc, 1.73x faster with SmartPool: 70.5 ms; AutoSwap runs on a
// pool), with the fast tier at ddr4_six_channel's bandwidths (the roofline's
// memory side; the fit absorbs the GPU's faster memory into the rate); swaps
// copy at the paper's PCIe link, 10.4 GB/s each way (§VI-B.3: "swapping out
// 300 MB ... takes around 28.9 ms"). The copies are the planner's
// (autoswap.hpp): an engine each way, as the paper's GPU has a stream each
// way (--one-engine: one for both, as our mover's default single thread),
// the copies in placed "in advance to make sure its second access is not
// delayed" (§IV-E).
//
// "Overhead ~0" (the paper's "without overhead") is read as: the plan fits
// the limit (its LOAD' peak, and the peak the serialized copies give, are
// at most the limit) and its modeled waits sum to at most --threshold of the
// iteration. Bisection assumes the overhead only grows as the limit falls;
// it does not always (Fig. 9: "the overhead does not always monotonically
// increase with lower memory load"), so each score is also scanned on a 1%
// grid of the peak and any lower passing limit the scan finds is listed.
//
// The VGGs are the paper's (its reference 4, cifar.torch): ModelConfig::
// cifar, batch norm after every convolution and a 512-wide classifier, less
// the dropout layers this trainer has no op for (--vgg-form torchvision:
// torchvision's, whose 4096-wide classifier lives through the peak). The
// ResNets are torchvision's (nn/models.hpp), not the Torch CIFAR models the
// paper links: they keep the ImageNet stem (7x7/2 convolution and 3x3/2 max
// pool), which leaves 8x8 feature maps at 32x32 where the paper's ResNet
// loads (ResNet-50: 4418 MB at batch 100) imply 32x32 ones. So the ResNets run again at
// --resnet-equivalent-size (128: the stem brings it to 32x32), labelled so.
// MB = 2^20 bytes (the paper does not say; with 10^6 ours grow by 4.9%).
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/trainer.hpp>
#include <cachedarrays/plan/program/roofline.hpp>
#include <cachedarrays/plan/schedule/autoswap.hpp>
#include <cachedarrays/plan/schedule/autoswap_bo.hpp>

#include <fmt/core.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace plan = cachedarrays::plan;
namespace bench = cachedarrays::bench;

namespace {

constexpr double mib = 1024.0 * 1024.0;
double mb(std::uint64_t bytes) { return static_cast<double>(bytes) / mib; }

// The paper's figures for one network at batch 100: Table II (original load,
// reduced load without overhead by BO, reduction) and Table I's iteration
// (cudaMalloc's time over SmartPool's speedup).
struct PaperModel {
  std::string family;
  int depth = 0;
  double load_mb = 0, reduced_mb = 0, reduction_pct = 0;
  double iteration_ms = 0;
};

const std::vector<PaperModel> paper_models = {
    {"resnet", 18, 1452, 1152, 20.7, 359 / 1.83}, {"resnet", 34, 2824, 2124, 24.8, 684 / 1.85},
    {"resnet", 50, 4418, 2906, 34.2, 993 / 1.88}, {"resnet", 101, 8367, 5658, 32.4, 2086 / 1.97},
    {"vgg", 11, 389, 284, 27.0, 76 / 1.75},       {"vgg", 13, 509, 360, 29.3, 94 / 1.71},
    {"vgg", 16, 647, 447, 30.9, 122 / 1.73},      {"vgg", 19, 785, 561, 28.5, 162 / 1.94},
};

std::string name_of(const PaperModel& p) { return fmt::format("{}-{}", p.family, p.depth); }

const PaperModel& paper_model(const std::string& name) {
  for (const PaperModel& p : paper_models) {
    if (name_of(p) == name) return p;
  }
  throw std::invalid_argument("unknown model " + name);
}

constexpr std::array scores{plan::AutoswapScore::doa, plan::AutoswapScore::aoa, plan::AutoswapScore::wdoa,
                            plan::AutoswapScore::swdoa, plan::AutoswapScore::bo};

struct Options {
  std::vector<std::string> models;  // empty: all of paper_models
  std::int64_t batch = 100;
  std::int64_t image_size = 32;
  std::int64_t resnet_equivalent_size = 128;  // 0: no extra ResNet rows
  double threshold = 0.01;                    // of the iteration
  double pcie_gbps = 10.4;
  double fast_gbps = 0;  // 0: ddr4_six_channel's read / write figures
  double gflops = 0;     // 0: fitted to the paper's VGG-16 iteration
  int bo_evaluations = 30;
  std::string json_path;
  bool quick = false;
  bool one_engine = false;  // the copies on one engine for both directions (our mover's default)
  std::string vgg_form = "cifar";
};

Options parse(int argc, char** argv) {
  CLI::App app{
      "SmartPool/AutoSwap Table II and Fig. 9, modeled: the memory-load limit each priority score "
      "reaches without overhead"};
  Options o;
  std::vector<std::string> valid;
  for (const PaperModel& p : paper_models) valid.push_back(name_of(p));
  app.add_option("--models", o.models, "a subset of the paper's networks (default: all; --quick: resnet-18,vgg-11)")
      ->delimiter(',')
      ->check(CLI::IsMember(valid));
  app.add_option("--batch", o.batch, "batch size (the paper's: 100)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--image-size", o.image_size, "square image side (CIFAR-10: 32)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--resnet-equivalent-size", o.resnet_equivalent_size,
                 "also run the ResNets at this image size, whose stem leaves feature maps of the size the paper's "
                 "CIFAR ResNets have (0: not)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threshold", o.threshold, "overhead counted as none, a fraction of the iteration")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--pcie-gbps", o.pcie_gbps, "swap bandwidth each way, GB/s (§VI-B.3: 300 MB in 28.9 ms)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--fast-gbps", o.fast_gbps,
                 "the fast tier's bandwidth for the roofline, GB/s both ways (default: ddr4_six_channel, 118 / 83)")
      ->check(CLI::PositiveNumber);
  app.add_option("--gflops", o.gflops,
                 "the kernels' compute rate (default: fitted so VGG-16's modeled iteration is the paper's 70.5 ms)")
      ->check(CLI::PositiveNumber);
  app.add_option("--bo-evaluations", o.bo_evaluations, "plans per Bayesian optimisation (the paper: about 30)")
      ->capture_default_str()
      ->check(CLI::Range(4, 1000));
  app.add_option("--json", o.json_path, "write the machine, Table II and Fig. 9 rows as JSON to this file");
  app.add_option("--vgg-form", o.vgg_form,
                 "the VGGs as the paper trains them, cifar.torch's (batch norm, a 512-wide classifier), or "
                 "torchvision's (no batch norm, a 4096-wide classifier)")
      ->check(CLI::IsMember({"cifar", "torchvision"}))
      ->capture_default_str();
  app.add_flag("--one-engine", o.one_engine,
               "copies out and in on one engine, as our mover with its default single thread (default: a stream "
               "each way, as the paper's GPU)");
  app.add_flag("--quick", o.quick, "ResNet-18 and VGG-11 only, coarse limit steps, 12 BO evaluations");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  if (o.models.empty()) {
    o.models = o.quick ? std::vector<std::string>{"resnet-18", "vgg-11"} : valid;
  }
  if (o.quick) o.bo_evaluations = std::min(o.bo_evaluations, 12);
  return o;
}

// ---- the modeled machine ---------------------------------------------------

struct Machine {
  double flops_per_second = 0;
  ca::emulation::Bandwidth fast;
  double pcie_gbps = 0;
  std::string rate_source;
};

// The roofline iteration of `program` at a compute rate: the kernels one
// after the other, each the larger of its FLOPs over the rate and its bytes
// over the fast tier.
double roofline_iteration(const plan::Program& program, double flops_per_second, ca::emulation::Bandwidth fast) {
  const plan::Roofline roofline(flops_per_second, fast);
  double seconds = 0;
  std::vector<plan::ArgTraffic> args;
  for (const plan::ProgramKernel& k : program.kernels()) {
    args.clear();
    for (const plan::ProgramArg& a : k.args) {
      args.push_back({a.bytes, a.access, a.access == ca::Access::read ? fast.read_gbps : fast.write_gbps});
    }
    seconds += roofline.seconds(k.name, args);
  }
  return seconds;
}

// The VGGs in cifar.torch's form (ModelConfig::cifar: batch norm, a 512-wide
// classifier), the paper's; --vgg-form torchvision keeps torchvision's.
nn::ModelConfig config_of(const PaperModel& p, std::int64_t batch, std::int64_t image_size, const Options& o) {
  return {.family = p.family,
          .depth = p.depth,
          .batch = batch,
          .image_size = image_size,
          .classes = 10,
          .cifar = p.family == "vgg" && o.vgg_form == "cifar"};
}

// The rate at which VGG-16 at batch 100, 32x32, takes the paper's iteration:
// the roofline iteration falls as the rate grows, so bisect on its logarithm.
Machine paper_machine(const Options& o) {
  Machine m;
  m.fast =
      o.fast_gbps > 0 ? ca::emulation::Bandwidth{o.fast_gbps, o.fast_gbps} : ca::emulation::published::ddr4_six_channel;
  m.pcie_gbps = o.pcie_gbps;
  if (o.gflops > 0) {
    m.flops_per_second = o.gflops * 1e9;
    m.rate_source = "given by --gflops";
    return m;
  }
  const PaperModel& vgg16 = paper_model("vgg-16");
  const nn::ModelConfig c = config_of(vgg16, 100, 32, o);
  const plan::Program program = nn::dry_run_program([&] { return nn::build_model(c); });
  const double target = vgg16.iteration_ms / 1e3;
  double lo = 1e9, hi = 1e15;  // FLOP/s
  if (roofline_iteration(program, hi, m.fast) > target) {
    throw std::runtime_error(
        fmt::format("vgg-16's memory-bound kernels alone take longer than the paper's {:.1f} ms "
                    "at {} / {} GB/s; give --gflops or a faster --fast-gbps",
                    vgg16.iteration_ms, m.fast.read_gbps, m.fast.write_gbps));
  }
  for (int i = 0; i < 100; ++i) {
    const double mid = std::sqrt(lo * hi);
    (roofline_iteration(program, mid, m.fast) > target ? lo : hi) = mid;
  }
  m.flops_per_second = hi;
  m.rate_source =
      fmt::format("fitted: vgg-16 b100 32x32 takes the paper's {:.1f} ms (Table I: 122 ms / 1.73)", vgg16.iteration_ms);
  return m;
}

// ---- one network -----------------------------------------------------------

struct Workload {
  const PaperModel* paper = nullptr;
  nn::ModelConfig config;
  plan::Program program;
  plan::TierCosts costs;
  plan::AutoswapTimeline timeline;
  std::uint64_t load_min = 0;  // the LOAD' peak with every candidate swapped (§VI-B.1's load_min)
  std::size_t candidates = 0;
};

std::string label(const Workload& w) {
  return fmt::format("{}-{} b{} {}px{}", w.config.family, w.config.depth, w.config.batch, w.config.image_size,
                     w.config.cifar ? " cifar" : "");
}

Workload workload(const PaperModel& paper, std::int64_t batch, std::int64_t image_size, const Machine& m,
                  const Options& o) {
  Workload w;
  w.paper = &paper;
  w.config = config_of(paper, batch, image_size, o);
  w.program = nn::dry_run_program([&] { return nn::build_model(w.config); });
  const plan::Roofline roofline(m.flops_per_second, m.fast);
  w.costs = plan::TierCosts::from_model(w.program, roofline, m.fast, {m.pcie_gbps, m.pcie_gbps});
  w.timeline = plan::autoswap_timeline(w.program, w.costs);
  plan::AutoswapOptions all;
  all.limit = 1;  // below any load: the selection takes every candidate
  const plan::AutoswapPlan p = plan::autoswap_plan(w.program, w.costs, all);
  w.load_min = p.peak;
  w.candidates = p.candidates;
  return w;
}

// One plan under a limit and what it costs.
struct Probe {
  std::uint64_t limit = 0;
  bool fits = false;  // LOAD' within the limit
  std::uint64_t scheduled_peak = 0;
  double overhead = 0;  // of the iteration
  std::size_t swaps = 0;
  plan::AutoswapBoWeights weights{};  // bo only
  bool pass = false;                  // fits, the scheduled peak too, overhead within the threshold
};

Probe probe(const Workload& w, plan::AutoswapScore score, std::uint64_t limit, const Options& o) {
  plan::AutoswapOptions options;
  options.limit = limit;
  options.score = score;
  options.duplex = !o.one_engine;
  Probe r;
  r.limit = limit;
  plan::AutoswapPlan p;
  if (score == plan::AutoswapScore::bo) {
    plan::AutoswapBoOptions bo;
    bo.evaluations = o.bo_evaluations;
    plan::AutoswapBoResult result = plan::autoswap_optimise_weights(w.program, w.costs, options, bo);
    r.weights = result.weights;
    p = std::move(result.plan);
  } else {
    p = plan::autoswap_plan(w.program, w.costs, options);
  }
  r.fits = p.fits;
  r.scheduled_peak = p.scheduled_peak;
  r.overhead = p.iteration_seconds > 0 ? p.overhead_seconds / p.iteration_seconds : 0;
  r.swaps = p.swaps.size();
  r.pass = r.fits && r.scheduled_peak <= limit && r.overhead <= o.threshold;
  return r;
}

struct Lowest {
  Probe bisected;  // the limit bisection ends at
  Probe scanned;   // the lowest passing limit on the scan grid
  int probes = 0;  // plans made (a BO search counts once)
};

// Bisection between a failing limit (below load_min nothing fits) and a
// passing one (the peak: nothing to swap), to `resolution` bytes; then the
// scan of the grid peak * k * step.
Lowest lowest_limit(const Workload& w, plan::AutoswapScore score, const Options& o) {
  const std::uint64_t peak = w.timeline.peak;
  const std::uint64_t resolution = static_cast<std::uint64_t>((o.quick ? 2.0 : 0.25) * mib);
  Lowest out;
  out.bisected = probe(w, score, peak, o);
  out.probes = 1;
  std::uint64_t fail = w.load_min > 0 ? w.load_min - 1 : 0;
  std::uint64_t pass = peak;
  while (pass - fail > resolution) {
    const std::uint64_t mid = fail + (pass - fail) / 2;
    const Probe p = probe(w, score, mid, o);
    ++out.probes;
    if (p.pass) {
      pass = mid;
      out.bisected = p;
    } else {
      fail = mid;
    }
  }
  const double step = o.quick ? 0.05 : 0.01;
  out.scanned = out.bisected;
  for (int k = 1;; ++k) {
    const auto limit = static_cast<std::uint64_t>(static_cast<double>(peak) * (1 - k * step));
    if (limit < w.load_min || limit == 0) break;
    const Probe p = probe(w, score, limit, o);
    ++out.probes;
    if (p.pass && p.limit < out.scanned.limit) out.scanned = p;
  }
  return out;
}

struct TableRow {
  const Workload* workload = nullptr;
  std::vector<Lowest> lowest;  // by scores
  int probes = 0;
  double seconds = 0;
};

struct Fig9Row {
  std::uint64_t limit = 0;
  bool at_load_min = false;   // the last row: the lowest limit that fits
  std::vector<Probe> probes;  // by scores
};

struct Results {
  Machine machine;
  std::deque<Workload> workloads;  // rows point at them: a deque never moves them
  std::vector<TableRow> table;
  const Workload* fig9_workload = nullptr;
  std::vector<Fig9Row> fig9;
};

// ---- the report ------------------------------------------------------------

double reduction(std::uint64_t limit, std::uint64_t peak) {
  return 1 - static_cast<double>(limit) / static_cast<double>(peak);
}

void print_header(const Options& o, const Machine& m) {
  fmt::print("AutoSwap (SmartPool/AutoSwap §VI-B) reproduced on a MODEL of the paper's machine, not a measurement:\n");
  fmt::print("  kernels: roofline at {:.2f} TFLOP/s ({}),\n", m.flops_per_second / 1e12, m.rate_source);
  fmt::print("           fast tier {:.0f} / {:.0f} GB/s read / write{}\n", m.fast.read_gbps, m.fast.write_gbps,
             o.fast_gbps > 0 ? " (--fast-gbps)" : " (ddr4_six_channel; the fit absorbs the GPU's faster memory)");
  fmt::print("  swaps:   {:.1f} GB/s each way (GTX 1080 Ti on PCIe 3.0 x16; §VI-B.3: 300 MB in 28.9 ms), {}\n",
             m.pcie_gbps,
             o.one_engine ? "one copy engine for both directions (--one-engine)"
                          : "a copy engine each way (the paper's CUDA stream per direction)");
  fmt::print(
      "  \"without overhead\": modeled waits <= {:.1f}% of the iteration, the limit held by LOAD' and by the "
      "serialized copies\n",
      100 * o.threshold);
  fmt::print(
      "  batch {}, {}x{} images, 10 classes (CIFAR-10, as the paper); torchvision's layers (nn/models.hpp); "
      "MB = 2^20 B\n\n",
      o.batch, o.image_size, o.image_size);
}

void print_table2(const std::vector<TableRow>& rows, const Options& o) {
  fmt::print(
      "Table II: maximum memory load reduction without overhead (modeled: BO; paper: BO, measured at batch "
      "100)\n");
  bench::Table t({{"model", 22, bench::Align::left},
                  {"peak MB", 8},
                  {"paper", 6},
                  {"load_min", 8},
                  {"limit MB", 8, bench::Align::right, 2},
                  {"paper", 6},
                  {"reduction", 9, bench::Align::right, 2},
                  {"paper", 6},
                  {"iter ms", 8, bench::Align::right, 2},
                  {"paper", 6},
                  {"cands", 5, bench::Align::right, 2},
                  {"s", 5}});
  t.print_header();
  t.print_rule();
  for (const TableRow& r : rows) {
    const Workload& w = *r.workload;
    const Probe& bo = r.lowest.back().bisected;
    t.print_row(
        {label(w), fmt::format("{:.0f}", mb(w.timeline.peak)), fmt::format("{:.0f}", w.paper->load_mb),
         fmt::format("{:.0f}", mb(w.load_min)), fmt::format("{:.0f}", mb(bo.limit)),
         fmt::format("{:.0f}", w.paper->reduced_mb), fmt::format("{:.1f}%", 100 * reduction(bo.limit, w.timeline.peak)),
         fmt::format("{:.1f}%", w.paper->reduction_pct), fmt::format("{:.1f}", 1e3 * w.timeline.seconds),
         fmt::format("{:.1f}", w.paper->iteration_ms), std::to_string(w.candidates), fmt::format("{:.1f}", r.seconds)});
  }
  fmt::print(
      "  peak: autoswap_timeline's; load_min: the LOAD' peak with every candidate swapped (§VI-B.1); limit: the "
      "lowest BO passes at, by bisection;\n  iter: the modeled iteration without swaps, paper: Table I's with "
      "SmartPool; cands: §IV-A's candidate gaps; s: planning time of the row (5 scores)\n");
  if (o.resnet_equivalent_size > 0 && o.resnet_equivalent_size != o.image_size) {
    fmt::print(
        "  the {}px ResNet rows: torchvision's stem (7x7/2 conv, 3x3/2 max pool) brings {}px images to the "
        "{}px feature maps of a CIFAR ResNet without it, which the paper's loads imply\n",
        o.resnet_equivalent_size, o.resnet_equivalent_size, o.resnet_equivalent_size / 4);
  }
  fmt::print("\nReduction without overhead by priority score (modeled; limit MB, reduction, overhead at it):\n");
  std::vector<bench::Column> columns{{"model", 22, bench::Align::left}};
  for (const plan::AutoswapScore s : scores) columns.push_back({plan::to_string(s), 19, bench::Align::right, 2});
  bench::Table per(columns);
  per.print_header();
  per.print_rule();
  std::vector<std::string> scan_notes;
  for (const TableRow& r : rows) {
    std::vector<std::string> cells{label(*r.workload)};
    for (std::size_t i = 0; i < scores.size(); ++i) {
      const Lowest& l = r.lowest[i];
      const std::uint64_t peak = r.workload->timeline.peak;
      cells.push_back(fmt::format("{:.0f} {:4.1f}% {:4.2f}%", mb(l.bisected.limit),
                                  100 * reduction(l.bisected.limit, peak), 100 * l.bisected.overhead));
      if (l.scanned.limit < l.bisected.limit) {
        scan_notes.push_back(fmt::format("{} {}: {:.0f} MB ({:.1f}%)", label(*r.workload), plan::to_string(scores[i]),
                                         mb(l.scanned.limit), 100 * reduction(l.scanned.limit, peak)));
      }
    }
    per.print_row(cells);
  }
  fmt::print(
      "  bisection assumes the overhead grows as the limit falls; a scan at {}% steps of the peak found lower "
      "passing limits for:{}\n",
      o.quick ? 5 : 1, scan_notes.empty() ? " none" : "");
  for (const std::string& n : scan_notes) fmt::print("    {}\n", n);
  fmt::print("\n");
}

void print_fig9(const Workload& w, const std::vector<Fig9Row>& rows) {
  fmt::print("Fig. 9: overhead (% of the {:.1f} ms iteration, modeled) of each score by memory load limit, {}\n",
             1e3 * w.timeline.seconds, label(w));
  fmt::print("  peak {:.0f} MB, load_min {:.0f} MB; '-' = the limit is below what swapping every candidate reaches\n",
             mb(w.timeline.peak), mb(w.load_min));
  std::vector<bench::Column> columns{{"limit", 8, bench::Align::left}, {"MB", 5}};
  for (const plan::AutoswapScore s : scores) columns.push_back({plan::to_string(s), 7, bench::Align::right, 2});
  bench::Table t(columns);
  t.print_header();
  t.print_rule();
  for (const Fig9Row& r : rows) {
    const double fraction = static_cast<double>(r.limit) / static_cast<double>(w.timeline.peak);
    std::vector<std::string> cells{r.at_load_min ? "load_min" : fmt::format("{:.0f}%", 100 * fraction),
                                   fmt::format("{:.0f}", mb(r.limit))};
    for (const Probe& p : r.probes) {
      const bool held = p.fits && p.scheduled_peak <= p.limit;
      cells.push_back(!p.fits ? "-" : fmt::format("{:.2f}{}", 100 * p.overhead, held ? "" : "*"));
    }
    t.print_row(cells);
  }
  fmt::print(
      "  * the serialized copies pass the limit (scheduled peak > limit; the paper would delay kernels, "
      "LOAD'')\n");
  fmt::print(
      "  paper (VGG16, 647 -> 280 MB): the four scores within 3% of each other, all under 20%; BO never above "
      "the best of them, 0 down to 447 MB (69% of the peak)\n\n");
}

nlohmann::json probe_json(const Probe& p, std::uint64_t peak) {
  nlohmann::json j{{"limit_bytes", p.limit},
                   {"reduction", reduction(p.limit, peak)},
                   {"fits", p.fits},
                   {"scheduled_peak_bytes", p.scheduled_peak},
                   {"overhead_fraction", p.overhead},
                   {"swaps", p.swaps},
                   {"pass", p.pass}};
  return j;
}

nlohmann::json to_json(const Options& o, const Results& results) {
  const Machine& m = results.machine;
  nlohmann::json machine{{"flops_per_second", m.flops_per_second},
                         {"rate_source", m.rate_source},
                         {"fast_read_gbps", m.fast.read_gbps},
                         {"fast_write_gbps", m.fast.write_gbps},
                         {"pcie_gbps", m.pcie_gbps},
                         {"threshold", o.threshold},
                         {"copy_engines", o.one_engine ? 1 : 2},
                         {"modeled", true}};
  nlohmann::json rows = nlohmann::json::array();
  for (const TableRow& r : results.table) {
    const Workload& w = *r.workload;
    for (std::size_t i = 0; i < scores.size(); ++i) {
      nlohmann::json row{{"model", fmt::format("{}-{}", w.config.family, w.config.depth)},
                         {"batch", w.config.batch},
                         {"image_size", w.config.image_size},
                         {"score", plan::to_string(scores[i])},
                         {"peak_bytes", w.timeline.peak},
                         {"load_min_bytes", w.load_min},
                         {"iteration_seconds", w.timeline.seconds},
                         {"candidates", w.candidates},
                         {"bisected", probe_json(r.lowest[i].bisected, w.timeline.peak)},
                         {"scanned", probe_json(r.lowest[i].scanned, w.timeline.peak)},
                         {"paper_load_mb", w.paper->load_mb},
                         {"paper_reduced_mb", w.paper->reduced_mb},
                         {"paper_reduction", w.paper->reduction_pct / 100},
                         {"paper_iteration_seconds", w.paper->iteration_ms / 1e3}};
      if (scores[i] == plan::AutoswapScore::bo) row["bo_weights"] = r.lowest[i].bisected.weights;
      rows.push_back(std::move(row));
    }
  }
  nlohmann::json sweep = nlohmann::json::array();
  const Workload& fig9 = *results.fig9_workload;
  for (const Fig9Row& r : results.fig9) {
    for (std::size_t i = 0; i < scores.size(); ++i) {
      nlohmann::json row = probe_json(r.probes[i], fig9.timeline.peak);
      row["model"] = fmt::format("{}-{}", fig9.config.family, fig9.config.depth);
      row["batch"] = fig9.config.batch;
      row["image_size"] = fig9.config.image_size;
      row["limit_fraction"] = static_cast<double>(r.limit) / static_cast<double>(fig9.timeline.peak);
      row["at_load_min"] = r.at_load_min;
      row["score"] = plan::to_string(scores[i]);
      sweep.push_back(std::move(row));
    }
  }
  // "modeled_machine": the paper's machine this run models; "machine" is the
  // one it ran on (bench::write_json).
  return {{"modeled_machine", machine}, {"table2", rows}, {"fig9", sweep}};
}

// ---- the run ---------------------------------------------------------------

TableRow table_row(const Workload& w, const Options& o) {
  TableRow r;
  r.workload = &w;
  r.seconds = bench::seconds_of([&] {
    for (const plan::AutoswapScore s : scores) {
      r.lowest.push_back(lowest_limit(w, s, o));
      r.probes += r.lowest.back().probes;
    }
  });
  return r;
}

// The limits of Fig. 9: from the peak down to half of it, then load_min.
std::vector<Fig9Row> fig9_rows(const Workload& w, const Options& o) {
  std::vector<Fig9Row> rows;
  const double step = o.quick ? 0.10 : 0.05;
  std::vector<std::uint64_t> limits;
  for (int k = 0; 1 - k * step >= 0.5 - 1e-9; ++k) {
    limits.push_back(static_cast<std::uint64_t>((1 - k * step) * static_cast<double>(w.timeline.peak)));
  }
  limits.push_back(w.load_min);
  for (std::size_t i = 0; i < limits.size(); ++i) {
    Fig9Row r;
    r.limit = limits[i];
    r.at_load_min = i + 1 == limits.size();
    for (const plan::AutoswapScore s : scores) r.probes.push_back(probe(w, s, r.limit, o));
    rows.push_back(std::move(r));
  }
  return rows;
}

Results run(const Options& o) {
  Results results;
  results.machine = paper_machine(o);
  const auto add = [&](const PaperModel& p, std::int64_t size) {
    const Workload& w = results.workloads.emplace_back(workload(p, o.batch, size, results.machine, o));
    fmt::print(stderr, "autoswap_reproduction: {}: peak {:.0f} MB, load_min {:.0f} MB, {} kernels, {} candidates...",
               label(w), mb(w.timeline.peak), mb(w.load_min), w.program.kernels().size(), w.candidates);
    const TableRow& r = results.table.emplace_back(table_row(w, o));
    fmt::print(stderr, " {} probes, {:.1f} s\n", r.probes, r.seconds);
  };
  for (const std::string& name : o.models) add(paper_model(name), o.image_size);
  if (o.resnet_equivalent_size > 0 && o.resnet_equivalent_size != o.image_size) {
    for (const std::string& name : o.models) {
      if (paper_model(name).family == "resnet") add(paper_model(name), o.resnet_equivalent_size);
    }
  }
  fmt::print(stderr, "autoswap_reproduction: Fig. 9, vgg-16...");
  const Workload& vgg16 =
      results.workloads.emplace_back(workload(paper_model("vgg-16"), o.batch, o.image_size, results.machine, o));
  results.fig9_workload = &vgg16;
  fmt::print(stderr, " {:.1f} s\n", bench::seconds_of([&] { results.fig9 = fig9_rows(vgg16, o); }));
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  bench::print_machine_line();
  const auto started = bench::Clock::now();
  Results results;
  try {
    results = run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "\nautoswap_reproduction: {}\n", e.what());
    return 1;
  }
  print_header(o, results.machine);
  print_table2(results.table, o);
  print_fig9(*results.fig9_workload, results.fig9);
  fmt::print("run time {:.1f} s\n", std::chrono::duration<double>(bench::Clock::now() - started).count());
  if (!o.json_path.empty()) {
    if (!bench::write_json(o.json_path, to_json(o, results), "autoswap_reproduction")) return 1;
    fmt::print("wrote {}\n", o.json_path);
  }
  return 0;
}
