// Implementation of autotm.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/block_allocator.hpp"
#include "cachedarrays/plan/detail/autotm_dram_walk.hpp"
#include "cachedarrays/plan/detail/cbc_support.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE const char* to_string(AutotmFormulation formulation) noexcept {
  switch (formulation) {
    case AutotmFormulation::static_placement: return "static";
    case AutotmFormulation::synchronous: return "synchronous";
    case AutotmFormulation::asynchronous: return "asynchronous";
  }
  return "?";
}

namespace detail {

using AutotmTerms = std::vector<std::pair<int, double>>;

// The ILP in Cbc's terms: columns with bounds, objective coefficients and a
// MIP start, rows as (row, column, coefficient) entries with an upper bound
// each (no lower bound).
struct AutotmModel {
  std::vector<double> col_lower, col_upper, objective, start;
  std::vector<char> integer;
  std::vector<std::tuple<int, int, double>> entries;
  std::vector<double> row_upper;
  // Continuous columns that stand for max(0, forms...) (a kernel's time (7),
  // a move's paid write-back), each form kept as `column >= terms + constant`:
  // the plan's modeled time is evaluated from them exactly, with the binary
  // columns rounded, whatever value in its range Cbc left a column at where
  // it does not bind. In creation order: a form refers to earlier ones only.
  struct Derived {
    int column = -1;
    std::vector<std::pair<AutotmTerms, double>> at_least;
  };
  std::vector<Derived> derived;

  int column(double objective_coefficient, double upper = 1, bool is_integer = true) {
    col_lower.push_back(0);
    col_upper.push_back(upper);
    objective.push_back(objective_coefficient);
    start.push_back(0);  // everything in PMM, nothing moves: within any limit
    integer.push_back(is_integer ? 1 : 0);
    return static_cast<int>(objective.size() - 1);
  }
  // sum coefficient * column <= upper; a column named twice gets the sum
  // (Cbc rejects duplicate entries).
  int row(AutotmTerms terms, double upper) {
    std::sort(terms.begin(), terms.end());
    const auto r = static_cast<int>(row_upper.size());
    for (std::size_t i = 0; i < terms.size();) {
      double v = 0;
      std::size_t j = i;
      for (; j < terms.size() && terms[j].first == terms[i].first; ++j) v += terms[j].second;
      if (v != 0) entries.emplace_back(r, terms[i].first, v);
      i = j;
    }
    row_upper.push_back(upper);
    return r;
  }
  // column >= terms + constant.
  void at_least(int column, const AutotmTerms& terms, double constant) {
    AutotmTerms r = terms;
    r.emplace_back(column, -1);
    row(std::move(r), -constant);
    if (derived.empty() || derived.back().column != column) derived.push_back({column, {}});
    derived.back().at_least.emplace_back(terms, constant);
  }
};

// One kernel of a gap between two uses of an object during which it may
// move asynchronously: a component of its flow graph (§7.1.2).
struct AutotmComponent {
  std::uint32_t kernel = 0;
  std::uint32_t position = 0;  // kernels after the use that opens the gap (1: the next kernel)
  int state = -1;              // in DRAM after `kernel`
  int in = -1;                 // moved in during it
  int out = -1;                // moved out during it
};

struct AutotmObjectColumns {
  std::vector<int> x, y;               // by use (§3.3)
  std::vector<int> move_in, move_out;  // synchronous, by use; -1: none
  // By use: the components of the gap after it, up to the next use (around
  // the iteration for the last use of a persistent object). Empty outside
  // the asynchronous formulation.
  std::vector<std::vector<AutotmComponent>> gaps;

  // Where the object is at the end of the gap after use g: what the next
  // use finds.
  [[nodiscard]] int gap_end(std::size_t g) const { return gaps[g].empty() ? y[g] : gaps[g].back().state; }
};

struct AutotmIlp {
  AutotmModel model;
  std::vector<AutotmObjectColumns> objects;
  double constant = 0;        // the objective's part no column carries
  std::vector<int> dram_row;  // by kernel: its row of (5), -1 when nothing can be in DRAM
};

// The ILP counts time in microseconds, not seconds. Cbc's tolerances are
// absolute (a node is pruned unless its bound beats the incumbent by the
// cutoff increment, 1e-5 by default; rows hold to 1e-7): in seconds they
// are as large as a kernel's whole saving, and Cbc stopped "optimal" far
// from the optimum (at a synchronous plan slower than the static plan,
// which is one of the synchronous ILP's solutions).
inline constexpr double autotm_time_unit = 1e6;

// Builds the ILP of §3 (and §7.1 for the asynchronous formulation) once; the
// fragmentation loop only changes the right-hand sides of the DRAM rows.
class AutotmIlpBuilder {
 public:
  AutotmIlpBuilder(const Program& program, const TierCosts& costs, const AutotmOptions& options)
      : program_(program),
        costs_(costs),
        channels_(costs.channels()),
        options_(options),
        kernels_(program.kernels()),
        objects_(program.objects()),
        nk_(static_cast<std::uint32_t>(program.kernels().size())),
        async_time_(nk_) {}

  AutotmIlp build() {
    lifetimes();
    ilp_.objects.resize(objects_.size());
    for (std::uint32_t o = 0; o < objects_.size(); ++o) places(o);
    for (std::uint32_t o = 0; o < objects_.size(); ++o) write_backs(o);
    kernel_times();
    dram_rows();
    return std::move(ilp_);
  }

