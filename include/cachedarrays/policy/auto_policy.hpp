// The policy that picks the policy (docs/design.md "Choosing the policy"):
// it runs a built-in policy inside it and, at iteration boundaries, hands
// the objects to another (policy::hand_over, as Runtime::switch_policy
// does), keeping the one that measures fastest on the program in front of
// it. No single policy suits every program and every fast-tier size, so the
// default asks the program rather than guessing.
//   - Before a program: `before_program` (CA:LM, which serves streams in
//     place), so a program that never calls begin_iteration gets it.
//   - With a program (Policy::on_program), once its kernels' online profiles
//     arrive (on_profiles; or after `profile_wait` iterations without them):
//     the candidates are ranked by `model` on a thread of their own while
//     the program runs on. The model replays the program on the tiers it ran
//     on (sim/candidate_model.hpp); without a model the candidates keep the
//     order given. It ranks in two stages: first the candidates that plan
//     nothing, whose replays take little time, and the trials begin with
//     them; then those that plan the iteration ahead, whose plans take
//     longer. A trial is kept for the planners' best, run once it is
//     modeled unless the measurements by then rule it out (after a
//     decision, against the decided trials). Switching to a planner stalls
//     the program while it plans, so its trial waits until the plan's time
//     (the model thread's CPU time to plan the planners) is at most
//     `plan_share` of the program's run so far: a short program is not
//     stalled longer than a trial could repay, a long one tries it later
//     at a small share of its run (the rent-or-buy rule).
//   - Trials: `trials` candidates, the best-ranked of each family first
//     (those that plan ahead, look ahead, or react to hints: a program that
//     departs from its recording fools the model about every policy that
//     follows it), then by rank; and the in-place candidates
//     (first-touch, all-slow) the model puts within `try_within` of the best
//     — always the better-ranked of the two unless skipped (below), so that
//     never running worse than leaving data in place rests on a measurement,
//     or on the model being off by less than `skip_above` between a measured
//     candidate and a placement that copies nothing.
//     The policy running while the model ranks is timed meanwhile, which
//     may spare its trial. Each trial runs `iterations_per_trial`
//     iterations: the first settles the switch's moves, the rest are timed
//     (wall clock between on_iteration_begin calls). A trial whose settling
//     iteration already takes `cut_above` times the best timed one is cut
//     there, and one the model puts `skip_above` times slower than the
//     fastest candidate measured so far (its modeled time scaled by the
//     model's least error on a measured candidate) is not run: every trial's
//     iterations count in the program's time, so a trial the measurements
//     already rule out is time lost (not after a drift: the program then runs apart from
//     the recording the model read).
//   - An in-place candidate (first-touch, all-slow) keeps the placement it
//     takes over, so its measurement holds for the one it took over in its
//     trial: chosen after other trials moved data, it runs again (a second
//     trial, listed twice in `tried`) and is kept only if still the fastest.
//   - Settled on the fastest trial. The settled policy's own iterations give
//     the noise band (`drift_band`, or twice the median change from one
//     iteration to the next if wider, which a phase change in the window
//     does not widen);
//     their median beyond it above the choice's trial (the choice did not
//     hold), a run of `drift_iterations` outside it, or another program,
//     re-decides,
//     never sooner than `min_settled` iterations after the last decision,
//     a window that doubles at each drift, so that a machine whose load
//     comes and goes does not keep the program in trials. In the first
//     window after a ranking only, `drift_iterations` in a row each more
//     than twice `drift_band` slower than the choice's trial re-decide at
//     once: a change that large needs no band to be seen.
//   - What it decided and why (ranked candidates with modeled and measured
//     seconds) is decision(), one log line per ranking and per choice, a
//     TraceKind::policy_switch event per switch and Stats'
//     policy.policy_switches, so a user can pin the choice with
//     CACHEDARRAYS_POLICY.
#pragma once

#include "cachedarrays/config.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// Modeled seconds of one iteration of `program` under each of `candidates`
/// (registry names) with a fast tier of `fast_bytes`, in the candidates'
/// order; nullopt where the model cannot run one. Called on a thread of its
/// own: it must only read `program`.
using CandidateModel = std::function<std::vector<std::optional<double>>(
    const plan::Program& program, const std::vector<std::string>& candidates, std::uint64_t fast_bytes)>;

/// The model a default-made auto policy (the registry's "auto") ranks with.
/// The umbrella header cachedarrays.hpp installs the replay of
/// sim/candidate_model.hpp; a program that includes only the policy layer
/// gets none (candidates tried in the order given) unless it sets one.
void set_default_candidate_model(CandidateModel model);
/// The model set_default_candidate_model() installed last (empty: none).
[[nodiscard]] CandidateModel default_candidate_model();

