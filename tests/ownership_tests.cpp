// Typed ownership (docs/design.md invariant 8) and the one pin scope: a
// policy's per-object state is owned by its object and freed when the
// object dies, whoever destroys it and in whatever order; PinnedKernel pairs
// every pin with an unpin; retire is a hint like the others; the garbage
// collection of deferred retires runs in the policy when a device is full.
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>

#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// Counts the live states, so a test sees exactly when each is freed.
struct CountedState : ca::PolicyState {
  explicit CountedState(int& live) : live_(live) { ++live_; }
  ~CountedState() override { --live_; }
  CountedState(const CountedState&) = delete;
  CountedState& operator=(const CountedState&) = delete;
  int& live_;
  std::uint64_t id = 0;
};

// First touch, plus a state per object that records the object's id.
class StatefulPolicy final : public test::FastDevicePolicy {
 public:
  explicit StatefulPolicy(int& live) : live_(live) {}
  [[nodiscard]] std::string name() const override { return "stateful"; }
  [[nodiscard]] bool place(ca::Object& object) override {
    if (!FastDevicePolicy::place(object)) return false;
    auto state = std::make_unique<CountedState>(live_);
    state->id = object.id();
    object.set_policy_state(std::move(state));
    return true;
  }

 private:
  int& live_;
};

}  // namespace

TEST_CASE("ownership: a policy's per-object state is freed when its object dies") {
  int live = 0;
  {
    ca::Runtime rt({ca::dram(1 << 20)}, std::make_unique<StatefulPolicy>(live));
    auto a = rt.array<int>(100);
    auto b = rt.array<int>(100);
    CHECK(live == 2);
    REQUIRE(a.object().policy_state<CountedState>() != nullptr);
    CHECK(a.object().policy_state<CountedState>()->id == a.id());
    a.retire();
    CHECK(live == 1);  // at once, with the object
    // Replacing the state frees the old one.
    b.object().set_policy_state(std::make_unique<CountedState>(live));
    CHECK(live == 1);
  }
  CHECK(live == 0);  // the runtime freed the objects still alive, and their states
}

TEST_CASE("ownership: states are freed whether the policy or the manager goes first") {
  int live = 0;
  SUBCASE("manager first") {
    StatefulPolicy policy(live);  // outlives the manager
    {
      ca::DataManager dm({ca::dram(1 << 20)});
      policy.attach(dm);
      for (int i = 0; i < 3; ++i) CHECK(policy.place(dm.create_object(4096)));
      CHECK(live == 3);
    }
    CHECK(live == 0);
  }
  SUBCASE("policy first") {
    ca::DataManager dm({ca::dram(1 << 20)});
    {
      StatefulPolicy policy(live);
      policy.attach(dm);
      for (int i = 0; i < 3; ++i) CHECK(policy.place(dm.create_object(4096)));
    }
    CHECK(live == 3);  // owned by the objects, not by the policy
    dm.check_invariants();
  }
}

TEST_CASE("pinned kernel: pins and resolves every argument, unpins on every exit") {
  ca::Runtime rt(test::two_tiers());
  auto x = rt.array<int>(1000);
  auto y = rt.array<int>(1000);
  std::array<ca::Object*, 2> objects{&x.object(), &y.object()};
  std::array<ca::Access, 2> accesses{ca::Access::read, ca::Access::write};
  std::array<std::byte*, 2> data{};
  const ca::DataManager& dm = rt.manager();
  ca::Trace& trace = rt.start_trace();
  {
    ca::PinnedKernel kernel(rt, "k", objects, accesses, data);
    CHECK(x.object().pinned());
    CHECK(y.object().pinned());
    CHECK(y.object().being_written());
    CHECK(data[0] == dm.pointer(*dm.getprimary(x.object())));
    CHECK(data[1] == dm.pointer(*dm.getprimary(y.object())));
    kernel.finish();
  }
  CHECK_FALSE(x.object().pinned());
  CHECK_FALSE(y.object().being_written());
  CHECK_THROWS_AS(
      [&] {
        ca::PinnedKernel kernel(rt, "throws", objects, accesses, data);
        throw std::runtime_error("kernel failed");
      }(),
      std::runtime_error);
  CHECK_FALSE(x.object().pinned());
  CHECK_FALSE(y.object().pinned());
  // The kernel that finished has its end in the trace; the one that threw
  // has none.
  int begins = 0;
  int ends = 0;
  for (const ca::TraceEvent& e : trace.events()) {
    begins += e.kind == ca::TraceKind::kernel_begin;
    ends += e.kind == ca::TraceKind::kernel_end;
  }
  CHECK(begins == 2);
  CHECK(ends == 1);
}

TEST_CASE("hints: retire is a hint like the others, and ends the handle") {
  ca::Runtime rt(test::two_tiers());
  auto a = rt.array<int>(100);
  a.hint(ca::Hint::archive);
  a.hint(ca::Hint::retire);
  CHECK(a.retired());
  CHECK(rt.stats().objects_destroyed == 1);
  CHECK_THROWS_AS(a.hint(ca::Hint::will_read), ca::retired_error);
  CHECK(std::string(ca::to_string(ca::Hint::retire)) == "retire");
}

TEST_CASE("first touch with retires at collect: the policy collects when every device is full") {
  using ca::policy::FirstTouch;
  ca::Runtime rt({ca::dram(64 << 10)}, std::make_unique<FirstTouch>(FirstTouch::Retire::at_collect));
  auto a = rt.array<std::byte>(40 << 10);
  a.retire();  // deferred: still holds its 40 KiB
  CHECK(rt.usage()[0].bytes_used >= 40 << 10);
  CHECK(rt.stats().policy.deferred_retires == 1);
  auto b = rt.array<std::byte>(40 << 10);  // fits only once a is collected
  const ca::Stats stats = rt.stats();
  CHECK(stats.policy.collections == 1);
  CHECK(stats.policy.collected == 1);
  CHECK(stats.objects_destroyed == 1);
  // Nothing deferred any more: a full device is out of memory.
  CHECK_THROWS_AS((void)rt.array<std::byte>(40 << 10), ca::out_of_memory);
}