 private:
  [[nodiscard]] bool moves() const { return options_.formulation != AutotmFormulation::static_placement; }
  [[nodiscard]] bool asynchronous() const { return options_.formulation == AutotmFormulation::asynchronous; }
  // Times in the ILP's unit (autotm_time_unit).
  [[nodiscard]] double to_dram_time(std::uint32_t o) const {
    return autotm_time_unit * channels_.seconds(CopyChannels::slow, CopyChannels::fast, objects_[o].bytes);
  }
  [[nodiscard]] double to_pmm_time(std::uint32_t o) const {
    return autotm_time_unit * channels_.seconds(CopyChannels::fast, CopyChannels::slow, objects_[o].bytes);
  }
  // The index of o's first use at or after kernel k (uses().size(): none).
  [[nodiscard]] std::size_t use_of(std::uint32_t o, std::uint32_t k) const {
    const std::vector<std::uint32_t>& uses = program_.uses(o);
    return static_cast<std::size_t>(std::lower_bound(uses.begin(), uses.end(), k) - uses.begin());
  }
  [[nodiscard]] bool alive(std::uint32_t o, std::uint32_t k) const { return alive_from_[o] <= k && k < alive_to_[o]; }

  // The kernels each object is alive at, [alive_from_, alive_to_).
  void lifetimes() {
    alive_from_.assign(objects_.size(), 0);
    alive_to_.assign(objects_.size(), 0);
    for (std::uint32_t o = 0; o < objects_.size(); ++o) alive_to_[o] = objects_[o].persistent ? nk_ : 0;
    std::uint32_t seen = 0;
    for (const ProgramStep& step : program_.steps()) {
      if (step.kind == StepKind::create) {
        alive_from_[step.index] = seen;
        alive_to_[step.index] = nk_;
      }
      if (step.kind == StepKind::retire) alive_to_[step.index] = seen;
      if (step.kind == StepKind::kernel) ++seen;
    }
  }

  // x, y and the synchronous moves (§3.3, §3.6), and the asynchronous
  // components of each gap (§7.1.2).
  void places(std::uint32_t o) {
    const std::vector<std::uint32_t>& uses = program_.uses(o);
    const std::size_t n = uses.size();
    if (n == 0) return;
    AutotmModel& m = ilp_.model;
    AutotmObjectColumns& c = ilp_.objects[o];
    c.gaps.resize(n);
    const bool persistent = objects_[o].persistent;
    if (!moves()) {
      // The static formulation (Figure 6a): one column s(o) for all of them.
      const int s = m.column(0);
      c.x.assign(n, s);
      c.y.assign(n, s);
      c.move_in.assign(n, -1);
      c.move_out.assign(n, -1);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) {
      c.x.push_back(m.column(0));
      // A created object is freed after its last use: nothing stays.
      const bool freed = !persistent && i + 1 == n;
      c.y.push_back(m.column(0, freed ? 0 : 1));
    }
    if (asynchronous()) {
      for (std::size_t i = 0; i < n; ++i) gap(o, i);
    }
    for (std::size_t i = 0; i < n; ++i) {
      // y <= x: an object gets into DRAM only just before a use.
      m.row({{c.y[i], 1}, {c.x[i], -1}}, 0);
      // What is in DRAM at the end of the gap after use i is still there at
      // the next use (it leaves only by a move: synchronously right after a
      // use, y = 0, or asynchronously during the gap).
      if (i + 1 < n) {
        m.row({{c.gap_end(i), 1}, {c.x[i + 1], -1}}, 0);
      } else if (persistent) {
        m.row({{c.gap_end(i), 1}, {c.x[0], -1}}, 0);
      }
      // In before use i when in DRAM during it but not at the end of the gap
      // before it (around the iteration for a persistent object; a created
      // object is created where use 0 wants it). Its time adds to the
      // objective (2).
      if (i > 0 || persistent) {
        const int before = c.gap_end(i > 0 ? i - 1 : n - 1);
        const int p = m.column(to_dram_time(o));
        transition(p, before, c.x[i]);
        c.move_in.push_back(p);
      } else {
        c.move_in.push_back(-1);
      }
      // Out after use i when in DRAM during it and not after. Its time is
      // charged on a paid column (write_backs), not here.
      if (!persistent && i + 1 == n) {
        c.move_out.push_back(-1);
      } else {
        const int q = m.column(0);
        transition(q, c.y[i], c.x[i]);
        c.move_out.push_back(q);
      }
    }
  }

  // move = 1 exactly when the place goes from `from` = 0 to `to` = 1 (and
  // not only at least then: the write-once rows count moves out, so a move
  // column that is 1 without a move would make later moves free).
  void transition(int move, int from, int to) {
    AutotmModel& m = ilp_.model;
    m.row({{to, 1}, {from, -1}, {move, -1}}, 0);  // move >= to - from
    m.row({{move, 1}, {to, -1}}, 0);              // move <= to
    m.row({{move, 1}, {from, 1}}, 1);             // move <= 1 - from
  }

  // The components of the gap after use i (§7.1.2): the first
  // async_window kernels after the use (where a move out can start) and the
  // last async_window before the next one (where a move in can), all of
  // them when the gap is shorter than twice the window; only kernels at
  // which the object is alive. Columns per component: its state after the
  // kernel, s, and moves in >= s - s(prev) and out >= s(prev) - s, with
  // s(prev) the previous component's state or y(use i).
  void gap(std::uint32_t o, std::size_t i) {
    const std::vector<std::uint32_t>& uses = program_.uses(o);
    const std::size_t n = uses.size();
    const bool persistent = objects_[o].persistent;
    if (i + 1 == n && !persistent) return;  // freed after its last use
    const std::uint32_t u = uses[i];
    const std::uint32_t next = uses[(i + 1) % n];
    const std::uint32_t span = i + 1 < n ? next - u : next + nk_ - u;  // positions 1 .. span - 1
    std::vector<std::uint32_t> positions;
    for (std::uint32_t p = 1; p < span; ++p) {
      if (alive(o, (u + p) % nk_)) positions.push_back(p);
    }
    const std::size_t window = options_.async_window;
    if (positions.size() > 2 * window) {
      positions.erase(positions.begin() + static_cast<std::ptrdiff_t>(window),
                      positions.end() - static_cast<std::ptrdiff_t>(window));
    }
    AutotmModel& m = ilp_.model;
    AutotmObjectColumns& c = ilp_.objects[o];
    int prev = c.y[i];
    for (const std::uint32_t p : positions) {
      AutotmComponent comp;
      comp.position = p;
      comp.kernel = (u + p) % nk_;
      comp.state = m.column(0);
      comp.in = m.column(0);
      comp.out = m.column(0);
      transition(comp.in, prev, comp.state);
      transition(comp.out, comp.state, prev);
      // (8): the move in's time overlaps its kernel; the move out's is
      // added by write_backs, where it is paid.
      async_time_[comp.kernel].emplace_back(comp.in, to_dram_time(o));
      c.gaps[i].push_back(comp);
      prev = comp.state;
    }
  }

