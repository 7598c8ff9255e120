// One suite run over every registered policy (as Umpire runs one typed suite
// over all its strategies): random hint storms with a small fast tier lose
// no data, the invariants hold after every step, a working set larger
// than all tiers raises out_of_memory without harming anything else, and a
// training loop that fits in fast memory moves nothing. Each
// policy is its own test case, named after it, so that one failing policy
// does not hide the others.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

struct Live {
  ca::CachedArray<std::byte> array;
  std::uint64_t seed;
};

// The CachedArrays invariant: an object with a fast region has it as
// primary — except, in the lookahead modes, a copy made ahead of use, which
// stays a secondary until the kernel that needs it promotes it.
void check_fast_is_primary(const ca::DataManager& dm, bool copies_ahead) {
  dm.for_each_object([&](const ca::Object& o) {
    const ca::Region* primary = dm.getprimary(o);
    if (const ca::Region* fast_region = dm.getlinked(*primary, 0)) {
      if (fast_region != primary && !copies_ahead) {
        FAIL("object #" << o.id() << " has a fast region that is not its primary");
      }
    }
  });
}

bool is_single_tier(const std::string& name) { return name == "all-fast" || name == "all-slow"; }

void hint_storm(const std::string& policy, double fast_fraction, std::uint64_t seed) {
  CAPTURE(policy);
  CAPTURE(fast_fraction);
  CAPTURE(seed);
  test::Rng rng(seed);
  constexpr int arrays = 40;
  constexpr std::uint64_t max_bytes = 48 * 1024;
  // Working set: up to arrays * max_bytes; all-fast needs it all in fast.
  const std::uint64_t working_set = arrays * max_bytes;
  const std::uint64_t fast_bytes =
      policy == "all-fast"
          ? 4 * working_set
          : std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(static_cast<double>(working_set) * fast_fraction));
  ca::Runtime rt({ca::dram(fast_bytes, "fast"), ca::dax_file({}, 8 * working_set, "slow")},
                 test::policy_with_quick_plans(policy));
  // By the name the policy gives itself: "planned" is ca-lm+best-fit.
  const std::string mode = rt.policy_name();
  // AutoTM's executor follows its plans with CA:LM's moves; autotm-async
  // and AutoSwap copy ahead.
  // auto runs CA:LM, then whichever candidate its trials pick, some of
  // which copy ahead.
  const bool autotm = ca::policy::Registry::builtin().describe(mode).plans_ahead();
  const bool chooser = ca::policy::Registry::builtin().describe(mode).measures_candidates();
  const bool cached = mode.rfind("ca", 0) == 0 || mode == "hw-cache" || autotm || chooser;
  const bool lookahead =
      !autotm && !chooser && cached && mode != "hw-cache" && ca::policy::Mode::parse(mode).async_lookahead;
  const bool copies_ahead =
      lookahead || chooser || mode == "autotm-async" || mode.rfind("autoswap", 0) == 0 || mode == "redl";

  std::map<int, Live> live;
  std::uint64_t next_seed = seed * 1000;
  const auto create = [&](int slot) {
    const std::uint64_t bytes = 1 + rng() % max_bytes;
    Live l{rt.array<std::byte>(bytes), next_seed++};
    {
      auto w = l.array.write();
      test::fill(w.data(), w.size(), l.seed);
    }
    live.insert_or_assign(slot, std::move(l));
  };
  for (int i = 0; i < arrays; ++i) create(i);

  // The storm is one random iteration of 250 operations run six times, so
  // that a policy planning ahead has a program to follow (recorded from the
  // second iteration); sizes repeat with it, contents do not.
  struct Op {
    int slot;
    int kind;
    int other_slot;
    std::uint64_t bytes;
  };
  std::vector<Op> iteration_ops;
  for (int i = 0; i < 250; ++i) {
    iteration_ops.push_back({static_cast<int>(rng() % arrays), static_cast<int>(rng() % 9),
                             static_cast<int>(rng() % arrays), 1 + rng() % max_bytes});
  }
  for (int step = 0; step < 1500; ++step) {
    const Op& op = iteration_ops[static_cast<std::size_t>(step) % iteration_ops.size()];
    if (step % 250 == 0) {
      if (step == 250) rt.record_program();
      rt.begin_iteration();
    }
    const int slot = op.slot;
    Live& l = live.at(slot);
    switch (op.kind) {
      case 0: {  // rewrite
        auto w = l.array.write();
        l.seed = next_seed++;
        test::fill(w.data(), w.size(), l.seed);
        break;
      }
      case 1: {  // read and verify
        auto r = l.array.read();
        REQUIRE(test::holds(r.data(), r.size(), l.seed));
        break;
      }
      case 2: {  // kernel: copy another array's contents into this one
        const int other_slot = op.other_slot;
        if (other_slot == slot) break;
        Live& other = live.at(other_slot);
        const std::uint64_t new_seed = next_seed++;
        rt.kernel(ca::reads(other.array), ca::writes(l.array),
                  [&](std::span<const std::byte> src, std::span<std::byte> dst) {
                    REQUIRE(test::holds(src.data(), src.size(), other.seed));
                    test::fill(dst.data(), dst.size(), new_seed);
                  });
        l.seed = new_seed;
        break;
      }
      case 3: l.array.will_read(); break;
      case 4: l.array.will_write(); break;
      case 5: l.array.archive(); break;
      case 6: l.array.will_use(); break;
      case 7: {  // retire and replace
        l.array.retire();
        Live fresh{rt.array<std::byte>(op.bytes), next_seed++};
        {
          auto w = fresh.array.write();
          test::fill(w.data(), w.size(), fresh.seed);
        }
        live.insert_or_assign(slot, std::move(fresh));
        break;
      }
      case 8:
        if (op.bytes % 8 == 0) rt.collect();
        break;
    }
    rt.manager().check_invariants();
    if (cached) check_fast_is_primary(rt.manager(), copies_ahead);
    if (step % 250 == 0) {
      rt.manager().check_invariants(/*verify_contents=*/true);
      for (auto& [s, entry] : live) {
        auto r = entry.array.read();
        REQUIRE(test::holds(r.data(), r.size(), entry.seed));
      }
    }
  }
  rt.collect();
  for (auto& [s, entry] : live) {
    auto r = entry.array.read();
    REQUIRE(test::holds(r.data(), r.size(), entry.seed));
  }
  rt.manager().check_invariants(true);
  // The storm must really have moved data for the caching policies, and
  // never for the placement-only ones.
  const ca::Stats stats = rt.stats();
  if (cached) {
    CHECK(stats.policy.evictions > 0);
    CHECK(stats.policy.prefetches > 0);
    // The lookahead modes followed the recorded program: copies went
    // through the mover, and none failed.
    if (lookahead) CHECK(stats.async.copies > 0);
    CHECK(stats.async.failures == 0);
  } else {
    CHECK(stats.total_bytes_copied() == 0);
  }
  MESSAGE(policy << " fast=" << fast_fraction << ": " << stats.policy.prefetches << " prefetches, "
                 << stats.policy.evictions << " evictions, " << stats.policy.writebacks << " write-backs");
}

