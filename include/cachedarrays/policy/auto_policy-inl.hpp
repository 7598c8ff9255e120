// Implementation of auto_policy.hpp (header-only mode includes it from there;
// the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/auto_policy.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <utility>

#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/hand_over.hpp"
#include "cachedarrays/policy/registry.hpp"

namespace cachedarrays::policy {

namespace detail {

struct DefaultCandidateModel {
  std::mutex mutex;
  CandidateModel model;
};

CACHEDARRAYS_INLINE DefaultCandidateModel& default_candidate_model_slot() {
  static DefaultCandidateModel slot;
  return slot;
}

CACHEDARRAYS_INLINE bool is_in_place(const std::string& name) { return name == "first-touch" || name == "all-slow"; }

CACHEDARRAYS_INLINE double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The model's thread takes the CPU the program leaves: on a machine whose
// cores the program fills, a ranking at the program's priority would slow
// the iterations it is meant to speed up. Lowered, not idle, so that the
// ranking still ends. A failure leaves the priority as it was.
CACHEDARRAYS_INLINE void yield_to_the_program() noexcept {
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
}

CACHEDARRAYS_INLINE double thread_cpu_seconds() noexcept {
  timespec t{};
  (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// A candidate's family: the policies that plan the iteration ahead, those
// that look ahead in the program, and those that react to hints alone.
CACHEDARRAYS_INLINE std::string family_of(const PolicyDescriptor& d) {
  if (d.plans_ahead()) return "planned";
  if (d.takes_lookahead()) return "lookahead";
  return "reactive";
}

// Ranks the faster modeled first, and the unmodeled after every modeled one.
CACHEDARRAYS_INLINE bool modeled_faster(const AutoDecision::Candidate& a, const AutoDecision::Candidate& b) {
  if (a.modeled_seconds && b.modeled_seconds) return *a.modeled_seconds < *b.modeled_seconds;
  return a.modeled_seconds.has_value() && !b.modeled_seconds.has_value();
}

CACHEDARRAYS_INLINE std::string seconds_text(const std::optional<double>& s) {
  return s ? fmt::format("{:.4f} s", *s) : std::string("not modeled");
}

}  // namespace detail

CACHEDARRAYS_INLINE void set_default_candidate_model(CandidateModel model) {
  detail::DefaultCandidateModel& slot = detail::default_candidate_model_slot();
  const std::lock_guard guard(slot.mutex);
  slot.model = std::move(model);
}

CACHEDARRAYS_INLINE CandidateModel default_candidate_model() {
  detail::DefaultCandidateModel& slot = detail::default_candidate_model_slot();
  const std::lock_guard guard(slot.mutex);
  return slot.model;
}

CACHEDARRAYS_INLINE AutoPolicy::AutoPolicy(AutoPolicyOptions options) : options_(std::move(options)) {
  for (const char* in_place : {"first-touch", "all-slow"}) {
    if (std::find(options_.candidates.begin(), options_.candidates.end(), in_place) == options_.candidates.end()) {
      options_.candidates.emplace_back(in_place);
    }
  }
  const Registry registry = Registry::builtin();
  for (const std::string& name : options_.candidates) {
    if (name == "auto") throw invalid_argument("cachedarrays: auto policy: 'auto' cannot be its own candidate");
    (void)registry.make(name);  // throws, naming the valid policies, for one it cannot make
  }
  (void)registry.make(options_.before_program);
  if (options_.iterations_per_trial < 2) {
    throw invalid_argument("cachedarrays: auto policy: iterations_per_trial is " +
                           std::to_string(options_.iterations_per_trial) +
                           "; give 2 or more (the first settles the switch's moves, the rest are timed)");
  }
  if (options_.trials == 0) throw invalid_argument("cachedarrays: auto policy: trials is 0; give 1 or more");
  if (options_.min_settled == 0) {
    throw invalid_argument(
        "cachedarrays: auto policy: min_settled is 0; give 1 or more (the settled iterations "
        "that measure the noise band)");
  }
  settle_window_ = options_.min_settled;
}

// The ranking's thread may still run: its result is waited for and dropped.
CACHEDARRAYS_INLINE AutoPolicy::~AutoPolicy() {
  if (ranking_.valid()) ranking_.wait();
  if (planners_ranking_.valid()) planners_ranking_.wait();
}

CACHEDARRAYS_INLINE void AutoPolicy::attach(DataManager& manager) {
  Policy::attach(manager);
  inner_ = Registry::builtin().make(options_.before_program);
  inner_name_ = options_.before_program;
  inner_->attach(manager);
  decision_.chosen = inner_name_;
  decision_.why = "no program yet";
}

CACHEDARRAYS_INLINE bool AutoPolicy::place(Object& object) { return inner_->place(object); }
CACHEDARRAYS_INLINE void AutoPolicy::adopt(Object& object) { inner_->adopt(object); }
CACHEDARRAYS_INLINE void AutoPolicy::will_use(Object& object) { inner_->will_use(object); }
CACHEDARRAYS_INLINE void AutoPolicy::will_read(Object& object) { inner_->will_read(object); }
CACHEDARRAYS_INLINE void AutoPolicy::will_write(Object& object) { inner_->will_write(object); }
CACHEDARRAYS_INLINE void AutoPolicy::archive(Object& object) { inner_->archive(object); }
CACHEDARRAYS_INLINE void AutoPolicy::retire(Object& object) { inner_->retire(object); }
CACHEDARRAYS_INLINE void AutoPolicy::collect() { inner_->collect(); }
CACHEDARRAYS_INLINE bool AutoPolicy::follows_kernels() const { return inner_->follows_kernels(); }
CACHEDARRAYS_INLINE HintDelivery AutoPolicy::read_hint_delivery(const Object& object) const {
  return inner_->read_hint_delivery(object);
}
CACHEDARRAYS_INLINE HintDelivery AutoPolicy::write_hint_delivery(const Object& object) const {
  return inner_->write_hint_delivery(object);
}
CACHEDARRAYS_INLINE void AutoPolicy::on_kernel_begin(const KernelPoint& kernel) { inner_->on_kernel_begin(kernel); }
CACHEDARRAYS_INLINE void AutoPolicy::on_kernel_end(const KernelPoint& kernel) { inner_->on_kernel_end(kernel); }

CACHEDARRAYS_INLINE void AutoPolicy::on_program(std::shared_ptr<const plan::Program> program) {
  program_ = program;
  inner_->on_program(std::move(program));
  if (program_ == nullptr) return;
  // Another program is another decision.
  if (ranking_.valid()) ranking_.wait();
  if (planners_ranking_.valid()) planners_ranking_.wait();
  ranking_ = {};
  planners_ranking_ = {};
  awaiting_planners_.clear();
  waiting_planner_.clear();
  samples_.clear();
  waited_ = 0;
  settle_window_ = options_.min_settled;
  phase_ = Phase::waiting;
  if (program_->profiles() != nullptr) start_ranking(1);
}

CACHEDARRAYS_INLINE void AutoPolicy::on_profiles(std::shared_ptr<const plan::Program> program) {
  program_ = program;
  inner_->on_profiles(std::move(program));
  // The iteration that just ended was profiled: no sample of the policy.
  if (phase_ == Phase::waiting && program_ != nullptr) start_ranking(1);
}

CACHEDARRAYS_INLINE void AutoPolicy::start_ranking(std::uint32_t unsampled) {
  phase_ = Phase::ranking;
  trust_model_ = true;
  ranking_began_ = now();
  ranking_iterations_ = 0;
  ranking_took_.clear();
  unsampled_ = unsampled;
  samples_.clear();
  awaiting_planners_.clear();
  if (!options_.model) return;  // ranked at the next iteration, in the order given
  // Two stages on one thread: the candidates a replay models at once, then
  // those that plan first (whose plans take longer), so that the trials
  // need not wait for the planners.
  const Registry registry = Registry::builtin();
  std::vector<std::string> quick;
  std::vector<std::string> planners;
  for (const std::string& name : options_.candidates) {
    (registry.describe(name).plans_ahead() ? planners : quick).push_back(name);
  }
  auto quick_ranking = std::make_shared<std::promise<std::vector<std::optional<double>>>>();
  ranking_ = quick_ranking->get_future();
  const auto run = [model = options_.model, program = program_,
                    fast = manager().spec(0).capacity](const std::vector<std::string>& candidates) {
    try {
      return model(*program, candidates, fast);
    } catch (...) {
      return std::vector<std::optional<double>>(candidates.size());
    }
  };
  planners_ranking_ = std::async(std::launch::async, [run, quick, planners, quick_ranking] {
    detail::yield_to_the_program();
    quick_ranking->set_value(run(quick));
    // CPU time, not wall time: at the lowest priority beside the program
    // this thread waits long for the CPU, while a switch plans at once.
    const double began = detail::thread_cpu_seconds();
    std::vector<std::optional<double>> modeled =
        planners.empty() ? std::vector<std::optional<double>>() : run(planners);
    return std::pair(std::move(modeled), detail::thread_cpu_seconds() - began);
  });
  quick_names_ = std::move(quick);
  planner_names_ = std::move(planners);
}

CACHEDARRAYS_INLINE void AutoPolicy::on_unplanned_iteration_begin(std::uint64_t iteration) {
  // Not the program's iteration: its time is no trial's.
  last_begin_.reset();
  inner_->on_unplanned_iteration_begin(iteration);
}

CACHEDARRAYS_INLINE void AutoPolicy::on_iteration_begin(std::uint64_t iteration) {
  const double begin = now();
  if (!run_began_) run_began_ = begin;
  if (last_begin_) observe(begin - *last_begin_, iteration);
  if (phase_ == Phase::waiting && program_ != nullptr && ++waited_ > options_.profile_wait) start_ranking(0);
  if (phase_ == Phase::ranking) {
    if (!ranking_.valid()) {
      modeled_.assign(options_.candidates.size(), std::nullopt);
      start_trials(iteration);
    } else if (ranking_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      ranking_took_ = fmt::format(" in {:.2f} s ({} iteration{} begun meanwhile)", now() - ranking_began_,
                                  ranking_iterations_, ranking_iterations_ == 1 ? "" : "s");
      modeled_.assign(options_.candidates.size(), std::nullopt);
      set_modeled(quick_names_, ranking_.get());
      awaiting_planners_ = {planner_names_.begin(), planner_names_.end()};
      if (!awaiting_planners_.empty() &&
          planners_ranking_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        auto [seconds, plan_seconds] = planners_ranking_.get();  // both stages done: one ranking
        set_modeled(planner_names_, seconds);
        planners_plan_seconds_ = plan_seconds;
        awaiting_planners_.clear();
      }
      start_trials(iteration);
    } else {
      ++ranking_iterations_;
    }
  }
  if (phase_ != Phase::ranking && !awaiting_planners_.empty() &&
      planners_ranking_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    planners_modeled(iteration);
  }
  if (phase_ == Phase::settled && !waiting_planner_.empty() && plan_affordable()) try_planner(iteration);
  // A switch's own work (hand_over, the new policy's plan) is no
  // iteration's; the running policy's own work at the boundary is.
  const double switching = now() - begin;
  inner_->on_iteration_begin(iteration);
  last_begin_ = begin + switching;
}

CACHEDARRAYS_INLINE double AutoPolicy::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

CACHEDARRAYS_INLINE void AutoPolicy::switch_to(const std::string& name, std::uint64_t iteration) {
  if (name == inner_name_) return;
  std::unique_ptr<Policy> next = Registry::builtin().make(name);
  try {
    (void)hand_over(manager(), *inner_, *next);
  } catch (const std::exception& e) {
    // No object holds policy state now (hand_over's promise): first-touch
    // adopts them where they lie, and the candidate is not tried again.
    say(fmt::format("auto: could not switch to {} ({}); first-touch runs instead", name, e.what()));
    options_.candidates.erase(std::remove(options_.candidates.begin(), options_.candidates.end(), name),
                              options_.candidates.end());
    next = std::make_unique<FirstTouch>();
    next->attach(manager());
    manager().for_each_object([&](Object& object) { next->adopt(object); });
    inner_ = std::move(next);
    inner_name_ = "first-touch";
    ++switches_;
    return;
  }
  inner_ = std::move(next);
  inner_name_ = name;
  ++switches_;
  if (program_ != nullptr) {
    try {
      inner_->on_program(program_);
    } catch (const std::exception& e) {
      // It holds the objects already; it runs on without the program.
      say(fmt::format("auto: {} could not take the program ({}); it runs without", name, e.what()));
    }
  }
  ++manager().policy_counters().policy_switches;
  if (Trace* trace = manager().trace()) {
    trace->record({.ns = 0,
                   .kind = TraceKind::policy_switch,
                   .detail = 0,
                   .device = 0,
                   .device2 = 0,
                   .object = iteration,
                   .bytes = 0,
                   .name = trace->intern(name),
                   .arg_begin = 0,
                   .arg_count = 0});
  }
}

// The candidates ranked by the model (or as given), and the trials: the top
// few, the better-ranked in-place candidate, and the other when close.
CACHEDARRAYS_INLINE void AutoPolicy::start_trials(std::uint64_t iteration) {
  modeled_.resize(options_.candidates.size());
  decision_.ranked.clear();
  for (std::size_t i = 0; i < options_.candidates.size(); ++i) {
    decision_.ranked.push_back({options_.candidates[i], modeled_[i], std::nullopt, false, false});
  }
  std::stable_sort(decision_.ranked.begin(), decision_.ranked.end(), detail::modeled_faster);
  std::optional<double> best;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (!detail::is_in_place(c.name)) {
      best = c.modeled_seconds;
      break;
    }
  }
  // The best-ranked of each family first, then the rest by rank: a model
  // wrong about one family (a program that departs from its recording fools
  // every policy that follows it) does not keep the others from a trial.
  // The planners' family, still being modeled, keeps a trial for its best.
  const Registry registry = Registry::builtin();
  const std::size_t trial_slots =
      awaiting_planners_.empty() || options_.trials == 1 ? options_.trials : options_.trials - 1;
  std::set<std::string> chosen;
  std::set<std::string> families;
  waiting_planner_.clear();
  for (const bool one_per_family : {true, false}) {
    for (const AutoDecision::Candidate& c : decision_.ranked) {
      if (chosen.size() >= trial_slots) break;
      if (detail::is_in_place(c.name) || chosen.contains(c.name) || awaiting_planners_.contains(c.name)) continue;
      const PolicyDescriptor described = registry.describe(c.name);
      if (described.plans_ahead() && !plan_affordable()) {
        // Its plan would stall the program longer than a trial repays yet.
        if (waiting_planner_.empty()) waiting_planner_ = c.name;
        continue;
      }
      const std::string family = detail::family_of(described);
      if (one_per_family && families.contains(family)) continue;
      chosen.insert(c.name);
      families.insert(family);
    }
  }
  // The better-ranked in-place candidate always, the other when close.
  bool in_place_tried = false;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (!detail::is_in_place(c.name)) continue;
    const bool close = best && c.modeled_seconds && *c.modeled_seconds <= options_.try_within * *best;
    if (!in_place_tried || close) chosen.insert(c.name);
    in_place_tried = true;
  }
  // In the order ranked: a slow trial after a fast one is cut sooner.
  std::vector<std::string> trials;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (chosen.contains(c.name)) trials.push_back(c.name);
  }
  // The running policy first: its trial needs no switch, and the iterations
  // it ran while the model ranked may already be its trial.
  const bool sampled = samples_.contains(inner_name_) && !samples_.at(inner_name_).empty();
  if (const auto it = std::find(trials.begin(), trials.end(), inner_name_); it != trials.end()) {
    std::rotate(trials.begin(), it, it + 1);
  } else if (sampled) {
    trials.insert(trials.begin(), inner_name_);
  }
  decision_.tried = trials;
  std::string ranked;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    ranked += fmt::format("{}{} {}", ranked.empty() ? "" : ", ", c.name,
                          awaiting_planners_.contains(c.name) ? "(planning)" : detail::seconds_text(c.modeled_seconds));
  }
  const bool modeled = std::any_of(modeled_.begin(), modeled_.end(), [](const auto& m) { return m.has_value(); });
  say(fmt::format("auto: ranked {}{}: {}; trying {}{}{}", modeled ? "by the model" : "as given (not modeled)",
                  modeled ? ranking_took_ : std::string(), ranked, fmt::join(trials, ", "),
                  sampled ? fmt::format(" ({} timed while the model ranked)", inner_name_) : std::string(),
                  waiting_planner_.empty() ? std::string() : "; " + planner_waits(waiting_planner_)));
  ranking_took_.clear();  // a drift's trials rank as before, with no new model
  trial_ = sampled ? 1 : 0;
  trial_iteration_ = 0;
  phase_ = Phase::trialing;
  confirming_ = false;
  run_trial(iteration);
}