  // The write-once saving (§3.6). The paper's tensors are immutable, so
  // once one is in PMM its later moves out are no-ops. Ours are not, but
  // our runtime keeps that property between writes: a move in leaves the
  // PMM region linked to the DRAM copy (getlinked), a write marks the DRAM
  // copy dirty, and a move out of a clean object only drops its DRAM copy.
  // So a move out q after use i copies (and costs |o| / bandwidth) only
  // when the last use that wrote the object, w(i) <= i, wrote it in DRAM,
  // x(o, w) = 1, and no move out came between w and q:
  //   paid >= q - sum of the moves out between w and q - (1 - x(o, w)),
  // with the cost on the paid column instead of q. The sums grow with the
  // square of the moves out after a write, and an object read by dozens of
  // kernels (DenseNet's feature maps) has hundreds of candidate moves out;
  // so they run over blocks of at most `block` moves, and a continuous
  // "stale" column D carries each block's start to the next:
  //   D(next block) >= D - sum of the block's moves out, D(first) = x(o, w),
  //   paid >= q + D - sum of the block's moves out before q - 1;
  // at an integer point D = max(0, x(o, w) - the moves out since w): the
  // same bound. (Blocks of one move would be linear, but Cbc solves the
  // ILP slower with them: the sums stay where they are short.)
  // For a persistent object w wraps around to the previous iteration's
  // last write; one that no use writes never pays (its PMM copy, once made,
  // stays valid). A created object is written by its creation, where use 0
  // wants it: before its first writing use, w = 0. Asynchronous moves out
  // (§7.1.3) are paid the same way, in their kernel's time (8).
  void write_backs(std::uint32_t o) {
    if (!moves()) return;
    if (!options_.write_once) {
      // Every move out pays |o| / bandwidth: synchronous ones in the
      // objective (2), asynchronous ones in their kernel's time (8).
      const double time = to_pmm_time(o);
      const AutotmObjectColumns& c = ilp_.objects[o];
      AutotmModel& m = ilp_.model;
      for (std::size_t i = 0; i < c.move_out.size(); ++i) {
        if (c.move_out[i] >= 0) m.objective[static_cast<std::size_t>(c.move_out[i])] += time;
        for (const AutotmComponent& comp : c.gaps[i]) async_time_[comp.kernel].emplace_back(comp.out, time);
      }
      return;
    }
    const std::vector<std::uint32_t>& uses = program_.uses(o);
    const std::size_t n = uses.size();
    if (n == 0) return;
    AutotmModel& m = ilp_.model;
    const AutotmObjectColumns& c = ilp_.objects[o];
    const bool persistent = objects_[o].persistent;
    // The uses after which the PMM copy's validity is decided anew: the
    // writes, and a created object's creation.
    std::vector<std::size_t> writes;
    for (std::size_t i = 0; i < n; ++i) {
      bool written = i == 0 && !persistent;
      for (const ProgramArg& a : kernels_[uses[i]].args)
        written = written || (a.object == o && a.access == Access::write);
      if (written) writes.push_back(i);
    }
    if (writes.empty()) return;  // a persistent object never written: never pays
    struct Out {
      int column;
      std::uint32_t kernel;
      bool asynchronous;
      std::size_t write;  // w: the use that last wrote the object before it
    };
    // The moves out in the order they happen, from the first write on (a
    // persistent object's moves before it follow, around the iteration,
    // those after its last write).
    std::vector<Out> outs, wrapped;
    std::size_t next_write = 0;
    for (std::size_t i = 0; i < n; ++i) {
      while (next_write < writes.size() && writes[next_write] <= i) ++next_write;
      const bool before_first = next_write == 0;
      const std::size_t w = before_first ? writes.back() : writes[next_write - 1];
      std::vector<Out>& into = before_first ? wrapped : outs;
      if (c.move_out[i] >= 0) into.push_back({c.move_out[i], uses[i], false, w});
      for (const AutotmComponent& comp : c.gaps[i]) into.push_back({comp.out, comp.kernel, true, w});
    }
    outs.insert(outs.end(), wrapped.begin(), wrapped.end());
    constexpr std::size_t block = 16;
    const double time = to_pmm_time(o);
    int stale = -1;         // D of the current block
    std::size_t first = 0;  // its first move out
    for (std::size_t at = 0; at < outs.size(); ++at) {
      const Out& out = outs[at];
      const auto since_block = [&](AutotmTerms terms) {
        for (std::size_t e = first; e < at; ++e) terms.emplace_back(outs[e].column, -1);
        return terms;
      };
      if (at == 0 || outs[at - 1].write != out.write) {
        stale = c.x[out.write];
        first = at;
      } else if (at - first == block) {
        const int d = m.column(0, 1, false);
        m.at_least(d, since_block({{stale, 1}}), 0);
        stale = d;
        first = at;
      }
      const int paid = m.column(out.asynchronous ? 0 : time, 1, false);
      m.at_least(paid, since_block({{out.column, 1}, {stale, 1}}), -1);
      if (out.asynchronous) async_time_[out.kernel].emplace_back(paid, time);
    }
  }

