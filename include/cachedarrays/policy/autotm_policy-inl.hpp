// Implementation of autotm_policy.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/autotm_offsets.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::policy {

namespace detail {

// How many of the program's next creations a new object may skip to find
// its own (those between did not come this time), as planned placement does.
inline constexpr std::uint32_t autotm_creation_window = 16;

CACHEDARRAYS_INLINE std::string autotm_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", seconds);
  return text;
}

// A plan from another planner is followed only if it is one of this
// program's: the executor indexes by it without further checks.
CACHEDARRAYS_INLINE void check_foreign_plan(const std::string& policy, const plan::Program& program,
                                            const plan::MovePlan& plan) {
  const auto bad = [&](const std::string& what) {
    throw invalid_argument(policy + ": its planner returned a plan that is not of this program: " + what);
  };
  const std::vector<plan::ProgramKernel>& kernels = program.kernels();
  if (plan.in_fast.size() != kernels.size()) {
    bad("in_fast has " + std::to_string(plan.in_fast.size()) + " kernels, the program " +
        std::to_string(kernels.size()));
  }
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    if (plan.in_fast[k].size() != kernels[k].args.size()) {
      bad("in_fast[" + std::to_string(k) + "] has " + std::to_string(plan.in_fast[k].size()) +
          " arguments, the kernel " + std::to_string(kernels[k].args.size()));
    }
  }
  for (const plan::TierMove& m : plan.moves) {
    if (m.kernel >= kernels.size() || m.object >= program.objects().size()) {
      bad("a move of object " + std::to_string(m.object) + " at kernel " + std::to_string(m.kernel) +
          " (the program has " + std::to_string(program.objects().size()) + " objects and " +
          std::to_string(kernels.size()) + " kernels)");
    }
  }
}

}  // namespace detail

namespace detail {

// fit_to_heap and fit_to_heap_by_kernel: the same loop, lowering the limit
// everywhere by the online replay's overflow or, by_kernel, at each kernel
// where the offline packing passes the heap by that kernel's own overflow.
CACHEDARRAYS_INLINE plan::MovePlan fit_loop(
    const PlanRequest& request, const std::function<plan::MovePlan(const std::vector<std::uint64_t>&)>& plan_at,
    std::uint32_t max_retries, bool by_kernel) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> limits(request.program.kernels().size(), request.dram_limit);
  std::uint64_t limit = request.dram_limit;  // everywhere
  std::optional<plan::MovePlan> best;
  for (std::uint32_t retries = 0;; ++retries) {
    plan::MovePlan p = plan_at(limits);
    const std::vector<std::uint64_t> extents =
        by_kernel ? plan::autotm_dram_offsets(request.program, p, request.alignment).extents
                  : plan::autotm_dram_extents(request.program, p, request.alignment);
    p.fast_extent = extents.empty() ? 0 : *std::max_element(extents.begin(), extents.end());
    p.fits = p.fast_extent <= request.dram_limit;
    p.retries = retries;
    p.kernel_limits = limits;
    if (!best || (p.fits && !best->fits) || (!p.fits && !best->fits && p.fast_extent < best->fast_extent)) best = p;
    if (p.fits || retries == max_retries) break;
    const auto lowered = [&](std::uint64_t l, std::uint64_t extent) {
      const double overflow = static_cast<double>(request.dram_limit) / static_cast<double>(extent);
      return static_cast<std::uint64_t>(std::floor(static_cast<double>(l) * std::min(0.98, overflow)));
    };
    if (by_kernel) {
      for (std::size_t k = 0; k < extents.size(); ++k) {
        if (extents[k] > request.dram_limit) limits[k] = lowered(limits[k], extents[k]);
      }
    } else {
      limit = lowered(limit, p.fast_extent);
      if (limit == 0) break;
      limits.assign(limits.size(), limit);
    }
  }
  best->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string where;
  if (by_kernel) {
    std::uint64_t lowest = request.dram_limit;
    std::size_t lowered = 0;
    for (const std::uint64_t l : best->kernel_limits) {
      lowest = std::min(lowest, l);
      lowered += l < request.dram_limit ? 1 : 0;
    }
    if (lowered > 0) {
      where = ", the limit lowered at " + std::to_string(lowered) + " kernels (to " + format_bytes(lowest) +
              " at the least)";
    }
  }
  best->status +=
      std::string(by_kernel ? "; the offline packing of its DRAM stays (best-fit offset lines, Sekiyama et al.) "
                            : "; the heap replay (AutoTM section 4.2) ") +
      (best->fits ? "fits in " + format_bytes(best->fast_extent)
                  : "reaches " + format_bytes(best->fast_extent) + " of " + format_bytes(request.dram_limit)) +
      " after " + std::to_string(best->retries) + (best->retries == 1 ? " retry" : " retries") + where;
  return std::move(*best);
}

}  // namespace detail

