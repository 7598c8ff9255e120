// cachedarrays-plan: "how much DRAM do I need?" answered by simulation
// (sim/capacity_plan.hpp). One training iteration — of a bundled model
// (family, depth, batch, image size), recorded by a dry run, or of a program
// JSON any application saved (plan::Program::save, Runtime::record_program)
// — is replayed under every policy at a range of fast-tier sizes on a
// modeled machine: kernels on the roofline of its compute rate and fast
// tier, copies at its tiers' bandwidths, asynchronous copies overlapping
// the kernels; the hardware's 2LM memory mode through its cache model.
// Each point is priced (sim/memory_prices.hpp: AutoTM's Table 2 by default)
// and the answer is the smallest fast tier at which the best policy is
// within --within of all-fast, with its memory cost against all-DRAM.
// Everything it prints is modeled, not measured.
//
//   cachedarrays-plan --model densenet --depth 264 --batch 1536
//   cachedarrays-plan --model vit --size L16 --batch 1024       # trained with AdamW
//   cachedarrays-plan --program iteration.json --slow-tier cxl --json plan.json --png plan.png
//   cachedarrays-plan --program recorded.json --fast-bytes 64M   # the bound and each policy at one size
//
// A program a Runtime saved with its kernels' online profiles
// (plan::Program::profiles; CACHEDARRAYS_PROGRAM_OUT) has its kernels priced
// by them (plan::online_time_model) instead of the roofline. A program a
// Runtime recorded carries the tiers it ran on (plan::Program::tiers): it is
// modeled on those, copies included, unless --slow-tier names a published one.
//   cachedarrays-plan --model resnet --depth 50 --batch 256 --save-program resnet50.json
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/manager/emulation.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/profiler.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include "support/compute_rate.hpp"
#include "support/json_file.hpp"
#include "support/shell.hpp"
#include "support/table.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using Json = nlohmann::ordered_json;