CACHEDARRAYS_INLINE void AutoPolicy::set_modeled(const std::vector<std::string>& names,
                                                 const std::vector<std::optional<double>>& seconds) {
  for (std::size_t i = 0; i < names.size() && i < seconds.size(); ++i) {
    const auto at = std::find(options_.candidates.begin(), options_.candidates.end(), names[i]);
    if (at != options_.candidates.end())
      modeled_[static_cast<std::size_t>(at - options_.candidates.begin())] = seconds[i];
  }
}

// The planners' modeled times, after the trials began: ranked in, and the
// best of them not ruled out by the trials' measurements tried last, once
// its plan is affordable; after a decision, against the decided ones.
CACHEDARRAYS_INLINE void AutoPolicy::planners_modeled(std::uint64_t iteration) {
  auto [seconds, plan_seconds] = planners_ranking_.get();
  set_modeled(planner_names_, seconds);
  planners_plan_seconds_ = plan_seconds;
  awaiting_planners_.clear();
  std::string modeled;
  for (AutoDecision::Candidate& c : decision_.ranked) {
    const auto at = std::find(options_.candidates.begin(), options_.candidates.end(), c.name);
    c.modeled_seconds = modeled_[static_cast<std::size_t>(at - options_.candidates.begin())];
    if (std::find(planner_names_.begin(), planner_names_.end(), c.name) != planner_names_.end()) {
      modeled += fmt::format("{}{} {}", modeled.empty() ? "" : ", ", c.name, detail::seconds_text(c.modeled_seconds));
    }
  }
  std::stable_sort(decision_.ranked.begin(), decision_.ranked.end(), detail::modeled_faster);
  const bool settled = phase_ == Phase::settled;
  if (settled) restore_decided_samples();
  std::string best;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    const bool planner = std::find(planner_names_.begin(), planner_names_.end(), c.name) != planner_names_.end();
    if (!planner || !c.modeled_seconds || ruled_out(c.name)) continue;
    best = c.name;
    break;
  }
  if (settled) samples_.clear();
  std::string what = "none tried (the trials' measurements rule them out)";
  if (!best.empty()) {
    waiting_planner_ = best;
    what = plan_affordable() ? "trying " + best : planner_waits(best);
  }
  say(fmt::format("auto: the planners modeled in {:.2f} s: {}; {}", now() - ranking_began_, modeled, what));
  if (best.empty() || !plan_affordable()) return;
  if (settled) {
    try_planner(iteration);
  } else {
    decision_.tried.push_back(best);  // a trial after those under way
    waiting_planner_.clear();
  }
}