CACHEDARRAYS_INLINE plan::MovePlan fit_to_heap(const PlanRequest& request,
                                               const std::function<plan::MovePlan(std::uint64_t limit)>& plan_at,
                                               std::uint32_t max_retries) {
  return detail::fit_loop(
      request,
      [&](const std::vector<std::uint64_t>& limits) {
        return plan_at(limits.empty() ? request.dram_limit : limits.front());  // all equal
      },
      max_retries, /*by_kernel=*/false);
}

CACHEDARRAYS_INLINE plan::MovePlan fit_to_heap_by_kernel(
    const PlanRequest& request, const std::function<plan::MovePlan(const std::vector<std::uint64_t>&)>& plan_at,
    std::uint32_t max_retries) {
  return detail::fit_loop(request, plan_at, max_retries, /*by_kernel=*/true);
}

CACHEDARRAYS_INLINE std::optional<plan::AutotmFormulation> autotm_formulation(std::string_view policy_name) noexcept {
  if (policy_name == "autotm-static") return plan::AutotmFormulation::static_placement;
  if (policy_name == "autotm-sync") return plan::AutotmFormulation::synchronous;
  if (policy_name == "autotm-async") return plan::AutotmFormulation::asynchronous;
  return std::nullopt;
}

CACHEDARRAYS_INLINE AutotmPolicy::AutotmPolicy(AutotmPolicyOptions options) : options_(std::move(options)) {
  const auto bad = [](const emulation::Bandwidth& b) {
    return b.read_gbps < 0 || b.write_gbps < 0 || (b.read_gbps > 0) != (b.write_gbps > 0);
  };
  if (bad(options_.fast_tier) || bad(options_.slow_tier)) {
    throw invalid_argument("AutotmPolicy: a tier's bandwidths are both > 0 GB/s, or both 0 (taken from the devices)");
  }
}

CACHEDARRAYS_INLINE std::string AutotmPolicy::plan_summary() const {
  if (!plan_) return {};
  const plan::MovePlan& p = *plan_;
  // The planner's own modeled iteration beside the replay's figure tells
  // how far its model is from the run it plans.
  return fmt::format(
      "plan {:.2f} s, {}{}, {} retr{}{}{}{}", p.seconds,
      all_dram_seconds_ > 0 ? fmt::format("own model {:.2f}x all-DRAM, ", p.modeled_seconds / all_dram_seconds_)
                            : std::string{},
      p.optimal ? "optimal" : fmt::format("gap {:.3f}", p.gap), p.retries, p.retries == 1 ? "y" : "ies",
      p.fits ? "" : " (fragments)", p.judged > 0 ? fmt::format(", best of {} judged", p.judged) : std::string{},
      counters_.departures > 1 ? fmt::format(", {} departures", counters_.departures) : "");
}

CACHEDARRAYS_INLINE std::string AutotmPolicy::name() const {
  if (options_.planner) return options_.planner->name;
  switch (options_.solver.formulation) {
    case plan::AutotmFormulation::static_placement: return "autotm-static";
    case plan::AutotmFormulation::synchronous: return "autotm-sync";
    case plan::AutotmFormulation::asynchronous: return "autotm-async";
  }
  return "autotm";
}

CACHEDARRAYS_INLINE void AutotmPolicy::log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "cachedarrays: %s\n", line.c_str());
  }
}

