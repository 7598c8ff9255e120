// One iteration of an AutoTM-form plan's DRAM allocations and frees, in
// program order, as AutoTM's executor makes them: what autotm_dram_extents
// replays on the heap's allocator and autotm_dram_offsets packs offline.
// Private to the plan layer's -inl files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/move_plan.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::plan::detail {

// Throws invalid_argument, prefixed `who`, when `plan` does not match
// `program`: in_fast not shaped as the kernels' arguments, or a move outside
// the program.
inline void check_autotm_plan_shape(const Program& program, const MovePlan& plan, const std::string& who) {
  const std::vector<ProgramKernel>& kernels = program.kernels();
  if (plan.in_fast.size() != kernels.size()) {
    throw invalid_argument(who + ": the plan places " + std::to_string(plan.in_fast.size()) +
                           " kernels' arguments, the program has " + std::to_string(kernels.size()) + " kernels");
  }
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    if (plan.in_fast[k].size() != kernels[k].args.size()) {
      throw invalid_argument(who + ": the plan places " + std::to_string(plan.in_fast[k].size()) +
                             " arguments of kernel " + std::to_string(k) + ", which has " +
                             std::to_string(kernels[k].args.size()));
    }
  }
  for (const TierMove& m : plan.moves) {
    if (m.kernel >= kernels.size() || m.object >= program.objects().size()) {
      throw invalid_argument(who + ": a move of object " + std::to_string(m.object) + " at kernel " +
                             std::to_string(m.kernel) + " is outside the program (" +
                             std::to_string(program.objects().size()) + " objects, " + std::to_string(kernels.size()) +
                             " kernels)");
    }
  }
}

class AutotmDramWalk {
 public:
  // The plan must match the program (check_autotm_plan_shape).
  AutotmDramWalk(const Program& program, const MovePlan& plan) : program_(program), plan_(plan) {
    const std::size_t nk = program.kernels().size();
    moved_in_.resize(nk);
    moved_out_.resize(nk);
    for (const TierMove& m : plan.moves) (m.to_fast ? moved_in_ : moved_out_)[m.kernel].push_back(m.object);
    // A created object is created where its first use wants it.
    created_in_dram_.assign(program.objects().size(), false);
    for (std::uint32_t o = 0; o < program.objects().size(); ++o) {
      if (program.uses(o).empty()) continue;
      const std::uint32_t k = program.uses(o).front();
      const std::vector<ProgramArg>& args = program.kernels()[k].args;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (args[j].object == o) {
          created_in_dram_[o] = plan.in_fast[k][j];
          break;
        }
      }
    }
  }

  // One iteration: take(object, kernel) where the object's DRAM may be
  // taken for `kernel` (created before it, moved in for it, or an argument
  // it has in DRAM; a no-op for the caller when already held), free(object)
  // where it is given back (moved out after a kernel, retired, or at the
  // end when the iteration created it: next iteration it is another
  // object), and running(kernel) while a kernel runs with its DRAM taken.
  // Stops, returning false, at the first take that returns false.
  template <typename Take, typename Free, typename Running>
  bool iteration(Take&& take, Free&& free, Running&& running) const {
    std::uint32_t next_kernel = 0;
    for (const ProgramStep& step : program_.steps()) {
      if (step.kind == StepKind::create && created_in_dram_[step.index] && !take(step.index, next_kernel)) {
        return false;
      }
      if (step.kind == StepKind::retire) free(step.index);
      if (step.kind != StepKind::kernel) continue;
      const std::uint32_t k = step.index;
      next_kernel = k + 1;
      // Moves in: synchronous ones just before k, asynchronous ones when it
      // begins; either way their DRAM is taken while k runs.
      for (const std::uint32_t o : moved_in_[k]) {
        if (!take(o, k)) return false;
      }
      const std::vector<ProgramArg>& args = program_.kernels()[k].args;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (plan_.in_fast[k][j] && !take(args[j].object, k)) return false;
      }
      running(k);
      // Moves out, synchronous or beside k, free their DRAM after it.
      for (const std::uint32_t o : moved_out_[k]) free(o);
    }
    for (std::uint32_t o = 0; o < program_.objects().size(); ++o) {
      if (!program_.objects()[o].persistent) free(o);
    }
    return true;
  }

 private:
  const Program& program_;
  const MovePlan& plan_;
  std::vector<std::vector<std::uint32_t>> moved_in_, moved_out_;  // by kernel
  std::vector<bool> created_in_dram_;
};

}  // namespace cachedarrays::plan::detail
