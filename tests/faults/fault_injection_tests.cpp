// Fault injection (manager/fault_injection.hpp): the failure paths
// of the mechanism, the policies and the Runtime, run on demand.
//   - Each kind of fault, once, at the mechanism: a heap allocation that
//     finds no room, a copy (synchronous or asynchronous) that fails half way
//     as a media error would, a mover thread the system refuses, a policy
//     handler that throws. After each: the invariants hold, the source of a
//     failed copy is intact and its destination never counts as a copy.
//   - The matrix: every kind of fault at the Nth event, for N over the whole
//     run (half as many N in unoptimised or sanitizer builds), under every
//     policy, in a training-like program (parameters kept,
//     activations created and retired every iteration, skip connections, the
//     planned policies following their plans). After every iteration the
//     invariants hold and every parameter holds what the program last wrote;
//     after the run the Runtime still trains, fault-free, and once every
//     array is retired no byte stays allocated (a failed move leaks nothing).
//   - Writers on three threads, each on its own arrays, with every kind of
//     fault at the Nth event, under the policies that move written data:
//     every array ends as its last write that happened left it.
//   - A random run of 100,000 Runtime operations (25,000 in unoptimised or
//     sanitizer builds) with every kind of fault drawn at random, rotating
//     the policies: every read checks every byte.
//
// This binary is built header-only with CACHEDARRAYS_FAULT_INJECTION
// (tests/CMakeLists.txt: cachedarrays_fault_tests); the library itself is
// compiled without the hooks. CACHEDARRAYS_TEST_SEED replays other choices.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/manager/fault_injection.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "test_kernel_models.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

#ifndef CACHEDARRAYS_FAULT_INJECTION
#error "fault_injection_tests.cpp needs CACHEDARRAYS_FAULT_INJECTION (built as cachedarrays_fault_tests)"
#endif

namespace ca = cachedarrays;
using ca::fault::ScopedFaults;
using ca::fault::Site;

namespace {

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = 1024 * kib;

std::uint64_t bytes_in_use(const ca::DataManager& dm) {
  std::uint64_t used = 0;
  for (const ca::DeviceUsage& u : dm.usage()) used += u.bytes_used;
  return used;
}

}  // namespace

// ---- each fault once, at the mechanism --------------------------------------

TEST_CASE("faults: an injected allocation failure is a full heap, once") {
  ScopedFaults faults;
  ca::DataManager dm(test::two_tiers());
  faults->fail_nth(Site::allocation, 2);
  ca::Region* first = dm.allocate(0, 4096);
  CHECK(first != nullptr);
  CHECK(dm.allocate(0, 4096) == nullptr);  // the second
  CHECK(dm.stats().devices[0].failed_allocations == 1);
  CHECK(dm.allocate(0, 4096) != nullptr);  // once only
  faults->fail_nth(Site::allocation, 1);
  CHECK(dm.try_allocate_at(1, 0, 4096) == nullptr);
  CHECK(dm.try_allocate_at(1, 0, 4096) != nullptr);
  // allocate_at never reports an injected failure as an occupied range.
  faults->fail_nth(Site::allocation, 1);
  CHECK_NOTHROW((void)dm.allocate_at(1, 8192, 4096));
  CHECK(faults->fired(Site::allocation) == 0);
  dm.check_invariants();
}

