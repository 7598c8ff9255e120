#include "cachedarrays/nn/profiler.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <thread>

#include <oneapi/dnnl/dnnl.hpp>

#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "cachedarrays/plan/program/profiled_time.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/runtime/environment.hpp"

namespace cachedarrays::nn {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "unknown CPU";
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

// One batch for the graph's input and label: values in [0, 1) from a fixed
// pattern, every label class 0.
struct Batch {
  explicit Batch(const Graph& graph) {
    const auto count = [&](ValueRole role) {
      const Dims dims = graph.value(graph.values_with_role(role).at(0)).dims;
      std::size_t n = 1;
      for (std::int64_t d : dims) n *= static_cast<std::size_t>(d);
      return n;
    };
    images.resize(count(ValueRole::input));
    for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
    labels.assign(count(ValueRole::label), 0.0f);
  }
  std::vector<float> images;
  std::vector<float> labels;
};

// Every sample of every kernel of `iterations` training iterations on a
// runtime over `devices` whose objects all go to the last device, after a
// warm-up iteration (first touches, primitive creation), by signature.
struct Samples {
  std::map<std::string, std::vector<double>> seconds;
  std::map<std::string, plan::TracedKernel> bytes;  // of the first sample
};

Samples sample_kernels(const std::function<Graph()>& build, const TrainerOptions& options,
                       std::vector<DeviceSpec> devices, int iterations) {
  Runtime rt(std::move(devices), policy::Registry::builtin().make("all-slow"));
  Samples samples;
  {
    Trainer trainer(&rt, build(), options);
    const Batch batch(trainer.graph());
    (void)trainer.step(batch.images, batch.labels);
    rt.collect();
    const Trace& trace = rt.start_trace();
    for (int i = 0; i < iterations; ++i) {
      (void)trainer.step(batch.images, batch.labels);
      rt.collect();
    }
    rt.stop_trace();
    for (const plan::TracedKernel& k : plan::traced_kernels(trace)) {
      const std::string& signature = trace.names().at(k.name);
      samples.seconds[signature].push_back(k.seconds);
      samples.bytes.emplace(signature, k);
    }
  }
  return samples;
}

}  // namespace

plan::MachineKey this_machine(const std::string& slow_tier, unsigned compute_threads) {
  const dnnl_version_t* v = dnnl_version();
  return {
      cpu_model(), compute_threads > 0 ? compute_threads : std::max(1u, std::thread::hardware_concurrency()),
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " (" + v->hash + ")",
      slow_tier};
}

std::vector<std::string> kernel_signatures(const std::function<Graph()>& build, const TrainerOptions& options) {
  struct Collector final : KernelObserver {
    std::vector<std::string> signatures;
    void on_kernel(const std::string& signature, std::span<const KernelArg>) override {
      if (std::find(signatures.begin(), signatures.end(), signature) == signatures.end()) {
        signatures.push_back(signature);
      }
    }
  } collector;
  Trainer trainer(nullptr, build(), options);
  (void)trainer.step({}, {});
  trainer.context().set_observer(&collector);
  (void)trainer.step({}, {});
  trainer.context().set_observer(nullptr);
  return collector.signatures;
}

plan::KernelProfiles measure_profiles(const std::function<Graph()>& build, const ProfilerOptions& options) {
  if (options.iterations < 1) {
    throw invalid_argument("cachedarrays::nn: the profiler needs at least 1 timed iteration, got " +
                           std::to_string(options.iterations));
  }
  const std::optional<EmulationProfile> slow_profile = emulation::profile(options.slow_tier);
  if (!slow_profile) {
    throw invalid_argument("cachedarrays::nn: the profiler needs an emulated slow tier; '" + options.slow_tier +
                           "' emulates none (try \"optane\")");
  }
  const std::uint64_t footprint = measure_footprint(build, options.trainer);
  const Samples fast = sample_kernels(build, options.trainer, {dram(footprint, "fast")}, options.iterations);
  DeviceSpec slow_device = dax_file({}, 2 * footprint + (1 << 20), "slow");
  slow_device.emulation = *slow_profile;
  const Samples slow = sample_kernels(build, options.trainer, {slow_device}, options.iterations);

  plan::KernelProfiles profiles(this_machine(options.slow_tier, options.compute_threads));
  for (const auto& [signature, seconds] : fast.seconds) {
    const auto on_slow = slow.seconds.find(signature);
    if (on_slow == slow.seconds.end()) continue;  // ran on one tier only: no complete profile
    const plan::TracedKernel& k = fast.bytes.at(signature);
    profiles.set(signature, {median(seconds), median(on_slow->second), plan::kernel_flops(signature), k.bytes_read,
                             k.bytes_written});
  }
  return profiles;
}

std::string default_profile_cache() {
  std::filesystem::path dir = user_cache_directory().value_or(std::filesystem::path{});
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (dir.empty() || ec) dir = ".";
  return (dir / "kernel_profiles.json").string();
}

plan::KernelProfiles profile_model(const std::function<Graph()>& build, const std::string& cache_path,
                                   const ProfilerOptions& options, bool* measured) {
  if (measured != nullptr) *measured = false;
  const std::vector<std::string> needed = kernel_signatures(build, options.trainer);
  return plan::load_or_measure(cache_path, this_machine(options.slow_tier, options.compute_threads), needed, [&] {
    if (measured != nullptr) *measured = true;
    return measure_profiles(build, options);
  });
}

namespace {

[[noreturn]] void throw_not_planned(const std::string& policy_name) {
  std::string valid;
  const policy::Registry registry = policy::Registry::builtin();
  for (const policy::PolicyDescriptor& d : registry.descriptors()) {
    if (d.plans_ahead()) valid += (valid.empty() ? "" : ", ") + d.name();
  }
  throw invalid_argument("autotm_policy_options: '" + policy_name + "' is not a policy that plans ahead (" + valid +
                         ")");
}

}  // namespace

policy::AutotmPolicyOptions autotm_policy_options(const policy::PolicyDescriptor& policy,
                                                  const std::function<Graph()>& build, const std::string& cache_path,
                                                  const ProfilerOptions& options, bool* measured) {
  std::optional<policy::AutotmPolicyOptions> planned = policy.planned_options();
  if (!planned) throw_not_planned(policy.name());
  const std::optional<EmulationProfile> tier = emulation::profile(options.slow_tier);
  if (!tier) {
    throw invalid_argument(
        "autotm_policy_options: the slow tier must be emulated (optane, optane-1dimm, cxl), not "
        "'" +
        options.slow_tier + "': the plan needs its bandwidths");
  }
  policy::AutotmPolicyOptions autotm = std::move(*planned);
  autotm.fast_tier = {tier->dram_read_gbps, tier->dram_write_gbps};
  autotm.slow_tier = {tier->read_gbps, tier->write_gbps};
  autotm.time_model = plan::profiled_time_model(profile_model(build, cache_path, options, measured), autotm.fast_tier,
                                                autotm.slow_tier);
  return autotm;
}

policy::AutotmPolicyOptions autotm_policy_options(const std::string& policy_name, const std::function<Graph()>& build,
                                                  const std::string& cache_path, const ProfilerOptions& options,
                                                  bool* measured) {
  const std::optional<policy::PolicyDescriptor> descriptor = policy::Registry::builtin().try_describe(policy_name);
  if (!descriptor) throw_not_planned(policy_name);
  return autotm_policy_options(*descriptor, build, cache_path, options, measured);
}

}  // namespace cachedarrays::nn