// The decided trials' measurements, to rule out and to decide against.
CACHEDARRAYS_INLINE void AutoPolicy::restore_decided_samples() {
  samples_.clear();
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (c.measured_seconds) samples_[c.name].push_back(*c.measured_seconds);
  }
}

CACHEDARRAYS_INLINE std::string AutoPolicy::planner_waits(const std::string& name) const {
  return fmt::format("{} waits until its plan ({:.2f} s) is {:.0f}% of the run", name, planners_plan_seconds_,
                     100 * options_.plan_share);
}

CACHEDARRAYS_INLINE bool AutoPolicy::plan_affordable() const {
  return run_began_ && planners_plan_seconds_ <= options_.plan_share * (now() - *run_began_);
}

// The waiting planner's trial after a decision, unless the decided trials'
// measurements rule it out.
CACHEDARRAYS_INLINE void AutoPolicy::try_planner(std::uint64_t iteration) {
  const std::string name = std::exchange(waiting_planner_, std::string());
  restore_decided_samples();
  if (ruled_out(name)) {
    samples_.clear();
    return;
  }
  decision_.tried.push_back(name);
  trial_ = decision_.tried.size() - 1;
  trial_iteration_ = 0;
  phase_ = Phase::trialing;
  switch_to(name, iteration);
}