TEST_CASE("faults: a copy that fails half way leaves its source intact and its destination no copy") {
  ScopedFaults faults;
  ca::DataManager dm(test::two_tiers());
  constexpr std::uint64_t bytes = 64 * kib;
  ca::Object& o = test::make_object(dm, 0, bytes, 7);
  ca::Region& p = *dm.getprimary(o);
  ca::Region* s = dm.allocate(1, bytes);
  REQUIRE(s != nullptr);
  dm.link(p, *s);

  SUBCASE("synchronous, into a secondary") {
    faults->fail_nth(Site::copy, 1);
    const std::string message = test::message_of<ca::copy_error>([&] { dm.copyto(*s, p); });
    test::check_contains(message, "failed half way");
    test::check_contains(message, "the source is untouched");
    CHECK_FALSE(dm.isvalid(*s));
    CHECK(test::object_holds(dm, o, 7));
    CHECK(dm.stats().failed_copies == 1);
    CHECK_THROWS_AS(dm.setprimary(o, *s), ca::invalid_operation);  // no copy to promote
    dm.copyto(*s, p);                                              // the next copy works
    CHECK(dm.isvalid(*s));
  }
  SUBCASE("synchronous, into a primary: the contents are torn and the other copies stale") {
    dm.copyto(*s, p);
    REQUIRE(dm.isvalid(*s));
    ca::Region* src = dm.allocate(1, bytes);
    REQUIRE(src != nullptr);
    test::fill(dm.pointer(*src), bytes, 8);
    faults->fail_nth(Site::copy, 1);
    CHECK_THROWS_AS(dm.copyto(p, *src), ca::copy_error);
    CHECK_FALSE(dm.isvalid(*s));  // the old contents no longer pass for the object's
    CHECK_FALSE(test::object_holds(dm, o, 7));
    CHECK_FALSE(test::object_holds(dm, o, 8));
    dm.free(*src);
  }
  SUBCASE("asynchronous: the fence reports it, setprimary refuses the region") {
    faults->fail_nth(Site::copy, 1);
    ca::Fence fence = dm.copyto_async(*s, p);
    CHECK_THROWS_AS(fence.wait(), ca::copy_error);
    CHECK_THROWS_AS(dm.setprimary(o, *s), ca::copy_error);
    dm.finish_copies();
    CHECK_FALSE(dm.isvalid(*s));
    CHECK(test::object_holds(dm, o, 7));
    CHECK(dm.stats().async.failures == 1);
  }
  dm.check_invariants(true);
}

TEST_CASE("faults: with no mover thread the caller makes the copy, and the mover starts later") {
  ScopedFaults faults;
  ca::DataManager dm(test::two_tiers());
  ca::Object& o = test::make_object(dm, 0, 32 * kib, 3);
  ca::Region& p = *dm.getprimary(o);
  ca::Region* s = dm.allocate(1, 32 * kib);
  REQUIRE(s != nullptr);
  dm.link(p, *s);
  faults->fail_nth(Site::mover_start, 1);
  ca::Fence fence = dm.copyto_async(*s, p);
  CHECK(fence.ready());  // made on this thread, before copyto_async returned
  CHECK(dm.stats().async.made_without_mover == 1);
  dm.finish_copies();
  CHECK(dm.isvalid(*s));
  // The next copy starts the threads the system now allows.
  ca::Object& q = test::make_object(dm, 0, 32 * kib, 4);
  ca::Region* t = dm.allocate(1, 32 * kib);
  REQUIRE(t != nullptr);
  dm.link(*dm.getprimary(q), *t);
  (void)dm.copyto_async(*t, *dm.getprimary(q));
  dm.finish_copies();
  CHECK(dm.isvalid(*t));
  CHECK(dm.stats().async.made_without_mover == 1);
  // The refused start, then one for each of the mover's threads.
  CHECK(faults->events(Site::mover_start) == 1 + dm.mover_options().threads);
  dm.check_invariants(true);
}

TEST_CASE("faults: a move whose copy fails is abandoned; the object stays, nothing leaks") {
  ScopedFaults faults;
  ca::DataManager dm(test::two_tiers());
  ca::Object& o = test::make_object(dm, 0, 64 * kib, 5);
  const std::uint64_t used = bytes_in_use(dm);
  faults->fail_nth(Site::copy, 1);
  const ca::policy::EvictOutcome out = ca::policy::evict(dm, o, 0, 1);
  CHECK_FALSE(out.moved);
  CHECK(dm.device(*dm.getprimary(o)) == 0);
  CHECK(bytes_in_use(dm) == used);  // the slow region taken for it was given back
  CHECK(dm.policy_counters().moves_abandoned == 1);
  REQUIRE(ca::policy::evict(dm, o, 0, 1).moved);

  faults->fail_nth(Site::copy, 1);
  CHECK_FALSE(ca::policy::prefetch(dm, o, 0, 1));
  CHECK(dm.device(*dm.getprimary(o)) == 1);
  CHECK(dm.getlinked(*dm.getprimary(o), 0) == nullptr);
  CHECK(dm.policy_counters().moves_abandoned == 2);
  CHECK(test::object_holds(dm, o, 5));
  dm.check_invariants(true);
}

