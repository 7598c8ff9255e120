// Implementation of redl.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/redl.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

namespace cachedarrays::plan {
namespace detail {

// Bytes held in DRAM by kernel under range adds: a segment tree whose nodes
// keep their own pending add, so that queries need no push-down.
class RedlOccupancy {
 public:
  explicit RedlOccupancy(const std::vector<std::int64_t>& base)
      : n_(base.size()), max_(4 * n_ + 4, 0), add_(4 * n_ + 4, 0) {
    if (n_ > 0) build(1, 0, n_, base);
  }
  void add(std::size_t l, std::size_t r, std::int64_t v) {
    if (l < r) add(1, 0, n_, l, r, v);
  }
  [[nodiscard]] std::int64_t max(std::size_t l, std::size_t r) const { return l < r ? max(1, 0, n_, l, r) : lowest; }
  // The last kernel in [l, r) holding more than `above` bytes, or -1.
  [[nodiscard]] std::int64_t last_above(std::size_t l, std::size_t r, std::int64_t above) const {
    return l < r ? last_above(1, 0, n_, l, r, above, 0) : -1;
  }

 private:
  static constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min() / 4;
  void build(std::size_t node, std::size_t nl, std::size_t nr, const std::vector<std::int64_t>& base) {
    if (nr - nl == 1) {
      max_[node] = base[nl];
      return;
    }
    const std::size_t mid = (nl + nr) / 2;
    build(2 * node, nl, mid, base);
    build(2 * node + 1, mid, nr, base);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }
  void add(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r, std::int64_t v) {
    if (r <= nl || nr <= l) return;
    if (l <= nl && nr <= r) {
      max_[node] += v;
      add_[node] += v;
      return;
    }
    const std::size_t mid = (nl + nr) / 2;
    add(2 * node, nl, mid, l, r, v);
    add(2 * node + 1, mid, nr, l, r, v);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  [[nodiscard]] std::int64_t max(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r) const {
    if (r <= nl || nr <= l) return lowest;
    if (l <= nl && nr <= r) return max_[node];
    const std::size_t mid = (nl + nr) / 2;
    return std::max(max(2 * node, nl, mid, l, r), max(2 * node + 1, mid, nr, l, r)) + add_[node];
  }
  [[nodiscard]] std::int64_t last_above(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r,
                                        std::int64_t above, std::int64_t outer) const {
    if (r <= nl || nr <= l || max_[node] + outer <= above) return -1;
    if (nr - nl == 1) return static_cast<std::int64_t>(nl);
    const std::size_t mid = (nl + nr) / 2;
    const std::int64_t inner = outer + add_[node];
    const std::int64_t right = last_above(2 * node + 1, mid, nr, l, r, above, inner);
    return right >= 0 ? right : last_above(2 * node, nl, mid, l, r, above, inner);
  }

  std::size_t n_;
  std::vector<std::int64_t> max_, add_;
};

// unused: no kernel uses it (the slow tier); idle: held in the fast region
// for its whole life or never (Algorithm 1); dynamic: migrated by period.
enum class RedlKind : std::uint8_t { unused, idle, dynamic };

struct RedlObjectInfo {
  std::uint64_t bytes = 0;
  std::uint32_t from = 0, to = 0;  // the kernels it is alive at: [from, to)
  bool persistent = false, retired = false;
  RedlKind kind = RedlKind::unused;
  [[nodiscard]] bool survives() const noexcept { return persistent && !retired; }
};

// One stretch of a dynamic object in DRAM. A moved stay's copy in is issued
// when `from` starts; a written-back one's copy out when out_kernel starts
// (to = out_kernel + 1); a sync_out one's copy out follows out_kernel.
enum class RedlBegin : std::uint8_t { initial, created, moved };
enum class RedlEnd : std::uint8_t { open, retired, written_back, sync_out, dropped, wraps };
struct RedlStay {
  std::uint32_t object = 0;
  RedlBegin begin = RedlBegin::created;
  std::uint32_t from = 0, to = 0;  // kernels held: [from, to)
  RedlEnd end = RedlEnd::open;
  std::uint32_t out_kernel = 0;
};

struct RedlPlacement {
  std::vector<std::uint32_t> starts;  // each period's first kernel, then the kernel count
  std::vector<RedlStay> stays;
  std::vector<std::uint32_t> resident;  // persistent objects in DRAM at the start and the end
  // By kernel: (object, stay) for the arguments a stay covers; the copies
  // issued when it starts (copies out, then copies in by the use they
  // serve); the synchronous copies out after it.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> covered;
  std::vector<std::vector<std::uint32_t>> issued, sync_after;
};

// What carries from one iteration into the next: the copy engine's backlog
// and, by object, the state of the stays that wrap around.
struct RedlCarry {
  CopyTimeline timeline;        // the kernels and the copy engine, as the iteration leaves them
  std::vector<double> arrival;  // seconds from the iteration's start
  std::vector<char> promoted, dirty;
};

struct RedlTiming {
  std::vector<std::vector<bool>> in_fast, dsma;
  std::uint32_t dsma_arguments = 0;
  std::vector<double> start, end;
  std::vector<RedlMove> moves;
  double seconds = 0, waits = 0;
};

struct RedlEvaluation {
  std::uint32_t period_layers = 0;
  RedlPlacement placement;
  RedlTiming timing;
};

CACHEDARRAYS_INLINE void redl_check_layers(const Program& program, const RedlOptions& options) {
  const std::size_t nk = program.kernels().size();
  if (options.layer_starts.empty()) {
    if (options.kernels_per_layer == 0) {
      throw invalid_argument(
          "redl: kernels_per_layer is 0; a layer is 1 or more consecutive kernels "
          "(or name each layer's first kernel in layer_starts)");
    }
    return;
  }
  const std::vector<std::uint32_t>& s = options.layer_starts;
  if (s.front() != 0) {
    throw invalid_argument("redl: layer_starts[0] is " + std::to_string(s.front()) +
                           "; the first layer starts at kernel 0");
  }
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] <= s[i - 1]) {
      throw invalid_argument("redl: layer_starts[" + std::to_string(i) + "] = " + std::to_string(s[i]) +
                             " does not follow layer_starts[" + std::to_string(i - 1) +
                             "] = " + std::to_string(s[i - 1]) + "; layer starts ascend strictly");
    }
  }
  if (s.back() >= nk && nk > 0) {
    throw invalid_argument("redl: layer_starts names kernel " + std::to_string(s.back()) + "; the program has " +
                           std::to_string(nk) + " kernels (0 to " + std::to_string(nk - 1) + ")");
  }
}