  // The objective: (1)/(2), and (7) for the kernels a move may overlap.
  // rho_k = n_DRAM + sum_a delta(k,a) (1 - x(a,k)) (§3.5, see autotm.hpp).
  // A kernel no move overlaps adds rho_k itself; one that a move may
  // overlap adds a continuous T_k >= rho_k and >= the time of its
  // asynchronous moves (8): max(rho_k, sum M^async) in ILP form.
  void kernel_times() {
    AutotmModel& m = ilp_.model;
    for (std::uint32_t k = 0; k < nk_; ++k) {
      double base = autotm_time_unit * costs_.fast_seconds[k];
      AutotmTerms rho;
      for (std::size_t j = 0; j < kernels_[k].args.size(); ++j) {
        const std::uint32_t o = kernels_[k].args[j].object;
        const double delta = autotm_time_unit * costs_.slow_penalty[k][j];
        base += delta;
        rho.emplace_back(ilp_.objects[o].x[use_of(o, k)], -delta);
      }
      if (async_time_[k].empty()) {
        ilp_.constant += base;
        for (const auto& [col, coefficient] : rho) m.objective[static_cast<std::size_t>(col)] += coefficient;
        continue;
      }
      double upper = base;
      for (const auto& term : async_time_[k]) upper += term.second;
      const int t = m.column(1, upper, false);
      m.start[static_cast<std::size_t>(t)] = base;  // the start puts everything in PMM
      m.at_least(t, rho, base);
      m.at_least(t, async_time_[k], 0);
    }
  }

  // Where o is during kernel k, which does not use it, as the DRAM it
  // holds (ref(k, t) of (5)): where its last use before k left it, changed
  // by the components of the gap up to k; during a component's kernel both
  // its place before and a move in count (a move out frees its DRAM after
  // the kernel, a move in takes it from the start).
  [[nodiscard]] AutotmTerms held(std::uint32_t o, std::uint32_t k) const {
    const std::vector<std::uint32_t>& uses = program_.uses(o);
    const std::size_t n = uses.size();
    const AutotmObjectColumns& c = ilp_.objects[o];
    const std::size_t next = use_of(o, k);
    const bool persistent = objects_[o].persistent;
    if (!persistent && next == 0) return {{c.x[0], 1}};  // created for a later kernel: where that kernel wants it
    if (!persistent && next == n) return {{c.y[n - 1], 1}};
    const std::size_t g = next > 0 ? next - 1 : n - 1;
    const std::uint32_t position = (k + nk_ - uses[g]) % nk_;
    int before = c.y[g];
    for (const AutotmComponent& comp : c.gaps[g]) {
      if (comp.position > position) break;
      if (comp.position == position) return {{before, 1}, {comp.in, 1}};
      before = comp.state;
    }
    return {{before, 1}};
  }

  // DRAM limit per kernel (5), over the objects alive at each kernel; the
  // right-hand side L_DRAM,k is set per solve.
  void dram_rows() {
    ilp_.dram_row.assign(nk_, -1);
    for (std::uint32_t k = 0; k < nk_; ++k) {
      AutotmTerms terms;
      std::vector<bool> io(objects_.size());
      for (const ProgramArg& a : kernels_[k].args) {
        if (io[a.object]) continue;
        io[a.object] = true;
        terms.emplace_back(ilp_.objects[a.object].x[use_of(a.object, k)],
                           static_cast<double>(objects_[a.object].bytes));
      }
      for (std::uint32_t o = 0; o < objects_.size(); ++o) {
        if (!alive(o, k) || io[o] || program_.uses(o).empty()) continue;
        for (const auto& [col, share] : held(o, k)) {
          terms.emplace_back(col, share * static_cast<double>(objects_[o].bytes));
        }
      }
      if (!terms.empty()) ilp_.dram_row[k] = ilp_.model.row(std::move(terms), 0);
    }
  }

  const Program& program_;
  const TierCosts& costs_;
  CopyChannels channels_;  // a move's time: the executor's copy channels
  const AutotmOptions& options_;
  const std::vector<ProgramKernel>& kernels_;
  const std::vector<ProgramObject>& objects_;
  std::uint32_t nk_;
  std::vector<std::uint32_t> alive_from_, alive_to_;
  std::vector<AutotmTerms> async_time_;  // by kernel: (move column, time) of the moves it may overlap
  AutotmIlp ilp_;
};

// The plan a solution describes: each argument's place, and the moves read
// off the changes of place (in program order: before a kernel, beside it,
// after it).
CACHEDARRAYS_INLINE void autotm_read_plan(const Program& program, const AutotmIlp& ilp,
                                          const std::vector<double>& values, MovePlan& plan) {
  const auto on = [&](int c) { return c >= 0 && values[static_cast<std::size_t>(c)] > 0.5; };
  const std::vector<ProgramKernel>& kernels = program.kernels();
  plan.in_fast.assign(kernels.size(), {});
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (const ProgramArg& a : kernels[k].args) {
      const std::vector<std::uint32_t>& uses = program.uses(a.object);
      const auto i = std::lower_bound(uses.begin(), uses.end(), static_cast<std::uint32_t>(k)) - uses.begin();
      plan.in_fast[k].push_back(on(ilp.objects[a.object].x[static_cast<std::size_t>(i)]));
    }
  }
  plan.moves.clear();
  for (std::uint32_t o = 0; o < ilp.objects.size(); ++o) {
    const AutotmObjectColumns& c = ilp.objects[o];
    const std::vector<std::uint32_t>& uses = program.uses(o);
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      if (c.move_in[i] >= 0 && on(c.x[i]) && !on(c.gap_end(i > 0 ? i - 1 : c.x.size() - 1))) {
        plan.moves.push_back({o, uses[i], true, false});
      }
      if (c.move_out[i] >= 0 && on(c.x[i]) && !on(c.y[i])) plan.moves.push_back({o, uses[i], false, false});
      bool before = on(c.y[i]);
      for (const AutotmComponent& comp : c.gaps[i]) {
        const bool after = on(comp.state);
        if (after != before) plan.moves.push_back({o, comp.kernel, after, true});
        before = after;
      }
    }
  }
  const auto phase = [](const TierMove& m) { return m.asynchronous ? 1 : m.to_fast ? 0 : 2; };
  std::sort(plan.moves.begin(), plan.moves.end(), [&](const TierMove& a, const TierMove& b) {
    return std::tuple(a.kernel, phase(a), a.object) < std::tuple(b.kernel, phase(b), b.object);
  });
}

