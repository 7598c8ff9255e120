// Implementation of replay_judge.hpp (header-only mode includes it from there;
// the compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/replay_judge.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE ReplayJudgeMachine ReplayJudgeMachine::as_planned(std::uint64_t fast_bytes,
                                                                      std::uint64_t slow_bytes,
                                                                      const policy::AutotmPolicyOptions& planned,
                                                                      unsigned mover_threads) {
  return {.fast_bytes = fast_bytes,
          .slow_bytes = slow_bytes,
          .fast = DeviceModel{"fast", planned.fast_tier.read_gbps, planned.fast_tier.write_gbps},
          .slow = DeviceModel{"slow", planned.slow_tier.read_gbps, planned.slow_tier.write_gbps},
          .kernel_time = planned.time_model,
          .mover_threads = mover_threads};
}

CACHEDARRAYS_INLINE policy::PlanJudge replay_judge(std::shared_ptr<const Trace> trace,
                                                   std::shared_ptr<const plan::Program> program,
                                                   ReplayJudgeMachine machine, policy::AutotmPolicyOptions follower) {
  if (!trace || !program) throw invalid_argument("replay_judge: the trace and the program must not be null");
  if (!follower.planner) {
    throw invalid_argument(
        "replay_judge: the follower's options have no planner hook; a judge weighs the plans "
        "of a planner hook (ReDL's, AutoSwap's), and AutoTM's ILP takes none");
  }
  if (machine.fast_bytes == 0 || machine.slow_bytes == 0) {
    throw invalid_argument("replay_judge: the fast tier has " + std::to_string(machine.fast_bytes) +
                           " bytes and the slow tier " + std::to_string(machine.slow_bytes) + "; both must be > 0");
  }
  if (machine.mover_threads == 0) {
    throw invalid_argument("replay_judge: the mover has 0 threads; it needs at least 1 (MoverOptions::threads)");
  }
  for (const DeviceModel* m : {&machine.fast, &machine.slow}) {
    const auto positive = [](double gbps) { return gbps > 0 && std::isfinite(gbps); };
    if (!positive(m->read_gbps) || !positive(m->write_gbps)) {
      throw invalid_argument("replay_judge: tier '" + m->name + "' reads at " + std::to_string(m->read_gbps) +
                             " GB/s and writes at " + std::to_string(m->write_gbps) +
                             " GB/s; both must be finite and > 0");
    }
  }
  follower.judge = nullptr;
  return [trace = std::move(trace), program = std::move(program), machine = std::move(machine),
          follower = std::move(follower)](const plan::MovePlan& candidate) {
    policy::AutotmPolicyOptions options = follower;
    options.planner->plan = [&candidate](const policy::PlanRequest&) { return candidate; };
    try {
      MoverOptions mover;
      mover.threads = machine.mover_threads;
      Runtime rt({virtual_device(machine.fast_bytes, "fast"), virtual_device(machine.slow_bytes, "slow")},
                 std::make_unique<policy::AutotmPolicy>(std::move(options)), std::move(mover));
      rt.set_program(*program);
      return steady_iteration(replay(*trace, rt, {machine.fast, machine.slow}, machine.kernel_time.get())).seconds;
    } catch (const out_of_memory&) {
      return std::numeric_limits<double>::infinity();
    }
  };
}

}  // namespace cachedarrays