namespace {

struct Options {
  nn::ModelConfig model{.family = "", .depth = 0, .batch = 32, .image_size = 224, .classes = 1000, .width = 1.0};
  std::string program;  // a program JSON instead of a model
  std::vector<double> fractions{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
  std::vector<std::string> policies;  // empty: quick_policies(); "all": all_policies()
  std::string slow_tier;              // empty: the program's tiers, else optane
  std::string prices_file;
  double gflops = 0;  // 0: this machine's per-core rate times --cores
  int cores = 28;
  std::string profile_cache = nn::default_profile_cache();
  double within = 1.10;
  double plan_seconds = 0;
  unsigned threads = 0;
  unsigned mover_threads = ca::MoverOptions{}.threads;
  std::string json;
  bool image_size_given = false;  // else the family's usual size (inception 299, the others 224)
  std::string png;
  std::string save_program;
  std::string fast_bytes;    // one fast-tier size in bytes ("64M"), instead of --fractions
  double fast_fraction = 0;  // one fast-tier size as a share of the footprint, instead of --fractions
  bool quiet = false;
  std::string vit_size;   // a named ViT: B16, L16, ...
  std::string optimizer;  // empty: AdamW for a ViT, SGD for the CNNs
};

// "64M", "1.5G", "4096": bytes, with an optional K/M/G/T suffix (powers of
// 1024). Throws invalid_argument naming the option for anything else.
std::uint64_t parse_bytes(const std::string& text) {
  std::size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string suffix = text.substr(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "m")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    end = 0;
  if (end == 0 || !(value > 0)) {
    throw ca::invalid_argument("--fast-bytes '" + text +
                               "' is not a size; give bytes > 0, optionally with K, M, G or T (powers of 1024)");
  }
  return static_cast<std::uint64_t>(value * scale);
}

// The modeled machine's tiers: the paper's six-channel DDR4 and, below it,
// six interleaved Optane DIMMs or a CXL expander at half of DRAM's
// bandwidth (emulation::cxl's ratio).
ca::DeviceModel tier_model(const std::string& name) {
  const ca::emulation::Bandwidth ddr4 = ca::emulation::published::ddr4_six_channel;
  if (name == "dram") return {"dram", ddr4.read_gbps, ddr4.write_gbps};
  if (name == "optane") {
    const ca::emulation::Bandwidth o = ca::emulation::published::optane_six_dimms;
    return {"optane", o.read_gbps, o.write_gbps};
  }
  return {"cxl", ddr4.read_gbps / 2, ddr4.write_gbps / 2};
}

std::string describe_model(const nn::ModelConfig& m) {
  return fmt::format("{} b{}{}", nn::model_name(m), m.batch,
                     m.image_size != 224 || m.width != 1.0 ? fmt::format(" {}px width {}", m.image_size, m.width) : "");
}

// The compute rate of the modeled machine: --gflops, or this machine's
// achieved rate per core on a small ResNet's convolutions (profiled once
// into the profile cache) times --cores.
struct ComputeRate {
  double flops_per_second = 0;
  std::string how;
};

ComputeRate compute_rate(const Options& o) {
  if (o.gflops > 0) return {o.gflops * 1e9, "given by --gflops"};
  const nn::ModelConfig probe{.family = "resnet", .depth = 18, .batch = 32, .image_size = 96, .classes = 10};
  const ca::tools::RatePerCore here = ca::tools::rate_per_core(probe, o.profile_cache);
  return {here.flops_per_second * o.cores,
          fmt::format("this machine's {:.1f} GFLOP/s on {} cores ({} {}) per core times --cores {}",
                      here.flops_per_second * here.cores / 1e9, here.cores,
                      here.measured ? "profiled into" : "profiles from", o.profile_cache, o.cores)};
}

std::string gb(std::uint64_t bytes) { return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9); }
std::string dollars(double d) { return fmt::format("${:.0f}", d); }

void print_tables(const ca::CapacityPlan& plan, const Options& o, const ca::MemoryPrices& prices,
                  const ca::DeviceModel& fast, const ca::DeviceModel& slow) {
  const std::vector<std::string>& policies = o.policies;
  const std::size_t n = policies.size();
  // Slowdown of every policy at every size.
  std::vector<ca::tools::Column> columns{{"policy", 14, ca::tools::Align::left}};
  for (const double f : o.fractions) columns.push_back({fmt::format("{:.0f}%", 100 * f), 6});
  ca::tools::Table matrix(columns, "  ");
  fmt::print("\nmodeled iteration time over all-fast's ({:.3f} s), by fast tier as a share of the footprint:\n",
             plan.all_fast_seconds);
  matrix.print_header();
  matrix.print_rule();
  for (std::size_t p = 0; p < n; ++p) {
    std::vector<std::string> cells{policies[p]};
    for (std::size_t f = 0; f < o.fractions.size(); ++f) {
      const ca::CapacityPoint& point = plan.points[f * n + p];
      cells.push_back(point.seconds ? fmt::format("{:.2f}x", point.slowdown) : "oom");
    }
    matrix.print_row(cells);
  }
  // What no policy can beat at each size (plan/program/fast_tier_bound.hpp).
  std::vector<std::string> bound_cells{"lower bound"};
  for (const ca::plan::FastTierBound& b : plan.bounds) bound_cells.push_back(fmt::format("{:.2f}x", b.slowdown()));
  matrix.print_rule();
  matrix.print_row(bound_cells);
  fmt::print(
      "lower bound: no placement is faster; each kernel at its cheapest with its own arguments within the fast "
      "tier, copies free (kernels whose arguments pass it:");
  for (const ca::plan::FastTierBound& b : plan.bounds) fmt::print(" {}", b.kernels_over);
  fmt::print(")\n");
  // The fastest policy at every size, its traffic and what its memory costs.
  ca::tools::Table best({{"fast tier", 10},
                         {"share", 5},
                         {"fastest policy", 14, ca::tools::Align::left, 2},
                         {"slowdown", 8},
                         {"exposed s", 9},
                         {"fast r/w", 19},
                         {"slow r/w", 19},
                         {"slow tier", 10},
                         {"memory $", 9},
                         {"vs all-DRAM", 11}},
                        "  ");
  const double all_dram = prices.cost(fast.name, plan.footprint);
  fmt::print(
      "\nthe fastest policy at each size; traffic per iteration; {} at ${:.2f}/GB, {} at ${:.2f}/GB (slow "
      "tier: its peak):\n",
      fast.name, prices.dollars_per_gb(fast.name), slow.name, prices.dollars_per_gb(slow.name));
  best.print_header();
  best.print_rule();
  for (std::size_t f = 0; f < o.fractions.size(); ++f) {
    const ca::CapacityPoint* top = nullptr;
    for (std::size_t p = 0; p < n; ++p) {
      const ca::CapacityPoint& point = plan.points[f * n + p];
      if (point.seconds && (top == nullptr || *point.seconds < *top->seconds)) top = &point;
    }
    if (top == nullptr) {
      best.print_row({gb(ca::fast_tier_bytes(o.fractions[f], plan.footprint)),
                      fmt::format("{:.0f}%", 100 * o.fractions[f]), "none fits"});
      continue;
    }
    const double cost = ca::memory_cost(*top, prices, fast.name, slow.name);
    const ca::TierTraffic& t = top->traffic;
    best.print_row({gb(top->fast_bytes), fmt::format("{:.0f}%", 100 * top->fraction), top->policy,
                    fmt::format("{:.2f}x", top->slowdown), fmt::format("{:.3f}", top->exposed_copy_seconds),
                    ca::format_bytes(t.fast_read) + "/" + ca::format_bytes(t.fast_written),
                    ca::format_bytes(t.slow_read) + "/" + ca::format_bytes(t.slow_written), gb(top->slow_peak),
                    dollars(cost), fmt::format("{:+.0f}%", 100 * (cost / all_dram - 1))});
  }
}

Json tier_json(const ca::DeviceModel& tier, const ca::MemoryPrices& prices) {
  return Json{{"name", tier.name},
              {"read_gbps", tier.read_gbps},
              {"write_gbps", tier.write_gbps},
              {"dollars_per_gb", prices.dollars_per_gb(tier.name)}};
}

Json point_json(const ca::CapacityPoint& p, const ca::MemoryPrices& prices, const ca::DeviceModel& fast,
                const ca::DeviceModel& slow) {
  const auto number_or_null = [&](double v) { return p.seconds ? Json(v) : Json(nullptr); };
  return Json{{"policy", p.policy},
              {"fraction", p.fraction},
              {"fast_bytes", p.fast_bytes},
              {"seconds", p.seconds ? Json(*p.seconds) : Json(nullptr)},
              {"slowdown", number_or_null(p.slowdown)},
              {"exposed_copy_seconds", p.exposed_copy_seconds},
              {"copy_seconds", p.copy_seconds},
              {"fast_read", p.traffic.fast_read},
              {"fast_written", p.traffic.fast_written},
              {"slow_read", p.traffic.slow_read},
              {"slow_written", p.traffic.slow_written},
              {"slow_bytes", p.slow_peak},
              {"footprint_expansion", p.expansion},
              {"cost_dollars", number_or_null(ca::memory_cost(p, prices, fast.name, slow.name))},
              {"note", p.note}};
}

// The plot script: beside an installed binary (share/cachedarrays), else in
// the source tree the binary was built from.
std::string plot_script() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed = self.parent_path().parent_path() / "share/cachedarrays/plot_plan.py";
    if (std::filesystem::exists(installed)) return installed.string();
  }
  return CACHEDARRAYS_PLOT_PLAN;
}