TEST_CASE("faults: a policy handler that throws reaches the program and changes nothing") {
  ScopedFaults faults;
  ca::Runtime rt(test::two_tiers(), ca::policy::Registry::builtin().make("ca-lm"));
  auto a = rt.array<std::uint64_t>(1024);
  test::fill_words(a.write(), 11);
  faults->fail_nth(Site::policy_handler, 1);
  CHECK_THROWS_WITH_AS((void)rt.array<std::uint64_t>(512), doctest::Contains("place handler failed"), ca::error);
  CHECK(rt.stats().objects_created == rt.stats().objects_destroyed + 1);  // the new one is gone
  faults->fail_nth(Site::policy_handler, 1);
  CHECK_THROWS_AS(a.hint(ca::Hint::archive), ca::error);
  faults->fail_nth(Site::policy_handler, 1);
  CHECK_THROWS_AS((void)a.read(), ca::error);
  faults->fail_nth(Site::policy_handler, 2);  // the kernel's second argument
  auto b = rt.array<std::uint64_t>(1024);
  CHECK_THROWS_AS(rt.kernel(ca::reads(a), ca::writes(b), [](auto, auto) { FAIL("the kernel ran"); }), ca::error);
  CHECK_FALSE(a.object().pinned());
  CHECK_FALSE(b.object().pinned());
  CHECK(test::words_hold(a.read(), 11));
  auto guard = rt.lock();
  rt.manager().check_invariants(true);
}

// ---- the matrix: every fault at the Nth event, under every policy -----------

namespace {

// The policies of the matrix: every built-in one that places and moves
// data (all-fast is first-touch without a second tier), and the planned ones
// with a time model a small program can be planned with.
const std::vector<std::string> matrix_policies = {"first-touch", "all-slow",       "hw-cache", "ca",      "ca-l",
                                                  "ca-lm",       "ca-lmp",         "ca-lma",   "ca-lmpa", "planned-a",
                                                  "autotm-sync", "autoswap:swdoa", "redl"};

std::unique_ptr<ca::policy::Policy> make_policy(const std::string& name) {
  const ca::policy::PolicyDescriptor described = ca::policy::Registry::builtin().describe(name);
  if (std::optional<ca::policy::AutotmPolicyOptions> options = described.planned_options()) {
    options->time_model = std::make_shared<test::MillisecondPerSlowArgument>(1e-3);
    options->fast_tier = {100, 100};
    options->slow_tier = {10, 10};
    options->solver.time_limit_seconds = 5;
    options->log = [](const std::string&) {};
    return std::make_unique<ca::policy::AutotmPolicy>(std::move(*options));
  }
  return ca::policy::Registry::builtin().make(name);
}

// A training-like program (as in planned_policies_tests.cpp): `layers`
// parameters, kept; forward kernel i reads activation i-1 (and for some i an
// earlier one too), and parameter i, and writes activation i, created for
// it; backward kernel i reads activation i and updates parameter i, then
// retires the activation. A kernel writes a new pattern into what it
// writes, and its seed is recorded only if the kernel ran: an operation the
// program saw fail changed nothing the model does not know.
struct Layout {
  std::vector<std::size_t> param_words, activation_words;
  std::vector<std::optional<std::size_t>> skip;