// What every period size shares: layers, liveness, the objects' classes and
// Algorithm 1's fast region.
class RedlPlanner {
 public:
  RedlPlanner(const Program& program, const TierCosts& costs, const RedlOptions& options)
      : program_(program), costs_(costs), options_(options), nk_(static_cast<std::uint32_t>(program.kernels().size())) {
    layer_of_ = redl_layers(program, options);
    for (std::uint32_t k = 0; k < nk_; ++k) {
      if (k == 0 || layer_of_[k] != layer_of_[k - 1]) layer_first_.push_back(k);
    }
    liveness_ = redl_liveness(program, options);
    limits_.assign(nk_, static_cast<std::int64_t>(options.fast_limit));
    for (std::uint32_t k = 0; k < nk_ && k < options.kernel_limits.size(); ++k) {
      limits_[k] = static_cast<std::int64_t>(std::min(options.kernel_limits[k], options.fast_limit));
    }
    classify();
    admit_idle();
    // What each kernel leaves free for the long-lived objects, negated: the
    // placer's occupancy starts here and must stay at or below 0.
    headroom_.resize(nk_);
    for (std::uint32_t k = 0; k < nk_; ++k) headroom_[k] = idle_bytes_[k] - limits_[k];
    for (std::uint32_t k = 0; k < nk_; ++k) {
      all_fast_ += costs.fast_seconds[k];
      double slow = costs.fast_seconds[k];
      for (const double p : costs.slow_penalty[k]) slow += p;
      all_slow_ += slow;
    }
  }

  [[nodiscard]] std::uint32_t layers() const noexcept { return static_cast<std::uint32_t>(layer_first_.size()); }
  [[nodiscard]] const std::vector<RedlLiveness>& liveness() const noexcept { return liveness_; }
  [[nodiscard]] const std::vector<std::uint32_t>& victims() const noexcept { return victims_; }
  [[nodiscard]] const std::vector<std::int64_t>& idle_bytes() const noexcept { return idle_bytes_; }
  [[nodiscard]] double all_fast() const noexcept { return all_fast_; }
  [[nodiscard]] double all_slow() const noexcept { return all_slow_; }
  [[nodiscard]] bool idle_in_dram(std::uint32_t o) const { return objects_[o].kind == RedlKind::idle && admitted_[o]; }

  [[nodiscard]] RedlEvaluation evaluate(std::uint32_t period_layers) const;

 private:
  friend class RedlPlacer;
  friend class RedlSimulator;

  void classify() {
    const std::size_t n = program_.objects().size();
    objects_.resize(n);
    for (std::size_t o = 0; o < n; ++o) {
      objects_[o].bytes = program_.objects()[o].bytes;
      objects_[o].persistent = program_.objects()[o].persistent;
      objects_[o].to = nk_;
    }
    std::uint32_t seen = 0;
    for (const ProgramStep& step : program_.steps()) {
      if (step.kind == StepKind::create) objects_[step.index].from = seen;
      if (step.kind == StepKind::retire) {
        objects_[step.index].to = seen;
        objects_[step.index].retired = true;
      }
      if (step.kind == StepKind::kernel) ++seen;
    }
    for (std::size_t o = 0; o < n; ++o) {
      RedlObjectInfo& info = objects_[o];
      if (program_.uses(static_cast<std::uint32_t>(o)).empty()) continue;  // unused
      // A persistent object the iteration retires starts in PMM (redl.hpp):
      // only a copy in can bring it, whatever its size or liveness.
      const bool migrated =
          (!liveness_[o].short_lived && info.bytes >= options_.min_bytes) || (info.persistent && info.retired);
      info.kind = migrated ? RedlKind::dynamic : RedlKind::idle;
    }
  }

  // Algorithm 1 ahead of time (§III-C): every short-lived object is
  // created in the fast region; at each kernel where those alive pass the
  // limit, victims go by shortest liveness (in kernels), then largest, then
  // latest, for their whole life. Long-lived objects under min_bytes follow,
  // by first use, each where it fits for its whole life.
  void admit_idle() {
    const std::size_t n = objects_.size();
    admitted_.assign(n, false);
    std::vector<std::vector<std::uint32_t>> starting(nk_), ending(nk_ + 1);
    std::vector<std::uint32_t> small;
    for (std::uint32_t o = 0; o < n; ++o) {
      if (objects_[o].kind != RedlKind::idle) continue;
      if (!liveness_[o].short_lived) {
        small.push_back(o);
        continue;
      }
      admitted_[o] = true;
      starting[objects_[o].from].push_back(o);
      ending[objects_[o].to].push_back(o);
    }
    const auto shorter = [&](std::uint32_t a, std::uint32_t b) {
      return std::tuple(liveness_[a].kernels, ~objects_[a].bytes, ~a) <
             std::tuple(liveness_[b].kernels, ~objects_[b].bytes, ~b);
    };
    std::set<std::uint32_t, decltype(shorter)> alive(shorter);
    std::uint64_t held = 0;
    for (std::uint32_t k = 0; k < nk_; ++k) {
      for (const std::uint32_t o : ending[k]) {
        if (alive.erase(o) > 0) held -= objects_[o].bytes;
      }
      for (const std::uint32_t o : starting[k]) {
        alive.insert(o);
        held += objects_[o].bytes;
      }
      while (static_cast<std::int64_t>(held) > limits_[k]) {
        const std::uint32_t victim = *alive.begin();  // FastDOCtrl's freeVictimData (Algorithm 1, line 15)
        alive.erase(alive.begin());
        held -= objects_[victim].bytes;
        admitted_[victim] = false;
        victims_.push_back(victim);
      }
    }
    // The region's bytes by kernel, victims gone for their whole life.
    std::vector<std::int64_t> diff(nk_ + 1, 0);
    for (std::uint32_t o = 0; o < n; ++o) {
      if (!admitted_[o]) continue;
      diff[objects_[o].from] += static_cast<std::int64_t>(objects_[o].bytes);
      diff[objects_[o].to] -= static_cast<std::int64_t>(objects_[o].bytes);
    }
    idle_bytes_.assign(nk_, 0);
    std::int64_t sum = 0;
    for (std::uint32_t k = 0; k < nk_; ++k) idle_bytes_[k] = sum += diff[k];
    std::sort(small.begin(), small.end(), [&](std::uint32_t a, std::uint32_t b) {
      return std::pair(liveness_[a].first_use, a) < std::pair(liveness_[b].first_use, b);
    });
    for (const std::uint32_t o : small) {
      const RedlObjectInfo& info = objects_[o];
      const auto b = static_cast<std::int64_t>(info.bytes);
      bool fits = true;
      for (std::uint32_t k = info.from; k < info.to && fits; ++k) fits = idle_bytes_[k] + b <= limits_[k];
      if (!fits) {
        victims_.push_back(o);
        continue;
      }
      admitted_[o] = true;
      for (std::uint32_t k = info.from; k < info.to; ++k) idle_bytes_[k] += b;
    }
    std::sort(victims_.begin(), victims_.end());
  }

  const Program& program_;
  const TierCosts& costs_;
  const RedlOptions& options_;
  std::uint32_t nk_;
  std::vector<std::uint32_t> layer_of_, layer_first_;
  std::vector<RedlLiveness> liveness_;
  std::vector<RedlObjectInfo> objects_;
  std::vector<bool> admitted_;
  std::vector<std::uint32_t> victims_;
  std::vector<std::int64_t> idle_bytes_;
  std::vector<std::int64_t> limits_;    // by kernel: the bytes DRAM may hold during it
  std::vector<std::int64_t> headroom_;  // by kernel: idle_bytes_ - limits_
  double all_fast_ = 0, all_slow_ = 0;
};