// A small training loop: persistent weights, activations made in the
// forward pass, archived until the backward pass reads them again,
// gradients made and retired there, the weights updated. The hints are the
// trainer's; only the sizes are smaller.
class TrainingLoop {
 public:
  static constexpr int layers = 8;
  static constexpr std::uint64_t weight_bytes = 16 * 1024;
  static constexpr std::uint64_t activation_bytes = 40 * 1024;

  explicit TrainingLoop(ca::Runtime& rt) : rt_(rt) {
    for (int i = 0; i < layers; ++i) {
      weights_.push_back(rt_.array<float>(weight_bytes / sizeof(float)));
      auto w = weights_.back().write();
      std::fill(w.begin(), w.end(), 1.0f);
    }
  }

  void iteration() {
    rt_.begin_iteration();
    std::vector<ca::CachedArray<float>> acts;
    acts.push_back(make(activation_bytes));
    for (int i = 0; i < layers; ++i) {
      acts.push_back(make(activation_bytes));
      rt_.kernel(ca::reads(acts[static_cast<std::size_t>(i)], weights_[static_cast<std::size_t>(i)]),
                 ca::writes(acts.back()), [](auto in, auto w, auto out) { out[0] = in[0] + w[0]; });
      acts[static_cast<std::size_t>(i)].archive();  // not needed until the backward pass
    }
    ca::CachedArray<float> grad = make(activation_bytes);
    rt_.kernel(ca::reads(acts.back()), ca::writes(grad), [](auto in, auto out) { out[0] = in[0]; });
    acts.back().retire();
    for (int i = layers - 1; i >= 0; --i) {
      const auto at = static_cast<std::size_t>(i);
      ca::CachedArray<float> weight_grad = make(weight_bytes);
      ca::CachedArray<float> next_grad = make(activation_bytes);
      rt_.kernel(ca::reads(acts[at], grad, weights_[at]), ca::writes(weight_grad, next_grad),
                 [](auto a, auto g, auto w, auto gw, auto gn) {
                   gw[0] = a[0] * g[0];
                   gn[0] = g[0] * w[0];
                 });
      rt_.kernel(ca::reads(weight_grad), ca::writes(weights_[at]), [](auto gw, auto w) { w[0] -= 0.0f * gw[0]; });
      weight_grad.retire();
      grad.retire();
      acts[at].retire();
      grad = std::move(next_grad);
    }
    grad.retire();
  }