// The options settled: a model or a program, the policies (default
// quick_policies, "all" all_policies), the fractions in order, once each.
void settle(Options& o) {
  if (o.model.family.empty() == o.program.empty()) {
    throw ca::invalid_argument(
        "give a bundled model (--model FAMILY --depth N) or a program (--program FILE), "
        "one of them");
  }
  if (!o.model.family.empty()) {
    // "inception-v4" names family "inception" at depth 4: the labels, the
    // depth check and build_model see the one name.
    const int depth = o.model.depth;
    o.model = nn::canonical_model(o.model);
    if (o.model.family == "inception" && depth == 0) o.model.depth = 4;  // its only depth
    // Inception v4 is defined at 299x299 (its paper; AutoTM's runs): 224 would
    // plan a network nobody trains.
    if (o.model.family == "inception" && !o.image_size_given) o.model.image_size = 299;
    if (!o.vit_size.empty()) {
      o.model = nn::vit_size(o.model, o.vit_size);
      if (depth != 0) o.model.depth = depth;  // --depth given: fewer or more blocks of that size
    }
    if (o.model.family == "vit" && depth == 0 && o.vit_size.empty()) o.model.depth = 12;
  }
  if (!o.vit_size.empty() && o.model.family != "vit") {
    throw ca::invalid_argument("--size names a ViT (" + fmt::format("{}", fmt::join(nn::vit_sizes(), ", ")) +
                               "); give it with --model vit");
  }
  if (o.optimizer.empty()) o.optimizer = o.model.family == "vit" ? "adamw" : "sgd";
  if (!o.fast_bytes.empty() && o.fast_fraction > 0) {
    throw ca::invalid_argument("give --fast-bytes or --fast-fraction, not both: they are one fast-tier size");
  }
  if (o.policies.empty() && (!o.fast_bytes.empty() || o.fast_fraction > 0)) {
    o.policies = ca::all_policies();  // one size: every policy, the planners too
  } else if (o.policies.empty()) {
    o.policies = ca::quick_policies();
  } else if (o.policies == std::vector<std::string>{"all"}) {
    o.policies = ca::all_policies();
  }
  std::sort(o.fractions.begin(), o.fractions.end());
  o.fractions.erase(std::unique(o.fractions.begin(), o.fractions.end()), o.fractions.end());
}

// How the model trains: the optimizer --optimizer names (a ViT's default
// AdamW, the CNNs' SGD), whose state is part of every iteration.
nn::TrainerOptions trainer_options(const Options& o) {
  nn::TrainerOptions t;
  t.optimizer = nn::parse_optimizer(o.optimizer);
  return t;
}