// Dynamic migration (§III-D, Fig. 6) for one period size: where each
// long-lived object is held, period by period.
class RedlPlacer {
 public:
  RedlPlacer(const RedlPlanner& planner, std::vector<std::uint32_t> starts)
      : p_(planner),
        program_(planner.program_),
        objects_(planner.objects_),
        starts_(std::move(starts)),
        nk_(planner.nk_),
        limit_(0),
        occ_(planner.headroom_) {
    // The dynamic objects each period uses, by their first use in it.
    const std::size_t periods = starts_.size() - 1;
    demand_.resize(periods);
    first_in_.resize(periods);
    std::vector<std::size_t> last_period(objects_.size(), periods);
    for (std::size_t t = 0; t < periods; ++t) {
      for (std::uint32_t k = starts_[t]; k < starts_[t + 1]; ++k) {
        for (const ProgramArg& a : program_.kernels()[k].args) {
          if (objects_[a.object].kind != RedlKind::dynamic || last_period[a.object] == t) continue;
          last_period[a.object] = t;
          demand_[t].push_back(a.object);
          first_in_[t].push_back(k);
        }
      }
    }
  }

  // The fixed point of redl.hpp's wrap-around: from every persistent
  // long-lived object in DRAM at the start, down to a set that the end of
  // the iteration leaves in DRAM again.
  [[nodiscard]] RedlPlacement place() {
    std::vector<std::uint32_t> s0;
    for (std::uint32_t o = 0; o < objects_.size(); ++o) {
      if (objects_[o].kind == RedlKind::dynamic && objects_[o].survives()) s0.push_back(o);
    }
    std::sort(s0.begin(), s0.end(), [&](std::uint32_t a, std::uint32_t b) {
      return std::pair(program_.uses(a).front(), a) < std::pair(program_.uses(b).front(), b);
    });
    for (;;) {
      std::vector<std::uint32_t> end = pass(s0);
      if (end == s0) break;
      s0 = std::move(end);  // a strict subset: the loop ends
    }
    RedlPlacement placement;
    placement.starts = starts_;
    placement.stays = std::move(stays_);
    placement.resident = std::move(s0);
    index(placement);
    return placement;
  }

 private:
  struct Undo {
    std::size_t stay = 0;
    std::uint32_t to = 0, out_kernel = 0, last_end = 0;
    RedlEnd end = RedlEnd::open;
    std::int64_t open = -1;
  };

  [[nodiscard]] std::int64_t bytes_of(std::uint32_t o) const { return static_cast<std::int64_t>(objects_[o].bytes); }
  [[nodiscard]] bool fits(std::uint32_t l, std::uint32_t r, std::int64_t b) const {
    return l >= r || occ_.max(l, r) + b <= limit_;
  }
  [[nodiscard]] std::optional<std::uint32_t> next_use(std::uint32_t o, std::uint32_t k) const {
    return program_.next_use(o, k);
  }

  void close_if_retired(std::size_t i) {
    RedlStay& s = stays_[i];
    if (s.to == objects_[s.object].to && objects_[s.object].retired) {
      s.end = RedlEnd::retired;
      open_[s.object] = -1;
      last_end_[s.object] = s.to;
    }
  }
  std::size_t open_stay(std::uint32_t o, RedlBegin begin, std::uint32_t from, std::uint32_t to) {
    occ_.add(from, to, bytes_of(o));
    stays_.push_back({o, begin, from, to, RedlEnd::open, 0});
    open_[o] = static_cast<std::int64_t>(stays_.size() - 1);
    residents_.push_back(o);
    close_if_retired(stays_.size() - 1);
    return stays_.size() - 1;
  }
  bool extend(std::size_t i, std::uint32_t to) {
    RedlStay& s = stays_[i];
    if (to <= s.to) return true;
    if (!fits(s.to, to, bytes_of(s.object))) return false;
    occ_.add(s.to, to, bytes_of(s.object));
    s.to = to;
    close_if_retired(i);
    return true;
  }

  // A write-back is issued just after the stay's last use, from `lo` on
  // (redl.hpp: never beside a use).
  [[nodiscard]] std::uint32_t writeback_kernel(const RedlStay& s, std::uint32_t lo) const {
    const std::vector<std::uint32_t>& u = program_.uses(s.object);
    const auto it = std::lower_bound(u.begin(), u.end(), s.to);
    std::uint32_t after = s.from;
    if (it != u.begin() && *(it - 1) >= s.from) after = *(it - 1) + 1;
    return std::max(lo, after);
  }
  Undo release(std::size_t i, std::uint32_t lo) {
    RedlStay& s = stays_[i];
    const std::uint32_t o = s.object;
    const std::int64_t b = bytes_of(o);
    Undo undo{i, s.to, s.out_kernel, last_end_[o], s.end, open_[o]};
    const std::uint32_t w = writeback_kernel(s, lo);
    if (w < s.to) {
      occ_.add(w + 1, s.to, -b);
      s.to = w + 1;
      s.end = RedlEnd::written_back;
      s.out_kernel = w;
    } else {
      // The last use ends the stretch held so far: the copy goes beside the
      // next kernel if it is free to host it, else right after the use.
      const std::optional<std::uint32_t> nu = next_use(o, s.to - 1);
      if (w < nk_ && w < objects_[o].to && (!nu || w < *nu) && fits(w, w + 1, b)) {
        occ_.add(w, w + 1, b);
        s.to = w + 1;
        s.end = RedlEnd::written_back;
        s.out_kernel = w;
      } else {
        s.end = RedlEnd::sync_out;
        s.out_kernel = s.to - 1;
      }
    }
    open_[o] = -1;
    last_end_[o] = s.to;
    return undo;
  }
  void undo(const Undo& u) {
    RedlStay& s = stays_[u.stay];
    const std::int64_t b = bytes_of(s.object);
    if (s.to < u.to) occ_.add(s.to, u.to, b);
    if (s.to > u.to) occ_.add(u.to, s.to, -b);
    s.to = u.to;
    s.end = u.end;
    s.out_kernel = u.out_kernel;
    open_[s.object] = u.open;
    last_end_[s.object] = u.last_end;
  }