CACHEDARRAYS_INLINE void AutotmPolicy::attach(DataManager& manager) {
  base_.attach(manager);  // checks there are two devices
  Policy::attach(manager);
  fast_ = 0;
  slow_ = manager.device_count() - 1;
  // The tiers' bandwidths, for the costs: given, or the slow device's
  // emulation profile, or the published figures.
  const std::optional<EmulationProfile>& emulated = manager.spec(slow_).emulation;
  if (options_.fast_tier.read_gbps == 0) {
    options_.fast_tier = emulated && emulated->dram_read_gbps > 0 && emulated->dram_write_gbps > 0
                             ? emulation::Bandwidth{emulated->dram_read_gbps, emulated->dram_write_gbps}
                             : emulation::published::ddr4_six_channel;
  }
  if (options_.slow_tier.read_gbps == 0) {
    options_.slow_tier = emulated && emulated->read_gbps > 0 && emulated->write_gbps > 0
                             ? emulation::Bandwidth{emulated->read_gbps, emulated->write_gbps}
                             : emulation::published::optane_six_dimms;
  }
  if (program_) make_plan();
}

CACHEDARRAYS_INLINE void AutotmPolicy::on_program(std::shared_ptr<const plan::Program> program) {
  base_.on_program(program);
  program_ = std::move(program);
  plan_.reset();
  following_ = false;  // from the next iteration on
  pending_out_.clear();
  deferred_in_.clear();
  for (Object* o : bound_) {
    if (o != nullptr) ids_.erase(o->id());
  }
  bound_.assign(program_ ? program_->objects().size() : 0, nullptr);
  if (program_ && attached()) make_plan();
}

CACHEDARRAYS_INLINE void AutotmPolicy::on_profiles(std::shared_ptr<const plan::Program> program) {
  if (options_.time_model) return;  // the given model prices the kernels, not these measurements
  on_program(std::move(program));
}

CACHEDARRAYS_INLINE void AutotmPolicy::make_plan() {
  const plan::Program& program = *program_;
  DataManager& dm = manager();
  static const plan::MemoryBound memory_bound;
  // Online profiles are keyed by plan::profile_key, so they price the
  // program's kernels under those names; the plan itself is of the program.
  const bool profiled = !options_.time_model && program.profiles() != nullptr;
  plan::TierCosts costs =
      profiled ? plan::TierCosts::from_model(
                     plan::profile_keyed(program),
                     *plan::online_time_model(*program.profiles(), options_.fast_tier, options_.slow_tier),
                     options_.fast_tier, options_.slow_tier)
               : plan::TierCosts::from_model(program, options_.time_model ? *options_.time_model : memory_bound,
                                             options_.fast_tier, options_.slow_tier);
  // The plan's copies go side by side as this runtime's mover makes them.
  costs.copy_lanes = std::max(1U, dm.mover_options().threads);
  plan::AutotmOptions solver = options_.solver;
  solver.dram_limit = options_.dram_limit > 0 ? options_.dram_limit : dm.capacity(fast_);
  dram_limit_ = solver.dram_limit;
  solver.kernel_limits.clear();
  solver.alignment = dm.spec(fast_).alignment;
  const std::function<void(const std::string&)> progress = [this](const std::string& line) {
    log(name() + ": " + line);
  };
  if (!solver.progress) solver.progress = progress;
  all_dram_seconds_ = 0;
  for (double s : costs.fast_seconds) all_dram_seconds_ += s;
  const std::string how = options_.planner ? options_.planner->description
                                           : "AutoTM's ILP on Cbc, relative gap " +
                                                 std::to_string(solver.relative_gap).substr(0, 6) + ", time limit " +
                                                 detail::autotm_seconds(solver.time_limit_seconds);
  log(name() + ": planning " + std::to_string(program.kernels().size()) + " kernels and " +
      std::to_string(program.objects().size()) + " objects with DRAM limit " + format_bytes(solver.dram_limit) + " (" +
      how + (profiled ? "; kernels priced by their online profiles" : "") + ")...");
  if (options_.planner) {
    plan::MovePlan planned = options_.planner->plan(PlanRequest{program, costs, solver.dram_limit, solver.alignment,
                                                                progress, options_.judge ? &options_.judge : nullptr});
    detail::check_foreign_plan(name(), program, planned);  // a plan refused is never followed
    plan_ = std::move(planned);
  } else {
    plan_ = plan::autotm_plan(program, costs, solver);
  }
  ++counters_.plans;
  if (profiled) ++counters_.profiled_plans;

  const std::size_t nk = program.kernels().size();
  out_after_.assign(nk, {});
  async_during_.assign(nk, {});
  std::uint64_t in = 0, out = 0, async = 0;
  for (const plan::TierMove& m : plan_->moves) {
    (m.to_fast ? in : out) += 1;
    if (m.asynchronous) {
      ++async;
      async_during_[m.kernel].push_back(m);
    } else if (!m.to_fast) {
      out_after_[m.kernel].push_back(m.object);
    }
  }
  creations_.clear();
  for (const plan::ProgramStep& step : program.steps()) {
    if (step.kind == plan::StepKind::create) creations_.push_back(step.index);
  }
  created_in_dram_.assign(program.objects().size(), false);
  for (std::uint32_t o = 0; o < program.objects().size(); ++o) {
    const auto first = program.first_use(o);
    if (!first) continue;
    const std::vector<plan::ProgramArg>& args = program.kernels()[*first].args;
    for (std::size_t j = 0; j < args.size(); ++j) {
      if (args[j].object == o) created_in_dram_[o] = plan_->in_fast[*first][j];
    }
  }
  log(name() + ": " + plan_->status + " in " + detail::autotm_seconds(plan_->seconds) + ": modeled " +
      detail::autotm_seconds(plan_->modeled_seconds) + " per iteration (all in DRAM " +
      detail::autotm_seconds(all_dram_seconds_) + "), " + std::to_string(in) + " moves in and " + std::to_string(out) +
      " out (" + std::to_string(async) + " asynchronous)" +
      (options_.planner ? "" : ", " + std::to_string(plan_->retries) + " fragmentation retries") +
      (plan_->fits ? "" : " (still fragmenting: CA:LM defragments where needed)"));
}

