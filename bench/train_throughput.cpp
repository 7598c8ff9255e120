// train_throughput: images/s of training (forward, backward, optimizer
// step) with cachedarrays::nn, against PyTorch training the same network on
// the same machine in the same run (docs/benchmarks.md):
//   ours     nn::Trainer::step under the all-fast policy (a fast tier larger
//            than the measured footprint, so no data moves between tiers:
//            this measures the trainer and the runtime's per-kernel cost)
//   PyTorch  bench/pytorch_reference.py, the same ResNet v1.5 layer for layer,
//            torch.optim.SGD with the same hyper-parameters; or (--model vit)
//            the same Vision Transformer, trained with AdamW on both sides
// ratio = ours / PyTorch images/s; the goal is >= 1.0.
//
// Both sides use the same oneDNN (Debian's libdnnl2; PyTorch links it as
// its MKL-DNN backend) and the same OpenMP thread count; the table says so
// or warns. Images/s = batch / median time of one iteration after warm-up;
// synthetic N(0, 1) images with random labels.
//
//   train_throughput --model vit --batch 128 --image-size 28 --channels 1 --classes 10 --threads 2
//   train_throughput [--batch 16] [--image-size 64] [--threads T]
//                    [--iterations 5] [--warmup 2] [--models resnet18,resnet50]
//                    [--rounds 1] [--quick] [--profile] [--no-pytorch] [--json FILE]
//
// --profile runs one more iteration of ours and charges the wall time from
// the start of each kernel to the start of the next one to that kernel's
// name: the kernel plus the bookkeeping (hints, pinning, descriptor keys,
// allocation) that follows it. Run with DNNL_VERBOSE=1 for oneDNN's own
// time per primitive.
#include <fmt/format.h>
#include <omp.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include "bench_support.hpp"

#ifndef CACHEDARRAYS_PYTORCH_REFERENCE
#define CACHEDARRAYS_PYTORCH_REFERENCE "bench/pytorch_reference.py"
#endif

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace bench = cachedarrays::bench;
using bench::capture;
using bench::shell_quote;

namespace {

using bench::Clock;

struct Settings {
  std::int64_t batch = 16;
  std::int64_t image_size = 64;
  std::int64_t classes = 1000;
  std::int64_t channels = 3;
  int threads = 0;
  int iterations = 5;
  int warmup = 2;
  int rounds = 1;
  bool profile = false;
  bool pytorch = true;
  std::string python = "/usr/bin/python3";
  std::string script = CACHEDARRAYS_PYTORCH_REFERENCE;
};

struct Measurement {
  double median_seconds = 0;
  double images_per_s = 0;
  std::int64_t parameters = 0;
};

struct PyTorchResult {
  Measurement m;
  int threads = 0;
  std::string torch_version;
  bool mkldnn = false;
  std::string mkldnn_version;
};

struct Row {
  std::string model;
  Measurement ours;
  std::optional<PyTorchResult> pytorch;
  std::string pytorch_error;  // why there is no PyTorch figure
};

// "resnet50" -> {"resnet", 50}; "vit" -> the default ViT (models.hpp
// TransformerShape, 6 blocks).
nn::ModelConfig model_config(const std::string& name, const Settings& s) {
  nn::ModelConfig c;
  const auto digit = name.find_first_of("0123456789");
  if (name == "vit") {
    c.family = "vit";
    c.depth = 6;
  } else if (digit == std::string::npos || digit == 0) {
    throw ca::invalid_argument("train_throughput: model '" + name +
                               "' is not of the form FAMILYDEPTH (resnet50) nor vit");
  } else {
    c.family = name.substr(0, digit);
    c.depth = std::stoi(name.substr(digit));
  }
  c.channels = s.channels;
  c.batch = s.batch;
  c.image_size = s.image_size;
  c.classes = s.classes;
  return c;
}

// Wall time from each kernel's start to the next kernel's start, by op
// kind (the first word of the kernel's signature). Reorders are split by
// layout change and by whether the tensor is shaped like a parameter (first
// dimension other than the batch) or an activation.
class KernelTimer final : public nn::KernelObserver {
 public:
  explicit KernelTimer(std::int64_t batch) : batch_(batch) {}
  void start() {
    last_ = Clock::now();
    current_ = "(before the first kernel)";
  }
  void stop() { charge(Clock::now()); }
  void on_kernel(const std::string& signature, std::span<const nn::KernelArg> args) override {
    charge(Clock::now());
    current_ = ca::plan::kernel_kind(signature);
    if (current_ == "reorder" && args.size() == 2) {
      const nn::Tensor& from = *args[0].tensor;
      current_ = fmt::format("reorder {} {}->{}", from.dims().at(0) == batch_ ? "activation" : "parameter",
                             layout(from), layout(*args[1].tensor));
    }
    ++counts_[current_];
  }
  [[nodiscard]] const std::map<std::string, double>& seconds() const { return seconds_; }
  [[nodiscard]] const std::map<std::string, int>& counts() const { return counts_; }