  // A stay that may be written back to make room, with what make_room asks
  // of it: the kernel its write-back would be issued at and the object's
  // next use after the stay. Neither changes while it is a candidate (its
  // stay is only ever released), so they are computed once, not per kernel
  // over the limit (computed per kernel, make_room dominates the planning
  // of a large program).
  struct Candidate {
    std::size_t stay = 0;
    std::uint32_t from = 0, to = 0, writeback = 0;
    std::uint64_t next = 0;  // max when there is none
    std::int64_t bytes = 0;
    // Its write-back frees kernel kv: the stay holds kv, and the copy is
    // issued before it.
    [[nodiscard]] bool frees(std::uint32_t kv) const noexcept { return from <= kv && kv < to && writeback < kv; }
  };
  [[nodiscard]] Candidate candidate(std::size_t i, std::uint32_t lo) const {
    const RedlStay& s = stays_[i];
    const std::vector<std::uint32_t>& u = program_.uses(s.object);
    const auto it = std::lower_bound(u.begin(), u.end(), s.to);
    return {i,
            s.from,
            s.to,
            writeback_kernel(s, lo),
            it == u.end() ? std::numeric_limits<std::uint64_t>::max() : std::uint64_t{*it},
            bytes_of(s.object)};
  }
  // make_room takes the first candidate that frees a kernel in this order.
  static void order_candidates(std::vector<Candidate>& candidates) {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.next > b.next; });
  }

  // Memory tension (Fig. 6): makes room for `b` more bytes over [l, r) by
  // writing back candidates that free a kernel over the limit, farthest
  // next use first (`candidates` in that order, order_candidates); all of
  // it or nothing. A candidate that frees kernel kv has no use in
  // (writeback, to), so its next use after kv is its first use from `to`
  // on: Candidate::next. Each write-back frees its bytes at kv, so when
  // those of every candidate that frees kv do not cover kv's excess, no
  // choice of them would: the call fails at once instead of releasing and
  // undoing them one by one.
  bool make_room(std::uint32_t l, std::uint32_t r, std::int64_t b, std::vector<Candidate>& candidates,
                 std::uint32_t lo) {
    std::vector<Undo> undos;
    std::vector<char> released(candidates.size(), 0);
    const auto fail = [&] {
      for (auto it = undos.rbegin(); it != undos.rend(); ++it) undo(*it);
      return false;
    };
    std::int64_t checked = -1;
    for (;;) {
      const std::int64_t v = occ_.last_above(l, r, limit_ - b);
      if (v < 0) break;
      const auto kv = static_cast<std::uint32_t>(v);
      if (v != checked) {
        checked = v;
        std::int64_t freeable = 0;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          if (!released[c] && candidates[c].frees(kv)) freeable += candidates[c].bytes;
        }
        if (occ_.max(kv, kv + 1) + b - freeable > limit_) return fail();
      }
      std::size_t best = 0;
      while (best < candidates.size() && (released[best] || !candidates[best].frees(kv))) ++best;
      if (best == candidates.size()) return fail();
      undos.push_back(release(candidates[best].stay, lo));
      released[best] = 1;
    }
    std::size_t kept = 0;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      if (!released[c]) candidates[kept++] = candidates[c];
    }
    candidates.resize(kept);
    return true;
  }

  // Brings `o`, which period t uses first at kernel f and which is not in
  // DRAM, for period t: created there at its first use, or copied in from
  // the earliest kernel of period t-1 after its previous use from which
  // its bytes fit through the end of period t.
  void bring(std::uint32_t o, std::uint32_t f, std::size_t t, std::uint32_t lo, std::vector<Candidate>& candidates) {
    const std::size_t ahead = p_.options_.issue_periods;
    const std::uint32_t issue_lo = t > ahead ? starts_[t - ahead] : 0;
    const RedlObjectInfo& info = objects_[o];
    const std::int64_t b = bytes_of(o);
    const std::uint32_t to = std::min(starts_[t + 1], info.to);
    if (!info.persistent && program_.uses(o).front() == f) {
      if (fits(info.from, to, b) || make_room(info.from, to, b, candidates, lo)) {
        open_stay(o, RedlBegin::created, info.from, to);
      }
      return;
    }
    if (t == 0) return;  // only the previous iteration's last period brings objects for period 0
    std::uint32_t from = std::max({issue_lo, info.from, last_end_[o]});
    const std::vector<std::uint32_t>& u = program_.uses(o);
    const auto it = std::lower_bound(u.begin(), u.end(), f);
    if (it != u.begin()) from = std::max(from, *(it - 1) + 1);
    if (from >= f) return;  // no kernel before the use to issue the copy at
    if (!fits(f - 1, to, b) && !make_room(f - 1, to, b, candidates, lo)) return;
    const std::int64_t v = occ_.last_above(from, to, limit_ - b);
    open_stay(o, RedlBegin::moved, v < 0 ? from : static_cast<std::uint32_t>(v) + 1, to);
  }

  [[nodiscard]] std::vector<std::uint32_t> open_residents() {
    std::vector<std::uint32_t> res;
    std::vector<char> seen(objects_.size(), 0);
    for (const std::uint32_t o : residents_) {
      if (open_[o] >= 0 && !seen[o]) res.push_back(o);
      seen[o] = 1;
    }
    residents_ = res;
    return res;
  }

  // Period t (t >= 1), prepared during period t-1 (Fig. 6).
  void step(std::size_t t) {
    const std::uint32_t lo = starts_[t - 1], begin = starts_[t], end = starts_[t + 1];
    std::vector<char> wanted(objects_.size(), 0);
    for (const std::uint32_t o : demand_[t]) wanted[o] = 1;
    std::vector<std::uint32_t> idle, used;
    for (const std::uint32_t o : open_residents()) (wanted[o] ? used : idle).push_back(o);
    std::vector<std::uint32_t> absent;  // wanted, not in DRAM (before any release below)
    std::vector<std::uint32_t> absent_first;
    for (std::size_t i = 0; i < demand_[t].size(); ++i) {
      if (open_[demand_[t][i]] < 0) {
        absent.push_back(demand_[t][i]);
        absent_first.push_back(first_in_[t][i]);
      }
    }
    // Objects the period does not use stay while they fit, nearest next use
    // first; the others are written back (§III-D.1).
    const auto next_of = [&](std::uint32_t o) {
      const std::optional<std::uint32_t> nu = next_use(o, begin - 1);
      return nu ? static_cast<std::uint64_t>(*nu) : std::numeric_limits<std::uint64_t>::max();
    };
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_next;
    by_next.reserve(idle.size());
    for (const std::uint32_t o : idle) by_next.emplace_back(next_of(o), o);
    std::sort(by_next.begin(), by_next.end());
    std::vector<Candidate> candidates;
    for (const auto& [next, o] : by_next) {
      const auto i = static_cast<std::size_t>(open_[o]);
      if (extend(i, std::min(end, objects_[o].to))) {
        candidates.push_back(candidate(i, lo));
      } else {
        (void)release(i, lo);
      }
    }
    order_candidates(candidates);
    // Objects in DRAM the period uses stay, making room if they must.
    std::vector<char> resident(objects_.size(), 0);
    for (const std::uint32_t o : used) resident[o] = 1;
    for (const std::uint32_t o : demand_[t]) {
      if (!resident[o]) continue;
      const auto i = static_cast<std::size_t>(open_[o]);
      const std::uint32_t to = std::min(end, objects_[o].to);
      if (extend(i, to)) continue;
      if (make_room(stays_[i].to, to, bytes_of(o), candidates, lo) && extend(i, to)) continue;
      (void)release(i, lo);
    }
    for (const std::size_t i : room_order(absent, begin, end)) bring(absent[i], absent_first[i], t, lo, candidates);
  }

  // The order in which period [begin, end)'s objects not in DRAM are given
  // room: by first use (Fig. 6's copies in the order the period needs
  // them), or, with RedlOptions::room_by_slow_cost, the objects whose
  // slow-tier accesses in the period would cost the kernels most per byte
  // first (the profiles of §III-B time each kernel with its arguments in
  // either tier: a write to PMM costs several times DRAM's time, a read
  // less but still a multiple), so that where not all fit, the bytes left
  // in the slow tier cost least.
  [[nodiscard]] std::vector<std::size_t> room_order(const std::vector<std::uint32_t>& absent, std::uint32_t begin,
                                                    std::uint32_t end) const {
    std::vector<std::size_t> order(absent.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (!p_.options_.room_by_slow_cost || absent.size() < 2) return order;
    // Each object's own uses in the period (not every argument of every
    // kernel there, nor a table of every object: this runs for each period
    // of each plan judged).
    std::vector<double> per_byte(absent.size(), 0);
    for (std::size_t i = 0; i < absent.size(); ++i) {
      const std::uint32_t o = absent[i];
      const std::vector<std::uint32_t>& u = program_.uses(o);
      for (auto k = std::lower_bound(u.begin(), u.end(), begin); k != u.end() && *k < end; ++k) {
        const std::vector<ProgramArg>& args = program_.kernels()[*k].args;
        for (std::size_t a = 0; a < args.size(); ++a) {
          if (args[a].object == o) per_byte[i] += p_.costs_.slow_penalty[*k][a];
        }
      }
      per_byte[i] /= static_cast<double>(std::max<std::uint64_t>(1, objects_[o].bytes));
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return per_byte[a] > per_byte[b]; });
    return order;
  }

  // Period 0: the objects the previous iteration left in DRAM, and those
  // created in it.
  [[nodiscard]] std::vector<std::uint32_t> first_step(const std::vector<std::uint32_t>& s0) {
    const std::uint32_t end = starts_[1];
    std::vector<std::uint32_t> kept;
    std::vector<char> wanted(objects_.size(), 0);
    for (const std::uint32_t o : demand_[0]) wanted[o] = 1;
    std::vector<Candidate> candidates;
    for (const std::uint32_t o : s0) {
      if (!fits(0, end, bytes_of(o))) continue;
      const std::size_t i = open_stay(o, RedlBegin::initial, 0, end);
      kept.push_back(o);
      if (!wanted[o]) candidates.push_back(candidate(i, 0));
    }
    order_candidates(candidates);
    for (std::size_t i = 0; i < demand_[0].size(); ++i) {
      if (open_[demand_[0][i]] < 0) bring(demand_[0][i], first_in_[0][i], 0, 0, candidates);
    }
    return kept;
  }

  // The end of the iteration: period T-1 brings in, for the next
  // iteration's period 0, the persistent objects assumed in DRAM at the
  // start, and writes back the other persistent ones.
  [[nodiscard]] std::vector<std::uint32_t> wrap(const std::vector<std::uint32_t>& kept) {
    const std::uint32_t lo = starts_[starts_.size() - 2];
    std::vector<char> in_s0(objects_.size(), 0);
    for (const std::uint32_t o : kept) in_s0[o] = 1;
    for (const std::uint32_t o : open_residents()) {
      const auto i = static_cast<std::size_t>(open_[o]);
      if (in_s0[o]) {
        stays_[i].end = RedlEnd::wraps;
      } else if (objects_[o].survives()) {
        (void)release(i, lo);
      } else {
        stays_[i].end = RedlEnd::dropped;  // created by the iteration, freed at its end
      }
      open_[o] = -1;
    }
    std::vector<char> held(objects_.size(), 0);
    for (const RedlStay& s : stays_) {
      if (s.end == RedlEnd::wraps) held[s.object] = 1;
    }
    for (const std::uint32_t o : kept) {
      if (held[o]) continue;
      const std::int64_t b = bytes_of(o);
      const std::uint32_t from = std::max({lo, last_end_[o], program_.uses(o).back() + 1});
      if (from >= nk_ || !fits(nk_ - 1, nk_, b)) continue;
      const std::int64_t v = occ_.last_above(from, nk_, limit_ - b);
      const std::size_t i = open_stay(o, RedlBegin::moved, v < 0 ? from : static_cast<std::uint32_t>(v) + 1, nk_);
      stays_[i].end = RedlEnd::wraps;
      open_[o] = -1;
      held[o] = 1;
    }
    std::vector<std::uint32_t> end;
    for (const std::uint32_t o : kept) {
      if (held[o]) end.push_back(o);
    }
    return end;
  }

  [[nodiscard]] std::vector<std::uint32_t> pass(const std::vector<std::uint32_t>& s0) {
    occ_ = RedlOccupancy(p_.headroom_);
    stays_.clear();
    residents_.clear();
    open_.assign(objects_.size(), -1);
    last_end_.assign(objects_.size(), 0);
    const std::vector<std::uint32_t> kept = first_step(s0);
    for (std::size_t t = 1; t + 1 < starts_.size(); ++t) step(t);
    return wrap(kept);
  }

  void index(RedlPlacement& pl) const {
    pl.covered.assign(nk_, {});
    pl.issued.assign(nk_, {});
    pl.sync_after.assign(nk_, {});
    std::vector<std::vector<std::pair<std::uint64_t, std::uint32_t>>> ins(nk_), outs(nk_);
    for (std::uint32_t i = 0; i < pl.stays.size(); ++i) {
      const RedlStay& s = pl.stays[i];
      const std::vector<std::uint32_t>& u = program_.uses(s.object);
      for (auto it = std::lower_bound(u.begin(), u.end(), s.from); it != u.end() && *it < s.to; ++it) {
        pl.covered[*it].emplace_back(s.object, i);
      }
      if (s.begin == RedlBegin::moved) {
        const auto it = std::upper_bound(u.begin(), u.end(), s.from);
        const std::uint64_t serves = it != u.end() && *it < s.to ? *it : u.front() + std::uint64_t{nk_};
        ins[s.from].emplace_back(serves, i);
      }
      if (s.end == RedlEnd::written_back) outs[s.out_kernel].emplace_back(s.object, i);
      if (s.end == RedlEnd::sync_out) pl.sync_after[s.out_kernel].push_back(i);
    }
    for (std::uint32_t k = 0; k < nk_; ++k) {
      std::sort(outs[k].begin(), outs[k].end());
      std::sort(ins[k].begin(), ins[k].end());
      for (const auto& [object, i] : outs[k]) pl.issued[k].push_back(i);
      for (const auto& [use, i] : ins[k]) pl.issued[k].push_back(i);
    }
  }

  const RedlPlanner& p_;
  const Program& program_;
  const std::vector<RedlObjectInfo>& objects_;
  std::vector<std::uint32_t> starts_;
  std::uint32_t nk_;
  std::int64_t limit_;  // 0: the occupancy counts from each kernel's limit (RedlPlanner::headroom_)
  RedlOccupancy occ_;
  std::vector<std::vector<std::uint32_t>> demand_, first_in_;  // by period
  std::vector<RedlStay> stays_;
  std::vector<std::uint32_t> residents_;  // objects that may have an open stay
  std::vector<std::int64_t> open_;        // by object: its open stay, -1
  std::vector<std::uint32_t> last_end_;   // by object: the end of its last closed stay
};