/// How the auto policy chooses.
struct AutoPolicyOptions {
  /// Registry names to choose among, in the order tried without a model;
  /// first-touch and all-slow are added when missing.
  std::vector<std::string> candidates{"ca-lm", "ca-lma", "ca-lmp", "ca-lmpa", "ca-l", "redl", "autotm-static"};
  std::string before_program = "ca-lm";    ///< the policy until the trials begin
  std::size_t trials = 3;                  ///< candidates tried besides the in-place ones
  std::uint32_t iterations_per_trial = 2;  ///< the first settles the switch, the rest are timed
  double try_within = 1.25;  ///< the second in-place candidate is tried when modeled within this of the best
  double cut_above = 1.5;    ///< a trial whose settling iteration takes this times the best timed one ends there
  /// A trial not yet run is skipped when, its modeled seconds scaled by the
  /// least measured / modeled of the candidates measured so far, it is this
  /// times the fastest of them: it would lose even were the model this far
  /// off beyond the best it did on a measured one.
  double skip_above = 1.5;
  /// A planner's trial waits until its plan's time is at most this share of
  /// the program's run so far (the switch stalls the program while it plans).
  double plan_share = 0.1;
  std::uint32_t profile_wait = 5;      ///< iterations a program waits for its profiles before it is ranked without
  double drift_band = 0.15;            ///< the least share off the settled time that counts as a drift
  std::uint32_t drift_iterations = 3;  ///< drifted iterations in a row that re-decide
  std::uint32_t min_settled = 10;      ///< iterations after a decision before another
  CandidateModel model;                ///< empty: candidates tried in the order given
  /// Seconds on a steady clock, read at each iteration's begin; empty:
  /// std::chrono::steady_clock (a test gives its own, so that what it
  /// decides does not hang on the machine's speed).
  std::function<double()> clock;
  /// Receives the decision lines; empty: standard error, prefixed "cachedarrays: ".
  std::function<void(const std::string&)> log;
};

/// What the auto policy decided, and why.
struct AutoDecision {
  /// One candidate as ranked and, when tried, as measured.
  struct Candidate {
    std::string name;                        ///< the registry name
    std::optional<double> modeled_seconds;   ///< the model's, per iteration
    std::optional<double> measured_seconds;  ///< the trial's fastest timed iteration
    bool cut = false;      ///< the trial ended after its settling iteration (measured_seconds is that one)
    bool skipped = false;  ///< chosen for a trial, but modeled skip_above times slower than the fastest measured
  };
  std::vector<Candidate> ranked;  ///< best modeled first (the order given without a model)
  std::vector<std::string>
      tried;  ///< the trials, in the order run (a skipped one is in `ranked` only; a confirmed in-place one twice)
  std::string chosen;            ///< the policy running now
  std::string why;               ///< one line: what decided it
  std::uint64_t decided_at = 0;  ///< the iteration it was decided at (0: not yet)
  std::uint32_t decisions = 0;   ///< decisions made so far (re-decisions included)
};

/// The policy that picks the policy (see the file comment).
class AutoPolicy final : public Policy {
 public:
  /// Throws invalid_argument for a candidate the registry cannot make, fewer
  /// than 2 iterations per trial, or no trial.
  explicit AutoPolicy(AutoPolicyOptions options = {});
  ~AutoPolicy() override;
  /// "auto".
  [[nodiscard]] std::string name() const override { return "auto"; }
  void attach(DataManager& manager) override;
  [[nodiscard]] bool place(Object& object) override;
  void adopt(Object& object) override;
  void will_use(Object& object) override;
  void will_read(Object& object) override;
  void will_write(Object& object) override;
  void archive(Object& object) override;
  void retire(Object& object) override;
  void collect() override;
  void on_program(std::shared_ptr<const plan::Program> program) override;
  void on_profiles(std::shared_ptr<const plan::Program> program) override;
  void on_iteration_begin(std::uint64_t iteration) override;
  void on_unplanned_iteration_begin(std::uint64_t iteration) override;
  void on_kernel_begin(const KernelPoint& kernel) override;
  void on_kernel_end(const KernelPoint& kernel) override;
  /// The running policy's answers.
  [[nodiscard]] bool follows_kernels() const override;
  [[nodiscard]] HintDelivery read_hint_delivery(const Object& object) const override;
  [[nodiscard]] HintDelivery write_hint_delivery(const Object& object) const override;
  /// True: it ranks by the program, so the runtime records one when the
  /// program gives none.
  [[nodiscard]] bool records_program() const override { return true; }
  /// Changes at every switch.
  [[nodiscard]] std::uint64_t answers_version() const override { return switches_; }

