// Pins of accesses that skip the runtime's lock, held in their threads' own
// slots (manager/pin_slots.hpp): a lock holder still sees every one of them
// before it moves or copies the array, a pin ends wherever its access ends,
// and readers see an array whole while another thread keeps moving it.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/manager/pin_slots.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

bool evict_moves(ca::Runtime& rt, ca::CachedArray<std::uint64_t>& array) {
  auto guard = rt.lock();
  return ca::policy::evict(rt.manager(), array.object(), 0, 1).moved;
}

// After the array's last access ended: no slot and no pin word holds it, it
// moves, and it still holds the words of `seed`.
void check_unpinned_and_movable(ca::Runtime& rt, ca::CachedArray<std::uint64_t>& a, std::uint64_t seed) {
  CHECK_FALSE(ca::detail::pin_slots().holds(&a.object()));
  CHECK_FALSE(a.object().pinned());
  CHECK_FALSE(a.object().being_written());
  CHECK(evict_moves(rt, a));
  auto r = a.read();
  CHECK(test::words_hold(r, seed));
}

}  // namespace

TEST_CASE("unlocked pins: a read pin in a thread's own slot keeps the array where it is") {
  test::QuarterFastArrays setting(4, 512, [](int i) { return static_cast<std::uint64_t>(i + 1); });
  ca::Runtime& rt = setting.rt;
  ca::CachedArray<std::uint64_t>& a = setting.data[0];
  {
    auto w = a.write();  // brings it into fast memory under CA:LM
    test::fill_words(w, 1);
  }

  // Another thread's read pins in its slot and hands its open access over.
  CHECK_FALSE(a.object().pinned());
  std::optional<ca::ReadAccess<std::uint64_t>> handed;
  std::thread other([&] { handed.emplace(a.read()); });
  other.join();
  REQUIRE(handed.has_value());
  CHECK(ca::detail::pin_slots().holds(&a.object()));

  // Pinned by the slot alone: a lock holder sees the pin and moves nothing.
  CHECK(a.object().pinned());
  CHECK_FALSE(evict_moves(rt, a));
  CHECK(test::words_hold(handed->span(), 1));

  // The access ends on a thread other than its own: the pin goes with it,
  // and nothing is pinned twice or not at all.
  handed.reset();
  check_unpinned_and_movable(rt, a, 1);
}

TEST_CASE("unlocked pins: pins beyond a thread's slots, and across threads, all end") {
  constexpr int arrays = 12;
  test::QuarterFastArrays setting(arrays * 4, 64, [](int i) { return static_cast<std::uint64_t>(i + 1); });
  ca::Runtime& rt = setting.rt;
  // Twelve arrays in fast memory.
  std::vector<ca::CachedArray<std::uint64_t>*> shared;
  for (int i = 0; i < arrays; ++i) {
    ca::CachedArray<std::uint64_t>& a = setting.data[static_cast<std::size_t>(i)];
    { auto w = a.write(); }  // brings it into fast memory under CA:LM
    shared.push_back(&a);
  }
  // One thread holds a read of each at once: more than its slots, so the
  // rest pin in the arrays' pin words. A second thread holds reads of them
  // too, and hands them over to end here.
  std::vector<ca::ReadAccess<std::uint64_t>> open;
  for (auto* a : shared) open.push_back(a->read());
  std::vector<ca::ReadAccess<std::uint64_t>> handed;
  std::thread other([&] {
    for (auto* a : shared) handed.push_back(a->read());
  });
  other.join();
  for (auto* a : shared) CHECK(a->object().pinned());
  open.clear();
  for (auto* a : shared) CHECK(a->object().pinned());
  handed.clear();
  for (std::size_t i = 0; i < shared.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(shared[i]->object().pinned());
    CHECK_FALSE(ca::detail::pin_slots().holds(&shared[i]->object()));
  }
  // Nothing left pinned: every array can be moved out.
  for (auto* a : shared) CHECK(evict_moves(rt, *a));
}

TEST_CASE("unlocked pins: a write pin in a thread's own slot keeps copies and moves off the array") {
  test::QuarterFastArrays setting(4, 512, [](int i) { return static_cast<std::uint64_t>(i + 1); });
  ca::Runtime& rt = setting.rt;
  ca::CachedArray<std::uint64_t>& a = setting.data[0];
  {
    auto w = a.write();  // brings it into fast memory under CA:LM, dirty
    test::fill_words(w, 7);
  }
  // A write on another thread, handed over open: it skipped the lock, so
  // its pin is in that thread's slot, marked as a write.
  std::optional<ca::WriteAccess<std::uint64_t>> handed;
  std::thread other([&] { handed.emplace(a.write()); });
  other.join();
  REQUIRE(handed.has_value());
  REQUIRE(ca::detail::pin_slots().holds_write(&a.object()));
  CHECK(a.object().pinned());
  CHECK(a.object().being_written());
  CHECK_FALSE(evict_moves(rt, a));
  test::fill_words(*handed, 9);

  // Ended here: the slot is empty, and the array moves with the last write.
  handed.reset();
  check_unpinned_and_movable(rt, a, 9);
}