// The modeled iteration (redl.hpp "The model"), DSMA included.
class RedlSimulator {
 public:
  RedlSimulator(const RedlPlanner& planner, const RedlPlacement& placement)
      : p_(planner), program_(planner.program_), costs_(planner.costs_), pl_(placement) {}

  // The steady state: iterations follow one another until what one leaves
  // to the next repeats (or eight have run).
  [[nodiscard]] RedlTiming run() const {
    const std::size_t n = program_.objects().size();
    RedlCarry carry{CopyTimeline(costs_.channels(), n),
                    std::vector<double>(n, -std::numeric_limits<double>::infinity()), std::vector<char>(n, 0),
                    std::vector<char>(n, 0)};
    RedlTiming timing;
    for (int i = 0; i < 8; ++i) {
      RedlCarry next{carry.timeline, {}, {}, {}};
      timing = iteration(carry, next);
      const bool same = close(next.timeline.channels_idle(), carry.timeline.channels_idle()) &&
                        next.promoted == carry.promoted && next.dirty == carry.dirty &&
                        std::equal(next.arrival.begin(), next.arrival.end(), carry.arrival.begin(), close);
      carry = std::move(next);
      if (same) break;
    }
    return timing;
  }

 private:
  static bool close(double a, double b) {
    if (a == b) return true;  // infinities too
    return std::abs(a - b) <= 1e-12 * (1 + std::abs(a) + std::abs(b));
  }