// One iteration's time, under the policy that ran it.
CACHEDARRAYS_INLINE void AutoPolicy::observe(double seconds, std::uint64_t iteration) {
  if (phase_ == Phase::trialing) {
    observe_trial(seconds, iteration);
  } else if (phase_ == Phase::settled) {
    observe_settled(seconds, iteration);
  } else if (phase_ == Phase::ranking) {
    // The running policy's iterations while the model ranks.
    if (unsampled_ > 0) {
      --unsampled_;
    } else {
      samples_[inner_name_].push_back(seconds);
    }
  }
}

CACHEDARRAYS_INLINE void AutoPolicy::observe_trial(double seconds, std::uint64_t iteration) {
  const std::string& name = decision_.tried[trial_];
  ++trial_iteration_;
  if (trial_iteration_ >= 2) {
    samples_[name].push_back(seconds);  // the first settled the switch
  } else {
    const double fastest = fastest_sample();
    if (fastest > 0 && seconds > options_.cut_above * fastest) {
      // Already far slower than a trial before it, moves included or not.
      for (AutoDecision::Candidate& c : decision_.ranked) {
        if (c.name == name) c.cut = true;
      }
      samples_[name].push_back(seconds);
      next_trial(iteration);
      return;
    }
  }
  if (trial_iteration_ >= options_.iterations_per_trial) next_trial(iteration);
}