CACHEDARRAYS_INLINE std::optional<std::uint32_t> AutotmPolicy::program_object(const Object& object) const {
  if (auto it = ids_.find(object.id()); it != ids_.end()) return it->second;
  return std::nullopt;
}

CACHEDARRAYS_INLINE void AutotmPolicy::bind(std::uint32_t id, Object& object) {
  if (bound_[id] == &object) return;
  if (bound_[id] != nullptr) ids_.erase(bound_[id]->id());
  if (auto old = program_object(object)) bound_[*old] = nullptr;
  bound_[id] = &object;
  ids_[object.id()] = id;
}

CACHEDARRAYS_INLINE void AutotmPolicy::unbind(const Object& object) {
  auto it = ids_.find(object.id());
  if (it == ids_.end()) return;
  bound_[it->second] = nullptr;
  ids_.erase(it);
}

CACHEDARRAYS_INLINE void AutotmPolicy::depart(const std::string& why) {
  following_ = false;
  pending_out_.clear();
  deferred_in_.clear();
  ++counters_.departures;
  // The first iteration of a run often differs from the rest (a program
  // that makes buffers lazily, on first use, makes them there), which is why
  // programs are recorded from a later one: counted, not warned about.
  if (warned_ || iteration_ <= 1) return;
  warned_ = true;
  log("warning: " + name() + ": iteration " + std::to_string(iteration_) + " departed from the planned program (" +
      why +
      "); CA:LM places and moves until the next iteration, which follows the plan again (further departures "
      "are counted, not logged)");
}