// A ViT's memory counted from its shape alone, independently of the trainer:
// what a dry run's footprint can be held against. Parameters, their
// gradients and AdamW's two moments (or SGD's momentum), plus what each
// layer's backward pass reads, kept from the forward pass (the residual
// stream into each LayerNorm, the LayerNorms' outputs into the linear
// layers, q, k and v, the attention probabilities, the merged heads, the
// MLP's hidden activations before and after GELU; the LayerNorms' means and
// variances), in float32.
struct VitCount {
  std::int64_t parameters = 0;
  std::uint64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;
  std::uint64_t activation_bytes = 0;                            // all blocks
  std::vector<std::pair<std::string, std::uint64_t>> per_block;  // one block's, by layer
  [[nodiscard]] std::uint64_t total() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes;
  }
};

VitCount count_vit(const nn::ModelConfig& m, const std::string& optimizer) {
  const auto n = static_cast<std::uint64_t>(m.batch);
  const auto d = static_cast<std::uint64_t>(m.vit.dim);
  const auto heads = static_cast<std::uint64_t>(m.vit.heads);
  const auto hidden = static_cast<std::uint64_t>(std::llround(static_cast<double>(d) * m.vit.mlp_ratio));
  const auto p = static_cast<std::uint64_t>(m.vit.patch);
  const std::uint64_t patches =
      (static_cast<std::uint64_t>(m.image_size) / p) * (static_cast<std::uint64_t>(m.image_size) / p);
  const std::uint64_t t = patches + 1;  // the class token
  const auto c = static_cast<std::uint64_t>(m.channels);
  const auto classes = static_cast<std::uint64_t>(m.classes);
  const auto blocks = static_cast<std::uint64_t>(m.depth);
  VitCount v;
  const std::uint64_t per_block_parameters =
      2 * (2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (hidden * d + hidden) + (d * hidden + d);
  const std::uint64_t parameters =
      (c * p * p * d + d) + d + t * d + blocks * per_block_parameters + 2 * d + (d * classes + classes);
  v.parameters = static_cast<std::int64_t>(parameters);
  v.parameter_bytes = 4 * parameters;
  v.gradient_bytes = 4 * parameters;
  v.optimizer_bytes = (optimizer == "adamw" ? 8 : 4) * parameters;
  const std::uint64_t tokens = 4 * n * t * d;  // one [N, T, D] activation
  v.per_block = {{"norm1 input (residual stream) + mean, variance", tokens + 8 * n * t},
                 {"norm1 output (qkv's input)", tokens},
                 {"q, k, v (the two products' inputs)", 3 * tokens},
                 {"attention probabilities (softmax's output, read by its backward and by p v)", 4 * n * heads * t * t},
                 {"merged heads (proj's input)", tokens},
                 {"norm2 input + mean, variance", tokens + 8 * n * t},
                 {"norm2 output (fc1's input)", tokens},
                 {"fc1 output (GELU's input)", 4 * n * t * hidden},
                 {"GELU output (fc2's input)", 4 * n * t * hidden}};
  std::uint64_t block = 0;
  for (const auto& [what, bytes] : v.per_block) block += bytes;
  // Outside the blocks: the images (the patch convolution's input), the
  // final LayerNorm's input (the class tokens) and the head's input.
  const std::uint64_t outside = 4 * n * c * static_cast<std::uint64_t>(m.image_size * m.image_size) + 2 * 4 * n * d;
  v.activation_bytes = blocks * block + outside;
  return v;
}

// The modeled machine: its tiers, their prices and its compute rate.
struct Machine {
  ca::MemoryPrices prices;
  ca::DeviceModel fast;
  ca::DeviceModel slow;
  ComputeRate rate;
  std::string tiers_from;  // where the tiers' figures come from
};

std::string describe_tier(const ca::plan::ProgramTier& t) {
  return fmt::format("{} ({}{}) {:.1f}/{:.1f} GB/s{}", t.name, t.device, t.emulated ? ", emulated" : "", t.read_gbps,
                     t.write_gbps, t.latency_ns > 0 ? fmt::format(", {:.0f} ns", t.latency_ns) : "");
}

// The tiers: --slow-tier's published ones when given, else the ones the
// program ran on when it carries them, else the published Optane.
Machine machine(const Options& o, const std::vector<ca::plan::ProgramTier>& program_tiers) {
  Machine m{o.prices_file.empty() ? ca::MemoryPrices::defaults() : ca::MemoryPrices::load(o.prices_file),
            tier_model("dram"),
            tier_model(o.slow_tier.empty() ? "optane" : o.slow_tier),
            {},
            "published figures (--slow-tier)"};
  const auto recorded = ca::tier_models(program_tiers);
  if (o.slow_tier.empty() && recorded) {
    std::tie(m.fast, m.slow) = *recorded;
    m.tiers_from = "the tiers the program ran on: " + describe_tier(program_tiers.front()) + "; " +
                   describe_tier(program_tiers.back());
  } else if (o.slow_tier.empty() && !o.program.empty()) {
    m.tiers_from =
        "published figures: the program carries no tiers with bandwidths (recorded before programs "
        "carried them, or on a tier nothing measured); --slow-tier picks one";
  }
  (void)m.prices.dollars_per_gb(m.fast.name);  // a missing price fails now, not after the replays
  (void)m.prices.dollars_per_gb(m.slow.name);
  return m;
}

// The iteration to replay: its trace (several iterations, for the
// replays' steady state), its program and its footprint.
struct Iteration {
  std::string label;
  ca::Trace trace;
  ca::plan::Program program;
  std::uint64_t footprint = 0;
  // The program's online profiles, keyed as the replayed kernels are named
  // (plan::profile_keyed); unset: the roofline prices the kernels.
  std::optional<ca::plan::KernelProfiles> profiles;
  // The tiers the program ran on (empty: it carries none).
  std::vector<ca::plan::ProgramTier> tiers;
};

Iteration load_iteration(const Options& o) {
  Iteration it;
  if (!o.program.empty()) {
    it.label = std::filesystem::path(o.program).filename().string();
    // Repeated for the replays' steady state when the iteration can repeat
    // (it retires what it creates and keeps what it had, as a training
    // step does), else replayed once, from a cold start.
    ca::SavedProgram saved = ca::saved_program(ca::plan::Program::load(o.program), nn::steady_trace_iterations);
    if (saved.unrepeatable) {
      fmt::print(stderr, "{}: the iteration cannot repeat ({}); replaying it once, from a cold start\n", it.label,
                 *saved.unrepeatable);
    }
    it.trace = std::move(saved.trace);
    it.program = std::move(saved.program);
    it.footprint = saved.footprint;
    it.profiles = std::move(saved.profiles);
    it.tiers = std::move(saved.tiers);
  } else {
    it.label = describe_model(o.model);
    const auto build = [&] { return nn::build_model(o.model); };
    const nn::TrainerOptions trainer = trainer_options(o);
    it.footprint = nn::measure_footprint(build, trainer);
    if (!o.quiet) {
      fmt::print(stderr, "{}: footprint {}, recording a dry run...\n", it.label, ca::format_bytes(it.footprint));
    }
    // Several iterations: the replays' figures are of their steady state
    // (sim/replay.hpp steady_window), whose program the planned policies are
    // given.
    it.trace = nn::dry_run_trace(build, trainer, nn::steady_trace_iterations);
    it.program = ca::plan::Program::from_trace(it.trace, nn::steady_trace_iteration);
  }
  if (!o.save_program.empty()) {
    it.program.save(o.save_program);
    fmt::print(stderr, "wrote the program of the iteration to {}\n", o.save_program);
  }
  return it;
}

// Every policy replayed at every fraction (sim/capacity_plan.hpp), the
// progress on standard error unless --quiet: on a terminal one line that
// updates, in a log every point.
ca::CapacityPlan replay_all(const Options& o, const Iteration& it, const Machine& m,
                            const ca::plan::KernelTimeModel& kernel_time, const std::function<double()>& elapsed) {
  ca::CapacityPlanOptions options;
  options.fractions = o.fractions;
  options.policies = o.policies;
  options.fast = m.fast;
  options.slow = m.slow;
  options.kernel_time = &kernel_time;
  options.plan_seconds = o.plan_seconds;
  options.threads = o.threads;
  options.mover_threads = o.mover_threads;
  if (!o.quiet) {
    fmt::print(stderr, "{}: {} kernels; replaying {} policies at {} fast-tier sizes (modeled)\n", it.label,
               it.program.kernels().size(), o.policies.size(), o.fractions.size());
  }
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const ca::CapacityPlan plan =
      ca::plan_capacity(it.trace, it.program, it.footprint, options,
                        [&](const ca::CapacityPoint& p, std::size_t done, std::size_t total) {
                          if (o.quiet) return;
                          const std::string line = fmt::format(
                              "[{:>4}/{}] {:5.1f} s  {:<14} at {:>3.0f}%: {}", done, total, elapsed(), p.policy,
                              100 * p.fraction, p.seconds ? fmt::format("{:.3f} s", *p.seconds) : p.note);
                          if (tty) {
                            fmt::print(stderr, "\r{:<78}", line);
                          } else {
                            fmt::print(stderr, "{}\n", line);
                          }
                        });
  if (tty && !o.quiet) fmt::print(stderr, "\n");
  return plan;
}

// With one fast-tier size (--fast-bytes, --fast-fraction): the bound and each
// policy's modeled seconds per iteration there.
void print_one_size(const ca::CapacityPlan& plan, const Options& o, const Iteration& it) {
  const double f = o.fractions.front();
  fmt::print("\nat a fast tier of {} ({:.1f}% of the footprint), modeled seconds per iteration{}:\n",
             ca::format_bytes(static_cast<std::uint64_t>(f * static_cast<double>(it.footprint))), 100 * f,
             it.profiles ? " (kernels priced by the program's online profiles)" : "");
  if (!plan.bounds.empty()) fmt::print("  {:<16} {:.6f} s\n", "lower bound", plan.bounds.front().seconds);
  for (std::size_t p = 0; p < o.policies.size(); ++p) {
    const ca::CapacityPoint& point = plan.points[p];
    fmt::print("  {:<16} {}\n", o.policies[p], point.seconds ? fmt::format("{:.6f} s", *point.seconds) : point.note);
  }
}

// The report on standard output: the iteration, the machine, the tables
// and the answer.
void print_report(const Options& o, const Iteration& it, const Machine& m, const ca::CapacityPlan& plan,
                  const ca::CapacityAnswer& answer, double seconds) {
  fmt::print("{}: footprint {} ({}), all-fast {:.3f} s per iteration (modeled)\n", it.label,
             ca::format_bytes(it.footprint), gb(it.footprint), plan.all_fast_seconds);
  if (o.model.family == "vit") {
    const VitCount v = count_vit(o.model, o.optimizer);
    fmt::print(
        "independent count ({} parameters, {}): parameters {} + gradients {} + {} {} + activations {} = {}; "
        "the dry run's footprint is {:.2f}x it\n",
        v.parameters, o.optimizer, gb(v.parameter_bytes), gb(v.gradient_bytes),
        o.optimizer == "adamw" ? "two moments" : "momentum", gb(v.optimizer_bytes), gb(v.activation_bytes),
        gb(v.total()), static_cast<double>(it.footprint) / static_cast<double>(v.total()));
    fmt::print("  activations kept for the backward pass, each of {} blocks:\n", o.model.depth);
    for (const auto& [what, bytes] : v.per_block) fmt::print("    {:>10}  {}\n", gb(bytes), what);
  }
  fmt::print("modeled machine: {} {:.1f}/{:.1f} GB/s read/write, {} {:.1f}/{:.1f} GB/s; compute {:.0f} GFLOP/s ({})\n",
             m.fast.name, m.fast.read_gbps, m.fast.write_gbps, m.slow.name, m.slow.read_gbps, m.slow.write_gbps,
             m.rate.flops_per_second / 1e9, m.rate.how);
  fmt::print("tiers from {}\n", m.tiers_from);
  print_tables(plan, o, m.prices, m.fast, m.slow);
  if (!o.fast_bytes.empty() || o.fast_fraction > 0) print_one_size(plan, o, it);
  if (answer.found) {
    fmt::print(
        "\nanswer: {} of {} ({:.0f}% of the footprint) with {}: {:.2f}x all-fast; memory {} ({} {} + {} {}) "
        "against {} all-{}: {:.0f}% {}\n",
        gb(answer.fast_bytes), m.fast.name, 100 * answer.fraction, answer.policy, answer.slowdown,
        dollars(answer.cost_dollars), gb(answer.fast_bytes), m.fast.name, gb(answer.slow_bytes), m.slow.name,
        dollars(answer.all_fast_cost_dollars), m.fast.name,
        100 * std::abs(1 - answer.cost_dollars / answer.all_fast_cost_dollars),
        answer.cost_dollars <= answer.all_fast_cost_dollars ? "less" : "more");
  } else {
    fmt::print("\nno answer: {}\n", answer.reason);
  }
  fmt::print("planned in {:.1f} s ({} replays); every figure is modeled, not measured\n", seconds,
             plan.points.size() + 1);
}

Json answer_json(const ca::CapacityAnswer& answer) {
  if (!answer.found) return Json{{"found", false}, {"reason", answer.reason}};
  return Json{{"found", true},
              {"policy", answer.policy},
              {"fraction", answer.fraction},
              {"fast_bytes", answer.fast_bytes},
              {"slow_bytes", answer.slow_bytes},
              {"slowdown", answer.slowdown},
              {"cost_dollars", answer.cost_dollars},
              {"all_dram_cost_dollars", answer.all_fast_cost_dollars},
              {"saving", 1 - answer.cost_dollars / answer.all_fast_cost_dollars}};
}

// Everything the report says, as JSON (tools/plot_plan.py reads it).
// A ViT's independent count (count_vit) as JSON; null for another model.
Json independent_count_json(const Options& o) {
  if (o.model.family != "vit") return nullptr;
  const VitCount v = count_vit(o.model, o.optimizer);
  Json by_layer = Json::array();
  for (const auto& [what, bytes] : v.per_block) by_layer.push_back(Json{{"kept", what}, {"bytes_per_block", bytes}});
  return Json{{"parameters", v.parameters},
              {"parameter_bytes", v.parameter_bytes},
              {"gradient_bytes", v.gradient_bytes},
              {"optimizer_state_bytes", v.optimizer_bytes},
              {"activation_bytes", v.activation_bytes},
              {"total_bytes", v.total()},
              {"activations_by_layer", by_layer}};
}

Json plan_json(const Options& o, const Iteration& it, const Machine& m, const ca::CapacityPlan& plan,
               const ca::CapacityAnswer& answer, double seconds) {
  Json doc{{"format", "cachedarrays-plan"},
           {"version", 1},
           {"model", it.label},
           {"footprint_bytes", it.footprint},
           {"optimizer", o.optimizer},
           {"independent_count", independent_count_json(o)},
           {"kind", "modeled"},
           {"machine",
            {{"fast", tier_json(m.fast, m.prices)},
             {"slow", tier_json(m.slow, m.prices)},
             {"flops_per_second", m.rate.flops_per_second},
             {"compute_rate", m.rate.how},
             {"tiers_from", m.tiers_from},
             {"kernel_model", "roofline"}}},
           {"within", o.within},
           {"all_fast_seconds", plan.all_fast_seconds},
           {"all_dram_cost_dollars", answer.all_fast_cost_dollars},
           {"plan_seconds", seconds},
           {"points", Json::array()}};
  for (const ca::CapacityPoint& p : plan.points) doc["points"].push_back(point_json(p, m.prices, m.fast, m.slow));
  doc["bounds"] = Json::array();
  for (std::size_t f = 0; f < plan.bounds.size(); ++f) {
    const ca::plan::FastTierBound& b = plan.bounds[f];
    doc["bounds"].push_back(Json{{"fraction", o.fractions[f]},
                                 {"fast_bytes", b.fast_bytes},
                                 {"seconds", b.seconds},
                                 {"slowdown", b.slowdown()},
                                 {"kernels_over", b.kernels_over},
                                 {"largest_excess_bytes", b.largest_excess}});
  }
  doc["answer"] = answer_json(answer);
  return doc;
}

// --json and --png (the plot of the JSON, which --png alone writes beside
// it); 1 when either cannot be written.
int write_outputs(const Options& o, const Json& doc) {
  std::string json_path = o.json;
  if (json_path.empty() && !o.png.empty()) json_path = o.png + ".json";
  if (!json_path.empty()) {
    if (!ca::tools::write_json(json_path, doc, "cachedarrays-plan")) return 1;
    fmt::print("wrote {}\n", json_path);
  }
  if (!o.png.empty()) {
    const auto [out, status] =
        ca::tools::capture(fmt::format("/usr/bin/python3 {} {} -o {} 2>&1", ca::tools::shell_quote(plot_script()),
                                       ca::tools::shell_quote(json_path), ca::tools::shell_quote(o.png)));
    if (status != 0) {
      fmt::print(stderr, "cachedarrays-plan: drawing {} failed (needs /usr/bin/python3 with matplotlib): {}", o.png,
                 out);
      return 1;
    }
    fmt::print("wrote {}\n", o.png);
  }
  return 0;
}

int run(Options& o) {
  settle(o);
  const auto start = std::chrono::steady_clock::now();
  const std::function<double()> elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const Iteration it = load_iteration(o);
  Machine m = machine(o, it.tiers);
  if (!o.fast_bytes.empty()) {
    o.fractions = {static_cast<double>(parse_bytes(o.fast_bytes)) /
                   static_cast<double>(std::max<std::uint64_t>(1, it.footprint))};
  } else if (o.fast_fraction > 0) {
    o.fractions = {o.fast_fraction};
  }
  std::shared_ptr<const ca::plan::KernelTimeModel> model;
  if (it.profiles) {
    m.rate = {0, "not used: the kernels are priced by the program's online profiles"};
    model = ca::plan::online_time_model(*it.profiles, {m.fast.read_gbps, m.fast.write_gbps},
                                        {m.slow.read_gbps, m.slow.write_gbps});
  } else {
    m.rate = compute_rate(o);
    model = std::make_shared<ca::plan::Roofline>(m.rate.flops_per_second,
                                                 ca::emulation::Bandwidth{m.fast.read_gbps, m.fast.write_gbps});
  }
  const ca::CapacityPlan plan = replay_all(o, it, m, *model, elapsed);
  const ca::CapacityAnswer answer = ca::answer_capacity(plan, o.within, m.prices, m.fast.name, m.slow.name);
  const double seconds = elapsed();
  print_report(o, it, m, plan, answer, seconds);
  return write_outputs(o, plan_json(o, it, m, plan, answer, seconds));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "cachedarrays-plan: how much fast memory (DRAM) does a training iteration need, with which policy, "
      "at what memory cost? Every policy replayed at a range of fast-tier sizes on a modeled machine "
      "(roofline kernels, the tiers' published bandwidths): modeled, not measured."};
  std::vector<std::string> model_names = nn::model_families();
  model_names.push_back("inception-v4");
  app.add_option("--model", o.model.family,
                 "a bundled model: resnet, densenet, vgg (with --depth), inception (inception-v4; depth 4) or vit "
                 "(with --size, or --patch/--dim/--depth/--heads/--mlp-ratio)")
      ->check(CLI::IsMember(model_names));
  app.add_option("--size", o.vit_size,
                 "vit: a size of the ViT paper: " + fmt::format("{}", fmt::join(nn::vit_sizes(), ", ")));
  app.add_option("--patch", o.model.vit.patch, "vit: the patch side")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--dim", o.model.vit.dim, "vit: features per token")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--heads", o.model.vit.heads, "vit: attention heads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--mlp-ratio", o.model.vit.mlp_ratio, "vit: the MLP's hidden features per token feature")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", o.optimizer,
                 "sgd or adamw, whose state the iteration holds (default: adamw for vit, "
                 "sgd for the CNNs)")
      ->check(CLI::IsMember({"sgd", "adamw"}));
  app.add_option("--depth", o.model.depth,
                 "its depth (resnet 18..200, densenet 121..264, vgg 11..416, inception 4 and the default; vit: its "
                 "blocks, default 12)");
  app.add_option("--batch", o.model.batch, "its batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image-size", o.model.image_size, "its square image size (inception: default 299, at least 75)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->each([&](const std::string&) { o.image_size_given = true; });
  app.add_option("--classes", o.model.classes, "its class count")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--width", o.model.width, "its channel multiplier")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--program", o.program,
                 "a program JSON of one iteration (plan::Program::save; Runtime::record_program) instead of a model; "
                 "with online profiles (CACHEDARRAYS_PROGRAM_OUT) its kernels are priced by them, else kernels the "
                 "roofline does not know by name are modeled memory-bound")
      ->check(CLI::ExistingFile);
  app.add_option("--fractions", o.fractions, "fast-tier sizes to try, as shares of the footprint")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fast-bytes", o.fast_bytes,
                 "one fast-tier size in bytes (K, M, G, T: powers of 1024) instead of --fractions: prints the lower "
                 "bound and every policy's modeled seconds there (default policies: all)");
  app.add_option("--fast-fraction", o.fast_fraction,
                 "one fast-tier size as a share of the footprint instead of --fractions, reported as --fast-bytes")
      ->check(CLI::PositiveNumber);
  std::string policies_help =
      "policies to compare, comma-separated, or 'all' (adds the planned policies, whose "
      "plans of paper-sized programs take minutes; --plan-seconds bounds each); default:";
  for (const std::string& p : ca::quick_policies()) policies_help += " " + p;
  app.add_option("--policies", o.policies, policies_help)->delimiter(',');
  app.add_option("--slow-tier", o.slow_tier,
                 "a published slow tier: optane (six interleaved DIMMs, 39.4/13.9 GB/s) or cxl (an expander at half "
                 "of DDR4's 118/83 GB/s), the fast tier then six-channel DDR4; default: the tiers a --program ran on "
                 "when it carries them (Runtime::record_program), else optane")
      ->check(CLI::IsMember({"optane", "cxl"}));
  app.add_option("--prices", o.prices_file,
                 "a JSON of dollars per GB by tier replacing the defaults: {\"dram\": 16.61, \"optane\": 7.85, "
                 "\"cxl\": 16.61} (AutoTM's Table 2; cxl at DRAM's price, an assumption)")
      ->check(CLI::ExistingFile);
  app.add_option("--gflops", o.gflops,
                 "the modeled machine's compute rate in GFLOP/s (default: this machine's achieved rate per core on "
                 "a small ResNet's convolutions times --cores)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cores", o.cores, "cores of the modeled machine when --gflops is not given (the paper's socket)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--profile-cache", o.profile_cache, "kernel profiles for the compute rate (measured once)")
      ->capture_default_str();
  app.add_option("--within", o.within, "the answer's bound on the slowdown against all-fast")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--plan-seconds", o.plan_seconds, "time limit of each planned policy's plan (default: theirs)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "replays side by side (default: every core)");
  app.add_option("--mover-threads", o.mover_threads,
                 "the modeled runtime's mover threads: asynchronous copies side by side (ca::MoverOptions)")
      ->capture_default_str()
      ->check(CLI::Range(1U, 64U));
  app.add_option("--json", o.json, "write every point and the answer as JSON (tools/plot_plan.py reads it)");
  app.add_option("--png", o.png, "draw time and cost against the fast tier's size (/usr/bin/python3, matplotlib)");
  app.add_option("--save-program", o.save_program,
                 "also write the iteration's program as JSON (what --program reads: edit it, plan it again)");
  app.add_flag("--quiet", o.quiet, "no progress on standard error");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cachedarrays-plan: {}\n", e.what());
    return 1;
  }
}
