// Trains a CNN whose tensors are CachedArrays, on a fast tier smaller than
// the model's footprint, with no hand-written hints: the trainer emits them.
// With no arguments: a small ResNet on synthetic data, a fast tier of 50% of
// the measured footprint, the CA:LM policy; it finishes in well under a
// minute on 2 cores.
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN whose tensors live on a fast and a slow memory tier"};
  nn::ModelConfig model;
  model.family = "resnet";
  model.depth = 18;
  model.batch = 8;
  model.image_size = 64;
  model.classes = 10;
  model.width = 0.5;
  int iterations = 5;
  std::string policy = "ca-lm";
  std::uint64_t fast_bytes = 0;
  double fast_fraction = 0.5;
  std::string slow_path;
  std::uint64_t seed = 1;
  std::string data = "synthetic";
  int threads = 0;
  float learning_rate = 0.01f;
  std::string slow_emulation = "none";
  std::string trace_path;
  bool memory_mode = false;
  app.add_option("--model", model.family, "vgg, resnet or densenet")->capture_default_str();
  app.add_option("--depth", model.depth, "network depth (resnet 18..200, vgg 11..416, densenet 121..264)")
      ->capture_default_str();
  app.add_option("--batch", model.batch, "images per iteration")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image-size", model.image_size, "square image side")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--classes", model.classes, "output classes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--width", model.width, "channel multiplier (1 = the published network)")->capture_default_str();
  app.add_option("--iterations", iterations, "training iterations")->capture_default_str()->check(CLI::PositiveNumber);
  const auto registry = ca::policy::Registry::builtin();
  app.add_option("--policy", policy, "placement policy: " + fmt::format("{}", fmt::join(registry.names(), ", ")))
      ->capture_default_str();
  auto* fast_bytes_opt = app.add_option("--fast-bytes", fast_bytes, "fast tier size in bytes");
  app.add_option("--fast-fraction", fast_fraction, "fast tier size as a fraction of the measured footprint")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 64.0))
      ->excludes(fast_bytes_opt);
  app.add_option("--slow-path", slow_path, "DAX file or directory for the slow tier (default: a file under /dev/shm)");
  app.add_option("--seed", seed, "seed of the parameters and the synthetic data")->capture_default_str();
  app.add_option("--data", data, "synthetic | cifar10:PATH | mnist:IMAGES,LABELS")->capture_default_str();
  app.add_option("--threads", threads, "oneDNN threads (0: all cores)")->capture_default_str();
  app.add_option("--lr", learning_rate, "SGD learning rate")->capture_default_str();
  app.add_option("--slow-emulation", slow_emulation, "make the slow tier as slow as: optane, optane-1dimm, cxl, none")
      ->capture_default_str();
  app.add_option("--trace", trace_path, "record the last iteration to FILE.json (Chrome trace) or FILE.csv");
  app.add_flag("--memory-mode", memory_mode,
               "emulate Intel's 2LM memory mode instead of two tiers: everything lives on the slow tier "
               "(--slow-emulation, default optane), fronted by a hardware-like DRAM cache of the fast-tier size; "
               "--policy is not used");
  CLI11_PARSE(app, argc, argv);

  try {
    if (threads > 0) omp_set_num_threads(threads);
    const auto dataset = nn::open_dataset(data, {model.channels, model.image_size, model.image_size}, model.classes, seed);
    // A dataset dictates the image shape and the class count.
    const nn::Dims image = dataset->image_dims();
    model.channels = image.at(0);
    model.image_size = image.at(1);
    model.classes = dataset->classes();

    const auto build = [&] { return nn::build_model(model); };
    const std::uint64_t footprint = nn::measure_footprint(build);
    if (fast_bytes == 0) fast_bytes = static_cast<std::uint64_t>(std::llround(fast_fraction * static_cast<double>(footprint)));
    fast_bytes = std::max<std::uint64_t>(fast_bytes, 4096);
    // The slow tier holds everything the fast one does not, with room for
    // fragmentation and for the copies a policy keeps.
    const std::uint64_t slow_bytes = footprint + footprint / 2 + (64ull << 20);

    ca::DeviceSpec slow = ca::dax_file(slow_path, slow_bytes, "slow");
    std::vector<ca::DeviceSpec> devices;
    if (memory_mode) {
      // 2LM: one device, no software placement; the cache model charges
      // each access its misses (emulation.hpp).
      const auto profile = ca::emulation::profile(slow_emulation == "none" ? "optane" : slow_emulation);
      slow.emulation = ca::emulation::memory_mode(*profile, ca::emulation::memory_mode_cache_within(fast_bytes));
      policy = "first-touch";
      devices = {slow};
    } else {
      slow.emulation = ca::emulation::profile(slow_emulation);
      devices = {ca::dram(fast_bytes, "fast"), slow};
    }
    ca::Runtime rt(devices, registry.make(policy));
    nn::Graph graph = build();
    fmt::print("model {}-{} (width {}), batch {}, {}x{}x{} images, {} classes: {} parameters\n", model.family,
               model.depth, model.width, model.batch, model.channels, model.image_size, model.image_size,
               model.classes, graph.parameter_count());
    fmt::print("footprint of one iteration {} | fast tier {} ({:.0f}%) | policy {} | oneDNN threads {}\n",
               ca::format_bytes(footprint), ca::format_bytes(fast_bytes),
               100.0 * static_cast<double>(fast_bytes) / static_cast<double>(footprint),
               memory_mode ? "none (2LM memory mode: the fast tier is a hardware-like cache)" : rt.policy_name(),
               omp_get_max_threads());
    for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("  {}\n", rt.manager().describe(d));

    nn::TrainerOptions options;
    options.seed = seed;
    options.sgd.learning_rate = learning_rate;
    nn::Trainer trainer(&rt, std::move(graph), options);

    std::vector<float> images(static_cast<std::size_t>(model.batch * model.channels * model.image_size * model.image_size));
    std::vector<float> labels(static_cast<std::size_t>(model.batch));
    std::vector<double> seconds;
    const ca::Stats start = rt.stats();
    for (int it = 1; it <= iterations; ++it) {
      dataset->next_batch(images, labels);
      if (!trace_path.empty() && it == iterations) rt.start_trace();
      const ca::Stats before = rt.stats();
      const auto t0 = std::chrono::steady_clock::now();
      const float loss = trainer.step(images, labels);
      rt.collect();  // end of iteration: deferred frees (no-M modes) happen here
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      seconds.push_back(s);
      const ca::Stats delta = rt.stats().since(before);
      fmt::print("iter {:>3}/{}  loss {:.4f}  {:7.1f} img/s  {:.3f} s  fast->slow {:>10}  slow->fast {:>10}\n", it,
                 iterations, loss, static_cast<double>(model.batch) / s, s, ca::format_bytes(delta.bytes_copied[0][1]),
                 ca::format_bytes(delta.bytes_copied[1][0]));
    }
    if (!trace_path.empty()) {
      rt.stop_trace();
      rt.trace()->save(trace_path, rt.device_names());
      fmt::print("trace of the last iteration: {} ({} events)\n", trace_path, rt.trace()->events().size());
    }
    const ca::Stats total = rt.stats().since(start);
    // The first iteration creates oneDNN primitives: report the rest.
    const std::size_t skip = seconds.size() > 1 ? 1 : 0;
    const double steady = std::accumulate(seconds.begin() + static_cast<long>(skip), seconds.end(), 0.0) /
                          static_cast<double>(seconds.size() - skip);
    fmt::print("\nsummary: {} iterations, {:.3f} s per iteration, {:.1f} images/s (after the first)\n", iterations,
               steady, static_cast<double>(model.batch) / steady);
    fmt::print("{}\n", total);
    return 0;
  } catch (const ca::error& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 1;
  } catch (const dnnl::error& e) {
    fmt::print(stderr, "train_cnn: oneDNN error: {} (status {})\n", e.what(), static_cast<int>(e.status));
    return 1;
  }
}