CACHEDARRAYS_INLINE void AutoPolicy::next_trial(std::uint64_t iteration) {
  trial_iteration_ = 0;
  ++trial_;
  run_trial(iteration);
}

// Switches to the trial at trial_, past those the measurements rule out, or
// decides when none is left.
CACHEDARRAYS_INLINE void AutoPolicy::run_trial(std::uint64_t iteration) {
  while (trial_ < decision_.tried.size()) {
    const std::string name = decision_.tried[trial_];
    if (!ruled_out(name)) {
      switch_to(name, iteration);
      return;
    }
    for (AutoDecision::Candidate& c : decision_.ranked) {
      if (c.name == name) c.skipped = true;
    }
    decision_.tried.erase(decision_.tried.begin() + static_cast<std::ptrdiff_t>(trial_));
  }
  decide(iteration);
}

// The fastest iteration any trial has measured (0: none yet).
CACHEDARRAYS_INLINE double AutoPolicy::fastest_sample() const {
  double fastest = 0;
  for (const auto& [name, times] : samples_) {
    for (const double t : times) fastest = fastest == 0 ? t : std::min(fastest, t);
  }
  return fastest;
}

// Modeled so far behind the fastest candidate measured that its trial could
// not win, even were the model as far too slow about it as it was about the
// candidate it flattered least. The model is read against the measurements,
// not the clock: on a machine slower or faster than the tiers it prices,
// every modeled time is off by a like factor, and where the model errs by
// policy (a lookahead it thinks hides copies that it does not), the
// measured candidates show how far.
CACHEDARRAYS_INLINE bool AutoPolicy::ruled_out(const std::string& name) const {
  if (!trust_model_) return false;
  std::optional<double> modeled;
  double fastest = 0;
  std::optional<double> least_error;  // the least measured / modeled of a measured candidate
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (c.name == name) modeled = c.modeled_seconds;
    const auto it = samples_.find(c.name);
    if (c.cut || it == samples_.end() || it->second.empty()) continue;
    const double t = *std::min_element(it->second.begin(), it->second.end());
    if (fastest == 0 || t < fastest) fastest = t;
    if (c.modeled_seconds && *c.modeled_seconds > 0) {
      const double error = t / *c.modeled_seconds;
      if (!least_error || error < *least_error) least_error = error;
    }
  }
  return modeled && least_error && *modeled * *least_error >= options_.skip_above * fastest;
}

