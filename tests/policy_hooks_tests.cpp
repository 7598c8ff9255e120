// The policy's view of the program position (Policy::on_iteration_begin,
// on_kernel_begin, on_kernel_end): every kernel is numbered within its
// iteration, its arguments are already hinted and pinned when the policy
// hears of it, and a hook that throws fails the kernel cleanly.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cachedarrays/policy/registry.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

struct Call {
  std::string what;
  std::uint64_t iteration = 0;
  std::uint64_t index = 0;
  std::vector<std::uint64_t> objects;  // ids
  std::vector<ca::Access> accesses;
  bool all_pinned = false;
};

// First-touch placement, recording every hook.
class HookRecordingPolicy final : public test::FastDevicePolicy {
 public:
  std::vector<Call> calls;
  bool throw_at_begin = false;
  bool follows = true;

  [[nodiscard]] std::string name() const override { return "test-recording"; }
  void on_iteration_begin(std::uint64_t iteration) override {
    calls.push_back({"iteration", iteration, 0, {}, {}, false});
  }
  void on_kernel_begin(const ca::policy::KernelPoint& k) override {
    record("begin", k);
    if (throw_at_begin) throw std::runtime_error("hook failed");
  }
  void on_kernel_end(const ca::policy::KernelPoint& k) override { record("end", k); }
  [[nodiscard]] bool follows_kernels() const override { return follows; }

 private:
  void record(const char* what, const ca::policy::KernelPoint& k) {
    Call c{what, k.iteration, k.index, {}, {k.accesses.begin(), k.accesses.end()}, true};
    for (const ca::Object* o : k.objects) {
      c.objects.push_back(o->id());
      c.all_pinned = c.all_pinned && o->pinned();
    }
    calls.push_back(std::move(c));
  }
};

}  // namespace

TEST_CASE("policy hooks: kernels are numbered within each iteration, arguments pinned, in order") {
  auto owned = std::make_unique<HookRecordingPolicy>();
  HookRecordingPolicy& policy = *owned;
  ca::Runtime rt({ca::dram(1 << 20)}, std::move(owned));
  auto a = rt.array<float>(16);
  auto b = rt.array<float>(16);
  const auto copy = [](std::span<const float> x, std::span<float> y) { std::copy(x.begin(), x.end(), y.begin()); };
  for (int i = 0; i < 2; ++i) {
    rt.begin_iteration();
    rt.kernel(ca::reads(a), ca::writes(b), copy);
    { auto w = a.write(); }  // a scoped access: a kernel without an end
    rt.kernel(ca::reads(b), ca::writes(a), copy);
    CHECK(rt.kernels_in_iteration() == 3);
  }
  CHECK(rt.iteration() == 2);
  const std::uint64_t ida = a.object().id();
  const std::uint64_t idb = b.object().id();
  using A = ca::Access;
  std::vector<std::string> seen;
  for (const Call& c : policy.calls) {
    seen.push_back(c.what + " " + std::to_string(c.iteration) + ":" + std::to_string(c.index));
    if (c.what != "iteration") CHECK(c.all_pinned);
  }
  CHECK(seen == std::vector<std::string>{"iteration 1:0", "begin 1:0", "end 1:0", "begin 1:1", "begin 1:2", "end 1:2",
                                         "iteration 2:0", "begin 2:0", "end 2:0", "begin 2:1", "begin 2:2", "end 2:2"});
  CHECK(policy.calls[1].objects == std::vector<std::uint64_t>{ida, idb});
  CHECK(policy.calls[1].accesses == std::vector<A>{A::read, A::write});
  CHECK(policy.calls[4].objects == std::vector<std::uint64_t>{idb, ida});
  CHECK(policy.calls[3].accesses == std::vector<A>{A::write});
}

TEST_CASE("policy hooks: a throwing on_kernel_begin fails the kernel and leaves nothing pinned") {
  auto owned = std::make_unique<HookRecordingPolicy>();
  HookRecordingPolicy& policy = *owned;
  ca::Runtime rt({ca::dram(1 << 20)}, std::move(owned));
  auto a = rt.array<int>(8);
  auto b = rt.array<int>(8);
  policy.throw_at_begin = true;
  bool ran = false;
  CHECK_THROWS_WITH_AS(
      rt.kernel(ca::reads(a), ca::writes(b), [&](std::span<const int>, std::span<int>) { ran = true; }), "hook failed",
      std::runtime_error);
  CHECK_FALSE(ran);
  CHECK_FALSE(a.object().pinned());
  CHECK_FALSE(b.object().pinned());
  CHECK(rt.kernels_in_iteration() == 0);  // the failed kernel took no position
  policy.throw_at_begin = false;
  rt.kernel(ca::reads(a), ca::writes(b), [&](std::span<const int>, std::span<int>) { ran = true; });
  CHECK(ran);
  CHECK(policy.calls.back().what == "end");
  CHECK(policy.calls.back().index == 0);
}

TEST_CASE("policy hooks: a policy that does not follow kernels hears none, and kernels are still counted and traced") {
  auto owned = std::make_unique<HookRecordingPolicy>();
  owned->follows = false;
  HookRecordingPolicy& policy = *owned;
  ca::Runtime rt({ca::dram(1 << 20)}, std::move(owned));
  auto a = rt.array<float>(16);
  auto b = rt.array<float>(16);
  const ca::Trace& trace = rt.start_trace();
  rt.begin_iteration();
  rt.kernel(ca::reads(a), ca::writes(b), [](std::span<const float>, std::span<float>) {});
  rt.kernel(ca::reads(b), ca::writes(a), [](std::span<const float>, std::span<float>) {});
  CHECK(rt.kernels_in_iteration() == 2);
  rt.stop_trace();
  // The iteration is heard; no kernel is.
  REQUIRE(policy.calls.size() == 1);
  CHECK(policy.calls[0].what == "iteration");
  int begins = 0, ends = 0;
  for (const ca::TraceEvent& e : trace.events()) {
    begins += e.kind == ca::TraceKind::kernel_begin;
    ends += e.kind == ca::TraceKind::kernel_end;
  }
  CHECK(begins == 2);
  CHECK(ends == 2);
}

TEST_CASE("policy hooks: the built-in policies follow kernels only where they look ahead") {
  const auto& registry = ca::policy::Registry::builtin();
  for (const char* name : {"first-touch", "all-fast", "all-slow", "ca", "ca-l", "ca-lm", "ca-lmp", "hw-cache"}) {
    CAPTURE(name);
    CHECK_FALSE(registry.make(name)->follows_kernels());
  }
  CHECK(registry.make("ca-lma")->follows_kernels());
  CHECK(registry.make("ca-lmpa")->follows_kernels());
}