  // `activation_base`: AutoSwap swaps only objects of 1 MiB or more (§IV-A),
  // so its runs use activations of that size to make its plan move them.
  Layout(std::uint64_t seed, std::size_t layers, std::uint64_t activation_base = 32 * kib) {
    test::SplitMixRng rng(seed);
    for (std::size_t i = 0; i < layers; ++i) {
      param_words.push_back((16 * kib + rng.below(4) * 4 * kib) / 8);
      activation_words.push_back((activation_base + rng.below(4) * activation_base / 4) / 8);
      skip.push_back(i >= 2 && rng.percent(50) ? std::optional<std::size_t>(rng.below(i - 1)) : std::nullopt);
    }
  }
  [[nodiscard]] std::uint64_t peak_bytes() const {
    std::uint64_t b = 0;
    for (std::size_t i = 0; i < param_words.size(); ++i) b += (param_words[i] + activation_words[i]) * 8;
    return b;
  }
};

struct Training : Layout {
  ca::Runtime& rt;
  std::vector<std::optional<ca::CachedArray<std::uint64_t>>> params;
  std::vector<std::uint64_t> param_seeds;
  std::uint64_t next_seed = 1000;
  std::uint64_t bad_reads = 0;
  std::uint64_t reported = 0;  // exceptions that reached the program
  std::map<std::string, std::uint64_t> reported_by_kind;

  Training(ca::Runtime& runtime, const Layout& layout) : Layout(layout), rt(runtime) {
    params.resize(param_words.size());
    param_seeds.resize(param_words.size());
  }

  // Runs `f`; an exception the library throws on purpose is counted (a
  // fault reported to the program), anything else fails the test.
  template <typename F>
  bool attempt(F&& f) {
    try {
      f();
      return true;
    } catch (const ca::out_of_memory&) {
      ++reported_by_kind["out_of_memory"];
    } catch (const ca::copy_error&) {
      ++reported_by_kind["copy_error"];
    } catch (const ca::error& e) {
      const std::string what = e.what();
      ++reported_by_kind[what.find("injected fault") != std::string::npos ? "policy handler" : what];
    }
    ++reported;
    return false;
  }
  void check(std::span<const std::uint64_t> data, std::uint64_t seed) { bad_reads += !test::words_hold(data, seed); }

  // Creates (and writes) every parameter that does not exist yet.
  void make_params() {
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i]) continue;
      attempt([&] {
        ca::CachedArray<std::uint64_t> p = rt.array<std::uint64_t>(param_words[i]);
        const std::uint64_t seed = next_seed++;
        test::fill_words(p.write(), seed);
        params[i].emplace(std::move(p));
        param_seeds[i] = seed;
      });
    }
  }

  void iteration() {
    if (!attempt([&] { rt.begin_iteration(); })) return;
    make_params();
    const std::size_t layers = params.size();
    std::vector<std::optional<ca::CachedArray<std::uint64_t>>> act(layers);
    std::vector<std::uint64_t> act_seeds(layers);
    std::vector<bool> written(layers, false);
    for (std::size_t i = 0; i < layers; ++i) {
      const bool inputs = params[i] && (i == 0 || written[i - 1]) && (!skip[i] || written[*skip[i]]);
      if (!inputs) continue;
      if (!attempt([&] { act[i].emplace(rt.array<std::uint64_t>(activation_words[i])); })) continue;
      auto& out = *act[i];
      const auto& param = *params[i];
      attempt([&] {
        if (i == 0) {
          rt.kernel(ca::reads(param), ca::writes(out),
                    [&](std::span<const std::uint64_t> p, std::span<std::uint64_t> y) {
                      check(p, param_seeds[i]);
                      act_seeds[i] = next_seed++;
                      test::fill_words(y, act_seeds[i]);
                      written[i] = true;
                    });
        } else if (!skip[i]) {
          const auto& in = *act[i - 1];
          rt.kernel(
              ca::reads(in, param), ca::writes(out),
              [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> p, std::span<std::uint64_t> y) {
                check(x, act_seeds[i - 1]);
                check(p, param_seeds[i]);
                act_seeds[i] = next_seed++;
                test::fill_words(y, act_seeds[i]);
                written[i] = true;
              });
        } else {
          const auto& in = *act[i - 1];
          const std::size_t s = *skip[i];
          rt.kernel(ca::reads(in, param, *act[s]), ca::writes(out),
                    [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> p,
                        std::span<const std::uint64_t> z, std::span<std::uint64_t> y) {
                      check(x, act_seeds[i - 1]);
                      check(p, param_seeds[i]);
                      check(z, act_seeds[s]);
                      act_seeds[i] = next_seed++;
                      test::fill_words(y, act_seeds[i]);
                      written[i] = true;
                    });
        }
      });
    }
    for (std::size_t i = layers; i-- > 0;) {
      if (written[i]) {
        auto& param = *params[i];
        attempt([&] {
          rt.kernel(ca::reads(*act[i]), ca::writes(param),
                    [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> p) {
                      check(x, act_seeds[i]);
                      check(p, param_seeds[i]);
                      param_seeds[i] = next_seed++;
                      test::fill_words(p, param_seeds[i]);
                    });
        });
        if (i % 2 == 1) attempt([&] { param.hint(ca::Hint::archive); });
      }
      act[i].reset();  // retired after its last use
    }
    attempt([&] { rt.collect(); });
  }

  // Every parameter holds what the program last wrote, and the state is
  // consistent (docs/design.md invariants 1-7, contents of valid copies
  // compared).
  void check_state() {
    auto guard = rt.lock();
    rt.manager().check_invariants(true);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i]) bad_reads += !test::primary_words_hold(rt.manager(), params[i]->object(), param_seeds[i]);
    }
  }
};