// The binary columns rounded, the continuous ones evaluated from them.
CACHEDARRAYS_INLINE void autotm_round(const AutotmModel& m, std::vector<double>& solution) {
  for (std::size_t c = 0; c < solution.size(); ++c) {
    if (m.integer[c] != 0) solution[c] = std::round(solution[c]);
  }
  for (const AutotmModel::Derived& d : m.derived) {
    double v = 0;
    for (const auto& [terms, constant] : d.at_least) {
      double form = constant;
      for (const auto& [c, coefficient] : terms) form += coefficient * solution[static_cast<std::size_t>(c)];
      v = std::max(v, form);
    }
    solution[static_cast<std::size_t>(d.column)] = std::min(v, m.col_upper[static_cast<std::size_t>(d.column)]);
  }
}

// An ILP's columns set to a plan with synchronous moves only (a static or
// synchronous plan of the same program): each use's place from in_fast,
// what stays after it from the moves out, every gap component keeping that
// place, and the continuous columns evaluated. A MIP start: for the
// asynchronous ILP, which contains every synchronous plan, and for the
// next solve of the fragmentation loop.
CACHEDARRAYS_INLINE std::vector<double> autotm_start_from(const Program& program, const AutotmIlp& ilp,
                                                          const MovePlan& plan) {
  std::vector<double> start(ilp.model.objective.size(), 0.0);
  const auto set = [&](int c, bool on) {
    if (c >= 0) start[static_cast<std::size_t>(c)] = on ? 1 : 0;
  };
  std::vector<std::vector<bool>> out_after(ilp.objects.size());
  for (std::uint32_t o = 0; o < ilp.objects.size(); ++o) out_after[o].assign(ilp.objects[o].x.size(), false);
  for (const TierMove& move : plan.moves) {
    if (move.to_fast || move.asynchronous) continue;
    const std::vector<std::uint32_t>& uses = program.uses(move.object);
    const auto i = std::lower_bound(uses.begin(), uses.end(), move.kernel) - uses.begin();
    out_after[move.object][static_cast<std::size_t>(i)] = true;
  }
  std::vector<std::vector<bool>> x(ilp.objects.size());
  for (std::uint32_t o = 0; o < ilp.objects.size(); ++o) x[o].assign(ilp.objects[o].x.size(), false);
  const std::vector<ProgramKernel>& kernels = program.kernels();
  for (std::uint32_t k = 0; k < kernels.size(); ++k) {
    for (std::size_t j = 0; j < kernels[k].args.size(); ++j) {
      const std::uint32_t o = kernels[k].args[j].object;
      const std::vector<std::uint32_t>& uses = program.uses(o);
      const auto i = std::lower_bound(uses.begin(), uses.end(), k) - uses.begin();
      x[o][static_cast<std::size_t>(i)] = plan.in_fast[k][j];
    }
  }
  for (std::uint32_t o = 0; o < ilp.objects.size(); ++o) {
    const AutotmObjectColumns& c = ilp.objects[o];
    const std::size_t n = c.x.size();
    for (std::size_t i = 0; i < n; ++i) {
      const bool in = x[o][i];
      const bool stays =
          in && !out_after[o][i] && c.y[i] >= 0 && ilp.model.col_upper[static_cast<std::size_t>(c.y[i])] > 0;
      set(c.x[i], in);
      set(c.y[i], stays);
      set(c.move_out[i], in && !stays);
      for (const AutotmComponent& comp : c.gaps[i]) set(comp.state, stays);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (c.move_in[i] < 0) continue;
      const int before = c.gap_end(i > 0 ? i - 1 : n - 1);
      set(c.move_in[i], x[o][i] && start[static_cast<std::size_t>(before)] < 0.5);
    }
  }
  autotm_round(ilp.model, start);
  return start;
}

// Whether `values` (every column of the ILP) keeps each row, the DRAM
// rows at `limits`: a MIP start that breaks one, Cbc drops.
CACHEDARRAYS_INLINE bool autotm_keeps_limits(const AutotmIlp& ilp, const std::vector<double>& values,
                                             const std::vector<std::uint64_t>& limits) {
  const AutotmModel& m = ilp.model;
  std::vector<double> activity(m.row_upper.size(), 0.0);
  for (const auto& [r, c, v] : m.entries) {
    activity[static_cast<std::size_t>(r)] += v * values[static_cast<std::size_t>(c)];
  }
  std::vector<double> upper = m.row_upper;
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] >= 0) upper[static_cast<std::size_t>(ilp.dram_row[k])] = static_cast<double>(limits[k]);
  }
  for (std::size_t r = 0; r < activity.size(); ++r) {
    if (activity[r] > upper[r] + 1e-6 * std::max(1.0, std::abs(upper[r]))) return false;
  }
  return true;
}

// By object: its binary columns (places, moves, gap components), each once
// (the static ILP's places and gaps are one column).
CACHEDARRAYS_INLINE std::vector<std::vector<int>> autotm_columns_of(const AutotmIlp& ilp) {
  std::vector<std::vector<int>> columns_of(ilp.objects.size());
  for (std::size_t o = 0; o < ilp.objects.size(); ++o) {
    const AutotmObjectColumns& c = ilp.objects[o];
    std::vector<int>& mine = columns_of[o];
    for (const std::vector<int>* list : {&c.x, &c.y, &c.move_in, &c.move_out})
      mine.insert(mine.end(), list->begin(), list->end());
    for (const std::vector<AutotmComponent>& gap : c.gaps) {
      for (const AutotmComponent& comp : gap) mine.insert(mine.end(), {comp.state, comp.in, comp.out});
    }
    std::erase(mine, -1);
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  }
  return columns_of;
}

