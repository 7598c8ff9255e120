// Trains a CNN whose tensors are CachedArrays, on a fast tier smaller than
// the model's footprint, with no hand-written hints: the trainer emits them.
// With no arguments: a small ResNet on synthetic data, a fast tier of 50% of
// the measured footprint, the CA:LM policy; it finishes in well under a
// minute on 2 cores.
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/planned_footprint.hpp>
#include <cachedarrays/nn/profiler.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

struct Options {
  nn::ModelConfig model{.family = "resnet", .depth = 18, .batch = 8, .image_size = 64, .classes = 10, .width = 0.5};
  int iterations = 5;
  std::string policy = "ca-lm";
  std::uint64_t fast_bytes = 0;  // 0: fast_fraction of the footprint
  double fast_fraction = 0.5;
  std::string slow_path;
  std::uint64_t seed = 1;
  std::string data = "synthetic";
  int threads = 0;
  float learning_rate = 0.01f;
  std::string slow_emulation = "none";
  std::string trace_path;
  bool memory_mode = false;
  std::string profile_cache;  // empty: the A modes keep their fixed lookahead
  std::string planner = "online";
};

// A policy that plans ahead (autotm-*, autoswap:*) from the model's kernel profiles, measured
// once per machine into the cache file; the profiling and the solve print
// their progress.
std::unique_ptr<ca::policy::Policy> autotm_policy(const Options& o, const std::string& name,
                                                  const std::function<nn::Graph()>& build) {
  const std::string slow = o.slow_emulation == "none" ? "optane" : o.slow_emulation;
  const std::string cache = o.profile_cache.empty() ? nn::default_profile_cache() : o.profile_cache;
  fmt::print("{}: kernel profiles from {} (measured there once per machine: every kernel all in the fast tier, "
             "then all on the emulated {} tier)...\n",
             name, cache, slow);
  std::fflush(stdout);
  nn::ProfilerOptions profiler;
  profiler.slow_tier = slow;
  bool measured = false;
  const auto t0 = std::chrono::steady_clock::now();
  ca::policy::AutotmPolicyOptions options = nn::autotm_policy_options(name, build, cache, profiler, &measured);
  fmt::print("{}: kernel profiles {} in {:.1f} s\n", name, measured ? "measured and cached" : "loaded",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  options.log = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  return std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
}

void add_options(CLI::App& app, Options& o) {
  nn::ModelConfig& model = o.model;
  app.add_option("--model", model.family, "vgg, resnet or densenet")->capture_default_str();
  app.add_option("--depth", model.depth, "network depth (resnet 18..200, vgg 11..416, densenet 121..264)")
      ->capture_default_str();
  app.add_option("--batch", model.batch, "images per iteration")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image-size", model.image_size, "square image side")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--classes", model.classes, "output classes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--width", model.width, "channel multiplier (1 = the published network)")->capture_default_str();
  app.add_option("--iterations", o.iterations, "training iterations")->capture_default_str()->check(CLI::PositiveNumber);
  const auto registry = ca::policy::Registry::builtin();
  app.add_option("--policy", o.policy, "placement policy: " + fmt::format("{}", fmt::join(registry.names(), ", ")))
      ->capture_default_str();
  auto* fast_bytes_opt = app.add_option("--fast-bytes", o.fast_bytes, "fast tier size in bytes");
  app.add_option("--fast-fraction", o.fast_fraction, "fast tier size as a fraction of the measured footprint")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 64.0))
      ->excludes(fast_bytes_opt);
  app.add_option("--slow-path", o.slow_path, "DAX file or directory for the slow tier (default: a file under /dev/shm)");
  app.add_option("--seed", o.seed, "seed of the parameters and the synthetic data")->capture_default_str();
  app.add_option("--data", o.data, "synthetic | cifar10:PATH | mnist:IMAGES,LABELS")->capture_default_str();
  app.add_option("--threads", o.threads, "oneDNN threads (0: all cores)")->capture_default_str();
  app.add_option("--lr", o.learning_rate, "SGD learning rate")->capture_default_str();
  app.add_option("--slow-emulation", o.slow_emulation, "make the slow tier as slow as: optane, optane-1dimm, cxl, none")
      ->capture_default_str();
  app.add_option("--profile-cache", o.profile_cache,
                 "profile the model's kernels into FILE (once per machine): the autotm-* policies plan from the "
                 "profiles (default FILE: kernel_profiles.json in $XDG_CACHE_HOME/cachedarrays or ~/.cache/cachedarrays); with ca-lma / ca-lmpa the policy "
                 "chooses how far it looks ahead from them (ca::policy::profiled_lookahead) instead of a fixed "
                 "32 kernels");
  app.add_option("--planner", o.planner,
                 "where the objects of an iteration go in the fast tier: online (the allocator decides when each "
                 "is created), or planned ahead by best-fit (offset lines), smartpool or mip; a planner makes the "
                 "ca-l*m* policies place by its plan and --fast-fraction a fraction of the planned footprint")
      ->capture_default_str()
      ->check(CLI::IsMember({"online", "best-fit", "smartpool", "mip"}));
  app.add_option("--trace", o.trace_path, "record the last iteration to FILE.json (Chrome trace) or FILE.csv");
  app.add_flag("--memory-mode", o.memory_mode,
               "emulate Intel's 2LM memory mode instead of two tiers: everything lives on the slow tier "
               "(--slow-emulation, default optane), fronted by a hardware-like DRAM cache of the fast-tier size; "
               "--policy is not used");
}