 private:
  static const char* layout(const nn::Tensor& t) { return t.desc() == nn::plain_desc(t.dims()) ? "plain" : "blocked"; }
  void charge(Clock::time_point now) {
    seconds_[current_] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  std::int64_t batch_;
  Clock::time_point last_;
  std::string current_;
  std::map<std::string, double> seconds_;
  std::map<std::string, int> counts_;
};

void print_profile(const std::string& model, const KernelTimer& timer, double step_seconds) {
  std::vector<std::pair<double, std::string>> by_time;
  for (const auto& [name, s] : timer.seconds()) by_time.emplace_back(s, name);
  std::sort(by_time.rbegin(), by_time.rend());
  fmt::print("\nprofile of one iteration of {} ({:.1f} ms): wall time from a kernel's start to the next one's\n", model,
             1e3 * step_seconds);
  const bench::Table table({{"kernel", 40, bench::Align::left}, {"calls", 6}, {"ms", 10}, {"share", 7}}, "  ");
  table.print_header();
  for (const auto& [s, name] : by_time) {
    const auto it = timer.counts().find(name);
    table.print_row({name, std::to_string(it == timer.counts().end() ? 0 : it->second), fmt::format("{:.2f}", 1e3 * s),
                     fmt::format("{:.1f}%", 100.0 * s / step_seconds)});
  }
}

Measurement run_ours(const std::string& name, const Settings& s, bool first_round) {
  const nn::ModelConfig config = model_config(name, s);
  const auto build = [&] { return nn::build_model(config); };
  // The ViT trains with AdamW (and so does PyTorch's), the CNNs with SGD.
  nn::TrainerOptions options;
  if (config.family == "vit") options.optimizer = nn::Optimizer::adamw;
  const std::uint64_t footprint = nn::measure_footprint(build, options);
  // all-fast: everything fits on the fast tier with room for fragmentation;
  // the slow tier exists only because a Runtime has two tiers here.
  const std::uint64_t fast_bytes = footprint + footprint / 5 + (64ull << 20);
  const std::uint64_t slow_bytes = 64ull << 20;
  ca::Runtime rt({ca::dram(fast_bytes, "fast"), ca::dax_file({}, slow_bytes, "slow")},
                 ca::policy::Registry::builtin().make("all-fast"));
  nn::Trainer trainer(&rt, build(), options);
  Measurement m;
  m.parameters = trainer.graph().parameter_count();

  const auto dataset =
      nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 1);
  std::vector<float> images(
      static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size));
  std::vector<float> labels(static_cast<std::size_t>(config.batch));
  const auto one_step = [&] {
    dataset->next_batch(images, labels);  // not timed: PyTorch reuses one batch
    return bench::seconds_of([&] {
      (void)trainer.step(images, labels);
      rt.collect();
    });
  };
  for (int i = 0; i < s.warmup; ++i) (void)one_step();
  std::vector<double> seconds;
  for (int i = 0; i < s.iterations; ++i) seconds.push_back(one_step());
  m.median_seconds = bench::median(seconds);
  m.images_per_s = static_cast<double>(config.batch) / m.median_seconds;

