// Implementation of capacity_plan.hpp (header-only mode includes it from there; the
// compiled library builds it in src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/capacity_plan.hpp"

#include <fmt/format.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/runtime/runtime.hpp"
#include "cachedarrays/sim/replay_judge.hpp"
#include "cachedarrays/sim/simulate_2lm.hpp"

namespace cachedarrays {

namespace detail {

// Where a modeled point replays: the trace, its program, and the two tiers'
// sizes.
struct ModeledMachine {
  const Trace& trace;
  const plan::Program& program;
  std::uint64_t fast_bytes = 0, slow_bytes = 0;
};

// The policy named, planned policies planning with the replay's own kernel
// model and the machine's bandwidths (the virtual devices have no emulation
// profile to take them from); a planner that weighs candidate plans has
// them judged by replaying each on `machine`.
inline std::unique_ptr<policy::Policy> modeled_policy(const policy::PolicyDescriptor& descriptor,
                                                      const CapacityPlanOptions& o, const ModeledMachine& machine) {
  std::optional<policy::AutotmPolicyOptions> planned = descriptor.planned_options();
  if (!planned) return descriptor.make();
  static const plan::MemoryBound memory_bound;
  const plan::KernelTimeModel* model = o.kernel_time != nullptr ? o.kernel_time : &memory_bound;
  planned->time_model = std::shared_ptr<const plan::KernelTimeModel>(model, [](const auto*) {});  // kept, not owned
  planned->fast_tier = {o.fast.read_gbps, o.fast.write_gbps};
  planned->slow_tier = {o.slow.read_gbps, o.slow.write_gbps};
  if (o.plan_seconds > 0) planned->solver.time_limit_seconds = o.plan_seconds;
  // The solve's progress is not the plan's report; its warnings are.
  planned->log = [](const std::string& line) {
    if (line.rfind("warning", 0) == 0) fmt::print(stderr, "cachedarrays: {}\n", line);
  };
  if (planned->planner) {
    // Kept, not owned: the point's runtime, and so its policy and judge,
    // end before the trace, the program and the options do.
    const auto kept = [](const auto* p) {
      return std::shared_ptr<std::remove_pointer_t<decltype(p)>>(p, [](const auto*) {});
    };
    planned->judge = replay_judge(kept(&machine.trace), kept(&machine.program),
                                  {.fast_bytes = machine.fast_bytes,
                                   .slow_bytes = machine.slow_bytes,
                                   .fast = o.fast,
                                   .slow = o.slow,
                                   .kernel_time = kept(o.kernel_time),
                                   .mover_threads = o.mover_threads},
                                  *planned);
  }
  return std::make_unique<policy::AutotmPolicy>(std::move(*planned));
}

inline std::uint64_t slow_capacity(const CapacityPlanOptions& o, std::uint64_t footprint) {
  return o.slow_bytes > 0 ? o.slow_bytes : 4 * footprint;
}

inline void check(const CapacityPlanOptions& o) {
  if (o.fractions.empty()) throw invalid_argument("cachedarrays: capacity plan: no fast-tier fraction to try");
  for (const double f : o.fractions) {
    if (!(f >= 0) || !std::isfinite(f)) {
      throw invalid_argument(fmt::format(
          "cachedarrays: capacity plan: fast-tier fraction {} is not allowed; each must be >= 0 (a share of the "
          "footprint; 0 is one page, 1 and above is all of it)",
          f));
    }
  }
  const policy::Registry registry = policy::Registry::builtin();
  for (const std::string& p : o.policies) {
    if (!registry.contains(p)) {
      std::string valid;
      for (const std::string& name : all_policies()) valid += (valid.empty() ? "" : ", ") + name;
      throw invalid_argument(fmt::format("cachedarrays: capacity plan: unknown policy '{}'; valid: {}", p, valid));
    }
  }
  for (const DeviceModel* d : {&o.fast, &o.slow}) {
    if (!(d->read_gbps > 0) || !(d->write_gbps > 0)) {
      throw invalid_argument(
          fmt::format("cachedarrays: capacity plan: tier '{}' needs read and write bandwidths > 0 "
                      "GB/s; got {} / {}",
                      d->name, d->read_gbps, d->write_gbps));
    }
  }
  if (o.mover_threads == 0) {
    throw invalid_argument(
        "cachedarrays: capacity plan: the mover has 0 threads; it needs at least 1 "
        "(MoverOptions::threads)");
  }
}

}  // namespace detail

CACHEDARRAYS_INLINE TierTraffic per_iteration(TierTraffic t, std::uint64_t iterations) noexcept {
  if (iterations > 1) {
    t.fast_read /= iterations;
    t.fast_written /= iterations;
    t.slow_read /= iterations;
    t.slow_written /= iterations;
  }
  return t;
}

CACHEDARRAYS_INLINE TierTraffic tier_traffic(const Stats& s) {
  return {s.kernel_bytes_read[0] + s.bytes_copied_out_of(0), s.kernel_bytes_written[0] + s.bytes_copied_into(0),
          s.kernel_bytes_read[1] + s.bytes_copied_out_of(1), s.kernel_bytes_written[1] + s.bytes_copied_into(1)};
}

CACHEDARRAYS_INLINE TierTraffic tier_traffic(const TwoLmCounters& c) {
  return {c.dram_bytes_read, c.dram_bytes_written, c.nvram_bytes_read, c.nvram_bytes_written};
}

CACHEDARRAYS_INLINE std::string hit_rates(const TwoLmCounters& c) {
  return fmt::format("hit {:.1f}% clean-miss {:.1f}% dirty-miss {:.1f}%", 100 * c.share(c.hits),
                     100 * c.share(c.clean_misses), 100 * c.share(c.dirty_misses));
}

CACHEDARRAYS_INLINE std::uint64_t fast_tier_bytes(double fraction, std::uint64_t footprint) noexcept {
  constexpr std::uint64_t page = 4096;
  if (fraction == 1.0) return footprint;
  const auto bytes = static_cast<std::uint64_t>(fraction * static_cast<double>(footprint));
  // Above the footprint the tier rounds up, so that it never falls below it.
  if (fraction > 1.0) return std::max(footprint, (bytes + page - 1) / page * page);
  return std::max(page, bytes / page * page);
}

CACHEDARRAYS_INLINE double footprint_expansion(const Stats& stats, std::uint64_t footprint) {
  std::uint64_t peak = 0;
  for (const DeviceCounters& d : stats.devices) peak += d.peak_bytes_in_use;
  return static_cast<double>(peak) / static_cast<double>(footprint) - 1;
}

CACHEDARRAYS_INLINE std::uint64_t replayed_footprint(const Trace& trace) {
  // A heap never extends past every allocation laid end to end (each
  // rounded up to the heap's alignment): big enough, and a virtual heap
  // reserves its address space, so not a petabyte.
  std::uint64_t bound = 1 << 20;
  for (const TraceEvent& e : trace.events()) {
    if (e.kind == TraceKind::create) bound += e.bytes + 4096;
  }
  Runtime rt({virtual_device(bound, "fast"), virtual_device(bound, "slow")},
             policy::Registry::builtin().make("all-fast"));
  const std::vector<DeviceModel> models{{"fast", 1, 1}, {"slow", 1, 1}};
  return replay(trace, rt, models).stats.devices[0].peak_extent;
}

CACHEDARRAYS_INLINE std::vector<std::string> quick_policies() {
  const policy::Registry registry = policy::Registry::builtin();
  std::vector<std::string> names;
  for (const policy::PolicyDescriptor& d : registry.descriptors()) {
    if (!d.plans_ahead() && !d.measures_candidates()) names.push_back(d.name());
  }
  return names;
}

CACHEDARRAYS_INLINE std::vector<std::string> all_policies() {
  const policy::Registry registry = policy::Registry::builtin();
  std::vector<std::string> names;
  for (const policy::PolicyDescriptor& d : registry.descriptors()) {
    if (!d.measures_candidates()) names.push_back(d.name());
  }
  return names;
}

CACHEDARRAYS_INLINE CapacityPoint model_point(const Trace& trace, const plan::Program& program, std::uint64_t footprint,
                                              const std::string& policy, double fraction,
                                              const CapacityPlanOptions& options) {
  CapacityPoint point;
  point.policy = policy;
  point.fraction = fraction;
  point.fast_bytes = fast_tier_bytes(fraction, footprint);
  const std::uint64_t slow = detail::slow_capacity(options, footprint);
  const policy::PolicyDescriptor descriptor = policy::Registry::builtin().describe(policy);
  if (descriptor.measures_candidates()) {
    throw invalid_argument("cachedarrays: '" + policy +
                           "' picks among the policies by timing them on the running program, so no model replays "
                           "it; model its candidates instead");
  }
  try {
    if (const std::optional<policy::MemoryMode>& memory_mode = descriptor.memory_mode()) {
      const TwoLmResult r = simulate_2lm(trace, point.fast_bytes, slow, memory_mode->retire_frees_at_once, options.fast,
                                         options.slow, options.kernel_time);
      point.seconds = r.modeled_seconds;
      point.traffic = per_iteration(tier_traffic(r.counters), r.counters_iterations);
      point.slow_peak = r.peak_bytes;
      point.note = hit_rates(r.counters);
      return point;
    }
    const detail::ModeledMachine machine{trace, program, point.fast_bytes, slow};
    MoverOptions mover;
    mover.threads = options.mover_threads;
    Runtime rt({virtual_device(point.fast_bytes, "fast"), virtual_device(slow, "slow")},
               detail::modeled_policy(descriptor, options, machine), std::move(mover));
    if (descriptor.needs_program()) rt.set_program(program);
    const ReplayResult r = replay(trace, rt, {options.fast, options.slow}, options.kernel_time);
    // Time and traffic of the steady iteration; the peaks of the whole run.
    const ReplayIteration steady = steady_iteration(r);
    point.seconds = steady.seconds;
    point.exposed_copy_seconds = steady.exposed_copy_seconds;
    point.copy_seconds = steady.copy_seconds;
    point.traffic = per_iteration(tier_traffic(steady.stats), steady.iterations);
    point.slow_peak = r.stats.devices[1].peak_extent;
    point.expansion = footprint_expansion(r.stats, footprint);
    if (const auto* autotm = dynamic_cast<const policy::AutotmPolicy*>(&rt.policy()))
      point.note = autotm->plan_summary();
  } catch (const out_of_memory&) {
    point.seconds.reset();
    point.note = "out of memory";
  }
  return point;
}

CACHEDARRAYS_INLINE CapacityPlan plan_capacity(const Trace& trace, const plan::Program& program,
                                               std::uint64_t footprint, const CapacityPlanOptions& options,
                                               const CapacityProgress& progress) {
  detail::check(options);
  CapacityPlan result;
  result.footprint = footprint;
  const std::size_t n_policies = options.policies.size();
  const std::size_t total = 1 + options.fractions.size() * n_policies;
  std::vector<CapacityPoint> points(total);
  std::atomic<std::size_t> done{0};
  std::mutex report;
  // Task 0 is the baseline: everything in the fast tier.
  const auto run = [&](std::size_t task) {
    points[task] = task == 0 ? model_point(trace, program, footprint, "all-fast", 1.0, options)
                             : model_point(trace, program, footprint, options.policies[(task - 1) % n_policies],
                                           options.fractions[(task - 1) / n_policies], options);
    const std::size_t now = ++done;
    if (progress) {
      const std::lock_guard<std::mutex> lock(report);
      progress(points[task], now, total);
    }
  };
  // The replays are independent (each its own runtime on virtual devices;
  // the trace, the program and the kernel model are only read), so they run
  // side by side; the points keep their order whatever the threads.
  tbb::task_arena arena(options.threads > 0 ? static_cast<int>(options.threads) : tbb::task_arena::automatic);
  arena.execute([&] { tbb::parallel_for(std::size_t{0}, total, run, tbb::simple_partitioner{}); });
  if (!points[0].seconds) {
    throw invalid_argument("cachedarrays: capacity plan: all-fast does not fit in a fast tier of the footprint (" +
                           format_bytes(footprint) + "); the footprint is too small for the trace");
  }
  result.all_fast_seconds = *points[0].seconds;
  result.points.assign(points.begin() + 1, points.end());
  for (CapacityPoint& p : result.points) {
    if (p.seconds) p.slowdown = *p.seconds / result.all_fast_seconds;
  }
  const plan::MemoryBound memory_bound;
  for (const double fraction : options.fractions) {
    result.bounds.push_back(
        plan::fast_tier_bound(program, options.kernel_time != nullptr ? *options.kernel_time : memory_bound,
                              {options.fast.read_gbps, options.fast.write_gbps},
                              {options.slow.read_gbps, options.slow.write_gbps}, fast_tier_bytes(fraction, footprint)));
  }
  return result;
}

CACHEDARRAYS_INLINE double memory_cost(const CapacityPoint& point, const MemoryPrices& prices,
                                       std::string_view fast_tier, std::string_view slow_tier) {
  return prices.cost(fast_tier, point.fast_bytes) + prices.cost(slow_tier, point.slow_peak);
}

CACHEDARRAYS_INLINE CapacityAnswer answer_capacity(const CapacityPlan& plan, double within, const MemoryPrices& prices,
                                                   std::string_view fast_tier, std::string_view slow_tier) {
  if (!(within >= 1)) {
    throw invalid_argument(
        fmt::format("cachedarrays: capacity answer: a slowdown bound of {} is not allowed; it is "
                    "a ratio to all-fast, >= 1 (1.10: within 10%)",
                    within));
  }
  (void)prices.dollars_per_gb(slow_tier);  // a tier without a price is refused whatever the points
  CapacityAnswer answer;
  answer.all_fast_cost_dollars = prices.cost(fast_tier, plan.footprint);
  const CapacityPoint* best = nullptr;
  double best_cost = 0;
  for (const CapacityPoint& p : plan.points) {
    if (!p.seconds || p.slowdown > within) continue;
    const double cost = memory_cost(p, prices, fast_tier, slow_tier);
    // The smallest fast tier; at one size the fastest policy, then the cheaper.
    if (best == nullptr || p.fast_bytes < best->fast_bytes ||
        (p.fast_bytes == best->fast_bytes &&
         (*p.seconds < *best->seconds || (*p.seconds == *best->seconds && cost < best_cost)))) {
      best = &p;
      best_cost = cost;
    }
  }
  if (best == nullptr) {
    answer.reason = fmt::format("no policy is within {:.2f}x of all-fast at any fast-tier size tried", within);
    return answer;
  }
  answer.found = true;
  answer.policy = best->policy;
  answer.fraction = best->fraction;
  answer.fast_bytes = best->fast_bytes;
  answer.slow_bytes = best->slow_peak;
  answer.slowdown = best->slowdown;
  answer.cost_dollars = best_cost;
  return answer;
}

}  // namespace cachedarrays