// Makes `values` keep the DRAM rows at `limits` by sending objects to PMM
// for the whole iteration (all their columns 0, which only lowers a DRAM
// row: the largest holder of an overfull row first), then evaluates the
// continuous columns again. True when every row then holds. A retry of the
// fragmentation loop lowers some limits, which the plan before it breaks;
// Cbc drops a start that breaks a row, and then, short of time, may find
// nothing better than everything in PMM, far slower than the plan before
// the retry.
CACHEDARRAYS_INLINE bool autotm_repair(const AutotmIlp& ilp, std::vector<double>& values,
                                       const std::vector<std::uint64_t>& limits) {
  const AutotmModel& m = ilp.model;
  const std::size_t cols = m.objective.size();
  std::vector<std::vector<std::pair<int, double>>> by_column(cols);
  std::vector<double> activity(m.row_upper.size(), 0.0);
  for (const auto& [r, c, v] : m.entries) {
    by_column[static_cast<std::size_t>(c)].emplace_back(r, v);
    activity[static_cast<std::size_t>(r)] += v * values[static_cast<std::size_t>(c)];
  }
  const std::vector<std::vector<int>> columns_of = autotm_columns_of(ilp);
  std::vector<int> owner(cols, -1);
  for (std::size_t o = 0; o < columns_of.size(); ++o) {
    for (const int col : columns_of[o]) owner[static_cast<std::size_t>(col)] = static_cast<int>(o);
  }
  std::vector<std::vector<std::pair<int, double>>> dram_entries(limits.size());
  std::vector<int> row_kernel(m.row_upper.size(), -1);
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] >= 0) row_kernel[static_cast<std::size_t>(ilp.dram_row[k])] = static_cast<int>(k);
  }
  for (const auto& [r, c, v] : m.entries) {
    if (row_kernel[static_cast<std::size_t>(r)] >= 0)
      dram_entries[static_cast<std::size_t>(row_kernel[static_cast<std::size_t>(r)])].emplace_back(c, v);
  }
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] < 0) continue;
    const auto r = static_cast<std::size_t>(ilp.dram_row[k]);
    while (activity[r] > static_cast<double>(limits[k]) + 1e-6 * std::max(1.0, static_cast<double>(limits[k]))) {
      std::vector<double> held(ilp.objects.size(), 0.0);
      int largest = -1;
      for (const auto& [c, v] : dram_entries[k]) {
        const int o = owner[static_cast<std::size_t>(c)];
        if (o < 0) continue;
        held[static_cast<std::size_t>(o)] += v * values[static_cast<std::size_t>(c)];
        if (held[static_cast<std::size_t>(o)] > 0 &&
            (largest < 0 || held[static_cast<std::size_t>(o)] > held[static_cast<std::size_t>(largest)])) {
          largest = o;
        }
      }
      if (largest < 0) return false;
      for (const int c : columns_of[static_cast<std::size_t>(largest)]) {
        const auto col = static_cast<std::size_t>(c);
        if (values[col] == 0) continue;
        for (const auto& [row, v] : by_column[col]) activity[static_cast<std::size_t>(row)] -= v * values[col];
        values[col] = 0;
      }
    }
  }
  autotm_round(m, values);
  return autotm_keeps_limits(ilp, values, limits);
}

// A static plan by greedy knapsack, the first solve's MIP start: each
// object whole in DRAM or whole in PMM, objects taken by their saving per
// byte-kernel of DRAM they hold (the objective's coefficients over the DRAM
// rows' entries, the static ILP being a multidimensional knapsack), each
// one that keeps every DRAM row at `limits`. Cbc, given "everything in PMM"
// and a few seconds, may return it unimproved, even on an ILP whose optimum
// it finds given a little longer (once the dives keep the time limit,
// detail::mip_cap_heuristics). The
// greedy plan is no guarantee of quality, only a floor the search starts
// from; Cbc's search and the objective decide.
CACHEDARRAYS_INLINE std::vector<double> autotm_greedy_start(const Program& program, const AutotmIlp& ilp,
                                                            const std::vector<std::uint64_t>& limits) {
  const AutotmModel& m = ilp.model;
  MovePlan everything;  // every object in DRAM throughout: which columns that sets
  everything.in_fast.resize(program.kernels().size());
  for (std::size_t k = 0; k < everything.in_fast.size(); ++k) {
    everything.in_fast[k].assign(program.kernels()[k].args.size(), true);
  }
  const std::vector<double> all_in = autotm_start_from(program, ilp, everything);
  std::vector<std::vector<int>> in_columns = autotm_columns_of(ilp);
  for (std::vector<int>& columns : in_columns) {
    std::erase_if(columns, [&](int c) {
      return m.integer[static_cast<std::size_t>(c)] == 0 || all_in[static_cast<std::size_t>(c)] < 0.5;
    });
  }
  std::vector<int> row_kernel(m.row_upper.size(), -1);
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] >= 0) row_kernel[static_cast<std::size_t>(ilp.dram_row[k])] = static_cast<int>(k);
  }
  std::vector<std::vector<std::pair<int, double>>> dram_by_column(m.objective.size());
  for (const auto& [r, c, v] : m.entries) {
    if (row_kernel[static_cast<std::size_t>(r)] >= 0) dram_by_column[static_cast<std::size_t>(c)].emplace_back(r, v);
  }
  struct Candidate {
    std::uint32_t object;
    double density;
  };
  std::vector<Candidate> candidates;
  for (std::uint32_t o = 0; o < in_columns.size(); ++o) {
    double saving = 0;
    double held = 0;
    for (const int c : in_columns[o]) {
      saving -= m.objective[static_cast<std::size_t>(c)];
      for (const auto& [r, v] : dram_by_column[static_cast<std::size_t>(c)]) held += v;
    }
    if (saving > 0 && held > 0) candidates.push_back({o, saving / held});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.density > b.density; });
  std::vector<double> room(m.row_upper.size(), 0.0);
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] >= 0) room[static_cast<std::size_t>(ilp.dram_row[k])] = static_cast<double>(limits[k]);
  }
  std::vector<double> values = m.start;
  for (const auto& [r, c, v] : m.entries) {
    if (row_kernel[static_cast<std::size_t>(r)] >= 0)
      room[static_cast<std::size_t>(r)] -= v * values[static_cast<std::size_t>(c)];
  }
  std::vector<double> need(m.row_upper.size(), 0.0);
  for (const Candidate& candidate : candidates) {
    std::vector<int> rows;
    for (const int c : in_columns[candidate.object]) {
      for (const auto& [r, v] : dram_by_column[static_cast<std::size_t>(c)]) {
        if (need[static_cast<std::size_t>(r)] == 0) rows.push_back(r);
        need[static_cast<std::size_t>(r)] += v;
      }
    }
    const bool fits = std::all_of(rows.begin(), rows.end(), [&](int r) {
      return need[static_cast<std::size_t>(r)] <= room[static_cast<std::size_t>(r)];
    });
    for (const int r : rows) {
      if (fits) room[static_cast<std::size_t>(r)] -= need[static_cast<std::size_t>(r)];
      need[static_cast<std::size_t>(r)] = 0;
    }
    if (!fits) continue;
    for (const int c : in_columns[candidate.object]) values[static_cast<std::size_t>(c)] = 1;
  }
  autotm_round(m, values);
  return values;
}