  // One iteration's state: each stay's arrival in DRAM, whether a kernel
  // has used its DRAM copy (promoted) and written it (dirty).
  struct Stays {
    std::vector<double> arrival;
    std::vector<char> promoted, dirty;
  };

  [[nodiscard]] RedlTiming iteration(const RedlCarry& in, RedlCarry& out) const {
    const std::size_t nk = program_.kernels().size();
    Stays st = stays_from(in);
    RedlTiming t;
    t.in_fast.resize(nk);
    t.dsma.resize(nk);
    t.start.resize(nk);
    t.end.resize(nk);
    double stall = 0;
    // The shared clock (copy_timeline.hpp); ReDL's own rules say what a
    // kernel waits for (kernel_start), and which copies it issues when.
    CopyTimeline timeline = in.timeline;
    for (std::size_t k = 0; k < nk; ++k) {
      const double now = timeline.now();
      const double start = timeline.wait_until(kernel_start(k, st, now, stall));
      t.waits += start - now;
      t.start[k] = start;
      const double seconds = kernel_seconds(k, start, st, t);
      for (const std::uint32_t i : pl_.issued[k]) t.moves.push_back(issued_move(k, i, st, timeline, stall));
      timeline.run(seconds);
      t.end[k] = timeline.now();
      for (const std::uint32_t i : pl_.sync_after[k]) {
        RedlMove m = write_back_after(k, i, st, timeline);
        t.waits += m.end - m.issue;
        t.moves.push_back(m);
      }
    }
    const double now = timeline.now();
    const double final_time = timeline.wait_until(stall);
    t.waits += final_time - now;
    t.seconds = final_time;
    carry_out(st, timeline, final_time, out);
    return t;
  }

  // The stays as the iteration begins: those open from the start as the
  // last iteration left them, those created here in DRAM alone.
  [[nodiscard]] Stays stays_from(const RedlCarry& in) const {
    const std::vector<RedlStay>& stays = pl_.stays;
    Stays st{std::vector<double>(stays.size(), std::numeric_limits<double>::infinity()),
             std::vector<char>(stays.size(), 0), std::vector<char>(stays.size(), 0)};
    for (std::size_t i = 0; i < stays.size(); ++i) {
      const std::uint32_t o = stays[i].object;
      if (stays[i].begin == RedlBegin::initial) {
        st.arrival[i] = in.arrival[o];
        st.promoted[i] = in.promoted[o];
        st.dirty[i] = in.dirty[o];
      } else if (stays[i].begin == RedlBegin::created) {
        st.arrival[i] = -std::numeric_limits<double>::infinity();
        st.promoted[i] = st.dirty[i] = 1;  // its only copy is in DRAM
      }
    }
    return st;
  }

  // The stay of object `o` that covers kernel k, or -1.
  [[nodiscard]] std::int64_t stay_of(std::size_t k, std::uint32_t o) const {
    for (const auto& [object, i] : pl_.covered[k]) {
      if (object == o) return i;
    }
    return -1;
  }

  // When kernel k starts: after the last one and the write-backs it must
  // wait for, and after the copies in of the objects it writes (redl.hpp:
  // a write waits where a read would be served in place).
  [[nodiscard]] double kernel_start(std::size_t k, const Stays& st, double now, double stall) const {
    double start = std::max(now, stall);
    for (const ProgramArg& a : program_.kernels()[k].args) {
      const std::int64_t i = stay_of(k, a.object);
      if (i >= 0 && a.access == Access::write) start = std::max(start, st.arrival[static_cast<std::size_t>(i)]);
    }
    return start;
  }

  // Kernel k's time from `start`: each argument in DRAM if it arrived (its
  // stay promoted, dirtied by a write), else read in place (DSMA,
  // §III-D.2) at its PMM penalty while the copy goes on.
  double kernel_seconds(std::size_t k, double start, Stays& st, RedlTiming& t) const {
    const std::vector<ProgramArg>& args = program_.kernels()[k].args;
    double seconds = costs_.fast_seconds[k];
    t.in_fast[k].assign(args.size(), false);
    t.dsma[k].assign(args.size(), false);
    for (std::size_t j = 0; j < args.size(); ++j) {
      const std::int64_t i = stay_of(k, args[j].object);
      const auto si = static_cast<std::size_t>(i);
      if (p_.idle_in_dram(args[j].object) || (i >= 0 && st.arrival[si] <= start)) {
        t.in_fast[k][j] = true;
        if (i >= 0) {
          st.promoted[si] = 1;
          if (args[j].access == Access::write) st.dirty[si] = 1;
        }
        continue;
      }
      if (i >= 0) {
        t.dsma[k][j] = true;
        ++t.dsma_arguments;
      }
      seconds += costs_.slow_penalty[k][j];
    }
    return seconds;
  }

  // A copy out copies only a promoted, written object (redl.hpp).
  [[nodiscard]] std::uint64_t out_bytes(std::size_t i, const Stays& st) const {
    return st.promoted[i] && st.dirty[i] ? p_.objects_[pl_.stays[i].object].bytes : std::uint64_t{0};
  }

  // The asynchronous move of stay i issued as kernel k starts: its copy in,
  // or the write-back that ends it (the executor frees its DRAM at the
  // next kernel once it lands: `stall`).
  RedlMove issued_move(std::size_t k, std::uint32_t i, Stays& st, CopyTimeline& timeline, double& stall) const {
    constexpr DeviceId fast = CopyChannels::fast, slow = CopyChannels::slow;
    const RedlStay& s = pl_.stays[i];
    const double start = timeline.now();
    RedlMove m;
    m.object = s.object;
    m.kernel = static_cast<std::uint32_t>(k);
    m.issue = start;
    if (s.begin == RedlBegin::moved && s.from == k) {
      m.bytes = p_.objects_[s.object].bytes;
      const CopySpan copy = timeline.copy_async(slow, fast, m.bytes, s.object);
      m.start = copy.start;
      m.end = copy.end;
      st.arrival[i] = m.end;
      const std::vector<std::uint32_t>& u = program_.uses(s.object);
      const auto next = std::upper_bound(u.begin(), u.end(), s.from);
      m.wraps = next == u.end() || *next >= s.to;
      m.use = m.wraps ? u.front() : *next;
      return m;
    }
    m.to_fast = false;
    m.bytes = out_bytes(i, st);
    if (m.bytes == 0) {
      m.start = m.end = start;
      return m;
    }
    const CopySpan copy = timeline.copy_async(fast, slow, m.bytes, s.object);
    m.start = copy.start;
    m.end = copy.end;
    stall = std::max(stall, m.end);
    return m;
  }

