// Implementation of planned_placement.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/planned_placement.hpp"

#include <algorithm>

#include "cachedarrays/error.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE PlannedPlacement::PlannedPlacement(plan::OffsetPlanner planner, plan::MipOptions mip)
    : planner_(planner), mip_(std::move(mip)) {
  if (planner == plan::OffsetPlanner::online) {
    throw invalid_argument(
        "cachedarrays: planned placement needs an offset planner (best-fit, smartpool or mip), "
        "not 'online'");
  }
}

CACHEDARRAYS_INLINE void PlannedPlacement::set_program(const plan::Program& program) {
  // The same record place() and retired() keep, read off the program's
  // steps: its created objects in creation order, in a time that counts
  // their creations and retirements. Persistent objects are below base.
  Record record;
  std::vector<std::uint32_t> created(program.objects().size(), UINT32_MAX);
  std::uint32_t clock = 0;
  for (const plan::ProgramStep& step : program.steps()) {
    if (step.kind == plan::StepKind::create) {
      created[step.index] = static_cast<std::uint32_t>(record.size());
      record.push_back({program.objects()[step.index].bytes, clock++, 0});
    } else if (step.kind == plan::StepKind::retire && created[step.index] != UINT32_MAX) {
      record[created[step.index]].end = clock++;
    }
  }
  program_ = std::move(record);
}

CACHEDARRAYS_INLINE void PlannedPlacement::make_plan(const Record& record, const DataManager& manager, DeviceId fast) {
  // The DSA problem (plan/offsets/dsa_problem.hpp) of the record. An object alive
  // at the iteration's end overlaps the next iteration's copy of itself
  // (the trainer makes the next batch before it drops this one), so it
  // gets two slots, each reserved for the whole iteration, used in turn.
  std::uint32_t end_of_iteration = 1;
  for (const plan::DsaBuffer& b : record) end_of_iteration = std::max({end_of_iteration, b.start + 1, b.end});
  std::vector<plan::DsaBuffer> buffers;
  std::vector<std::uint32_t> twin_of(record.size(), UINT32_MAX);
  buffers.reserve(record.size());
  for (const plan::DsaBuffer& b : record) {
    buffers.push_back(b.end == 0 ? plan::DsaBuffer{b.size, 0, end_of_iteration} : b);
  }
  for (std::size_t i = 0; i < record.size(); ++i) {
    if (record[i].end == 0) {
      twin_of[i] = static_cast<std::uint32_t>(buffers.size());
      buffers.push_back(buffers[i]);
    }
  }
  // Base: everything the heap holds when the first plan is made (what was
  // created before the iteration) stays below the plan. Later plans keep it,
  // so that a departure does not push the plan up by what the iteration
  // left behind.
  if (!base_) base_ = manager.usage(fast).extent;
  slots_.clear();
  odd_slots_.clear();
  footprint_ = *base_;
  lower_bound_ = *base_;
  if (!buffers.empty()) {
    const plan::DsaProblem problem(std::move(buffers), manager.spec(fast).alignment);
    const plan::OffsetPlan offsets = plan::plan_offsets(problem, planner_, mip_);
    for (std::size_t i = 0; i < record.size(); ++i) {
      slots_.push_back(offsets.offsets[i]);
      odd_slots_.push_back(twin_of[i] == UINT32_MAX ? offsets.offsets[i] : offsets.offsets[twin_of[i]]);
    }
    footprint_ = *base_ + offsets.footprint;
    lower_bound_ = *base_ + problem.max_live();
  }
  planned_ = record;
  ++counters_.plans;
}

CACHEDARRAYS_INLINE void PlannedPlacement::begin_iteration(const DataManager& manager, DeviceId fast,
                                                           std::uint64_t iteration) {
  if (program_) {
    make_plan(*program_, manager, fast);
    program_.reset();
  } else if (in_iteration_ && !observed_.empty() && (!planned_ || observed_ != *planned_)) {
    // Re-plan from what the last iteration did (Sekiyama et al. §4.3: a plan
    // profiled on one iteration serves the next ones as long as they repeat
    // it). Not when it only added objects the plan did not know, once: they
    // went above the plan, and a first iteration that makes a buffer lazily
    // is like that; a plan made from it would hold their room
    // for nothing in every later iteration. When they come again, they are
    // part of the program.
    if (!planned_ || matched_only() != *planned_ || observed_ == last_observed_) make_plan(observed_, manager, fast);
  }
  if (in_iteration_) last_observed_ = std::move(observed_);
  observed_.clear();
  matched_.clear();
  created_.clear();
  clock_ = 0;
  cursor_ = 0;
  odd_ = (iteration & 1) != 0;
  in_iteration_ = true;
}