 private:
  ca::CachedArray<float> make(std::uint64_t bytes) { return rt_.array<float>(bytes / sizeof(float)); }

  ca::Runtime& rt_;
  std::vector<ca::CachedArray<float>> weights_;
};

// The fast tier the loop needs: the highest offset its fast heap reaches
// when everything lives there.
std::uint64_t training_loop_footprint() {
  ca::Runtime rt({ca::dram(8 << 20, "fast"), ca::dax_file({}, 8 << 20, "slow")},
                 ca::policy::Registry::builtin().make("all-fast"));
  TrainingLoop loop(rt);
  for (int i = 0; i < 3; ++i) loop.iteration();
  return rt.stats().devices[0].peak_extent;
}

}  // namespace

// One tag type per registered policy; doctest names each case "...<name>".
#define POLICY_TAG(Tag, policy_name)                 \
  namespace policy_suite {                           \
  struct Tag {                                       \
    static constexpr const char* name = policy_name; \
  };                                                 \
  }                                                  \
  TYPE_TO_STRING_AS(policy_name, policy_suite::Tag)
POLICY_TAG(FirstTouch, "first-touch");
POLICY_TAG(AllFast, "all-fast");
POLICY_TAG(AllSlow, "all-slow");
POLICY_TAG(Ca, "ca");
POLICY_TAG(CaL, "ca-l");
POLICY_TAG(CaLm, "ca-lm");
POLICY_TAG(CaLmp, "ca-lmp");
POLICY_TAG(CaLma, "ca-lma");
POLICY_TAG(CaLmpa, "ca-lmpa");
POLICY_TAG(HwCache, "hw-cache");
POLICY_TAG(Planned, "planned");
POLICY_TAG(PlannedA, "planned-a");
POLICY_TAG(AutotmStatic, "autotm-static");
POLICY_TAG(AutotmSync, "autotm-sync");
POLICY_TAG(AutotmAsync, "autotm-async");
POLICY_TAG(AutoswapDoa, "autoswap:doa");
POLICY_TAG(AutoswapAoa, "autoswap:aoa");
POLICY_TAG(AutoswapWdoa, "autoswap:wdoa");
POLICY_TAG(AutoswapSwdoa, "autoswap:swdoa");
POLICY_TAG(AutoswapBo, "autoswap:bo");
POLICY_TAG(Redl, "redl");
POLICY_TAG(Auto, "auto");
#undef POLICY_TAG

namespace policy_suite {
using All = std::tuple<FirstTouch, AllFast, AllSlow, Ca, CaL, CaLm, CaLmp, CaLma, CaLmpa, HwCache, Planned, PlannedA,
                       AutotmStatic, AutotmSync, AutotmAsync, AutoswapDoa, AutoswapAoa, AutoswapWdoa, AutoswapSwdoa,
                       AutoswapBo, Redl, Auto>;
}

// The tags must list exactly the registry's policies: a policy registered
// without a tag would otherwise escape the suite.
TEST_CASE("policy suite: every registered policy has its own cases") {
  std::vector<std::string> tagged =
      std::apply([](auto... tag) { return std::vector<std::string>{decltype(tag)::name...}; }, policy_suite::All{});
  std::sort(tagged.begin(), tagged.end());
  std::vector<std::string> registered = ca::policy::Registry::builtin().names();
  std::sort(registered.begin(), registered.end());
  CHECK(tagged == registered);
}