CACHEDARRAYS_INLINE void AutoPolicy::observe_settled(double seconds, std::uint64_t iteration) {
  if (settled_samples_.size() < settle_window_) {
    // The settled policy's own iterations measure the noise band.
    settled_samples_.push_back(seconds);
    // A change too large to be noise needs no band to be seen: iterations
    // in a row twice the least band slower than the choice's trial (the
    // program entered another phase) decide again before the window ends;
    // but only in the first window after a ranking, so that a load that
    // comes and goes still waits out the windows a drift doubles.
    std::optional<double> trial;
    for (const AutoDecision::Candidate& c : decision_.ranked) {
      if (c.name == decision_.chosen) trial = c.measured_seconds;
    }
    const double far = 1 + 2 * options_.drift_band;
    const bool first_window = settle_window_ <= options_.min_settled;
    drifted_ = first_window && trial && seconds > far * *trial ? drifted_ + 1 : 0;
    if (drifted_ >= options_.drift_iterations) {
      decide_again(iteration, fmt::format("{}'s last {} iterations were each more than {:.0f}% slower than its "
                                          "trial's {:.4f} s",
                                          decision_.chosen, drifted_, 100 * (far - 1), *trial));
      return;
    }
    if (settled_samples_.size() < settle_window_) return;
    drifted_ = 0;
    settled_seconds_ = detail::median_of(settled_samples_);
    // The noise from one iteration to the next: a window that a phase of the
    // program ends within holds one step, not a wider noise.
    std::vector<double> steps;
    for (std::size_t i = 1; i < settled_samples_.size(); ++i) {
      steps.push_back(std::abs(settled_samples_[i] - settled_samples_[i - 1]));
    }
    const double noise = steps.empty() ? 0 : detail::median_of(steps);
    band_ = std::max(options_.drift_band, 2 * noise / settled_seconds_);
    // A choice that settles slower than its trial measured did not hold
    // (the program changed while it was tried, or the trials after it moved
    // what it relied on).
    if (trial && settled_seconds_ > (1 + band_) * *trial) {
      decide_again(iteration, fmt::format("{} settled at {:.4f} s, more than {:.0f}% slower than its trial's {:.4f} s",
                                          decision_.chosen, settled_seconds_, 100 * band_, *trial));
    }
    return;
  }
  const bool drifted = std::abs(seconds - settled_seconds_) > band_ * settled_seconds_;
  drifted_ = drifted ? drifted_ + 1 : 0;
  if (drifted_ < options_.drift_iterations) return;
  decide_again(iteration, fmt::format("iteration {} took {:.4f} s, {} settled iterations in a row outside {:.4f} s ± "
                                      "{:.0f}%",
                                      iteration, seconds, options_.drift_iterations, settled_seconds_, 100 * band_));
}

