// The user's view (docs/design.md): Runtime, CachedArray<T>, scoped accesses,
// kernel(), hints forwarded to the policy, retire and stats.
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// Records every hint so the tests can check what the runtime emitted.
class HintRecordingPolicy final : public ca::policy::Policy {
 public:
  explicit HintRecordingPolicy(std::vector<std::string>& log) : log_(log) {}
  std::string name() const override { return "recording"; }
  bool place(ca::Object& o) override {
    log_.push_back("place " + std::to_string(o.id()));
    return first_touch_place(o);
  }
  void will_use(ca::Object& o) override { log_.push_back("will_use " + std::to_string(o.id())); }
  void will_read(ca::Object& o) override {
    CHECK(!o.pinned());  // hinted before it is pinned
    log_.push_back("will_read " + std::to_string(o.id()));
  }
  void will_write(ca::Object& o) override { log_.push_back("will_write " + std::to_string(o.id())); }
  void archive(ca::Object& o) override { log_.push_back("archive " + std::to_string(o.id())); }
  void retire(ca::Object& o) override {
    log_.push_back("retire " + std::to_string(o.id()));
    manager().destroy(o);
  }
  void collect() override { log_.push_back("collect"); }

 private:
  bool first_touch_place(ca::Object& o) {
    for (ca::DeviceId d = 0; d < manager().device_count(); ++d) {
      if (ca::Region* r = manager().allocate(d, o.bytes())) {
        manager().setprimary(o, *r);
        return true;
      }
    }
    return false;
  }
  std::vector<std::string>& log_;
};

}  // namespace

TEST_CASE("runtime: arrays are placed fast first, then slow, and keep their contents") {
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20));
  CHECK(rt.policy_name() == "first-touch");
  auto a = rt.array<double>(100'000);  // 800,000 B: fast
  auto b = rt.array<double>(100'000);  // does not fit in the rest: slow
  const ca::DataManager& dm = rt.manager();
  CHECK(dm.device(*dm.getprimary(a.object())) == 0);
  CHECK(dm.device(*dm.getprimary(b.object())) == 1);
  {
    auto w = b.write();
    std::iota(w.begin(), w.end(), 0.0);
  }
  auto r = b.read();
  CHECK(r.size() == 100'000);
  CHECK(r[99'999] == 99'999.0);
  CHECK(a.bytes() == 800'000);
}

TEST_CASE("runtime: scoped accesses pin, mark dirty on write, and unpin at scope end") {
  ca::Runtime rt(test::two_tiers());
  auto a = rt.array<int>(64);
  ca::Object& o = a.object();
  CHECK(!o.pinned());
  {
    auto r1 = a.read();
    auto r2 = a.read();
    CHECK(o.pinned());
    CHECK(!o.being_written());
  }
  CHECK(!o.pinned());
  rt.manager().setdirty(*rt.manager().getprimary(o), false);
  {
    auto w = a.write();
    CHECK(o.being_written());
    w[0] = 1;
  }
  CHECK(!o.pinned());
  CHECK(rt.manager().isdirty(*rt.manager().getprimary(o)));
  // A moved access unpins once.
  {
    auto r = a.read();
    auto moved = std::move(r);
    CHECK(o.pinned());
  }
  CHECK(!o.pinned());
}

TEST_CASE("runtime: kernel hands resolved spans in order and emits one hint per argument") {
  std::vector<std::string> log;
  ca::Runtime rt(test::two_tiers(), std::make_unique<HintRecordingPolicy>(log));
  auto x = rt.array<float>(1000);
  auto w = rt.array<float>(1000);
  auto y = rt.array<float>(1000);
  {
    auto s = x.write();
    std::fill(s.begin(), s.end(), 2.0f);
  }
  {
    auto s = w.write();
    std::fill(s.begin(), s.end(), 3.0f);
  }
  log.clear();
  rt.kernel(ca::reads(x, w), ca::writes(y),
            [&](std::span<const float> a, std::span<const float> b, std::span<float> c) {
              CHECK(x.object().pinned());
              CHECK(y.object().being_written());
              for (std::size_t i = 0; i < c.size(); ++i) c[i] = a[i] * b[i];
            });
  CHECK(log == std::vector<std::string>{"will_read " + std::to_string(x.id()), "will_read " + std::to_string(w.id()),
                                        "will_write " + std::to_string(y.id())});
  CHECK(!x.object().pinned());
  CHECK(!y.object().pinned());
  CHECK(y.read()[999] == 6.0f);
}

TEST_CASE("runtime: a kernel that throws unpins every argument") {
  ca::Runtime rt(test::two_tiers());
  auto x = rt.array<int>(10);
  auto y = rt.array<int>(10);
  CHECK_THROWS_AS(rt.kernel(ca::reads(x), ca::writes(y),
                            [](std::span<const int>, std::span<int>) { throw std::runtime_error("boom"); }),
                  std::runtime_error);
  CHECK(!x.object().pinned());
  CHECK(!y.object().pinned());
}

TEST_CASE("runtime: hints, archive, retire and collect reach the policy") {
  std::vector<std::string> log;
  ca::Runtime rt(test::two_tiers(), std::make_unique<HintRecordingPolicy>(log));
  auto a = rt.array<int>(10);
  const std::string id = std::to_string(a.id());
  a.will_use();
  a.will_read();
  a.will_write();
  a.archive();
  a.retire();
  rt.collect();
  CHECK(log == std::vector<std::string>{"place " + id, "will_use " + id, "will_read " + id, "will_write " + id,
                                        "archive " + id, "retire " + id, "collect"});
  CHECK(rt.stats().objects_destroyed == 1);
}

TEST_CASE("runtime: destroying the handle retires the object and frees its memory") {
  ca::Runtime rt(test::two_tiers());
  {
    auto a = rt.array<std::byte>(100'000);
    CHECK(rt.usage()[0].bytes_used >= 100'000);
    auto b = std::move(a);
    CHECK(a.retired());  // NOLINT(bugprone-use-after-move): checking the moved-from state is the point
    CHECK(!b.retired());
    ca::CachedArray<std::byte> c;
    c = std::move(b);
  }
  CHECK(rt.usage()[0].bytes_used == 0);
  CHECK(rt.stats().objects_created == 1);
  CHECK(rt.stats().objects_destroyed == 1);
}

TEST_CASE("runtime: stats print through fmt") {
  ca::Runtime rt(test::two_tiers());
  auto a = rt.array<int>(1000);
  const std::string text = fmt::format("{}", rt.stats());
  CHECK(text.find("fast") != std::string::npos);
  CHECK(text.find("slow") != std::string::npos);
  CHECK(text.find("objects: 1 created") != std::string::npos);
}

TEST_CASE("runtime: stats count every taking of the lock and time one in lock_timing_period") {
  ca::Runtime rt(test::two_tiers());
  const ca::Stats before = rt.stats();
  constexpr std::uint64_t takings = 10 * ca::lock_timing_period;
  for (std::uint64_t i = 0; i < takings; ++i) {
    auto guard = rt.lock();
  }
  const ca::Stats taken = rt.stats().since(before);
  CHECK(taken.lock.acquisitions == takings);
  CHECK(taken.lock.timed == 10);
  CHECK(taken.lock.mean_held_ns() > 0);
  // The manager's own counters know nothing of the runtime's lock.
  {
    auto guard = rt.lock();
    CHECK(rt.manager().stats().lock.acquisitions == 0);
  }
  const std::string text = fmt::format("{}", rt.stats());
  CHECK(text.find("runtime lock: taken " + std::to_string(before.lock.acquisitions + takings + 1) + " times") !=
        std::string::npos);
}