  const ca::Stats stats = rt.stats();
  if (stats.devices.size() > 1 && stats.devices[1].peak_bytes_in_use > 0) {
    fmt::print("  warning: {} used the slow tier ({}): the fast tier ({}) was too small for all-fast\n", name,
               ca::format_bytes(stats.devices[1].peak_bytes_in_use), ca::format_bytes(fast_bytes));
  }
  fmt::print("  ours    {:<9} footprint {}, fast tier {}, iterations (ms): {}\n", name, ca::format_bytes(footprint),
             ca::format_bytes(fast_bytes),
             fmt::join(
                 [&] {
                   std::vector<std::string> v;
                   for (double x : seconds) v.push_back(fmt::format("{:.1f}", 1e3 * x));
                   return v;
                 }(),
                 " "));

  if (s.profile && first_round) {
    KernelTimer timer(config.batch);
    trainer.context().set_observer(&timer);
    dataset->next_batch(images, labels);
    timer.start();
    const double step_seconds = bench::seconds_of([&] {
      (void)trainer.step(images, labels);
      rt.collect();
      timer.stop();
    });
    trainer.context().set_observer(nullptr);
    print_profile(name, timer, step_seconds);
  }
  return m;
}

// Whether `python` can import torch; the reason when it cannot.
std::optional<std::string> torch_missing(const Settings& s) {
  const auto [out, status] = capture(shell_quote(s.python) + " -c 'import torch' 2>&1");
  if (status == 0) return std::nullopt;
  // The last line of a traceback names the error (ModuleNotFoundError: ...).
  std::string reason = out.substr(0, out.find_last_not_of('\n') + 1);
  reason = reason.substr(reason.find_last_of('\n') + 1);
  return "PyTorch is not importable by " + s.python + " (install Debian's python3-torch): " + reason;
}

PyTorchResult run_pytorch(const std::string& model, const Settings& s, int threads) {
  const std::string command = fmt::format(
      "{} {} --model {} --batch {} --image-size {} --classes {} --threads {} --iterations {} --warmup {}{} --json -",
      shell_quote(s.python), shell_quote(s.script), shell_quote(model), s.batch, s.image_size, s.classes, threads,
      s.iterations, s.warmup, model == "vit" ? fmt::format(" --channels {}", s.channels) : std::string());
  const auto [out, status] = capture(command);
  if (status != 0) {
    throw std::runtime_error("`" + command + "` exited with status " + std::to_string(status));
  }
  // The JSON object is the last line the script prints.
  const auto start = out.rfind('{');
  const nlohmann::json j = nlohmann::json::parse(start == std::string::npos ? out : out.substr(start));
  PyTorchResult r;
  r.m.images_per_s = j.at("images_per_s").get<double>();
  r.m.median_seconds = j.at("median_seconds").get<double>();
  r.m.parameters = j.at("parameters").get<std::int64_t>();
  r.threads = j.at("threads").get<int>();
  r.torch_version = j.at("torch_version").get<std::string>();
  r.mkldnn = j.at("mkldnn").get<bool>();
  r.mkldnn_version = j.value("mkldnn_version", "");
  fmt::print("  PyTorch {:<9} iterations (ms): {}\n", model,
             fmt::join(
                 [&] {
                   std::vector<std::string> v;
                   for (double x : j.at("seconds")) v.push_back(fmt::format("{:.1f}", 1e3 * x));
                   return v;
                 }(),
                 " "));
  return r;
}

// oneDNN's OpenMP barriers wait for every thread: one preempted thread
// stretches a kernel by a scheduler time slice, so other work on the
// machine makes the figures swing several-fold (on either side).
void warn_if_disturbed(double others, const char* when) {
  if (others > 0.1) {
    fmt::print(
        "  warning: other processes kept {:.2f} cores busy {}: the figures are noisy (run on an idle "
        "machine; --rounds N keeps each side's least disturbed median)\n",
        others, when);
  }
}

struct Options {
  Settings settings;
  std::vector<std::string> models = {"resnet18", "resnet50"};
  bool quick = false;
  bool no_pytorch = false;
  std::string json_path;
};