CACHEDARRAYS_INLINE void AutoPolicy::decide_again(std::uint64_t iteration, const std::string& why) {
  drifted_ = 0;
  // Each drift doubles the iterations before the next may count: a machine
  // whose load comes and goes does not keep the program in trials.
  settle_window_ = std::min<std::uint64_t>(2 * settle_window_, max_settle_window);
  say(fmt::format("auto: {}: deciding again", why));
  // The same program, ranked as before; but a program that runs apart from
  // its recording is one the model no longer rules a trial out for.
  trust_model_ = false;
  start_trials(iteration);
}

CACHEDARRAYS_INLINE void AutoPolicy::decide(std::uint64_t iteration) {
  std::string chosen;
  double fastest = 0;
  for (AutoDecision::Candidate& c : decision_.ranked) {
    const auto it = samples_.find(c.name);
    if (it == samples_.end() || it->second.empty()) continue;
    c.measured_seconds = *std::min_element(it->second.begin(), it->second.end());
    if (!c.cut && (chosen.empty() || *c.measured_seconds < fastest)) {
      chosen = c.name;
      fastest = *c.measured_seconds;
    }
  }
  if (!chosen.empty() && detail::is_in_place(chosen) && chosen != inner_name_ && !confirming_) {
    // An in-place candidate keeps the placement it takes over: its
    // measurement held for the one it took over in its trial, and the trials
    // since have moved data. It runs again before it is kept.
    confirming_ = true;
    samples_[chosen].clear();
    decision_.tried.push_back(chosen);
    trial_ = decision_.tried.size() - 1;
    trial_iteration_ = 0;
    phase_ = Phase::trialing;
    switch_to(chosen, iteration);
    return;
  }
  confirming_ = false;
  samples_.clear();
  if (chosen.empty()) chosen = inner_name_;
  switch_to(chosen, iteration);
  phase_ = Phase::settled;
  settled_samples_.clear();
  drifted_ = 0;
  decision_.chosen = inner_name_;
  decision_.decided_at = iteration;
  ++decision_.decisions;
  std::string tried;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (!c.measured_seconds) continue;
    tried += fmt::format("{}{} {:.4f} s{} (modeled {})", tried.empty() ? "" : ", ", c.name, *c.measured_seconds,
                         c.cut ? " after its switch, cut" : "", detail::seconds_text(c.modeled_seconds));
  }
  std::string skipped;
  for (const AutoDecision::Candidate& c : decision_.ranked) {
    if (c.skipped)
      skipped += fmt::format("{}{} ({})", skipped.empty() ? "" : ", ", c.name, detail::seconds_text(c.modeled_seconds));
  }
  decision_.why = "the fastest trial: " + tried;
  if (!skipped.empty()) {
    decision_.why += fmt::format("; not tried, modeled {}x the fastest candidate measured or slower: {}",
                                 options_.skip_above, skipped);
  }
  say(fmt::format("auto: chose {} at iteration {}, {}; pin it with CACHEDARRAYS_POLICY={}", decision_.chosen, iteration,
                  decision_.why, decision_.chosen));
}

CACHEDARRAYS_INLINE void AutoPolicy::say(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "cachedarrays: %s\n", line.c_str());
  }
}

}  // namespace cachedarrays::policy