  // The synchronous write-back of stay i after kernel k, which has ended.
  RedlMove write_back_after(std::size_t k, std::uint32_t i, const Stays& st, CopyTimeline& timeline) const {
    const double now = timeline.now();
    RedlMove m;
    m.object = pl_.stays[i].object;
    m.kernel = static_cast<std::uint32_t>(k);
    m.to_fast = false;
    m.asynchronous = false;
    m.bytes = out_bytes(i, st);
    m.issue = m.start = m.end = now;
    if (m.bytes > 0) {
      // By the compute thread, as the executor makes it: on the channel, no lane.
      constexpr DeviceId fast = CopyChannels::fast, slow = CopyChannels::slow;
      const CopySpan copy = timeline.copy_sync(fast, slow, m.bytes, m.object);
      m.start = copy.start;
      m.end = copy.end;
    }
    return m;
  }

  // What the next iteration finds: the engine's backlog and the stays that
  // wrap around, their times from its start.
  void carry_out(const Stays& st, const CopyTimeline& timeline, double final_time, RedlCarry& out) const {
    const std::size_t n = program_.objects().size();
    out.timeline = timeline;
    out.timeline.carry_over(final_time);
    out.arrival.assign(n, -std::numeric_limits<double>::infinity());
    out.promoted.assign(n, 0);
    out.dirty.assign(n, 0);
    for (std::size_t i = 0; i < pl_.stays.size(); ++i) {
      if (pl_.stays[i].end != RedlEnd::wraps) continue;
      const std::uint32_t o = pl_.stays[i].object;
      out.arrival[o] = st.arrival[i] - final_time;
      out.promoted[o] = st.promoted[i];
      out.dirty[o] = st.dirty[i];
    }
  }

  const RedlPlanner& p_;
  const Program& program_;
  const TierCosts& costs_;
  const RedlPlacement& pl_;
};

CACHEDARRAYS_INLINE RedlEvaluation RedlPlanner::evaluate(std::uint32_t period_layers) const {
  std::vector<std::uint32_t> starts;
  for (std::size_t l = 0; l < layer_first_.size(); l += period_layers) starts.push_back(layer_first_[l]);
  starts.push_back(nk_);
  RedlEvaluation e;
  e.period_layers = period_layers;
  e.placement = RedlPlacer(*this, std::move(starts)).place();
  e.timing = RedlSimulator(*this, e.placement).run();
  return e;
}

}  // namespace detail

CACHEDARRAYS_INLINE std::vector<std::uint32_t> redl_layers(const Program& program, const RedlOptions& options) {
  detail::redl_check_layers(program, options);
  const std::size_t nk = program.kernels().size();
  std::vector<std::uint32_t> layer(nk, 0);
  std::size_t next = 1;
  for (std::size_t k = 0; k < nk; ++k) {
    if (options.layer_starts.empty()) {
      layer[k] = static_cast<std::uint32_t>(k / options.kernels_per_layer);
      continue;
    }
    while (next < options.layer_starts.size() && options.layer_starts[next] <= k) ++next;
    layer[k] = static_cast<std::uint32_t>(next - 1);
  }
  return layer;
}

CACHEDARRAYS_INLINE std::vector<RedlLiveness> redl_liveness(const Program& program, const RedlOptions& options) {
  if (options.short_lived_layers == 0) {
    throw invalid_argument(
        "redl: short_lived_layers is 0; an object used at all lives at least 1 layer "
        "(the paper's short-lived objects live at most 1)");
  }
  const std::vector<std::uint32_t> layer = redl_layers(program, options);
  std::vector<RedlLiveness> out(program.objects().size());
  std::vector<bool> retired(out.size(), false);
  for (const ProgramStep& step : program.steps()) {
    if (step.kind == StepKind::retire) retired[step.index] = true;
  }
  for (std::uint32_t o = 0; o < out.size(); ++o) {
    RedlLiveness& l = out[o];
    l.survives = program.objects()[o].persistent && !retired[o];
    const std::vector<std::uint32_t>& uses = program.uses(o);
    if (uses.empty()) continue;
    l.first_use = uses.front();
    l.last_use = uses.back();
    l.first_layer = layer[l.first_use];
    l.last_layer = layer[l.last_use];
    l.layers = l.last_layer - l.first_layer + 1;
    l.kernels = l.last_use - l.first_use + 1;
    l.short_lived = !l.survives && l.layers <= options.short_lived_layers;
  }
  return out;
}