struct Cell {
  std::uint64_t runs = 0, fired = 0, runs_reported = 0, reported = 0, bad = 0;
  std::map<std::string, std::uint64_t> kinds;
};

// One run of the training program under `policy` with the Nth event of
// `site` failing (nth 0: no fault; counts the events of each site). The run
// must keep every byte and every invariant, train on fault-free afterwards,
// and leave nothing allocated once its arrays are retired.
void run_once(const std::string& policy, Site site, std::uint64_t nth, Cell& cell, std::uint64_t* events = nullptr) {
  ScopedFaults faults;
  const bool large = policy.starts_with("autoswap");
  const Layout layout(test::test_seed(17), 5, large ? 1 * mib : 32 * kib);
  // The fast tier holds 60% of the peak load: the policies move data.
  const std::uint64_t fast = (layout.peak_bytes() * 3 / 5) / (4 * kib) * (4 * kib);
  ca::Runtime runtime(test::two_tiers(fast, large ? 32 * mib : 8 * mib), make_policy(policy));
  Training t(runtime, layout);
  if (nth > 0) faults->fail_nth(site, nth);
  t.iteration();  // unplanned
  runtime.record_program();
  for (int i = 0; i < 5; ++i) {
    t.iteration();  // recorded, then planned and followed
    t.check_state();
  }
  if (events != nullptr) *events = faults->events(site);
  const std::uint64_t fired = faults->fired(site);
  faults->disarm();
  const std::uint64_t reported_under_faults = t.reported;
  t.iteration();  // fault-free: the runtime is still usable
  t.iteration();
  t.check_state();
  INFO("policy " << policy << ", fault at " << std::string(ca::fault::to_string(site)) << " #" << nth);
  CHECK(t.bad_reads == 0);
  CHECK(t.reported == reported_under_faults);  // nothing fails once the faults stop
  for (auto& p : t.params) CHECK(p.has_value());
  t.params.clear();
  runtime.collect();
  {
    auto guard = runtime.lock();
    runtime.manager().finish_copies();
    CHECK(bytes_in_use(runtime.manager()) == 0);  // no region leaked by a failed move
  }
  ++cell.runs;
  cell.fired += fired;
  cell.runs_reported += reported_under_faults > 0;
  cell.reported += reported_under_faults;
  cell.bad += t.bad_reads;
  for (const auto& [kind, n] : t.reported_by_kind) cell.kinds[kind] += n;
}

}  // namespace