// Below this a solve is not attempted (autotm_solve): Cbc checks its limit
// only after its root LP, which alone takes seconds on large ILPs.
inline constexpr double autotm_min_solve_seconds = 0.05;

// The ILP as Cbc takes it, with the DRAM limits `limits` (L_DRAM,k of (5)),
// from `start_values` (null: the model's, everything in PMM).
CACHEDARRAYS_INLINE MipProblem autotm_mip(const AutotmIlp& ilp, const std::vector<std::uint64_t>& limits,
                                          const std::vector<double>* start_values) {
  const AutotmModel& m = ilp.model;
  std::vector<double> row_upper = m.row_upper;
  for (std::size_t k = 0; k < limits.size(); ++k) {
    if (ilp.dram_row[k] >= 0) row_upper[static_cast<std::size_t>(ilp.dram_row[k])] = static_cast<double>(limits[k]);
  }
  // Column-major, as Cbc loads a matrix.
  const std::size_t cols = m.objective.size();
  std::vector<std::tuple<int, int, double>> entries = m.entries;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<1>(a), std::get<0>(a)) < std::tie(std::get<1>(b), std::get<0>(b));
  });
  // The DRAM rows (5) count in MiB, not bytes: in bytes (coefficients and
  // limits of up to tens of gigabytes on the largest networks) Cbc's closing
  // LP over the synchronous ILP ran on in huge primal and dual
  // infeasibilities long after the search had stopped at its time limit.
  // A power of two keeps every coefficient and limit exact.
  constexpr double row_unit = 1024.0 * 1024.0;
  std::vector<char> is_dram_row(row_upper.size(), 0);
  for (const int r : ilp.dram_row) {
    if (r >= 0) is_dram_row[static_cast<std::size_t>(r)] = 1;
  }
  for (std::size_t r = 0; r < row_upper.size(); ++r) {
    if (is_dram_row[r] != 0) row_upper[r] /= row_unit;
  }
  MipProblem mip;
  mip.start.assign(cols + 1, 0);
  for (const auto& [r, c, v] : entries) {
    ++mip.start[static_cast<std::size_t>(c) + 1];
    mip.index.push_back(r);
    mip.value.push_back(is_dram_row[static_cast<std::size_t>(r)] != 0 ? v / row_unit : v);
  }
  for (std::size_t c = 0; c < cols; ++c) mip.start[c + 1] += mip.start[c];
  mip.col_lower = m.col_lower;
  mip.col_upper = m.col_upper;
  mip.objective = m.objective;
  mip.row_upper = std::move(row_upper);
  // The kernel times T_k and the paid write-backs stay continuous: each is
  // the max of forms of binary columns, integral wherever it binds.
  mip.integer = m.integer;
  mip.start_values = start_values != nullptr ? *start_values : m.start;
  return mip;
}

// What a solve's outcome says of the plan: its modeled time, its gap and
// whether it is optimal, in words too.
CACHEDARRAYS_INLINE void autotm_judge_solve(const AutotmIlp& ilp, const MipOutcome& outcome,
                                            const std::vector<double>& solution, const AutotmOptions& options,
                                            double seconds, MovePlan& plan) {
  const AutotmModel& m = ilp.model;
  double objective = 0;
  for (std::size_t c = 0; c < m.objective.size(); ++c) objective += m.objective[c] * solution[c];
  const double total = ilp.constant + objective;
  const bool stopped = outcome.seconds_limit_reached;
  plan.modeled_seconds = total / autotm_time_unit;
  plan.gap = total > 0 ? std::max(0.0, (objective - outcome.bound) / total) : 0;
  // When the search ends because no node can beat the incumbent (the MIP
  // start, often), Cbc leaves its bound at the last LP's; what it proved is
  // the requested gap.
  if (outcome.proven_optimal) plan.gap = std::min(plan.gap, options.relative_gap);
  plan.optimal = !stopped && (outcome.proven_optimal || plan.gap <= options.relative_gap + 1e-9);
  plan.status = stopped ? "stopped at the time limit of " + mip_format_number(seconds) +
                              " s; the best plan found, gap " + mip_format_number(plan.gap)
                        : "optimal within the relative gap " + mip_format_number(options.relative_gap);
}