void add_options(CLI::App& app, Options& o) {
  Settings& s = o.settings;
  app.add_option("--batch", s.batch, "images per iteration")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image-size", s.image_size, "square image side")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--classes", s.classes, "output classes (both sides)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--channels", s.channels, "image channels (both sides; Fashion-MNIST has 1)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", s.threads, "OpenMP threads of oneDNN, both sides (0: all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", s.iterations, "timed iterations (the median is reported)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed iterations first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--models,--model", o.models, "networks, e.g. resnet18,resnet50 or vit (patch 4, dim 128, 6 blocks)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--quick", o.quick, "ResNet-18 only, 1 warm-up and 2 timed iterations (smoke test)");
  app.add_option("--rounds", s.rounds,
                 "measure ours and PyTorch alternately this many times and keep each side's best median "
                 "(steadier on a shared machine)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--profile", s.profile, "time one more iteration of ours kernel by kernel");
  app.add_flag("--no-pytorch", o.no_pytorch, "measure ours only (ratio n/a)");
  app.add_option("--json", o.json_path, "also write the rows as a JSON array to this file");
  app.add_option("--python", s.python, "interpreter for the PyTorch baseline")->capture_default_str();
  app.add_option("--script", s.script, "the PyTorch baseline script")->capture_default_str();
}

// What both sides run with, and what the machine was doing before the run.
struct Setup {
  int threads = 0;
  std::string dnnl_version;
  std::optional<std::string> no_torch;  // why PyTorch is not measured
  bench::CpuSample start;
};

// Sets oneDNN's threads, looks for PyTorch, watches the machine idle for a
// moment, and prints what the run is about to compare.
Setup prepare(const Settings& s) {
  Setup setup;
  setup.threads = s.threads > 0 ? s.threads : omp_get_num_procs();
  omp_set_num_threads(setup.threads);
  const dnnl::version_t* dnnl = dnnl::version();
  setup.dnnl_version = fmt::format("{}.{}.{}", dnnl->major, dnnl->minor, dnnl->patch);
  setup.no_torch = s.pytorch ? torch_missing(s) : std::optional<std::string>("PyTorch not run (--no-pytorch)");
  const bench::CpuSample before_pause = bench::cpu_sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  setup.start = bench::cpu_sample();
  const double others_before = bench::others_busy_cores(before_pause, setup.start);

  fmt::print("train_throughput: training images/s (forward + backward + SGD step), cachedarrays::nn vs PyTorch\n");
  fmt::print("  batch {}, {}x{} images, {} classes, {} warm-up + {} timed iterations (median), policy all-fast\n",
             s.batch, s.image_size, s.image_size, s.classes, s.warmup, s.iterations);
  fmt::print("  ours: oneDNN v{} ({} runtime), {} OpenMP threads, {} cores; other processes busy {:.2f} cores\n",
             setup.dnnl_version, dnnl->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other", omp_get_max_threads(),
             omp_get_num_procs(), others_before);
  warn_if_disturbed(others_before, "before the start");
  if (setup.no_torch) fmt::print("  {}\n  reporting our figures only (ratio n/a)\n", *setup.no_torch);
  return setup;
}