TEST_CASE("faults: the matrix — every fault at the Nth event, under every policy, keeps every byte") {
  constexpr Site sites[] = {Site::allocation, Site::copy, Site::policy_handler, Site::mover_start};
  std::uint64_t total_runs = 0, total_fired = 0, total_bad = 0;
  std::ostringstream table;
  table << "fault x policy -> runs, faults fired, runs where the program saw an error (errors), bytes lost\n";
  for (const Site site : sites) {
    for (const std::string& policy : matrix_policies) {
      Cell cell;
      std::uint64_t events = 0;
      Cell baseline;
      run_once(policy, site, 0, baseline, &events);
      CHECK(baseline.reported == 0);
      // The Nth event for N spread over the whole run: the first few, then
      // every stride-th, so that every phase (unplanned, recording,
      // planned) sees each fault.
      // (Half as many in a build many times slower; the optimised build
      // runs them all.)
      const std::uint64_t stride = std::max<std::uint64_t>(1, events / (test::full_speed_build ? 12 : 6));
      for (std::uint64_t nth = 1; nth <= events; nth += nth < 4 ? 1 : stride) run_once(policy, site, nth, cell);
      table << "  " << ca::fault::to_string(site) << " x " << policy << ": " << events << " events, " << cell.runs
            << " runs, " << cell.fired << " fired, " << cell.runs_reported << " reported (" << cell.reported << ")";
      for (const auto& [kind, n] : cell.kinds) table << " " << kind << ":" << n;
      table << ", " << cell.bad << " bad reads\n";
      total_runs += cell.runs;
      total_fired += cell.fired;
      total_bad += cell.bad;
      CHECK(cell.bad == 0);
      // The policies' moves absorb a failed copy: the program never sees one.
      CHECK(cell.kinds.count("copy_error") == 0);
      // Not vacuous: the faults fired. (Not every run meets its fault: with
      // the mover beside it, a run may take fewer events than the one that
      // counted them, e.g. a copy that lands before it is waited for.)
      if (events > 0) CHECK(cell.fired > 0);
    }
  }
  table << "  " << total_runs << " runs with a fault, " << total_fired << " faults fired, " << total_bad
        << " bad reads\n";
  MESSAGE(table.str());
  CHECK(total_fired * 10 >= total_runs * 9);
}

// ---- writers on several threads, with faults --------------------------------