TEST_CASE("unlocked pins: a read pin in a slot is not taken for a write pin, nor another array's pin") {
  test::QuarterFastArrays setting(4, 512, [](int i) { return static_cast<std::uint64_t>(i + 1); });
  ca::CachedArray<std::uint64_t>& a = setting.data[0];
  ca::CachedArray<std::uint64_t>& b = setting.data[1];
  { auto w = a.write(); }  // the one array fast memory holds
  auto r = a.read();
  REQUIRE(ca::detail::pin_slots().holds(&a.object()));
  CHECK(a.object().pinned());
  CHECK_FALSE(a.object().being_written());
  CHECK_FALSE(ca::detail::pin_slots().holds_write(&a.object()));
  CHECK_FALSE(b.object().pinned());
  CHECK_FALSE(ca::detail::pin_slots().holds(&b.object()));
}

TEST_CASE("unlocked pins: readers on several threads see an array whole while another thread moves it") {
  // Two arrays that every reader reads, in a fast tier of a quarter of the
  // arrays, beside a thread that keeps archiving and evicting them.
  constexpr int arrays = 8;
  test::QuarterFastArrays setting(arrays, 2048, [](int i) { return static_cast<std::uint64_t>(i + 1); });
  ca::Runtime& rt = setting.rt;
  std::vector<ca::CachedArray<std::uint64_t>>& data = setting.data;
  std::atomic<int> bad{0};
  std::atomic<bool> reading{true};
  // An eviction that checked the pins just before a reader's pin that is
  // about to back off may meet that pin in setprimary, and is refused.
  std::atomic<int> refused{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      for (int k = 0; k < 3000; ++k) {
        const std::size_t i = static_cast<std::size_t>((k + t) % 2);
        if (k % 3 == 0) {
          rt.kernel(ca::reads(data[i]), [&](std::span<const std::uint64_t> r) {
            if (!test::words_hold(r, i + 1)) bad.fetch_add(1);
          });
        } else {
          auto r = data[i].read();
          if (!test::words_hold(r, i + 1)) bad.fetch_add(1);
        }
      }
    });
  }
  std::thread moving([&] {
    std::uint64_t k = 0;
    while (reading.load()) {
      const std::size_t i = k % 2;
      data[i].archive();
      try {
        auto guard = rt.lock();
        (void)ca::policy::evict(rt.manager(), data[i].object(), 0, 1);
      } catch (const ca::pinned_error&) {
        refused.fetch_add(1);
      }
      { auto r = data[2 + k % (arrays - 2)].read(); }  // brings another array in
      ++k;
    }
  });
  for (auto& th : readers) th.join();
  reading.store(false);
  moving.join();
  CHECK(bad.load() == 0);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK_FALSE(data[i].object().pinned());
    CHECK_FALSE(ca::detail::pin_slots().holds(&data[i].object()));
  }
  auto guard = rt.lock();
  rt.manager().check_invariants(/*verify_contents=*/true);
  CHECK(rt.manager().stats().devices[0].evictions > 0);
}

namespace {

// Places every object on the fast device and throws, while asked, from its
// answer to how a read's hint may be delivered: the runtime asks it after
// the argument is pinned.
class ThrowingDeliveryPolicy final : public test::FastDevicePolicy {
 public:
  bool throwing = false;
  [[nodiscard]] std::string name() const override { return "test-throwing-delivery"; }
  [[nodiscard]] bool follows_kernels() const override { return false; }
  [[nodiscard]] ca::HintDelivery read_hint_delivery(const ca::Object& /*object*/) const override {
    if (throwing) throw std::runtime_error("test: read_hint_delivery failed");
    return ca::HintDelivery::under_lock;
  }
};

}  // namespace

TEST_CASE(
    "unlocked pins: locked accesses pin in the thread's slots, and a policy that throws after the pin leaves none") {
  auto owned = std::make_unique<ThrowingDeliveryPolicy>();
  ThrowingDeliveryPolicy* policy = owned.get();
  ca::Runtime rt{{ca::dram(1 << 20, "fast"), ca::dram(1 << 20, "slow")}, std::move(owned)};
  auto a = rt.array<std::uint64_t>(64);
  {
    // Under the lock (the policy answers under_lock), yet in a slot.
    auto r = a.read();
    CHECK(ca::detail::pin_slots().holds(&a.object()));
    CHECK(a.object().pinned());
  }
  CHECK_FALSE(a.object().pinned());
  policy->throwing = true;
  CHECK_THROWS_WITH_AS(rt.kernel(ca::reads(a), [](std::span<const std::uint64_t>) {}),
                       "test: read_hint_delivery failed", std::runtime_error);
  CHECK_FALSE(a.object().pinned());
  CHECK_FALSE(ca::detail::pin_slots().holds(&a.object()));
  policy->throwing = false;
  CHECK(evict_moves(rt, a));  // not pinned: its primary may move
}