// The tiers: a fast one of fast_bytes and a slow one that holds everything
// the fast one does not, with room for fragmentation and for the copies a
// policy keeps; or, in memory mode, the slow one alone.
std::vector<ca::DeviceSpec> devices(const Options& o, std::uint64_t footprint, std::uint64_t fast_bytes) {
  ca::DeviceSpec slow = ca::dax_file(o.slow_path, footprint + footprint / 2 + (64ull << 20), "slow");
  if (o.memory_mode) {
    // 2LM: one device, no software placement; the cache model charges
    // each access its misses (emulation.hpp).
    const auto profile = ca::emulation::profile(o.slow_emulation == "none" ? "optane" : o.slow_emulation);
    slow.emulation = ca::emulation::memory_mode(*profile, ca::emulation::memory_mode_cache_within(fast_bytes));
    return {slow};
  }
  slow.emulation = ca::emulation::profile(o.slow_emulation);
  return {ca::dram(fast_bytes, "fast"), slow};
}

// The policy --policy names, placing by the --planner's offset plan when
// there is one: ca-lm + best-fit is ca-lm+best-fit.
std::string with_planner(const Options& o) {
  if (o.planner == "online" || o.memory_mode) return o.policy;
  std::string modes = o.policy;
  if (modes == "planned") modes = "ca-lm";
  if (modes == "planned-a") modes = "ca-lma";
  modes = modes.substr(0, modes.find('+'));
  if (modes.rfind("ca", 0) != 0) {
    throw ca::invalid_argument("--planner " + o.planner + " places objects for a ca-l*m* policy (ca-lm, ca-lma, "
                               "ca-lmp, ca-lmpa, planned); --policy " + o.policy + " does not take an offset plan");
  }
  return modes + "+" + o.planner;  // Mode::parse says what is wrong with a mode that cannot take one
}

// Trains for o.iterations, printing each one's loss, speed and traffic
// between the tiers, then the summary; the last iteration is traced when
// --trace asks for it.
void train(ca::Runtime& rt, nn::Trainer& trainer, nn::Dataset& dataset, const Options& o) {
  const nn::ModelConfig& model = o.model;
  std::vector<float> images(static_cast<std::size_t>(model.batch * model.channels * model.image_size * model.image_size));
  std::vector<float> labels(static_cast<std::size_t>(model.batch));
  std::vector<double> seconds;
  const ca::Stats start = rt.stats();
  for (int it = 1; it <= o.iterations; ++it) {
    dataset.next_batch(images, labels);
    if (!o.trace_path.empty() && it == o.iterations) rt.start_trace();
    const ca::Stats before = rt.stats();
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = trainer.step(images, labels);
    rt.collect();  // end of iteration: deferred frees (no-M modes) happen here
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    seconds.push_back(s);
    const ca::Stats delta = rt.stats().since(before);
    fmt::print("iter {:>3}/{}  loss {:.4f}  {:7.1f} img/s  {:.3f} s  fast->slow {:>10}  slow->fast {:>10}\n", it,
               o.iterations, loss, static_cast<double>(model.batch) / s, s, ca::format_bytes(delta.bytes_copied[0][1]),
               ca::format_bytes(delta.bytes_copied[1][0]));
  }
  if (!o.trace_path.empty()) {
    rt.stop_trace();
    rt.trace()->save(o.trace_path, rt.device_names());
    fmt::print("trace of the last iteration: {} ({} events)\n", o.trace_path, rt.trace()->events().size());
  }
  const ca::Stats total = rt.stats().since(start);
  // The first iteration creates oneDNN primitives: report the rest.
  const std::size_t skip = seconds.size() > 1 ? 1 : 0;
  const double steady = std::accumulate(seconds.begin() + static_cast<long>(skip), seconds.end(), 0.0) /
                        static_cast<double>(seconds.size() - skip);
  fmt::print("\nsummary: {} iterations, {:.3f} s per iteration, {:.1f} images/s (after the first)\n", o.iterations,
             steady, static_cast<double>(model.batch) / steady);
  fmt::print("{}\n", total);
}