// One solve of the ILP with the DRAM limits `limits` (L_DRAM,k of (5)),
// within `seconds`, from `start` (null: the model's, everything in PMM).
CACHEDARRAYS_INLINE MovePlan autotm_solve(const Program& program, const AutotmIlp& ilp,
                                          const std::vector<std::uint64_t>& limits, const AutotmOptions& options,
                                          double seconds, const std::vector<double>* start_values = nullptr) {
  const MipProblem mip = autotm_mip(ilp, limits, start_values);
  MovePlan plan;
  // No time left (building a large ILP can take the whole budget): the
  // start is the plan. Given a token limit, Cbc's root alone can run many
  // times the whole budget past it.
  const bool no_time = seconds < autotm_min_solve_seconds;
  MipOutcome outcome;
  if (no_time) {
    outcome.seconds_limit_reached = true;
    outcome.bound = -ilp.constant;  // the trivial bound, a plan of no time: gap 1
  } else {
    outcome = solve_mip(mip, seconds, options.relative_gap, "autotm_plan: Cbc ");
  }
  if (outcome.solution.empty() && outcome.secondary_status == 1) {
    throw error("autotm_plan: Cbc calls the ILP infeasible, though everything in PMM is a solution");
  }
  // Nothing found: the start (it keeps the limits: start_for checks that,
  // and everything in PMM keeps any).
  std::vector<double> solution = !outcome.solution.empty() ? outcome.solution : mip.start_values;
  autotm_round(ilp.model, solution);
  autotm_judge_solve(ilp, outcome, solution, options, seconds, plan);
  if (no_time) plan.status = "no time left to solve (the plan's time limit was spent): the start, unsearched";
  // Cbc looks at its limit only between steps (and the dives at theirs,
  // detail::mip_cap_heuristics): say so when a solve ran well past it.
  if (const double over = outcome.seconds - seconds; over > std::max(1.0, 0.1 * seconds)) {
    const auto tenths = [](double v) { return mip_format_number(std::round(v * 10) / 10); };
    plan.status += "; Cbc ran " + tenths(over) + " s past its limit of " + tenths(seconds) +
                   " s (it checks the limit only between its steps)";
  }
  autotm_read_plan(program, ilp, solution, plan);
  plan.kernel_limits = limits;
  return plan;
}

// A replay of the plan's DRAM allocations on a best-fit heap of
// `capacity` bytes: false when the heap is too small (the caller doubles
// it).
class AutotmDramReplay {
 public:
  AutotmDramReplay(const Program& program, const MovePlan& plan, std::uint64_t capacity, std::uint64_t alignment)
      : program_(program),
        plan_(plan),
        walk_(program, plan),
        heap_(capacity, alignment),
        held_(program.objects().size(), nullptr),
        ids_(program.objects().size()) {
    std::iota(ids_.begin(), ids_.end(), 0u);
  }

  // Persistent objects start in DRAM where the end of an iteration leaves
  // them: an iteration from nothing held finds that out (after its last use
  // an object's place depends on the plan only), then two from there.
  [[nodiscard]] bool run(std::vector<std::uint64_t>& extents) {
    std::vector<bool> at_end(held_.size(), false);
    {
      AutotmDramReplay first(program_, plan_, heap_.capacity(), heap_.alignment());
      if (!first.iteration(nullptr)) return false;
      for (std::size_t o = 0; o < held_.size(); ++o) at_end[o] = first.held_[o] != nullptr;
    }
    for (std::uint32_t o = 0; o < held_.size(); ++o) {
      if (at_end[o] && program_.objects()[o].persistent && !allocate(o)) return false;
    }
    extents.assign(program_.kernels().size(), 0);
    return iteration(nullptr) && iteration(&extents);
  }

 private:
  using Heap = cachedarrays::detail::BlockAllocator<std::uint32_t>;

  bool allocate(std::uint32_t o) {
    if (held_[o] != nullptr) return true;
    held_[o] = heap_.try_allocate(program_.objects()[o].bytes, ids_[o]);
    return held_[o] != nullptr;
  }
  void release(std::uint32_t o) {
    if (held_[o] == nullptr) return;
    heap_.release(held_[o]);
    held_[o] = nullptr;
  }

  bool iteration(std::vector<std::uint64_t>* extents) {
    return walk_.iteration([&](std::uint32_t o, std::uint32_t) { return allocate(o); },
                           [&](std::uint32_t o) { release(o); },
                           [&](std::uint32_t k) {
                             if (extents != nullptr) (*extents)[k] = heap_.extent();
                           });
  }

  const Program& program_;
  const MovePlan& plan_;
  AutotmDramWalk walk_;
  Heap heap_;
  std::vector<Heap::Block*> held_;  // by object: its DRAM block, null in PMM
  std::vector<std::uint32_t> ids_;  // the heap's owners
};

}  // namespace detail

CACHEDARRAYS_INLINE std::vector<std::uint64_t> autotm_dram_extents(const Program& program, const MovePlan& plan,
                                                                   std::uint64_t alignment) {
  if (alignment < 8 || (alignment & (alignment - 1)) != 0) {
    throw invalid_argument("autotm_dram_extents: alignment " + std::to_string(alignment) +
                           " must be a power of two >= 8 (the fast heap's DeviceSpec::alignment)");
  }
  detail::check_autotm_plan_shape(program, plan, "autotm_dram_extents");
  // Room for every object side by side, and more whenever best fit
  // scatters them further.
  std::uint64_t capacity = alignment;
  for (const ProgramObject& o : program.objects()) capacity += (o.bytes + alignment - 1) / alignment * alignment;
  std::vector<std::uint64_t> extents;
  while (!detail::AutotmDramReplay(program, plan, capacity, alignment).run(extents)) capacity *= 2;
  return extents;
}

}  // namespace cachedarrays::plan