CACHEDARRAYS_INLINE void AutotmPolicy::settle(bool force) {
  if (pending_out_.empty()) return;
  DataManager& dm = manager();
  if (!force) dm.poll_copies();  // write-backs that have landed stop being in flight
  std::vector<std::uint32_t> waiting;
  for (std::uint32_t id : pending_out_) {
    Object* object = bound_[id];
    if (object == nullptr) continue;  // retired meanwhile
    if (object->pinned()) {
      waiting.push_back(id);  // its kernel has not let go of it yet
      continue;
    }
    // A write-back issued beside a kernel (ReDL's and AutoTM's asynchronous
    // moves out) is let run on: evicting the object now would wait for it
    // on the compute thread, for DRAM that nothing may need yet. (Settled
    // at the next kernel instead, ReDL's write-backs stall the kernels after
    // them even in its own model, and emulated runs of ReDL on DenseNet-121
    // were clearly slower, on ResNet-18 and VGG-16 no different within their
    // spread.)
    Region* primary = dm.getprimary(*object);
    if (!force && writing_back(*object)) {
      waiting.push_back(id);
      continue;
    }
    if (base_.move_to_slow(*object)) {
      ++counters_.moves_out;
      continue;
    }
    // A copy made ahead that no use promoted (every use read the object in
    // place: ReDL's DSMA) is only a secondary; moving the object out means
    // dropping it, or its DRAM stays taken.
    if (primary != nullptr && dm.device(*primary) == slow_) {
      if (Region* ahead = dm.getlinked(*primary, fast_)) {
        dm.free(*ahead);
        ++counters_.moves_out;
      }
    }
  }
  pending_out_ = std::move(waiting);
}

CACHEDARRAYS_INLINE void AutotmPolicy::keep_in_dram(const Object& object) {
  if (pending_out_.empty()) return;
  if (const std::optional<std::uint32_t> id = program_object(object)) std::erase(pending_out_, *id);
}

CACHEDARRAYS_INLINE bool AutotmPolicy::has_room(std::uint64_t bytes) {
  const DeviceUsage usage = manager().usage(fast_);
  return usage.bytes_used + bytes <= dram_limit_ && usage.largest_free_block >= bytes;
}

CACHEDARRAYS_INLINE void AutotmPolicy::make_room_for(std::uint64_t bytes) {
  if (pending_out_.empty()) return;
  if (!has_room(bytes)) settle(/*force=*/true);
}

CACHEDARRAYS_INLINE bool AutotmPolicy::writing_back(const Object& object) {
  DataManager& dm = manager();
  const Region* primary = dm.getprimary(object);
  return primary != nullptr && dm.device(*primary) == fast_ && dm.in_flight(*primary);
}

CACHEDARRAYS_INLINE bool AutotmPolicy::needs_copy_in(const Object& object) {
  DataManager& dm = manager();
  const Region* primary = dm.getprimary(object);
  return primary != nullptr && dm.device(*primary) != fast_ && dm.getlinked(*primary, fast_) == nullptr;
}

CACHEDARRAYS_INLINE bool AutotmPolicy::write_back_in_flight() {
  return std::any_of(pending_out_.begin(), pending_out_.end(),
                     [&](std::uint32_t id) { return bound_[id] != nullptr && writing_back(*bound_[id]); });
}

CACHEDARRAYS_INLINE void AutotmPolicy::move_in_async(std::uint32_t id, Object& object) {
  keep_in_dram(object);
  // Behind moves put off before it: the mover copies in the order issued,
  // and the plan's order is the order of need.
  if (needs_copy_in(object) && (!deferred_in_.empty() || (!has_room(object.bytes()) && write_back_in_flight()))) {
    put_off(id);
    return;
  }
  make_room_for(object.bytes());
  if (base_.copy_to_fast_async(object)) {
    ++counters_.moves_in;
  } else if (needs_copy_in(object)) {
    // No hole for it (the heap fragments where the plan did not expect):
    // put off as well, to be issued in order once one opens, rather than
    // left for its use to bring on the compute thread: modeled, that helped
    // more than it cost; a retry list that let later moves pass it did
    // worse (the plan's order is the order of need).
    put_off(id);
  }
}

CACHEDARRAYS_INLINE void AutotmPolicy::put_off(std::uint32_t id) {
  if (std::find(deferred_in_.begin(), deferred_in_.end(), id) != deferred_in_.end()) return;
  deferred_in_.push_back(id);
  ++counters_.deferred_in;
}

