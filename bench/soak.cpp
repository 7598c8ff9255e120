// soak: N threads of random operations on one Runtime, every
// array's contents checked on every access, the asynchronous mover running
// and the policies rotating, for a given duration. Prints ops/s, the bytes
// moved between tiers and "0 bytes lost", or the first mismatch (and exits 1).
// Not in CI: it is meant to run for tens of minutes.
//
// What threads may do concurrently is what tests/stress_tests.cpp does (the
// API's rules): each thread creates, writes, reads, hints and retires its own
// arrays; a set of shared arrays is read by every thread and hinted
// (will_read, will_use, archive) beside those reads; collect() and
// snapshot() come from any thread. One thing more: a shared array is
// rewritten now and then under the program's own exclusive lock (readers and
// hinters hold it shared), so that data written by one thread is read and
// moved by the others.
//
// A policy has no setter, so rotating policies means a fresh Runtime per
// period of --rotate-seconds: the arrays of the period are verified, the
// manager's invariants checked (copies compared byte for byte), then all is
// destroyed. Every period alternates, until its time is up:
//   - a planned iteration: begin_iteration(), then a script of steps fixed
//     for the period (temporaries created, kernels, reads, hints, retires,
//     a collect) run in a fixed order by the threads in turn. Its first run
//     is recorded (Runtime::record_program), so from the third iteration on
//     the policies that plan from a program (ca-lma, planned, autotm-*,
//     autoswap:*, redl) follow their plan, their copies made by the mover;
//   - an unplanned iteration (begin_unplanned_iteration()): every thread
//     makes --burst random operations at once.
// Every array holds pattern_word(seed, i) at word i; a rewrite changes its
// seed, so a stale copy is a mismatch too.
//
//   soak [--seconds 60] [--threads N] [--fast-mib 8] [--slow-mib 256]
//        [--policies a,b,...] [--rotate-seconds S] [--seed 1] [--no-async]
//        [--emulate none|optane|cxl] [--json FILE]
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>

#include "bench_support.hpp"

namespace ca = cachedarrays;
namespace bench = cachedarrays::bench;