namespace {

// Writers on three threads, each on arrays of its own (a write() guard or a
// kernel that reads one of its arrays and writes another), in a fast tier of
// a quarter of the arrays, so that the policy keeps moving them, with the
// Nth event of `site` failing. A write that throws did not happen; every
// other is each array's last. Returns the events of `site` the run met.
std::uint64_t run_writers(const std::string& policy, Site site, std::uint64_t nth, std::uint64_t& reported,
                          std::uint64_t& fired) {
  constexpr int writers = 3;
  constexpr int per_writer = 4;
  constexpr std::size_t words = 2048;  // 16 KiB
  ScopedFaults faults;
  ca::Runtime rt(test::two_tiers(writers * per_writer / 4 * words * 8, 8 * mib), make_policy(policy));
  std::vector<ca::CachedArray<std::uint64_t>> data;
  std::vector<std::uint64_t> last(writers * per_writer);
  for (std::size_t i = 0; i < last.size(); ++i) {
    data.push_back(rt.array<std::uint64_t>(words));
    last[i] = i + 1;
    test::fill_words(data.back().write(), last[i]);
  }
  if (nth > 0) faults->fail_nth(site, nth);
  std::atomic<std::uint64_t> errors{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t k = 1; k <= 200; ++k) {
        const std::size_t i = static_cast<std::size_t>(t * per_writer) + k % per_writer;
        const std::size_t source = static_cast<std::size_t>(t * per_writer) + (k + 1) % per_writer;
        const std::uint64_t seed = k * 131 + i;
        // Whether the write happened: a kernel's end may still throw after
        // its body wrote (a policy handler that hears kernels).
        bool wrote = false;
        try {
          if (k % 2 == 0) {
            auto w = data[i].write();
            test::fill_words(w, seed);
            wrote = true;
          } else {
            const std::uint64_t source_seed = last[source];
            rt.kernel(ca::reads(data[source]), ca::writes(data[i]),
                      [&](std::span<const std::uint64_t> in, std::span<std::uint64_t> out) {
                        if (!test::words_hold(in, source_seed)) bad.fetch_add(1);
                        test::fill_words(out, seed);
                        wrote = true;
                      });
          }
        } catch (const ca::error&) {  // out_of_memory, copy_error, an injected handler fault
          errors.fetch_add(1);
        }
        if (wrote) last[i] = seed;
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::uint64_t events = faults->events(site);
  fired += faults->fired(site);
  faults->disarm();
  reported += errors.load();
  CHECK(bad.load() == 0);
  for (std::size_t i = 0; i < data.size(); ++i) {
    CAPTURE(i);
    auto r = data[i].read();
    CHECK(test::words_hold(r, last[i]));
  }
  auto guard = rt.lock();
  rt.manager().finish_copies();
  rt.manager().check_invariants(/*verify_contents=*/true);
  return events;
}

}  // namespace

TEST_CASE("faults: writers on several threads, with every fault at the Nth event, keep every write") {
  constexpr Site sites[] = {Site::allocation, Site::copy, Site::policy_handler, Site::mover_start};
  std::uint64_t runs = 0, reported = 0, fired = 0;
  for (const Site site : sites) {
    for (const char* policy : {"ca-lm", "ca-lmp", "ca-lma", "hw-cache"}) {
      INFO("policy " << policy << ", fault at " << std::string(ca::fault::to_string(site)));
      std::uint64_t baseline_reported = 0, baseline_fired = 0;
      const std::uint64_t events = run_writers(policy, site, 0, baseline_reported, baseline_fired);
      CHECK(baseline_reported == 0);
      // The threads interleave differently from run to run, so the Nth
      // event falls at another place each time: a few spread over the run.
      const std::uint64_t stride = std::max<std::uint64_t>(1, events / 4);
      for (std::uint64_t nth = 1; nth <= events; nth += stride) {
        (void)run_writers(policy, site, nth, reported, fired);
        ++runs;
      }
    }
  }
  MESSAGE(runs << " runs with a fault, " << fired << " fired, " << reported << " errors reported to the writers");
  // Not vacuous: faults fired, and some reached the writers.
  CHECK(fired * 2 >= runs);
  CHECK(reported > 0);
}

// ---- a long random run with faults anywhere ---------------------------------

namespace {

// Sized as the property test is (property_model.hpp): a quarter of the
// operations in an unoptimised or sanitizer build.
constexpr std::uint64_t default_random_ops = test::full_speed_build ? 100000 : 25000;

struct Tracked {
  ca::CachedArray<std::uint64_t> array;
  std::uint64_t seed = 0;
};

}  // namespace

TEST_CASE("faults: random Runtime operations with every fault at random points keep every byte") {
  const std::uint64_t seed = test::test_seed(2026);
  const std::uint64_t ops = test::env_or("CACHEDARRAYS_PROPERTY_OPS", default_random_ops);
  CAPTURE(seed);
  test::SplitMixRng rng(seed);
  std::uint64_t done = 0, reported = 0, bad_reads = 0, fired = 0, checks = 0;
  std::uint64_t moves = 0, abandoned = 0, failed_copies = 0, without_mover = 0;
  const std::uint64_t per_policy = ops / matrix_policies.size() + 1;
  for (const std::string& policy : matrix_policies) {
    CAPTURE(policy);
    ScopedFaults faults;
    // One fault in a hundred events of each kind, at points the seed picks.
    faults->fail_randomly(Site::allocation, 0.01, rng());
    faults->fail_randomly(Site::copy, 0.01, rng());
    faults->fail_randomly(Site::policy_handler, 0.01, rng());
    faults->fail_nth(Site::mover_start, 1);  // a runtime starts its mover once: refuse the first
    ca::Runtime rt(test::two_tiers(256 * kib, 4 * mib), make_policy(policy));
    std::vector<Tracked> arrays;
    const auto pick = [&]() -> Tracked* { return arrays.empty() ? nullptr : &arrays[rng.below(arrays.size())]; };
    const auto attempt = [&](auto&& f) {
      try {
        f();
      } catch (const ca::error&) {  // out_of_memory, copy_error, an injected handler fault
        ++reported;
      }
    };
    for (std::uint64_t op = 0; op < per_policy; ++op, ++done) {
      switch (rng.below(10)) {
        case 0:
        case 1:  // create and fill
          if (arrays.size() < 48) {
            attempt([&] {
              Tracked t{rt.array<std::uint64_t>(rng.between(1, 8 * kib)), rng() | 1};
              test::fill_words(t.array.write(), t.seed);
              arrays.push_back(std::move(t));
            });
          }
          break;
        case 2:  // read and check
          if (Tracked* t = pick()) attempt([&] { bad_reads += !test::words_hold(t->array.read(), t->seed); });
          break;
        case 3:  // new contents
          if (Tracked* t = pick()) {
            attempt([&] {
              auto w = t->array.write();  // the pin is taken: the write happens
              t->seed = rng() | 1;
              test::fill_words(w, t->seed);
            });
          }
          break;
        case 4:  // a hint
          if (Tracked* t = pick()) {
            constexpr ca::Hint hints[] = {ca::Hint::will_use, ca::Hint::will_read, ca::Hint::will_write,
                                          ca::Hint::archive};
            attempt([&] { t->array.hint(hints[rng.below(4)]); });
          }
          break;
        case 5:
        case 6:  // a kernel reading one array and writing another
          if (arrays.size() >= 2) {
            const std::size_t a = rng.below(arrays.size());
            std::size_t b = rng.below(arrays.size() - 1);
            b += b >= a;
            Tracked& in = arrays[a];
            Tracked& out = arrays[b];
            const std::uint64_t next = rng() | 1;
            attempt([&] {
              rt.kernel(ca::reads(in.array), ca::writes(out.array),
                        [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> y) {
                          bad_reads += !test::words_hold(x, in.seed);
                          out.seed = next;
                          test::fill_words(y, next);
                        });
            });
          }
          break;
        case 7:  // retire
          if (!arrays.empty()) {
            std::swap(arrays[rng.below(arrays.size())], arrays.back());
            arrays.pop_back();  // the handle's destruction retires it
          }
          break;
        case 8: attempt([&] { rt.collect(); }); break;
        default: attempt([&] { rt.begin_iteration(); }); break;
      }
      if (op % 500 == 499) {  // everything stored is still there
        auto guard = rt.lock();
        rt.manager().check_invariants(true);
        for (const Tracked& t : arrays) bad_reads += !test::primary_words_hold(rt.manager(), t.array.object(), t.seed);
        ++checks;
      }
    }
    for (const Site site : {Site::allocation, Site::copy, Site::policy_handler, Site::mover_start}) {
      fired += faults->fired(site);
    }
    faults->disarm();
    const ca::Stats stats = rt.stats();
    moves += stats.policy.prefetches + stats.policy.evictions;
    abandoned += stats.policy.moves_abandoned;
    failed_copies += stats.failed_copies + stats.async.failures;
    without_mover += stats.async.made_without_mover;
    for (const Tracked& t : arrays) bad_reads += !test::words_hold(t.array.read(), t.seed);
    arrays.clear();
    rt.collect();
    auto guard = rt.lock();
    rt.manager().finish_copies();
    CHECK(bytes_in_use(rt.manager()) == 0);
  }
  MESSAGE(done << " operations under " << matrix_policies.size() << " policies, " << fired << " faults fired, "
               << reported << " errors reported to the program, " << moves << " moves (" << abandoned << " abandoned), "
               << failed_copies << " failed copies, " << without_mover << " copies made without a mover thread, "
               << checks << " full checks, " << bad_reads << " bad reads");
  CHECK(bad_reads == 0);
  CHECK(reported > 0);
  CHECK(abandoned > 0);  // the failure paths really ran
  CHECK(failed_copies >= abandoned);
  CHECK(without_mover > 0);
}