void run(Options o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  nn::ModelConfig& model = o.model;
  const auto dataset =
      nn::open_dataset(o.data, {model.channels, model.image_size, model.image_size}, model.classes, o.seed);
  // A dataset dictates the image shape and the class count.
  const nn::Dims image = dataset->image_dims();
  model.channels = image.at(0);
  model.image_size = image.at(1);
  model.classes = dataset->classes();

  const auto build = [&] { return nn::build_model(model); };
  // The program of an iteration, for the policies that plan ahead (ca-lma,
  // ca-lmpa, offset plans); the others ignore it.
  const ca::plan::Program program = nn::dry_run_program(build);
  const std::string policy_name = with_planner(o);
  const std::uint64_t online_footprint = nn::measure_footprint(build);
  std::uint64_t footprint = online_footprint;
  if (o.planner != "online") {
    const nn::PlannedFootprint planned =
        nn::measure_planned_footprint(build, program, ca::plan::parse_offset_planner(o.planner));
    footprint = planned.footprint;
    fmt::print("offset plan ({}): footprint {} ({:.4f}x its lower bound {}), online allocator {}\n", o.planner,
               ca::format_bytes(planned.footprint),
               static_cast<double>(planned.footprint) / static_cast<double>(planned.lower_bound),
               ca::format_bytes(planned.lower_bound), ca::format_bytes(online_footprint));
  }
  std::uint64_t fast_bytes = o.fast_bytes;
  if (fast_bytes == 0) {
    fast_bytes = static_cast<std::uint64_t>(std::llround(o.fast_fraction * static_cast<double>(footprint)));
  }
  fast_bytes = std::max<std::uint64_t>(fast_bytes, 4096);

  std::unique_ptr<ca::policy::Policy> policy =
      ca::policy::Registry::builtin().make(o.memory_mode ? "first-touch" : policy_name);
  if (!o.memory_mode && !o.profile_cache.empty() && policy_name.rfind("ca", 0) == 0 &&
      ca::policy::Mode::parse(policy_name).async_lookahead) {
    // The profiles time every kernel all-fast and on the emulated slow tier.
    const std::string slow = o.slow_emulation == "none" ? "optane" : o.slow_emulation;
    nn::ProfilerOptions profiler;
    profiler.slow_tier = slow;
    const ca::plan::KernelProfiles profiles = nn::profile_model(build, o.profile_cache, profiler);
    const ca::EmulationProfile tier = *ca::emulation::profile(slow);
    ca::plan::LookaheadChoice choice;
    const ca::policy::Lookahead lookahead =
        ca::policy::profiled_lookahead(program, profiles, {tier.dram_read_gbps, tier.dram_write_gbps},
                                       {tier.read_gbps, tier.write_gbps}, &choice);
    fmt::print("lookahead from the kernel profiles ({}): {} kernels ({} kernels' copies longer than any window)\n",
               o.profile_cache, lookahead.kernels, choice.uncovered);
    policy = std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::Mode::parse(policy_name), lookahead);
  }
  if (!o.memory_mode && ca::policy::planned_policy_options(policy_name)) policy = autotm_policy(o, policy_name, build);
  const auto* autotm = dynamic_cast<const ca::policy::AutotmPolicy*>(policy.get());
  const auto* planned_policy = dynamic_cast<const ca::policy::CachedArraysPolicy*>(policy.get());
  const ca::policy::PlannedPlacement* placement =
      planned_policy != nullptr ? planned_policy->planned_placement() : nullptr;
  ca::Runtime rt(devices(o, std::max(footprint, online_footprint), fast_bytes), std::move(policy));
  rt.set_program(program);
  nn::Graph graph = build();
  fmt::print("model {}-{} (width {}), batch {}, {}x{}x{} images, {} classes: {} parameters\n", model.family,
             model.depth, model.width, model.batch, model.channels, model.image_size, model.image_size,
             model.classes, graph.parameter_count());
  fmt::print("footprint of one iteration {} | fast tier {} ({:.0f}%) | policy {} | oneDNN threads {}\n",
             ca::format_bytes(footprint), ca::format_bytes(fast_bytes),
             100.0 * static_cast<double>(fast_bytes) / static_cast<double>(footprint),
             o.memory_mode ? "none (2LM memory mode: the fast tier is a hardware-like cache)" : rt.policy_name(),
             omp_get_max_threads());
  for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("  {}\n", rt.manager().describe(d));

  nn::TrainerOptions options;
  options.seed = o.seed;
  options.sgd.learning_rate = o.learning_rate;
  nn::Trainer trainer(&rt, std::move(graph), options);
  train(rt, trainer, *dataset, o);
  if (autotm != nullptr) {
    const ca::policy::AutotmPolicy::Counters& c = autotm->counters();
    fmt::print("{}: {} iterations on the plan, {} departed from it; {} planned moves in and {} out made; {} objects "
               "the plan put in fast memory found no hole there\n",
               autotm->name(), c.iterations_followed, c.departures, c.moves_in, c.moves_out, c.unplanned);
  }
  if (placement != nullptr) {
    const ca::policy::PlannedPlacement::Counters& c = placement->counters();
    fmt::print("offset plan ({}): {} objects at planned offsets, {} unplanned (no plan yet, or "
               "unknown to it), {} slots taken, {} placed above the plan, {} slots beyond the fast tier; {} plans made\n",
               ca::plan::to_string(placement->planner()), c.planned, c.unplanned, c.collisions, c.above, c.beyond, c.plans);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN whose tensors live on a fast and a slow memory tier"};
  Options options;
  add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    run(options);
    return 0;
  } catch (const ca::error& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 1;
  } catch (const dnnl::error& e) {
    fmt::print(stderr, "train_cnn: oneDNN error: {} (status {})\n", e.what(), static_cast<int>(e.status));
    return 1;
  }
}