CACHEDARRAYS_INLINE void AutotmPolicy::issue_deferred() {
  if (deferred_in_.empty()) return;
  std::size_t done = 0;
  for (; done < deferred_in_.size(); ++done) {
    Object* object = bound_[deferred_in_[done]];
    if (object == nullptr || object->pinned()) continue;  // retired, or its use has begun and brought it
    if (!needs_copy_in(*object)) continue;
    if (!has_room(object->bytes())) break;  // the rest wait behind it
    keep_in_dram(*object);
    if (base_.copy_to_fast_async(*object)) ++counters_.moves_in;
  }
  deferred_in_.erase(deferred_in_.begin(), deferred_in_.begin() + static_cast<std::ptrdiff_t>(done));
}

CACHEDARRAYS_INLINE bool AutotmPolicy::place(Object& object) {
  settle();
  if (!following_) {
    // Before the first iteration (parameters, optimiser state) the plan's
    // DRAM is spoken for: the first iteration brings in what it wants.
    // After a departure, CA:LM.
    return plan_ && !in_iteration_ ? base_.place_in_slow(object) : base_.place(object);
  }
  std::optional<std::uint32_t> id;
  const std::size_t end = std::min<std::size_t>(creations_.size(), next_creation_ + detail::autotm_creation_window);
  for (std::size_t w = next_creation_; w < end; ++w) {
    if (program_->objects()[creations_[w]].bytes == object.bytes()) {
      id = creations_[w];
      next_creation_ = static_cast<std::uint32_t>(w + 1);
      break;
    }
  }
  if (!id) return base_.place_in_slow(object);  // unknown to the plan, whose DRAM is spoken for
  if (!created_in_dram_[*id]) {
    if (!base_.place_in_slow(object)) return false;
    bind(*id, object);
    return true;
  }
  make_room_for(object.bytes());
  if (manager().usage(fast_).largest_free_block < object.bytes()) ++counters_.unplanned;
  if (!base_.place(object)) return false;  // CA:LM: fast memory, making room when there is no hole
  bind(*id, object);
  return true;
}

CACHEDARRAYS_INLINE std::optional<bool> AutotmPolicy::planned_dram(Object& object, std::uint64_t k) {
  if (k >= program_->kernels().size()) return std::nullopt;
  const std::vector<plan::ProgramArg>& args = program_->kernels()[k].args;
  std::optional<std::uint32_t> id = program_object(object);
  if (!id) {
    // Not met yet (a parameter in the first iteration): one of the kernel's
    // arguments of its size that no object is yet; on_kernel_begin checks.
    for (const plan::ProgramArg& a : args) {
      if (bound_[a.object] == nullptr && program_->objects()[a.object].bytes == object.bytes()) {
        bind(a.object, object);
        id = a.object;
        break;
      }
    }
    if (!id) return std::nullopt;
  }
  for (std::size_t j = 0; j < args.size(); ++j) {
    if (args[j].object == *id) return plan_->in_fast[k][j];
  }
  return std::nullopt;
}

CACHEDARRAYS_INLINE void AutotmPolicy::follow_hint(Object& object, bool write) {
  settle();
  if (!following_) {
    if (write)
      base_.will_write(object);
    else
      base_.will_read(object);
    return;
  }
  // The hints of kernel next_kernel_ come before it is begun; a hint for an
  // object that is not one of its arguments looks ahead, and the plan has
  // already decided.
  const std::optional<bool> dram = planned_dram(object, next_kernel_);
  if (!dram) return;
  if (*dram) {
    keep_in_dram(object);
    if (!deferred_in_.empty()) {
      if (const std::optional<std::uint32_t> id = program_object(object)) std::erase(deferred_in_, *id);
    }
  }
  DataManager& dm = manager();
  const bool in_fast = dm.device(*dm.getprimary(object)) == fast_;
  if (*dram && !in_fast) {
    const bool copied_ahead = dm.getlinked(*dm.getprimary(object), fast_) != nullptr;
    if (!copied_ahead) make_room_for(object.bytes());
    if (!copied_ahead && dm.usage(fast_).largest_free_block < object.bytes()) ++counters_.unplanned;
    base_.will_use(object);  // Listing 2 (CA:LM makes room when there is no hole)
    if (dm.device(*dm.getprimary(object)) == fast_ && !copied_ahead) ++counters_.moves_in;
  } else if (*dram) {
    base_.will_use(object);  // recency, for CA:LM's choices
  } else if (in_fast && base_.move_to_slow(object)) {
    ++counters_.moves_out;  // the plan has it in PMM here (not yet there in a first iteration)
  }
}