// Each model, ours and PyTorch alternately for --rounds: alternating the two
// sides spreads any disturbance over both; the best median of each side is
// the least disturbed one.
std::vector<Row> measure(const std::vector<std::string>& models, const Settings& s, const Setup& setup) {
  std::vector<Row> rows;
  for (const std::string& model : models) {
    Row row;
    row.model = model;
    for (int round = 0; round < s.rounds; ++round) {
      const Measurement ours = run_ours(model, s, round == 0);
      if (round == 0 || ours.median_seconds < row.ours.median_seconds) row.ours = ours;
      if (setup.no_torch) {
        row.pytorch_error = *setup.no_torch;
        continue;
      }
      try {
        const PyTorchResult p = run_pytorch(model, s, setup.threads);
        if (!row.pytorch || p.m.median_seconds < row.pytorch->m.median_seconds) row.pytorch = p;
      } catch (const std::exception& e) {
        row.pytorch_error = e.what();
        fmt::print("  PyTorch {}: {}\n", model, e.what());
        break;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void report(const std::vector<Row>& rows, const Settings& s, const Setup& setup) {
  // Same library, same threads: otherwise the ratio compares setups, not code.
  for (const Row& r : rows) {
    if (!r.pytorch) continue;
    const PyTorchResult& p = *r.pytorch;
    fmt::print("  PyTorch {} (torch {}): mkldnn available {}, oneDNN v{} ({}), threads {} ({})\n", r.model,
               p.torch_version, p.mkldnn ? "True" : "False", p.mkldnn_version,
               p.mkldnn_version == setup.dnnl_version ? "same as ours" : "DIFFERENT from ours", p.threads,
               p.threads == setup.threads ? "same as ours" : "DIFFERENT from ours");
    if (p.m.parameters != r.ours.parameters) {
      fmt::print("  WARNING: {} has {} parameters here and {} in PyTorch: the networks differ\n", r.model,
                 r.ours.parameters, p.m.parameters);
    }
  }

  fmt::print("\n");
  const bench::Table table({{"model", 9, bench::Align::left},
                            {"batch", 5},
                            {"image", 6},
                            {"threads", 7},
                            {"ours img/s", 12},
                            {"torch img/s", 12},
                            {"ratio", 7},
                            {"params ours", 12},
                            {"params torch", 12}});
  table.print_header();
  for (const Row& r : rows) {
    table.print_row({r.model, std::to_string(s.batch), std::to_string(s.image_size), std::to_string(setup.threads),
                     fmt::format("{:.2f}", r.ours.images_per_s),
                     r.pytorch ? fmt::format("{:.2f}", r.pytorch->m.images_per_s) : "n/a",
                     r.pytorch ? fmt::format("{:.2f}x", r.ours.images_per_s / r.pytorch->m.images_per_s) : "n/a",
                     std::to_string(r.ours.parameters), r.pytorch ? std::to_string(r.pytorch->m.parameters) : "n/a"});
  }
  fmt::print("ratio = ours / PyTorch images/s (goal >= 1.0){}\n",
             s.rounds > 1 ? fmt::format("; best median of {} rounds per side", s.rounds) : "");
  const double others_during = bench::others_busy_cores(setup.start, bench::cpu_sample());
  fmt::print("other processes kept {:.2f} of {} cores busy during the run\n", others_during, omp_get_num_procs());
  warn_if_disturbed(others_during, "during the run");
}

nlohmann::json to_json(const std::vector<Row>& rows, const Settings& s, int threads) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json row = {{"model", r.model},
                          {"batch", s.batch},
                          {"image_size", s.image_size},
                          {"threads", threads},
                          {"images_per_s", r.ours.images_per_s},
                          {"parameters", r.ours.parameters}};
    row["pytorch_images_per_s"] = r.pytorch ? nlohmann::json(r.pytorch->m.images_per_s) : nlohmann::json();
    row["ratio_vs_pytorch"] =
        r.pytorch ? nlohmann::json(r.ours.images_per_s / r.pytorch->m.images_per_s) : nlohmann::json();
    if (r.pytorch) row["pytorch_parameters"] = r.pytorch->m.parameters;
    if (!r.pytorch_error.empty()) row["pytorch_error"] = r.pytorch_error;
    out.push_back(row);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training images/s of cachedarrays::nn against PyTorch on the same ResNet"};
  Options options;
  add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  bench::print_machine_line();
  Settings& s = options.settings;
  if (options.quick) {
    options.models = {"resnet18"};
    s.warmup = 1;
    s.iterations = 2;
  }
  s.pytorch = !options.no_pytorch;

  const Setup setup = prepare(s);
  std::vector<Row> rows;
  try {
    rows = measure(options.models, s, setup);
  } catch (const ca::error& e) {
    fmt::print(stderr, "train_throughput: {}\n", e.what());
    return EXIT_FAILURE;
  } catch (const dnnl::error& e) {
    fmt::print(stderr, "train_throughput: oneDNN error: {} (status {})\n", e.what(), static_cast<int>(e.status));
    return EXIT_FAILURE;
  } catch (const std::exception& e) {
    fmt::print(stderr, "train_throughput: {}\n", e.what());
    return EXIT_FAILURE;
  }
  report(rows, s, setup);
  if (!options.json_path.empty() &&
      !bench::write_json(options.json_path, to_json(rows, s, setup.threads), "train_throughput")) {
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
