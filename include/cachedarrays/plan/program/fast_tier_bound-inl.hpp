// Implementation of fast_tier_bound.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/fast_tier_bound.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace cachedarrays::plan {

namespace detail {

struct BoundObject {
  std::uint32_t object = 0;
  std::uint64_t bytes = 0;
  double penalty = 0;  // of all the kernel's arguments that name it
};

// The least cost of leaving in the slow tier a set of `objects` of at
// least `excess` bytes: exact by enumeration for few objects (`cost` of a
// subset, as a bit mask over `objects`), else the linear relaxation of the
// penalties (cheapest per byte first, the last one in part), which is no
// more than the exact answer when penalties together cost at least their
// sum (fast_tier_bound.hpp).
template <typename SubsetCost>
double least_cost_covering(std::vector<BoundObject>& objects, std::uint64_t excess, const SubsetCost& cost) {
  if (objects.size() <= fast_tier_bound_exact_objects) {
    double best = std::numeric_limits<double>::infinity();
    const std::uint32_t subsets = 1u << objects.size();
    for (std::uint32_t s = 1; s < subsets; ++s) {
      std::uint64_t bytes = 0;
      for (std::size_t i = 0; i < objects.size(); ++i) bytes += (s >> i & 1u) != 0 ? objects[i].bytes : 0;
      if (bytes >= excess) best = std::min(best, cost(s));
    }
    return best;
  }
  std::sort(objects.begin(), objects.end(), [](const BoundObject& a, const BoundObject& b) {
    // a.penalty / a.bytes < b.penalty / b.bytes, without dividing by 0
    return a.penalty * static_cast<double>(b.bytes) < b.penalty * static_cast<double>(a.bytes);
  });
  double penalty = 0;
  std::uint64_t left = excess;
  for (const BoundObject& o : objects) {
    if (o.bytes >= left) return penalty + o.penalty * static_cast<double>(left) / static_cast<double>(o.bytes);
    penalty += o.penalty;
    left -= o.bytes;
  }
  return penalty;  // unreachable: the objects' bytes pass the tier by `excess`
}

// The bound, each kernel over the tier priced by `extra(k, objects,
// excess)`: the least time its slow-tier arguments add.
template <typename Extra>
FastTierBound fast_tier_bound_by(const Program& program, const TierCosts& costs, std::uint64_t fast_bytes,
                                 const Extra& extra) {
  FastTierBound bound;
  bound.fast_bytes = fast_bytes;
  bound.kernel_seconds.reserve(program.kernels().size());
  std::vector<BoundObject> objects;
  for (std::size_t k = 0; k < program.kernels().size(); ++k) {
    objects.clear();
    std::uint64_t bytes = 0;
    const std::vector<ProgramArg>& args = program.kernels()[k].args;
    for (std::size_t a = 0; a < args.size(); ++a) {
      const auto same = std::find_if(objects.begin(), objects.end(),
                                     [&](const BoundObject& o) { return o.object == args[a].object; });
      if (same != objects.end()) {
        same->bytes = std::max(same->bytes, args[a].bytes);
        same->penalty += costs.slow_penalty[k][a];
      } else {
        objects.push_back({args[a].object, args[a].bytes, costs.slow_penalty[k][a]});
      }
    }
    for (const BoundObject& o : objects) bytes += o.bytes;
    double seconds = costs.fast_seconds[k];
    bound.all_fast_seconds += seconds;
    if (bytes > fast_bytes) {
      ++bound.kernels_over;
      bound.largest_excess = std::max(bound.largest_excess, bytes - fast_bytes);
      seconds += extra(k, objects, bytes - fast_bytes);
    }
    bound.kernel_seconds.push_back(seconds);
    bound.seconds += seconds;
  }
  return bound;
}

}  // namespace detail

CACHEDARRAYS_INLINE FastTierBound fast_tier_bound(const Program& program, const TierCosts& costs,
                                                  std::uint64_t fast_bytes) {
  costs.check(program, "fast_tier_bound");
  return detail::fast_tier_bound_by(program, costs, fast_bytes,
                                    [](std::size_t, std::vector<detail::BoundObject>& objects, std::uint64_t excess) {
                                      return detail::least_cost_covering(objects, excess, [&](std::uint32_t subset) {
                                        double penalty = 0;
                                        for (std::size_t i = 0; i < objects.size(); ++i)
                                          penalty += (subset >> i & 1u) != 0 ? objects[i].penalty : 0;
                                        return penalty;
                                      });
                                    });
}

CACHEDARRAYS_INLINE FastTierBound fast_tier_bound(const Program& program, const KernelTimeModel& model,
                                                  const emulation::Bandwidth& fast, const emulation::Bandwidth& slow,
                                                  std::uint64_t fast_bytes) {
  const TierCosts costs = TierCosts::from_model(program, model, fast, slow);
  std::vector<ArgTraffic> traffic;
  return detail::fast_tier_bound_by(
      program, costs, fast_bytes, [&](std::size_t k, std::vector<detail::BoundObject>& objects, std::uint64_t excess) {
        const ProgramKernel& kernel = program.kernels()[k];
        return detail::least_cost_covering(objects, excess, [&](std::uint32_t subset) {
          // The kernel's time with the subset's objects in the slow tier, by
          // the model itself.
          traffic.clear();
          for (const ProgramArg& a : kernel.args) {
            std::size_t i = 0;
            while (objects[i].object != a.object) ++i;
            const emulation::Bandwidth& tier = (subset >> i & 1u) != 0 ? slow : fast;
            traffic.push_back({a.bytes, a.access, a.access == Access::read ? tier.read_gbps : tier.write_gbps});
          }
          return std::max(0.0, model.seconds(kernel.name, traffic) - costs.fast_seconds[k]);
        });
      });
}

}  // namespace cachedarrays::plan