namespace detail {

CACHEDARRAYS_INLINE void redl_check_options(const Program& program, const RedlOptions& options) {
  if (options.fast_limit == 0) {
    throw invalid_argument(
        "redl_plan: fast_limit is 0 bytes; give the bytes of the fast tier the plan may hold "
        "at once, > 0 (the program's peak live bytes are " +
        std::to_string(program.max_live()) + ")");
  }
  if (options.alignment != 0 && (options.alignment < 8 || (options.alignment & (options.alignment - 1)) != 0)) {
    throw invalid_argument("redl_plan: alignment " + std::to_string(options.alignment) +
                           " must be a power of two >= 8 (the fast heap's DeviceSpec::alignment), or 0 for no "
                           "heap replay");
  }
  if (options.issue_periods == 0) {
    throw invalid_argument(
        "redl_plan: issue_periods is 0; a copy in for period t is issued during the "
        "issue_periods periods before it: give 1 (the paper's, section III-D) or more");
  }
}

// §III-D.1's iterated greedy: the median, then median +- r, until a size
// meets constraints (4) and (5) (the all-DRAM time) or the rounds run out;
// the given size alone when there is one. Each size tried goes to
// plan.search; returns the fastest.
CACHEDARRAYS_INLINE RedlEvaluation redl_search(const RedlPlanner& planner, const RedlOptions& options, RedlPlan& plan) {
  const auto meets = [&](const RedlEvaluation& e) { return e.timing.seconds <= planner.all_fast() * (1 + 1e-12); };
  std::optional<RedlEvaluation> best;
  const auto trial = [&](std::uint32_t size) {
    RedlEvaluation e = planner.evaluate(size);
    plan.search.push_back({size, e.timing.seconds});
    const bool done = meets(e);
    if (!best || e.timing.seconds < best->timing.seconds) best = std::move(e);
    return done;
  };
  if (options.period_layers > 0) {
    (void)trial(options.period_layers);
    return std::move(*best);
  }
  const std::uint32_t layers = planner.layers();
  const std::uint32_t median = (layers + 1) / 2;
  bool done = trial(median);
  for (std::uint32_t r = 1; !done && (options.search_rounds == 0 || r <= options.search_rounds); ++r) {
    const bool up = median + r <= layers, down = r < median;
    if (!up && !down) break;
    if (up) done = trial(median + r);
    if (!done && down) done = trial(median - r);
  }
  return std::move(*best);
}

// The periods of the chosen size, with their idle regions and moves.
CACHEDARRAYS_INLINE void redl_describe_periods(const RedlPlanner& planner, const RedlEvaluation& e, RedlPlan& plan) {
  const std::vector<std::uint32_t>& starts = e.placement.starts;
  const std::vector<std::int64_t>& idle = planner.idle_bytes();
  for (std::size_t t = 0; t + 1 < starts.size(); ++t) {
    RedlPeriod p;
    p.first_kernel = starts[t];
    p.end_kernel = starts[t + 1];
    p.idle_region =
        static_cast<std::uint64_t>(*std::max_element(idle.begin() + starts[t], idle.begin() + starts[t + 1]));
    plan.periods.push_back(p);
  }
  std::size_t period = 0;
  for (const RedlMove& m : e.timing.moves) {
    while (m.kernel >= starts[period + 1]) ++period;
    if (m.to_fast) ++plan.periods[period].moves_in;
    if (!m.to_fast) ++plan.periods[period].write_backs;
  }
}

// DRAM occupancy by kernel: the fast region's objects and the stays.
CACHEDARRAYS_INLINE void redl_fast_bytes(const Program& program, const RedlPlanner& planner, const RedlEvaluation& e,
                                         RedlPlan& plan) {
  const std::vector<std::int64_t>& idle = planner.idle_bytes();
  const std::size_t nk = program.kernels().size();
  std::vector<std::int64_t> diff(nk + 1, 0);
  for (const RedlStay& s : e.placement.stays) {
    diff[s.from] += static_cast<std::int64_t>(program.objects()[s.object].bytes);
    diff[s.to] -= static_cast<std::int64_t>(program.objects()[s.object].bytes);
  }
  std::int64_t held = 0;
  plan.fast_bytes.resize(nk);
  for (std::size_t k = 0; k < nk; ++k) {
    held += diff[k];
    plan.fast_bytes[k] = static_cast<std::uint64_t>(held + idle[k]);
  }
  plan.peak_fast_bytes = *std::max_element(plan.fast_bytes.begin(), plan.fast_bytes.end());
}

CACHEDARRAYS_INLINE std::string redl_status(const RedlPlan& plan, const RedlOptions& options) {
  std::uint32_t in = 0, out = 0;
  for (const RedlMove& m : plan.moves) (m.to_fast ? in : out) += 1;
  return "ReDL: periods of " + std::to_string(plan.period_layers) + " of " + std::to_string(plan.layers) + " layers (" +
         std::to_string(plan.search.size()) + (plan.search.size() == 1 ? " size" : " sizes") + " tried)" +
         (options.issue_periods > 1
              ? ", copies in issued up to " + std::to_string(options.issue_periods) + " periods ahead"
              : std::string{}) +
         (options.room_by_slow_cost ? ", room by slow-tier cost" : "") +
         (options.short_lived_layers > 1
              ? ", short-lived up to " + std::to_string(options.short_lived_layers) + " layers"
              : std::string{}) +
         ", modeled " + std::to_string(plan.modeled_seconds) + " s per iteration (all fast " +
         std::to_string(plan.all_fast_seconds) + " s, all slow " + std::to_string(plan.all_slow_seconds) + " s), " +
         std::to_string(in) + " copies in, " + std::to_string(out) + " out, " + std::to_string(plan.dsma_arguments) +
         " DSMA arguments, peak " + std::to_string(plan.peak_fast_bytes) + " of " + std::to_string(options.fast_limit) +
         " fast bytes" +
         (options.alignment == 0 || plan.fits
              ? ""
              : "; the best-fit heap reaches " + std::to_string(plan.fast_extent) + " bytes (fragmentation)");
}

}  // namespace detail

CACHEDARRAYS_INLINE RedlPlan redl_plan(const Program& program, const TierCosts& costs, const RedlOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  detail::redl_check_options(program, options);
  costs.check(program, "redl_plan");
  const detail::RedlPlanner planner(program, costs, options);
  const std::uint32_t layers = planner.layers();
  if (options.period_layers > layers) {
    throw invalid_argument("redl_plan: period_layers is " + std::to_string(options.period_layers) +
                           "; the program has " + std::to_string(layers) +
                           " layers: give 1 to that many, or 0 to search (section III-D.1)");
  }
  RedlPlan plan;
  plan.fast_limit = options.fast_limit;
  plan.kernel_limits.assign(program.kernels().size(), options.fast_limit);
  for (std::size_t k = 0; k < plan.kernel_limits.size() && k < options.kernel_limits.size(); ++k) {
    plan.kernel_limits[k] = std::min(options.kernel_limits[k], options.fast_limit);
  }
  plan.layers = layers;
  plan.liveness = planner.liveness();
  plan.idle_victims = planner.victims();
  plan.all_fast_seconds = planner.all_fast();
  plan.all_slow_seconds = planner.all_slow();
  if (layers == 0) {
    plan.status = "ReDL: an empty program";
    return plan;
  }
  detail::RedlEvaluation e = detail::redl_search(planner, options, plan);
  plan.period_layers = e.period_layers;
  detail::redl_describe_periods(planner, e, plan);
  detail::redl_fast_bytes(program, planner, e, plan);
  plan.in_fast = std::move(e.timing.in_fast);
  plan.dsma = std::move(e.timing.dsma);
  plan.dsma_arguments = e.timing.dsma_arguments;
  plan.moves = std::move(e.timing.moves);
  plan.kernel_start = std::move(e.timing.start);
  plan.kernel_end = std::move(e.timing.end);
  plan.modeled_seconds = e.timing.seconds;
  plan.wait_seconds = e.timing.waits;
  if (options.alignment != 0) {
    const std::vector<std::uint64_t> extents = autotm_dram_extents(program, redl_autotm_plan(plan), options.alignment);
    plan.fast_extent = extents.empty() ? 0 : *std::max_element(extents.begin(), extents.end());
    plan.fits = plan.fast_extent <= options.fast_limit;
  }
  plan.status = detail::redl_status(plan, options);
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

CACHEDARRAYS_INLINE MovePlan redl_autotm_plan(const RedlPlan& plan) {
  MovePlan a;
  a.in_fast = plan.in_fast;
  for (const RedlMove& m : plan.moves) a.moves.push_back({m.object, m.kernel, m.to_fast, m.asynchronous});
  a.modeled_seconds = plan.modeled_seconds;
  a.optimal = false;
  a.gap = 0;
  a.seconds = plan.seconds;
  a.status = plan.status;
  a.kernel_limits = plan.kernel_limits;
  a.fast_extent = plan.fast_extent;
  a.fits = plan.fits;
  return a;
}

CACHEDARRAYS_INLINE MovePlan redl_autotm_plan(const Program& program, const TierCosts& costs,
                                              const RedlOptions& options) {
  return redl_autotm_plan(redl_plan(program, costs, options));
}

}  // namespace cachedarrays::plan