CACHEDARRAYS_INLINE void PlannedPlacement::begin_unplanned_iteration(const DataManager& manager, DeviceId fast,
                                                                     std::uint64_t iteration) {
  begin_iteration(manager, fast, iteration);
  // As before the first iteration: place() leaves every object online and
  // records nothing, and the next begin_iteration compares the iteration
  // after this one with the plan, not this one.
  in_iteration_ = false;
}

CACHEDARRAYS_INLINE Region* PlannedPlacement::place(DataManager& manager, DeviceId fast, const Object& object) {
  if (!in_iteration_) return nullptr;  // made before the first iteration: below base
  const auto k = static_cast<std::uint32_t>(observed_.size());
  const std::uint64_t bytes = object.bytes();
  observed_.push_back({bytes, clock_++, 0});
  matched_.push_back(false);
  if (k == 0) first_id_ = object.id();
  const std::uint64_t slot = object.id() - first_id_;
  if (slot >= created_.size()) created_.resize(slot + 1, not_created);
  created_[slot] = k;
  if (!planned_) {
    ++counters_.unplanned;
    return nullptr;
  }
  // Which planned object this is: the next one not yet matched, if it has
  // this size; else one of the few after it (the ones between did not come
  // this time); else none (an object the plan does not know). Resuming after
  // a difference keeps a plan useful when an iteration adds or drops a few
  // objects, as the trainer's first iteration does.
  const Record& plan = *planned_;
  std::uint32_t match = UINT32_MAX;
  for (std::uint32_t j = cursor_; j < plan.size() && j < cursor_ + resync_window; ++j) {
    if (plan[j].size == bytes) {
      match = j;
      break;
    }
  }
  if (match == UINT32_MAX) {
    ++counters_.unplanned;
    return above_plan(manager, fast, bytes);
  }
  cursor_ = match + 1;
  matched_[k] = true;
  const std::uint64_t offset = *base_ + (odd_ ? odd_slots_[match] : slots_[match]);
  if (offset >= manager.capacity(fast) || bytes > manager.capacity(fast) - offset) {
    ++counters_.beyond;
    return nullptr;
  }
  Region* region = manager.try_allocate_at(fast, offset, bytes);
  if (region == nullptr) {
    ++counters_.collisions;
    return above_plan(manager, fast, bytes);
  }
  ++counters_.planned;
  return region;
}

CACHEDARRAYS_INLINE Region* PlannedPlacement::above_plan(DataManager& manager, DeviceId fast, std::uint64_t bytes) {
  // Not in a hole between the planned objects: each hole is the slot of an
  // object created later, which would then find it taken and go into the
  // slot of another, and so on to the end of the iteration.
  const std::uint64_t alignment = manager.spec(fast).alignment;
  const std::uint64_t top = std::max(manager.usage(fast).extent, footprint_);
  const std::uint64_t offset = (top + alignment - 1) / alignment * alignment;
  const std::uint64_t capacity = manager.capacity(fast);
  if (offset >= capacity || bytes > capacity - offset) return nullptr;
  Region* region = manager.try_allocate_at(fast, offset, bytes);
  if (region != nullptr) ++counters_.above;
  return region;
}

CACHEDARRAYS_INLINE PlannedPlacement::Record PlannedPlacement::matched_only() const {
  // The objects matched to the plan, their events renumbered as if the
  // others had not happened.
  std::vector<std::uint32_t> times;
  for (std::size_t k = 0; k < observed_.size(); ++k) {
    if (!matched_[k]) continue;
    times.push_back(observed_[k].start);
    if (observed_[k].end != 0) times.push_back(observed_[k].end);
  }
  std::sort(times.begin(), times.end());
  const auto rank = [&](std::uint32_t t) {
    return static_cast<std::uint32_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  Record record;
  for (std::size_t k = 0; k < observed_.size(); ++k) {
    if (!matched_[k]) continue;
    const plan::DsaBuffer& b = observed_[k];
    record.push_back({b.size, rank(b.start), b.end == 0 ? 0 : rank(b.end)});
  }
  return record;
}

CACHEDARRAYS_INLINE void PlannedPlacement::retired(const Object& object) {
  // Made before this iteration, or retired already: not in its record.
  if (observed_.empty() || object.id() < first_id_ || object.id() - first_id_ >= created_.size()) return;
  std::uint32_t& k = created_[object.id() - first_id_];
  if (k == not_created) return;
  observed_[k].end = clock_++;
  k = not_created;
}

}  // namespace cachedarrays::policy