  /// The decision so far (empty `ranked` before the first ranking).
  [[nodiscard]] const AutoDecision& decision() const noexcept { return decision_; }
  /// The registry name of the policy running now.
  [[nodiscard]] const std::string& running() const noexcept { return inner_name_; }
  /// Blocks until the model's thread has answered for the candidates it
  /// models at once, so that the next iteration takes that ranking in;
  /// returns at once when no such answer is awaited. For a caller that wants
  /// the decision at a known point of its run rather than when the
  /// lowest-priority thread gets the CPU. Call it between iterations, on the
  /// thread that runs them.
  void wait_for_ranking() const {
    if (ranking_.valid()) ranking_.wait();
  }
  /// As `wait_for_ranking`, for the candidates that plan first (the second
  /// stage): returns once their modeled times and plan time have arrived.
  void wait_for_planners_answer() const {
    if (planners_ranking_.valid()) planners_ranking_.wait();
  }

 private:
  enum class Phase { waiting, ranking, trialing, settled };
  void switch_to(const std::string& name, std::uint64_t iteration);
  void start_ranking(std::uint32_t unsampled);
  void start_trials(std::uint64_t iteration);
  void observe(double seconds, std::uint64_t iteration);
  void observe_trial(double seconds, std::uint64_t iteration);
  void observe_settled(double seconds, std::uint64_t iteration);
  void next_trial(std::uint64_t iteration);
  void run_trial(std::uint64_t iteration);
  void set_modeled(const std::vector<std::string>& names, const std::vector<std::optional<double>>& seconds);
  void planners_modeled(std::uint64_t iteration);
  void try_planner(std::uint64_t iteration);
  void restore_decided_samples();
  [[nodiscard]] bool plan_affordable() const;
  [[nodiscard]] std::string planner_waits(const std::string& name) const;  // for the log lines
  [[nodiscard]] double fastest_sample() const;
  [[nodiscard]] bool ruled_out(const std::string& name) const;
  void decide(std::uint64_t iteration);
  void decide_again(std::uint64_t iteration, const std::string& why);
  void say(const std::string& line) const;

  AutoPolicyOptions options_;
  std::unique_ptr<Policy> inner_;
  std::string inner_name_;
  std::uint64_t switches_ = 0;
  std::shared_ptr<const plan::Program> program_;
  AutoDecision decision_;
  Phase phase_ = Phase::waiting;
  std::uint32_t waited_ = 0;     // iterations a program without profiles waited
  std::uint32_t unsampled_ = 0;  // iterations observed while ranking that are no sample (profiled)
  std::future<std::vector<std::optional<double>>> ranking_;  // the quick stage: candidates that plan nothing
  // Then those that plan ahead, with the model thread's CPU seconds for them.
  std::future<std::pair<std::vector<std::optional<double>>, double>> planners_ranking_;
  std::string waiting_planner_;       // the planners' best, whose trial waits for plan_affordable()
  double planners_plan_seconds_ = 0;  // what modeling the planners cost: their plans' time
  std::optional<double> run_began_;   // the first iteration's begin (now())
  std::vector<std::string> quick_names_;
  std::vector<std::string> planner_names_;
  std::set<std::string> awaiting_planners_;     // ranked without them: their model runs on
  std::vector<std::optional<double>> modeled_;  // the model's seconds, by candidate as given
  [[nodiscard]] double now() const;
  std::optional<double> last_begin_;
  std::size_t trial_ = 0;
  std::uint32_t trial_iteration_ = 0;
  std::map<std::string, std::vector<double>> samples_;  // timed seconds by candidate
  std::vector<double> settled_samples_;                 // the settled policy's iterations, for the noise band
  static constexpr std::uint64_t max_settle_window = 4096;
  std::uint64_t settle_window_ = 0;  // settled iterations that measure the band; doubles at each drift
  double settled_seconds_ = 0;
  double band_ = 0;
  std::uint32_t drifted_ = 0;
  bool trust_model_ = true;               // false after a drift: no trial is skipped by the model
  double ranking_began_ = 0;              // when the model was started (now())
  std::uint32_t ranking_iterations_ = 0;  // iterations begun while it ranked
  std::string ranking_took_;              // for the ranking's log line
  bool confirming_ = false;               // the in-place candidate chosen runs again before it is kept
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/auto_policy-inl.hpp"
#endif