CACHEDARRAYS_INLINE void AutotmPolicy::will_use(Object& object) { follow_hint(object, true); }
CACHEDARRAYS_INLINE void AutotmPolicy::will_read(Object& object) { follow_hint(object, false); }
CACHEDARRAYS_INLINE void AutotmPolicy::will_write(Object& object) { follow_hint(object, true); }

CACHEDARRAYS_INLINE void AutotmPolicy::archive(Object& object) {
  settle();
  if (!following_) base_.archive(object);
}

CACHEDARRAYS_INLINE void AutotmPolicy::retire(Object& object) {
  settle();
  unbind(object);
  base_.retire(object);
}

CACHEDARRAYS_INLINE void AutotmPolicy::collect() {
  settle();
  base_.collect();
}

CACHEDARRAYS_INLINE void AutotmPolicy::on_unplanned_iteration_begin(std::uint64_t iteration) {
  on_iteration_begin(iteration);
  following_ = false;
  ++counters_.unplanned_iterations;
}

CACHEDARRAYS_INLINE void AutotmPolicy::on_iteration_begin(std::uint64_t iteration) {
  settle();
  if (following_ && in_iteration_) ++counters_.iterations_followed;
  base_.on_iteration_begin(iteration);
  in_iteration_ = true;
  iteration_ = iteration;
  following_ = plan_.has_value();
  next_kernel_ = 0;
  next_creation_ = 0;
}

CACHEDARRAYS_INLINE void AutotmPolicy::on_kernel_begin(const KernelPoint& kernel) {
  settle();
  if (!following_) return;
  // The program's objects are the runtime's by position: a kernel of
  // another name, or with other argument sizes, is a departure.
  const std::vector<plan::ProgramKernel>& kernels = program_->kernels();
  if (kernel.index >= kernels.size()) {
    depart("kernel " + std::to_string(kernel.index) + " is past the program's " + std::to_string(kernels.size()));
    return;
  }
  const plan::ProgramKernel& k = kernels[kernel.index];
  if (k.name != kernel.name || k.args.size() != kernel.objects.size()) {
    depart("kernel " + std::to_string(kernel.index) + " is " + std::string(kernel.name) + " with " +
           std::to_string(kernel.objects.size()) + " arguments, the program's " + k.name + " with " +
           std::to_string(k.args.size()));
    return;
  }
  for (std::size_t j = 0; j < k.args.size(); ++j) {
    if (program_->objects()[k.args[j].object].bytes != kernel.objects[j]->bytes()) {
      depart("argument " + std::to_string(j) + " of kernel " + std::to_string(kernel.index) + " (" + k.name + ") has " +
             std::to_string(kernel.objects[j]->bytes()) + " bytes, the program's " +
             std::to_string(program_->objects()[k.args[j].object].bytes));
      return;
    }
  }
  for (std::size_t j = 0; j < k.args.size(); ++j) bind(k.args[j].object, *kernel.objects[j]);
  next_kernel_ = kernel.index + 1;
  issue_deferred();
  // Moves out after this kernel wait for its pins to go (settle, at the
  // next hook); asynchronous ones start now, beside it (§7.1).
  for (const std::uint32_t id : out_after_[kernel.index]) std::erase(deferred_in_, id);
  pending_out_.insert(pending_out_.end(), out_after_[kernel.index].begin(), out_after_[kernel.index].end());
  for (const plan::TierMove& m : async_during_[kernel.index]) {
    Object* object = bound_[m.object];
    if (object == nullptr || object->pinned()) continue;
    if (m.to_fast) {
      move_in_async(m.object, *object);
    } else {
      std::erase(deferred_in_, m.object);  // never brought in: it is where the plan wants it
      base_.write_back_async(*object);
      pending_out_.push_back(m.object);
    }
  }
}

}  // namespace cachedarrays::policy