namespace {

using bench::Clock;
using bench::Rng;
constexpr std::uint64_t MiB = 1024 * 1024;

struct Options {
  double seconds = 60;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::uint64_t fast_mib = 8;
  std::uint64_t slow_mib = 256;
  std::vector<std::string> policies;  // empty: every built-in one (without the A modes under --no-async)
  double rotate_seconds = 0;          // 0: seconds / policies, within [2, 30]
  std::uint64_t seed = 1;
  bool async = true;
  unsigned mover_threads = 1;
  std::string emulate = "none";
  std::size_t burst = 500;          // operations per thread per unplanned iteration
  std::size_t private_arrays = 24;  // most arrays a thread holds at once
  double progress_seconds = 10;
  std::string json_path;
};

// ---- contents ------------------------------------------------------------------

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t word) {
  const std::uint64_t x = (seed ^ (word * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

void fill(std::span<std::uint64_t> data, std::uint64_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = pattern_word(seed, i);
}

struct Mismatch {
  std::size_t word = 0;
  std::uint64_t expected = 0;
  std::uint64_t found = 0;
  std::uint64_t bytes_differing = 0;  // in the whole array
};

std::optional<Mismatch> verify(std::span<const std::uint64_t> data, std::uint64_t seed) {
  std::uint64_t diff = 0;
  for (std::size_t i = 0; i < data.size(); ++i) diff |= data[i] ^ pattern_word(seed, i);
  if (diff == 0) return std::nullopt;
  std::optional<Mismatch> first;
  std::uint64_t differing = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const std::uint64_t expected = pattern_word(seed, i);
    if (data[i] == expected) continue;
    if (!first) first = Mismatch{i, expected, data[i], 0};
    for (int b = 0; b < 8; ++b) differing += ((data[i] ^ expected) >> (8 * b) & 0xFF) != 0;
  }
  first->bytes_differing = differing;
  return first;
}

// Word counts skewed small, as a program's tensors are: 8 B .. 4 KiB half the
// time, up to 1.25 MiB (copies of 1 MiB and more run on the copy engine's
// parallel path) once in fifty; never more than `max_words`.
std::size_t random_words(Rng& rng, std::size_t max_words) {
  const std::uint64_t c = rng.below(100);
  std::size_t words;
  if (c < 50)
    words = 1 + rng.below(512);
  else if (c < 85)
    words = 513 + rng.below(8 * 1024 - 512);
  else if (c < 98)
    words = 8 * 1024 + rng.below(56 * 1024);
  else
    words = 64 * 1024 + rng.below(96 * 1024);
  return std::max<std::size_t>(1, std::min(words, max_words));
}

// ---- what went wrong first -----------------------------------------------------

struct Failure {
  std::string policy;
  std::uint64_t period = 0;  // of the run, from 1
  std::string operation;
  std::string thread;  // "thread 3", "script", "main"
  std::string what;    // an exception's message, or what was checked
  bool mismatch = false;
  std::uint64_t array = 0, array_bytes = 0, offset = 0, expected = 0, found = 0, bytes_differing = 0;
};

class Failures {
 public:
  void add(Failure f) {
    std::lock_guard guard(mutex_);
    if (!first_) first_ = std::move(f);
    any_.store(true, std::memory_order_release);
  }
  [[nodiscard]] bool any() const { return any_.load(std::memory_order_acquire); }
  [[nodiscard]] std::optional<Failure> first() const {
    std::lock_guard guard(mutex_);
    return first_;
  }

 private:
  std::atomic<bool> any_{false};
  mutable std::mutex mutex_;
  std::optional<Failure> first_;
};

// Counters every thread adds to (relaxed: read only for progress and at the end).
struct Counters {
  std::atomic<std::uint64_t> ops{0}, out_of_memory{0}, bytes_verified{0};
  std::atomic<std::int64_t> live_arrays{0}, peak_arrays{0};
  void array_created() {
    const std::int64_t live = live_arrays.fetch_add(1, std::memory_order_relaxed) + 1;
    std::int64_t peak = peak_arrays.load(std::memory_order_relaxed);
    while (live > peak && !peak_arrays.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
  }
  void array_dropped() { live_arrays.fetch_sub(1, std::memory_order_relaxed); }
};

// ---- the arrays of a period ----------------------------------------------------

struct Tracked {
  ca::CachedArray<std::uint64_t> array;  // retired(): absent
  std::uint64_t seed = 0;
};

struct SharedArray {
  Tracked t;
  std::shared_mutex mutex;  // shared: read or hinted; exclusive: rewritten
};

// The planned iteration: steps over slots (the first `persistent` live for the
// whole period, the others created and retired by the script every time).
enum class StepKind { create, kernel_2r1w, kernel_inplace, read, will_read, will_use, archive, retire, collect };

struct Step {
  StepKind kind;
  std::size_t a = 0, b = 0, c = 0;  // slots
  std::size_t words = 0;            // create
};

struct Script {
  std::vector<Step> steps;
  std::vector<Tracked> slots;
  std::size_t persistent = 0;
};

// The script's arrays: 1/8 to 1/5 of the fast tier each (1 MiB and more at
// the default 8 MiB: AutoSwap's planner only swaps objects of 1 MB or more),
// so that what an iteration holds at once is over twice the 3/4 of the fast
// tier the planners are given (make_policy), while any kernel's arguments fit
// in that: the planners have moves to plan, the lookahead copies to make
// ahead.
std::size_t script_words(Rng& rng, std::size_t fast_words) {
  return fast_words / 8 + rng.below(fast_words / 5 - fast_words / 8 + 1);
}

Script make_script(Rng& rng, std::size_t fast_words) {
  Script s;
  s.persistent = 6;
  const std::size_t temporaries = 8;
  s.slots.resize(s.persistent + temporaries);
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < s.persistent; ++i) live.push_back(i);
  std::vector<std::size_t> unborn;
  for (std::size_t i = s.persistent; i < s.slots.size(); ++i) unborn.push_back(i);
  const auto pick = [&] { return live[rng.below(live.size())]; };
  for (int n = 0; n < 40; ++n) {
    const std::uint64_t c = rng.below(100);
    if (c < 18 && !unborn.empty()) {
      const std::size_t slot = unborn.back();
      unborn.pop_back();
      s.steps.push_back({StepKind::create, slot, 0, 0, script_words(rng, fast_words)});
      live.push_back(slot);
    } else if (c < 48) {
      const std::size_t out = pick();
      std::size_t in1 = pick(), in2 = pick();
      if (in1 == out || in2 == out) continue;
      s.steps.push_back({StepKind::kernel_2r1w, in1, in2, out});
    } else if (c < 56) {
      s.steps.push_back({StepKind::kernel_inplace, pick()});
    } else if (c < 68) {
      s.steps.push_back({StepKind::read, pick()});
    } else if (c < 88) {
      const StepKind hints[] = {StepKind::will_read, StepKind::will_use, StepKind::archive};
      s.steps.push_back({hints[rng.below(3)], pick()});
    } else if (c < 98) {
      const std::size_t i = rng.below(live.size());
      if (live[i] < s.persistent) continue;
      s.steps.push_back({StepKind::retire, live[i]});
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      s.steps.push_back({StepKind::collect});
    }
  }
  for (std::size_t slot : live) {
    if (slot >= s.persistent) s.steps.push_back({StepKind::retire, slot});
  }
  s.steps.push_back({StepKind::collect});
  return s;
}

struct ThreadState {
  std::vector<Tracked> mine;
  Rng rng{0};
  std::uint64_t next_seed = 0;
};

struct PeriodResult {
  std::uint64_t ops = 0, out_of_memory = 0, planned_iterations = 0;
  double seconds = 0;
  ca::Stats stats;
  std::string plan;  // AutotmPolicy::plan_summary and counters, for planned policies
};

// One policy's period: a fresh Runtime, its arrays and its threads.
class Period {
 public:
  // The period ends at `end` (its slot in the run's schedule), but runs at
  // least `least` after the heaps are ready, unless the run ends at `run_end`.
  Period(const Options& o, std::string policy, std::uint64_t period, Clock::time_point end, Clock::duration least,
         Clock::time_point run_end, Failures& failures, Counters& counters)
      : options_(o),
        policy_name_(std::move(policy)),
        period_(period),
        scheduled_end_(end),
        least_(least),
        run_end_(run_end),
        failures_(failures),
        counters_(counters),
        rt_(devices(o), make_policy(policy_name_, o.fast_mib * MiB), mover(o)),
        seed_(o.seed * 7919 + period),
        begin_(options_.threads, Begin{this}),
        middle_(options_.threads, Middle{this}) {}

  ca::Runtime& runtime() { return rt_; }

  PeriodResult run() {
    const auto start = Clock::now();
    end_ = std::min(run_end_, std::max(scheduled_end_, start + least_));
    const std::uint64_t ops_before = counters_.ops.load();
    const std::uint64_t oom_before = counters_.out_of_memory.load();
    setup();
    {
      std::vector<std::jthread> workers;
      for (unsigned t = 0; t < options_.threads; ++t) workers.emplace_back([this, t] { work(t); });
    }
    final_check();
    PeriodResult r;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.ops = counters_.ops.load() - ops_before;
    r.out_of_memory = counters_.out_of_memory.load() - oom_before;
    r.planned_iterations = planned_iterations_;
    r.stats = rt_.stats();
    r.plan = plan_summary();
    teardown();
    return r;
  }

  static ca::MoverOptions mover(const Options& o) {
    ca::MoverOptions m;
    m.threads = o.mover_threads;
    return m;
  }

  static std::vector<ca::DeviceSpec> devices(const Options& o) {
    ca::DeviceSpec slow = ca::dax_file({}, o.slow_mib * MiB, "slow");
    slow.emulation = ca::emulation::profile(o.emulate);
    return {ca::dram(o.fast_mib * MiB, "fast"), std::move(slow)};
  }

 private:
  // Barrier completions: run by one thread while the others wait.
  struct Begin {
    Period* p;
    void operator()() noexcept { p->begin_planned(); }
  };
  struct Middle {
    Period* p;
    void operator()() noexcept { p->begin_unplanned(); }
  };

  static std::unique_ptr<ca::policy::Policy> make_policy(const std::string& name, std::uint64_t fast_bytes) {
    const ca::policy::PolicyDescriptor described = ca::policy::Registry::builtin().describe(name);
    if (std::optional<ca::policy::AutotmPolicyOptions> o = described.planned_options()) {
      o->solver.time_limit_seconds = 5;  // a program of ~40 kernels: solved in well under that
      o->solver.async_search_seconds = 2;
      // The threads' own arrays share the fast tier with the program: plan it
      // for 3/4, so that the plan's moves find room.
      o->dram_limit = fast_bytes / 4 * 3;
      o->log = [](const std::string&) {};  // its departures are counted (plan_summary), not printed
      return std::make_unique<ca::policy::AutotmPolicy>(std::move(*o));
    }
    return described.make();
  }

  std::size_t fast_words() const { return options_.fast_mib * MiB / sizeof(std::uint64_t); }

  void fail(const std::string& who, const std::string& operation, const std::string& what) {
    failures_.add({policy_name_, period_, operation, who, what});
  }

  // Whether `data` holds the pattern of `seed`; records the first mismatch.
  bool check(std::span<const std::uint64_t> data, std::uint64_t seed, const ca::CachedArray<std::uint64_t>& a,
             const std::string& who, const char* operation) {
    counters_.bytes_verified.fetch_add(data.size_bytes(), std::memory_order_relaxed);
    const std::optional<Mismatch> m = verify(data, seed);
    if (!m) return true;
    failures_.add({policy_name_, period_, operation, who, "contents changed", true, a.id(), a.bytes(),
                   m->word * sizeof(std::uint64_t), m->expected, m->found, m->bytes_differing});
    return false;
  }

  Tracked create(std::size_t words, std::uint64_t seed) {
    Tracked t{rt_.array<std::uint64_t>(words), seed};
    counters_.array_created();
    fill(t.array.write().span(), seed);
    return t;
  }

  void drop(Tracked& t, bool explicitly) {
    if (explicitly) t.array.retire();
    t.array = {};
    counters_.array_dropped();
  }

  // Shared and script arrays, made before the threads start; the shared ones
  // small enough (at most 1/64 of the fast tier each) that every policy has
  // room for them.
  void setup() {
    Rng rng{seed_};
    for (int i = 0; i < 6; ++i) {
      auto s = std::make_unique<SharedArray>();
      s->t = create(random_words(rng, fast_words() / 64), next_shared_seed_++);
      shared_.push_back(std::move(s));
    }
    script_ = make_script(rng, fast_words());
    for (std::size_t i = 0; i < script_.persistent; ++i) {
      try {
        script_.slots[i] = create(script_words(rng, fast_words()), next_script_seed_++);
      } catch (const ca::out_of_memory&) {  // all-fast: the slot stays absent
        counters_.out_of_memory.fetch_add(1, std::memory_order_relaxed);
      }
    }
    threads_.resize(options_.threads);
    for (unsigned t = 0; t < options_.threads; ++t) {
      threads_[t].rng = Rng{seed_ * 1000003 + t};
      threads_[t].next_seed = (std::uint64_t{t} + 1) << 48;
    }
    rt_.record_program();  // the first planned iteration is the program
  }

  void begin_planned() {
    stop_ = Clock::now() >= end_ || failures_.any();
    if (stop_) return;
    try {
      if (++barriers_ % 8 == 0) check_invariants();
      turn_.store(0, std::memory_order_relaxed);
      rt_.begin_iteration();  // the second one hands the recorded program to the policy (and its planner)
      ++planned_iterations_;
    } catch (const std::exception& e) {
      fail("barrier", "begin_iteration", e.what());
      stop_ = true;
    }
  }

  void begin_unplanned() {
    try {
      rt_.begin_unplanned_iteration();
    } catch (const std::exception& e) {
      fail("barrier", "begin_unplanned_iteration", e.what());
    }
  }

  void check_invariants() {
    auto lock = rt_.lock();
    rt_.manager().check_invariants(true);
  }

  void work(unsigned t) {
    for (;;) {
      begin_.arrive_and_wait();
      if (stop_) break;
      run_script(t);
      middle_.arrive_and_wait();
      for (std::size_t n = 0; n < options_.burst && !failures_.any(); ++n) free_op(t);
    }
  }

  // Step s of the script is thread s % threads's, taken in order.
  void run_script(unsigned t) {
    const std::uint64_t n = script_.steps.size();
    for (std::uint64_t s = t; s < n; s += options_.threads) {
      for (std::uint64_t v = turn_.load(std::memory_order_acquire); v != s; v = turn_.load(std::memory_order_acquire)) {
        turn_.wait(v, std::memory_order_acquire);
      }
      if (!failures_.any()) {
        const Step& step = script_.steps[s];
        try {
          script_step(step, "thread " + std::to_string(t));
        } catch (const std::exception& e) {
          fail("thread " + std::to_string(t), std::string("script ") + step_name(step.kind), e.what());
        }
      }
      turn_.store(s + 1, std::memory_order_release);
      turn_.notify_all();
    }
  }

  static const char* step_name(StepKind k) {
    switch (k) {
      case StepKind::create: return "create+fill";
      case StepKind::kernel_2r1w: return "kernel(reads(a, b), writes(c))";
      case StepKind::kernel_inplace: return "kernel(writes(a)) in place";
      case StepKind::read: return "read";
      case StepKind::will_read: return "will_read";
      case StepKind::will_use: return "will_use";
      case StepKind::archive: return "archive";
      case StepKind::retire: return "retire";
      case StepKind::collect: return "collect";
    }
    return "?";
  }

  // A slot whose create ran out of memory stays absent: its steps are skipped
  // (the iteration then departs from the program, which policies allow).
  void script_step(const Step& step, const std::string& who) {
    std::vector<Tracked>& slots = script_.slots;
    const auto absent = [&](std::size_t i) { return slots[i].array.retired(); };
    const char* op = step_name(step.kind);
    switch (step.kind) {
      case StepKind::create: try { slots[step.a] = create(step.words, next_script_seed_++);
        } catch (const ca::out_of_memory&) {
          counters_.out_of_memory.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      case StepKind::kernel_2r1w: {
        if (absent(step.a) || absent(step.b) || absent(step.c)) return;
        Tracked &x = slots[step.a], &y = slots[step.b], &z = slots[step.c];
        const std::uint64_t seed = next_script_seed_++;
        rt_.kernel(ca::reads(x.array, y.array), ca::writes(z.array),
                   [&](std::span<const std::uint64_t> a, std::span<const std::uint64_t> b, std::span<std::uint64_t> c) {
                     if (check(a, x.seed, x.array, who, op) && check(b, y.seed, y.array, who, op)) fill(c, seed);
                   });
        z.seed = seed;
        break;
      }
      case StepKind::kernel_inplace: {
        if (absent(step.a)) return;
        Tracked& x = slots[step.a];
        const std::uint64_t seed = next_script_seed_++;
        rt_.kernel(ca::writes(x.array), [&](std::span<std::uint64_t> a) {
          if (check(a, x.seed, x.array, who, op)) fill(a, seed);
        });
        x.seed = seed;
        break;
      }
      case StepKind::read:
        if (absent(step.a)) return;
        (void)check(slots[step.a].array.read().span(), slots[step.a].seed, slots[step.a].array, who, op);
        break;
      case StepKind::will_read:
        if (!absent(step.a)) slots[step.a].array.will_read();
        break;
      case StepKind::will_use:
        if (!absent(step.a)) slots[step.a].array.will_use();
        break;
      case StepKind::archive:
        if (!absent(step.a)) slots[step.a].array.archive();
        break;
      case StepKind::retire:
        if (!absent(step.a)) drop(slots[step.a], true);
        break;
      case StepKind::collect: rt_.collect(); break;
    }
    counters_.ops.fetch_add(1, std::memory_order_relaxed);
  }

  // Shared locks on two shared arrays, taken in index order (one if they
  // are the same), so that readers and a writer never wait in a cycle.
  struct TwoShared {
    std::shared_lock<std::shared_mutex> first, second;
  };
  TwoShared lock_shared(std::size_t i, std::size_t j) {
    if (i > j) std::swap(i, j);
    TwoShared l{std::shared_lock(shared_[i]->mutex), {}};
    if (j != i) l.second = std::shared_lock(shared_[j]->mutex);
    return l;
  }

  // Creates, reads or rewrites one of the thread's arrays, or reads a shared one.
  // Returns false when it found nothing to do.
  bool array_op(ThreadState& me, std::uint64_t c, const std::string& who, const char*& op) {
    std::vector<Tracked>& mine = me.mine;
    Rng& rng = me.rng;
    const auto own = [&]() -> Tracked& { return mine[rng.below(mine.size())]; };
    const auto shared_index = [&] { return static_cast<std::size_t>(rng.below(shared_.size())); };
    if (mine.size() < 3 || (c < 130 && mine.size() < options_.private_arrays)) {
      op = "create+fill";
      try {
        mine.push_back(create(random_words(rng, fast_words() / 4), ++me.next_seed));
      } catch (const ca::out_of_memory&) {
        counters_.out_of_memory.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (c < 230) {
      op = "read";
      Tracked& a = own();
      (void)check(a.array.read().span(), a.seed, a.array, who, op);
    } else if (c < 290) {
      op = "read shared";
      SharedArray& s = *shared_[shared_index()];
      std::shared_lock lock(s.mutex);
      (void)check(s.t.array.read().span(), s.t.seed, s.t.array, who, op);
    } else {
      op = "rewrite (write())";
      Tracked& a = own();
      const std::uint64_t seed = ++me.next_seed;
      auto w = a.array.write();
      if (check(w.span(), a.seed, a.array, who, op)) fill(w.span(), seed);
      a.seed = seed;
    }
    return true;
  }

  // A kernel over the thread's arrays (one of them shared), or a clone by a kernel.
  // Returns false when it found nothing to do.
  bool kernel_op(ThreadState& me, std::uint64_t c, const std::string& who, const char*& op) {
    std::vector<Tracked>& mine = me.mine;
    Rng& rng = me.rng;
    const auto own = [&]() -> Tracked& { return mine[rng.below(mine.size())]; };
    const auto shared_index = [&] { return static_cast<std::size_t>(rng.below(shared_.size())); };
    if (c < 470) {
      op = "kernel(reads(a, shared), writes(b))";
      Tracked& a = own();
      Tracked& b = own();
      if (&a == &b) return false;
      SharedArray& s = *shared_[shared_index()];
      std::shared_lock lock(s.mutex);
      const std::uint64_t seed = ++me.next_seed;
      rt_.kernel(ca::reads(a.array, s.t.array), ca::writes(b.array),
                 [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> y, std::span<std::uint64_t> z) {
                   if (check(x, a.seed, a.array, who, op) && check(y, s.t.seed, s.t.array, who, op)) fill(z, seed);
                 });
      b.seed = seed;
    } else if (c < 520) {
      op = "kernel(writes(a)) in place";
      Tracked& a = own();
      const std::uint64_t seed = ++me.next_seed;
      rt_.kernel(ca::writes(a.array), [&](std::span<std::uint64_t> x) {
        if (check(x, a.seed, a.array, who, op)) fill(x, seed);
      });
      a.seed = seed;
    } else if (c < 560) {
      op = "kernel(reads(a), writes(b, c))";
      Tracked& a = own();
      Tracked& b = own();
      Tracked& d = own();
      if (&a == &b || &a == &d || &b == &d) return false;
      const std::uint64_t seed_b = ++me.next_seed, seed_d = ++me.next_seed;
      rt_.kernel(ca::reads(a.array), ca::writes(b.array, d.array),
                 [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> y, std::span<std::uint64_t> z) {
                   if (!check(x, a.seed, a.array, who, op)) return;
                   fill(y, seed_b);
                   fill(z, seed_d);
                 });
      b.seed = seed_b;
      d.seed = seed_d;
    } else {  // c < 590
      op = "clone (create, kernel copy)";
      if (mine.size() >= options_.private_arrays) return false;
      const std::size_t from = rng.below(mine.size());
      Tracked copy;
      try {
        copy.array = rt_.array<std::uint64_t>(mine[from].array.size());
        counters_.array_created();
      } catch (const ca::out_of_memory&) {
        counters_.out_of_memory.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      Tracked& a = mine[from];
      rt_.kernel(ca::reads(a.array), ca::writes(copy.array),
                 [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> y) {
                   if (check(x, a.seed, a.array, who, op)) std::copy(x.begin(), x.end(), y.begin());
                 });
      copy.seed = a.seed;
      mine.push_back(std::move(copy));
    }
    return true;
  }

  // A kernel over shared arrays, a hint, a collect, a retire, a snapshot, or an array too large.
  // Returns false when it found nothing to do.
  // A random hint on one of the thread's own arrays.
  static void hint_own(Tracked& a, Rng& rng, const char*& op) {
    switch (rng.below(4)) {
      case 0:
        op = "will_read";
        a.array.will_read();
        break;
      case 1:
        op = "will_write";
        a.array.will_write();
        break;
      case 2:
        op = "will_use";
        a.array.will_use();
        break;
      default:
        op = "archive";
        a.array.archive();
        break;
    }
  }

  // A random hint on a shared array, which no thread rewrites meanwhile.
  static void hint_shared(SharedArray& s, Rng& rng, const char*& op) {
    std::shared_lock lock(s.mutex);
    switch (rng.below(3)) {
      case 0:
        op = "will_read shared";
        s.t.array.will_read();
        break;
      case 1:
        op = "will_use shared";
        s.t.array.will_use();
        break;
      default:
        op = "archive shared";
        s.t.array.archive();
        break;
    }
  }

  bool hint_or_shared_op(ThreadState& me, std::uint64_t c, const std::string& who, const char*& op) {
    std::vector<Tracked>& mine = me.mine;
    Rng& rng = me.rng;
    const auto own = [&]() -> Tracked& { return mine[rng.below(mine.size())]; };
    const auto shared_index = [&] { return static_cast<std::size_t>(rng.below(shared_.size())); };
    if (c < 640) {
      op = "kernel(reads(shared, shared))";
      const std::size_t i = shared_index(), j = shared_index();
      TwoShared lock = lock_shared(i, j);
      Tracked &s1 = shared_[i]->t, &s2 = shared_[j]->t;
      rt_.kernel(ca::reads(s1.array, s2.array),
                 [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> y) {
                   (void)(check(x, s1.seed, s1.array, who, op) && check(y, s2.seed, s2.array, who, op));
                 });
    } else if (c < 660) {
      op = "rewrite shared (kernel(writes(shared)), exclusive)";
      SharedArray& s = *shared_[shared_index()];
      std::unique_lock lock(s.mutex);
      const std::uint64_t seed = ++me.next_seed;
      rt_.kernel(ca::writes(s.t.array), [&](std::span<std::uint64_t> x) {
        if (check(x, s.t.seed, s.t.array, who, op)) fill(x, seed);
      });
      s.t.seed = seed;
    } else if (c < 780) {
      Tracked& a = own();
      hint_own(a, rng, op);
    } else if (c < 830) {
      hint_shared(*shared_[shared_index()], rng, op);
    } else if (c < 840) {
      op = "collect";
      rt_.collect();
    } else if (c < 990) {
      op = "retire";
      const std::size_t i = rng.below(mine.size());
      drop(mine[i], rng.below(2) == 0);  // retire(), or the handle dropped
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (c < 995) {
      op = "snapshot+stats";
      (void)rt_.snapshot(16);
      (void)rt_.stats();
    } else {
      op = "create larger than every tier";
      try {
        auto huge = rt_.array<std::uint64_t>((options_.fast_mib + options_.slow_mib) * MiB / 8 + 1);
        fail(who, op, "an array larger than every tier was created");
      } catch (const ca::out_of_memory&) {
        // The answer expected: not counted with the creates that found no room.
      }
    }
    return true;
  }

  void free_op(unsigned t) {
    ThreadState& me = threads_[t];
    const std::string who = "thread " + std::to_string(t);
    const char* op = "?";
    try {
      const std::uint64_t c = me.rng.below(1000);
      // A thread with too few arrays creates one whatever it drew.
      const bool counted = me.mine.size() < 3 || c < 360 ? array_op(me, c, who, op)
                           : c < 590                     ? kernel_op(me, c, who, op)
                                                         : hint_or_shared_op(me, c, who, op);
      if (counted) counters_.ops.fetch_add(1, std::memory_order_relaxed);
    } catch (const std::exception& e) {
      fail(who, op, e.what());
    }
  }

  // Every array of the period read and verified, the copies applied and the
  // manager's invariants checked (secondaries compared with their primaries).
  void final_check() {
    try {
      for (const auto& s : shared_) (void)check(s->t.array.read().span(), s->t.seed, s->t.array, "main", "final read");
      for (Tracked& t : script_.slots) {
        if (!t.array.retired()) (void)check(t.array.read().span(), t.seed, t.array, "main", "final read");
      }
      for (ThreadState& th : threads_) {
        for (Tracked& t : th.mine) (void)check(t.array.read().span(), t.seed, t.array, "main", "final read");
      }
      auto lock = rt_.lock();
      rt_.manager().finish_copies();
      rt_.manager().check_invariants(true);
    } catch (const std::exception& e) {
      fail("main", "final check", e.what());
    }
  }

  std::string plan_summary() {
    auto lock = rt_.lock();
    const auto* planned = dynamic_cast<const ca::policy::AutotmPolicy*>(&rt_.policy());
    if (planned == nullptr) return {};
    const ca::policy::AutotmPolicy::Counters& c = planned->counters();
    return fmt::format("{}; {} iterations on the plan, {} departures, {} moves in, {} out", planned->plan_summary(),
                       c.iterations_followed, c.departures, c.moves_in, c.moves_out);
  }

  void teardown() {
    for (auto& s : shared_) drop(s->t, true);
    for (Tracked& t : script_.slots) {
      if (!t.array.retired()) drop(t, true);
    }
    for (ThreadState& th : threads_) {
      for (Tracked& t : th.mine) drop(t, false);
      th.mine.clear();
    }
  }

  const Options& options_;
  std::string policy_name_;
  std::uint64_t period_;
  Clock::time_point scheduled_end_;
  Clock::duration least_;
  Clock::time_point run_end_, end_;
  Failures& failures_;
  Counters& counters_;
  ca::Runtime rt_;
  std::uint64_t seed_;
  std::vector<std::unique_ptr<SharedArray>> shared_;
  Script script_;
  std::vector<ThreadState> threads_;
  std::uint64_t next_shared_seed_ = 0xA000000000000000ull;
  std::uint64_t next_script_seed_ = 0xB000000000000000ull;
  std::barrier<Begin> begin_;
  std::barrier<Middle> middle_;
  std::atomic<std::uint64_t> turn_{0};
  bool stop_ = false;  // written by a completion, read after the barrier
  std::uint64_t barriers_ = 0, planned_iterations_ = 0;
};

// ---- the run -------------------------------------------------------------------

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

struct PolicyTotals {
  std::uint64_t periods = 0, ops = 0, out_of_memory = 0, bytes_moved = 0, async_copies = 0, planned_iterations = 0;
  double seconds = 0;
  std::string plan;  // of its last period
};

struct RunResult {
  double seconds = 0;
  std::vector<std::string> order;  // policies in the order first run
  std::map<std::string, PolicyTotals> by_policy;
  std::uint64_t periods = 0;
  // Summed over the periods' runtimes.
  std::uint64_t bytes_copied[2][2] = {}, copies[2][2] = {};
  std::uint64_t evictions[2] = {}, defrag_bytes[2] = {}, peak_bytes[2] = {};
  std::uint64_t kernel_bytes_read[2] = {}, kernel_bytes_written[2] = {};
  ca::AsyncCounters async;
  ca::PolicyCounters policy;
  std::optional<Failure> failure;
};

// What the progress line reads from the period in flight.
class Progress {
 public:
  void set(ca::Runtime* rt, std::string policy, std::size_t index) {
    std::lock_guard guard(mutex_);
    rt_ = rt;
    policy_ = std::move(policy);
    index_ = index;
  }
  void add_moved(std::uint64_t bytes) {
    std::lock_guard guard(mutex_);
    moved_before_ += bytes;
  }
  void print(double elapsed, std::uint64_t ops, std::size_t policies) const {
    std::lock_guard guard(mutex_);
    const std::uint64_t moved = moved_before_ + (rt_ != nullptr ? rt_->stats().total_bytes_copied() : 0);
    fmt::print(stderr, "[soak] {:7.0f} s  {:>12} ops  {:>9.0f} ops/s  moved {:>10}  policy {} ({}/{})\n", elapsed, ops,
               elapsed > 0 ? static_cast<double>(ops) / elapsed : 0.0, ca::format_bytes(moved), policy_, index_ + 1,
               policies);
  }

 private:
  mutable std::mutex mutex_;
  ca::Runtime* rt_ = nullptr;
  std::string policy_;
  std::size_t index_ = 0;
  std::uint64_t moved_before_ = 0;
};

void add_period(RunResult& r, const std::string& policy, const PeriodResult& p) {
  if (!r.by_policy.contains(policy)) r.order.push_back(policy);
  PolicyTotals& t = r.by_policy[policy];
  ++t.periods;
  ++r.periods;
  t.ops += p.ops;
  t.out_of_memory += p.out_of_memory;
  t.seconds += p.seconds;
  t.bytes_moved += p.stats.total_bytes_copied();
  t.async_copies += p.stats.async.copies;
  t.planned_iterations += p.planned_iterations;
  if (!p.plan.empty()) t.plan = p.plan;
  for (int s = 0; s < 2; ++s) {
    for (int d = 0; d < 2; ++d) {
      r.bytes_copied[s][d] += p.stats.bytes_copied[s][d];
      r.copies[s][d] += p.stats.copies[s][d];
    }
    r.evictions[s] += p.stats.devices[s].evictions;
    r.defrag_bytes[s] += p.stats.devices[s].defrag_bytes;
    r.peak_bytes[s] = std::max(r.peak_bytes[s], p.stats.devices[s].peak_bytes_in_use);
    r.kernel_bytes_read[s] += p.stats.kernel_bytes_read[s];
    r.kernel_bytes_written[s] += p.stats.kernel_bytes_written[s];
  }
  for (const auto& f : ca::AsyncCounters::fields()) r.async.*f.member += p.stats.async.*f.member;
  for (const auto& f : ca::PolicyCounters::fields()) r.policy.*f.member += p.stats.policy.*f.member;
}

RunResult run(const Options& o, const std::vector<std::string>& policies, double rotate_seconds, Counters& counters) {
  RunResult result;
  Failures failures;
  Progress progress;
  const auto start = Clock::now();
  const auto end = start + seconds(o.seconds);
  std::jthread reporter([&](std::stop_token stop) {
    auto next = start + seconds(o.progress_seconds);
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    while (!cv.wait_until(lock, stop, next, [] { return false; })) {
      if (stop.stop_requested()) break;
      progress.print(std::chrono::duration<double>(Clock::now() - start).count(), counters.ops.load(), policies.size());
      next += seconds(o.progress_seconds);
    }
  });
  for (std::uint64_t n = 0; Clock::now() < end && !failures.any(); ++n) {
    const std::string& policy = policies[n % policies.size()];
    std::optional<Period> period;
    std::optional<PeriodResult> p;
    try {
      // Period n's slot ends at start + (n + 1) * rotate: the time its heaps
      // take to set up is taken from it, not added to the run.
      const Clock::time_point slot_end = std::min(end, start + seconds(rotate_seconds * static_cast<double>(n + 1)));
      period.emplace(o, policy, n + 1, slot_end, seconds(std::min(1.0, rotate_seconds / 2)), end, failures, counters);
      progress.set(&period->runtime(), policy, n % policies.size());
      p = period->run();
    } catch (const std::exception& e) {
      failures.add({policy, n + 1, "runtime setup or teardown", "main", e.what()});
    }
    progress.set(nullptr, policy, n % policies.size());  // before the runtime goes
    period.reset();
    if (!p) continue;
    progress.add_moved(p->stats.total_bytes_copied());
    add_period(result, policy, *p);
    if (p->stats.async.failures > 0) {
      failures.add({policy, n + 1, "asynchronous copy", "mover",
                    fmt::format("{} asynchronous copies failed", p->stats.async.failures)});
    }
  }
  reporter.request_stop();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.failure = failures.first();
  return result;
}

// ---- the report ----------------------------------------------------------------

std::string tiers_label(const Options& o) {
  std::string slow = fmt::format("slow = {} DAX heap on a /dev/shm file", ca::format_bytes(o.slow_mib * MiB));
  if (const auto profile = ca::emulation::profile(o.emulate)) {
    slow += ", emulated as " + ca::emulation::describe(*profile);
  } else {
    slow += " (DRAM standing in for slower memory; no bandwidth emulation)";
  }
  return fmt::format("emulated tiers: fast = {} DRAM heap, {}", ca::format_bytes(o.fast_mib * MiB), slow);
}

std::string describe_failure(const Failure& f) {
  if (f.mismatch) {
    return fmt::format(
        "FIRST MISMATCH: array #{} ({} bytes), offset {}, expected 0x{:016x}, found 0x{:016x} "
        "(bytes of the array that differ: {}); policy {} (period {}), operation {}, {}",
        f.array, f.array_bytes, f.offset, f.expected, f.found, f.bytes_differing, f.policy, f.period, f.operation,
        f.thread);
  }
  return fmt::format("FIRST FAILURE: {}; policy {} (period {}), operation {}, {}", f.what, f.policy, f.period,
                     f.operation, f.thread);
}

void report(const Options& o, const RunResult& r, const Counters& c, double rotate_seconds) {
  fmt::print("soak: {:.1f} s, {} threads, seed {}, {} periods of up to {:.1f} s\n", r.seconds, o.threads, o.seed,
             r.periods, rotate_seconds);
  fmt::print("{}\n", tiers_label(o));
  if (o.async) {
    fmt::print("asynchronous mover: on ({} thread{})\n", o.mover_threads, o.mover_threads == 1 ? "" : "s");
  } else {
    fmt::print("asynchronous mover: off (the policies whose moves use it were left out)\n");
  }
  std::string names;
  for (const std::string& p : r.order) names += (names.empty() ? "" : ", ") + p;
  fmt::print("policies run: {}\n\n", names);

  bench::Table table({{"policy", 15, bench::Align::left},
                      {"periods", 7},
                      {"seconds", 8},
                      {"ops", 11},
                      {"ops/s", 9},
                      {"oom", 7},
                      {"moved", 11},
                      {"async", 8},
                      {"planned its", 11}});
  table.print_header();
  table.print_rule();
  for (const std::string& p : r.order) {
    const PolicyTotals& t = r.by_policy.at(p);
    table.print_row({p, std::to_string(t.periods), fmt::format("{:.1f}", t.seconds), std::to_string(t.ops),
                     fmt::format("{:.0f}", t.seconds > 0 ? static_cast<double>(t.ops) / t.seconds : 0.0),
                     std::to_string(t.out_of_memory), ca::format_bytes(t.bytes_moved), std::to_string(t.async_copies),
                     std::to_string(t.planned_iterations)});
  }
  bool plans = false;
  for (const std::string& p : r.order) {
    const PolicyTotals& t = r.by_policy.at(p);
    if (t.plan.empty()) continue;
    if (!plans) fmt::print("\nplans (each policy's last period):\n");
    plans = true;
    fmt::print("  {:<15} {}\n", p, t.plan);
  }
  const std::uint64_t ops = c.ops.load();
  fmt::print("\ntotal: {} ops, {:.0f} ops/s, {} out_of_memory on create (allowed), {} verified\n", ops,
             r.seconds > 0 ? static_cast<double>(ops) / r.seconds : 0.0, c.out_of_memory.load(),
             ca::format_bytes(c.bytes_verified.load()));
  fmt::print("peak arrays alive at once: {}\n", c.peak_arrays.load());
  const char* names2[2] = {"fast", "slow"};
  fmt::print("bytes moved between tiers (copyto and copyto_async, summed over the periods):\n");
  for (int s = 0; s < 2; ++s) {
    for (int d = 0; d < 2; ++d) {
      if (s == d && r.bytes_copied[s][d] == 0) continue;
      fmt::print("  {} -> {}: {} in {} copies\n", names2[s], names2[d], ca::format_bytes(r.bytes_copied[s][d]),
                 r.copies[s][d]);
    }
  }
  for (int d = 0; d < 2; ++d) {
    fmt::print("  {}: {} regions evicted, {} defragmented, peak {} in use; kernels read {}, wrote {}\n", names2[d],
               r.evictions[d], ca::format_bytes(r.defrag_bytes[d]), ca::format_bytes(r.peak_bytes[d]),
               ca::format_bytes(r.kernel_bytes_read[d]), ca::format_bytes(r.kernel_bytes_written[d]));
  }
  fmt::print("  policy moves: {} prefetches ({}), {} write-backs ({}), {} elided\n", r.policy.prefetches,
             ca::format_bytes(r.policy.prefetch_bytes), r.policy.writebacks, ca::format_bytes(r.policy.writeback_bytes),
             r.policy.writebacks_elided);
  fmt::print("  mover: {} asynchronous copies ({}), {} fence waits, {} taken over, {} cancelled, {} failed\n",
             r.async.copies, ca::format_bytes(r.async.bytes), r.async.fence_waits, r.async.taken_over,
             r.async.cancelled, r.async.failures);
  fmt::print("{}\n", r.failure ? describe_failure(*r.failure) : "0 bytes lost");
}

nlohmann::json to_json(const Options& o, const RunResult& r, const Counters& c) {
  nlohmann::json j;
  j["seconds"] = r.seconds;
  j["threads"] = o.threads;
  j["seed"] = o.seed;
  j["tiers"] = tiers_label(o);
  j["ops"] = c.ops.load();
  j["ops_per_s"] = r.seconds > 0 ? static_cast<double>(c.ops.load()) / r.seconds : 0.0;
  j["out_of_memory"] = c.out_of_memory.load();
  j["bytes_verified"] = c.bytes_verified.load();
  j["peak_arrays"] = c.peak_arrays.load();
  for (const std::string& p : r.order) {
    const PolicyTotals& t = r.by_policy.at(p);
    j["policies"].push_back({{"policy", p},
                             {"periods", t.periods},
                             {"seconds", t.seconds},
                             {"ops", t.ops},
                             {"out_of_memory", t.out_of_memory},
                             {"bytes_moved", t.bytes_moved},
                             {"async_copies", t.async_copies},
                             {"planned_iterations", t.planned_iterations},
                             {"plan", t.plan}});
  }
  j["bytes_copied"] = {{"fast_to_slow", r.bytes_copied[0][1]},
                       {"slow_to_fast", r.bytes_copied[1][0]},
                       {"fast_to_fast", r.bytes_copied[0][0]},
                       {"slow_to_slow", r.bytes_copied[1][1]}};
  j["async_copies"] = r.async.copies;
  j["bytes_lost"] = r.failure && r.failure->mismatch ? r.failure->bytes_differing : 0;
  j["passed"] = !r.failure.has_value();
  if (r.failure) j["failure"] = describe_failure(*r.failure);
  return j;
}

// Every built-in policy, the ones whose moves use the mover left out under --no-async.
std::vector<std::string> default_policies(bool async) {
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  std::vector<std::string> names;
  for (const std::string& name : registry.names()) {
    if (async || !registry.describe(name).uses_mover()) names.push_back(name);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"soak: threads of random checked operations on one runtime, policies rotating; 0 bytes lost?"};
  Options o;
  app.add_option("--seconds", o.seconds, "how long to run")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "worker threads (default: the hardware's)")->check(CLI::Range(1u, 256u));
  app.add_option("--fast-mib", o.fast_mib, "fast tier (DRAM heap), MiB: small, so that data moves a lot")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--slow-mib", o.slow_mib, "slow tier (DAX heap on /dev/shm), MiB")->check(CLI::Range(4, 1 << 22));
  app.add_option("--policies", o.policies, "policies to rotate (default: every built-in one)")->delimiter(',');
  app.add_option("--rotate-seconds", o.rotate_seconds,
                 "each policy's period, a fresh runtime (default: --seconds / policies, within 2..30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "seed of the random choices (thread interleaving is not reproducible)");
  app.add_flag("--async,!--no-async", o.async,
               "keep the policies whose moves run on the asynchronous mover (default on)");
  app.add_option("--mover-threads", o.mover_threads, "the mover's threads")->check(CLI::Range(1u, 64u));
  app.add_option("--emulate", o.emulate, "bandwidth profile of the slow tier")
      ->check(CLI::IsMember({"none", "optane", "optane-1dimm", "cxl"}));
  app.add_option("--burst", o.burst, "random operations per thread between planned iterations")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--progress-seconds", o.progress_seconds, "progress line on stderr every so often")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", o.json_path, "also write the report to this JSON file");
  CLI11_PARSE(app, argc, argv);
  bench::print_machine_line();

  std::vector<std::string> policies = o.policies.empty() ? default_policies(o.async) : o.policies;
  try {
    for (const std::string& p : policies) (void)ca::policy::Registry::builtin().make(p);
  } catch (const std::exception& e) {
    fmt::print(stderr, "soak: {}\n", e.what());
    return 2;
  }
  const double rotate_seconds =
      o.rotate_seconds > 0 ? o.rotate_seconds : std::clamp(o.seconds / static_cast<double>(policies.size()), 2.0, 30.0);
  fmt::print(stderr, "[soak] {} s, {} threads, {} policies, {:.1f} s each; {}\n", o.seconds, o.threads, policies.size(),
             rotate_seconds, tiers_label(o));

  Counters counters;
  const RunResult result = run(o, policies, rotate_seconds, counters);
  report(o, result, counters, rotate_seconds);
  if (!o.json_path.empty() && !bench::write_json(o.json_path, to_json(o, result, counters), "soak")) return 1;
  return result.failure ? 1 : 0;
}