TEST_CASE_TEMPLATE_DEFINE("policy suite: hint storms with a fast tier of 1-10% of the working set lose no data", P,
                          hint_storms) {
  const std::uint64_t seed = test::test_seed(2024);
  for (double fraction : {0.01, 0.05, 0.10}) {
    if (is_single_tier(P::name) && fraction != 0.10) continue;  // placement ignores the budget
    hint_storm(P::name, fraction, seed);
  }
}
TEST_CASE_TEMPLATE_APPLY(hint_storms, policy_suite::All);

TEST_CASE_TEMPLATE_DEFINE("policy suite: a working set larger than all tiers raises out_of_memory, others intact", P,
                          out_of_memory) {
  const std::string name = P::name;
  CAPTURE(name);
  ca::Runtime rt({ca::dram(256 * 1024, "fast"), ca::dax_file({}, 512 * 1024, "slow")},
                 ca::policy::Registry::builtin().make(name));
  std::vector<Live> kept;
  std::string message;
  std::uint64_t seed = 1;
  try {
    for (int i = 0; i < 100; ++i) {
      Live l{rt.array<std::byte>(60 * 1024), seed++};
      {
        auto w = l.array.write();
        test::fill(w.data(), w.size(), l.seed);
      }
      kept.push_back(std::move(l));
    }
    FAIL("no out_of_memory for 6 MB over 768 KiB of tiers");
  } catch (const ca::out_of_memory& e) {
    message = e.what();
    CHECK(e.requested_bytes() == 60 * 1024);
    CHECK(e.devices().size() == 2);
  }
  CHECK(message.find("device 0 'fast': capacity 256.00 KiB") != std::string::npos);
  CHECK(message.find("device 1 'slow': capacity 512.00 KiB") != std::string::npos);
  CHECK(message.find("largest free block") != std::string::npos);
  CHECK(!kept.empty());
  rt.manager().check_invariants(true);
  for (Live& l : kept) {
    auto r = l.array.read();
    CHECK(test::holds(r.data(), r.size(), l.seed));
  }
}
TEST_CASE_TEMPLATE_APPLY(out_of_memory, policy_suite::All);

// With the whole footprint in fast memory a policy has nothing to move: once
// the program is known, no copy in either direction, no write-back ahead
// and no eviction. Not for the policies whose design moves regardless:
// CA:∅ and hw-cache start new objects in slow memory, and without M
// (ca-l) retired objects hold their bytes until collect().
TEST_CASE_TEMPLATE_DEFINE("policy suite: when everything fits in fast memory nothing moves", P, everything_fits) {
  const std::string name = P::name;
  if (name == "ca" || name == "ca-l" || name == "hw-cache") return;
  CAPTURE(name);
  const std::uint64_t footprint = training_loop_footprint();
  for (const double fraction : {1.0, 1.1}) {
    CAPTURE(fraction);
    const auto fast = (static_cast<std::uint64_t>(static_cast<double>(footprint) * fraction) + 63) & ~std::uint64_t{63};
    ca::Runtime rt({ca::dram(fast, "fast"), ca::dax_file({}, 8 * footprint, "slow")},
                   ca::policy::Registry::builtin().make(name));
    TrainingLoop loop(rt);
    loop.iteration();
    rt.record_program();
    loop.iteration();  // recorded
    loop.iteration();  // the planning policies bind the program's objects
    {
      auto guard = rt.lock();
      rt.manager().finish_copies();
    }
    const ca::Stats before = rt.stats();
    for (int i = 0; i < 4; ++i) loop.iteration();
    {
      auto guard = rt.lock();
      rt.manager().finish_copies();
    }
    const ca::Stats s = rt.stats().since(before);
    CAPTURE(s.policy.writeback_bytes);
    CAPTURE(s.policy.prefetch_bytes);
    CHECK(s.total_bytes_copied() == 0);
    CHECK(s.async.copies == 0);
    CHECK(s.policy.writebacks == 0);
    CHECK(s.policy.prefetches == 0);
    CHECK(s.policy.evictions == 0);
    rt.manager().check_invariants(true);
  }
}
TEST_CASE_TEMPLATE_APPLY(everything_fits, policy_suite::All);
