// Programs for the planner tests (autoswap_tests.cpp, autoswap_bo_tests.cpp,
// redl_tests.cpp, planned_policies_tests.cpp, autotm_offsets_tests.cpp): one
// made from a list of objects and each kernel's uses, random ones, and one
// that fragments the online allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "test_support.hpp"

namespace test {

// The 4-object program of autotm_tests.cpp's fragmentation test: a, b, c
// (64 bytes) for kernel 0, then a and c retired and d (128 bytes) created
// for kernel 1 beside b. 192 bytes at each kernel; on the best-fit heap d
// lands above a's and c's holes, at 256.
inline cachedarrays::plan::Program fragmenting_program() {
  namespace ca = cachedarrays;
  using ca::plan::StepKind;
  std::vector<ca::plan::ProgramObject> objects{{64, false}, {64, false}, {64, false}, {128, false}};
  std::vector<ca::plan::ProgramKernel> kernels{{"k0", {{0, 64, W}, {1, 64, W}, {2, 64, W}}},
                                               {"k1", {{1, 64, R}, {3, 128, W}}}};
  std::vector<ca::plan::ProgramStep> steps{{StepKind::create, 0}, {StepKind::create, 1}, {StepKind::create, 2},
                                           {StepKind::kernel, 0}, {StepKind::retire, 0}, {StepKind::retire, 2},
                                           {StepKind::create, 3}, {StepKind::kernel, 1}, {StepKind::retire, 1},
                                           {StepKind::retire, 3}};
  return ca::plan::Program(objects, kernels, steps);
}

}  // namespace test

namespace test::autoswap {

namespace ca = cachedarrays;

struct Use {
  std::uint32_t object = 0;
  ca::Access access = ca::Access::read;
};

// A program of these objects and kernels: each object the iteration
// creates (not persistent) is created just before its first use and retired
// right after its last; a persistent one listed in `retire_after` (object,
// kernel) is retired after that kernel.
inline ca::plan::Program program_of(std::vector<ca::plan::ProgramObject> objects,
                                    const std::vector<std::vector<Use>>& uses,
                                    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& retire_after = {}) {
  std::vector<ca::plan::ProgramKernel> kernels;
  std::vector<std::vector<std::uint32_t>> users(objects.size());
  for (std::size_t k = 0; k < uses.size(); ++k) {
    ca::plan::ProgramKernel kernel{"k" + std::to_string(k), {}};
    for (const Use& u : uses[k]) {
      kernel.args.push_back({u.object, objects[u.object].bytes, u.access});
      std::vector<std::uint32_t>& by = users[u.object];
      if (by.empty() || by.back() != k) by.push_back(static_cast<std::uint32_t>(k));
    }
    kernels.push_back(std::move(kernel));
  }
  std::vector<ca::plan::ProgramStep> steps;
  for (std::size_t k = 0; k < uses.size(); ++k) {
    for (std::size_t o = 0; o < objects.size(); ++o) {
      if (!objects[o].persistent && !users[o].empty() && users[o].front() == k) {
        steps.push_back({ca::plan::StepKind::create, static_cast<std::uint32_t>(o)});
      }
    }
    steps.push_back({ca::plan::StepKind::kernel, static_cast<std::uint32_t>(k)});
    for (std::size_t o = 0; o < objects.size(); ++o) {
      if (!objects[o].persistent && !users[o].empty() && users[o].back() == k) {
        steps.push_back({ca::plan::StepKind::retire, static_cast<std::uint32_t>(o)});
      }
    }
    for (const auto& [object, after] : retire_after) {
      if (after == k) steps.push_back({ca::plan::StepKind::retire, object});
    }
  }
  for (std::size_t o = 0; o < objects.size(); ++o) {
    if (users[o].empty()) objects[o].persistent = true;  // untouched: not part of the iteration's steps
  }
  return ca::plan::Program(objects, kernels, steps);
}

inline ca::plan::TierCosts costs_of(std::vector<double> seconds, double out_gbps, double in_gbps) {
  ca::plan::TierCosts c;
  c.fast_seconds = std::move(seconds);
  c.to_slow_gbps = out_gbps;
  c.to_fast_gbps = in_gbps;
  return c;
}

// A random program of n objects (100-1000 bytes, about 30 % persistent)
// and nk kernels of min_args-3 arguments: objects created before their
// first use and retired after their last, the persistent ones never retired.
inline ca::plan::Program random_program(Rng& rng, std::size_t n, std::size_t nk, std::size_t min_args = 0) {
  std::vector<ca::plan::ProgramObject> objects;
  for (std::size_t o = 0; o < n; ++o) objects.push_back({rng.between(1, 10) * 100, rng.percent(30)});
  std::vector<std::vector<Use>> uses(nk);
  for (std::size_t k = 0; k < nk; ++k) {
    const std::size_t args = rng.between(min_args, 3);
    for (std::size_t a = 0; a < args; ++a) {
      const auto o = static_cast<std::uint32_t>(rng.below(n));
      bool seen = false;
      for (const Use& u : uses[k]) seen = seen || u.object == o;
      if (!seen) uses[k].push_back({o, rng.percent(50) ? ca::Access::read : ca::Access::write});
    }
  }
  return program_of(objects, uses);
}

// Kernels of 0.1-1 s, slow-tier penalties of 0-1 s, copies of 100-1000 bytes
// taking 0.02-5 s: costs under which random programs make planners choose.
inline ca::plan::TierCosts random_costs(Rng& rng, const ca::plan::Program& p) {
  ca::plan::TierCosts c;
  for (const auto& kernel : p.kernels()) {
    c.fast_seconds.push_back(static_cast<double>(rng.between(1, 10)) / 10.0);
    std::vector<double> row;
    for (std::size_t a = 0; a < kernel.args.size(); ++a)
      row.push_back(static_cast<double>(rng.between(0, 100)) / 100.0);
    c.slow_penalty.push_back(std::move(row));
  }
  c.to_slow_gbps = static_cast<double>(rng.between(2, 500)) * 1e-8;
  c.to_fast_gbps = static_cast<double>(rng.between(2, 500)) * 1e-8;
  return c;
}

}  // namespace test::autoswap
