// Each policy mode's defining behaviour (paper IV, "We investigate several
// different optimizations in the policy"), asserted through the stats.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

using test::fast_device, test::slow_device, test::KiB;

ca::Runtime make_policy_runtime(const std::string& policy, std::uint64_t fast_bytes = 256 * KiB) {
  return ca::Runtime({ca::dram(fast_bytes, "fast"), ca::dax_file({}, 4096 * KiB, "slow")},
                     ca::policy::Registry::builtin().make(policy));
}

ca::DeviceId where(const ca::CachedArray<std::byte>& a) {
  const ca::DataManager& dm = a.runtime().manager();
  return dm.device(*dm.getprimary(a.object()));
}

void write_pattern(ca::CachedArray<std::byte>& a, std::uint64_t seed) {
  auto w = a.write();
  test::fill(w.data(), w.size(), seed);
}

bool reads_pattern(const ca::CachedArray<std::byte>& a, std::uint64_t seed) {
  auto r = a.read();
  return test::holds(r.data(), r.size(), seed);
}

}  // namespace

TEST_CASE("mode CA:∅ creates in slow memory and copies in before the first write") {
  auto rt = make_policy_runtime("ca");
  auto a = rt.array<std::byte>(64 * KiB);
  CHECK(where(a) == slow_device);
  CHECK(rt.stats().bytes_copied[slow_device][fast_device] == 0);
  write_pattern(a, 1);
  CHECK(where(a) == fast_device);
  // The compulsory copy a hardware cache would make on the first touch.
  CHECK(rt.stats().bytes_copied[slow_device][fast_device] == 64 * KiB);
  CHECK(rt.stats().policy.prefetches == 1);
  CHECK(reads_pattern(a, 1));
}

TEST_CASE("mode L creates in fast memory with no copy") {
  for (const char* name : {"ca-l", "ca-lm", "ca-lmp"}) {
    CAPTURE(name);
    auto rt = make_policy_runtime(name);
    auto a = rt.array<std::byte>(64 * KiB);
    CHECK(where(a) == fast_device);
    write_pattern(a, 2);
    CHECK(rt.stats().total_bytes_copied() == 0);
  }
}

TEST_CASE("mode L makes room for a new object by evicting the least recently used") {
  auto rt = make_policy_runtime("ca-lm", 256 * KiB);
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 4; ++i) {
    arrays.push_back(rt.array<std::byte>(64 * KiB));
    write_pattern(arrays.back(), 10 + i);
  }
  // Use 0, 2, 3 again: 1 is now the least recently used.
  for (int i : {0, 2, 3}) (void)reads_pattern(arrays[i], 10 + i);
  auto newcomer = rt.array<std::byte>(64 * KiB);
  CHECK(where(newcomer) == fast_device);
  CHECK(where(arrays[1]) == slow_device);
  for (int i : {0, 2, 3}) CHECK(where(arrays[i]) == fast_device);
  CHECK(rt.stats().policy.evictions == 1);
  CHECK(rt.stats().policy.writebacks == 1);  // it was dirty
  for (int i = 0; i < 4; ++i) CHECK(reads_pattern(arrays[i], 10 + i));
}

TEST_CASE("archived objects are evicted before less recently used ones") {
  auto rt = make_policy_runtime("ca-lm", 256 * KiB);
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 4; ++i) {
    arrays.push_back(rt.array<std::byte>(64 * KiB));
    write_pattern(arrays.back(), i);
  }
  arrays[3].archive();  // the most recently used, but archived
  auto newcomer = rt.array<std::byte>(64 * KiB);
  CHECK(where(arrays[3]) == slow_device);
  CHECK(where(arrays[0]) == fast_device);
  CHECK(reads_pattern(arrays[3], 3));
}

TEST_CASE("mode M frees at retire; without M the object waits for collect()") {
  {
    auto rt = make_policy_runtime("ca-lm");
    auto a = rt.array<std::byte>(64 * KiB);
    a.retire();
    CHECK(rt.stats().objects_destroyed == 1);
    CHECK(rt.usage()[fast_device].bytes_used == 0);
    CHECK(rt.stats().policy.deferred_retires == 0);
  }
  for (const char* name : {"ca", "ca-l"}) {
    CAPTURE(name);
    auto rt = make_policy_runtime(name);
    auto a = rt.array<std::byte>(64 * KiB);
    write_pattern(a, 3);
    a.retire();
    CHECK(a.retired());
    CHECK(rt.stats().objects_destroyed == 0);
    CHECK(rt.stats().policy.deferred_retires == 1);
    CHECK(rt.usage()[fast_device].bytes_used == 64 * KiB);
    rt.collect();
    CHECK(rt.stats().objects_destroyed == 1);
    CHECK(rt.stats().policy.collected == 1);
    CHECK(rt.usage()[fast_device].bytes_used == 0);
  }
}

TEST_CASE("without M, dead dirty objects are written back when evicted; with M they are not") {
  const auto slow_writes = [](const std::string& name) {
    auto rt = make_policy_runtime(name, 256 * KiB);
    for (int round = 0; round < 8; ++round) {
      // Each round makes 128 KiB of temporaries that die at once.
      auto t1 = rt.array<std::byte>(64 * KiB);
      auto t2 = rt.array<std::byte>(64 * KiB);
      write_pattern(t1, 1);
      write_pattern(t2, 2);
      t1.retire();
      t2.retire();
    }
    rt.collect();
    return rt.stats().policy.writeback_bytes;
  };
  CHECK(slow_writes("ca-lm") == 0);
  CHECK(slow_writes("ca-l") > 0);
}

TEST_CASE("mode P prefetches on will_read; without P reads stay where the object is") {
  for (const char* name : {"ca-lm", "ca-lmp"}) {
    CAPTURE(name);
    const bool prefetching = std::string(name) == "ca-lmp";
    auto rt = make_policy_runtime(name, 128 * KiB);
    auto a = rt.array<std::byte>(64 * KiB);
    write_pattern(a, 5);
    auto b = rt.array<std::byte>(64 * KiB);
    write_pattern(b, 6);
    auto c = rt.array<std::byte>(64 * KiB);  // evicts a (least recently used)
    write_pattern(c, 7);
    REQUIRE(where(a) == slow_device);
    const auto before = rt.stats().policy.prefetches;
    CHECK(reads_pattern(a, 5));  // will_read
    CHECK(where(a) == (prefetching ? fast_device : slow_device));
    CHECK(rt.stats().policy.prefetches - before == (prefetching ? 1u : 0u));
    a.will_write();
    CHECK(where(a) == fast_device);  // writes always move in
  }
}

TEST_CASE("evicting a clean object that has a linked slow copy writes nothing to the slow tier") {
  auto rt = make_policy_runtime("ca-lmp", 128 * KiB);
  auto a = rt.array<std::byte>(64 * KiB);
  write_pattern(a, 8);
  auto b = rt.array<std::byte>(64 * KiB);
  write_pattern(b, 9);
  auto c = rt.array<std::byte>(64 * KiB);  // evicts a: dirty, written back
  write_pattern(c, 10);
  REQUIRE(where(a) == slow_device);
  CHECK(reads_pattern(a, 8));  // prefetched back, linked to its slow copy, clean
  REQUIRE(where(a) == fast_device);
  const ca::Stats before = rt.stats();
  a.archive();
  auto d = rt.array<std::byte>(64 * KiB);  // evicts the archived, clean a
  const ca::Stats delta = rt.stats().since(before);
  CHECK(where(a) == slow_device);
  CHECK(delta.policy.writebacks_elided >= 1);
  CHECK(delta.bytes_copied[fast_device][slow_device] == delta.policy.writeback_bytes);
  CHECK(reads_pattern(a, 8));
}

TEST_CASE("first-touch never moves, whatever the hints") {
  auto rt = make_policy_runtime("first-touch", 128 * KiB);
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 6; ++i) {
    arrays.push_back(rt.array<std::byte>(48 * KiB));
    write_pattern(arrays.back(), i);
  }
  for (auto& a : arrays) {
    a.will_read();
    a.will_write();
    a.archive();
    a.will_use();
  }
  CHECK(where(arrays[0]) == fast_device);
  CHECK(where(arrays[5]) == slow_device);
  CHECK(rt.stats().total_bytes_copied() == 0);
  for (int i = 0; i < 6; ++i) CHECK(reads_pattern(arrays[i], i));
}

TEST_CASE("all-fast and all-slow place every object on one tier") {
  auto f = make_policy_runtime("all-fast");
  auto s = make_policy_runtime("all-slow");
  auto a = f.array<std::byte>(1000);
  auto b = s.array<std::byte>(1000);
  CHECK(where(a) == fast_device);
  CHECK(where(b) == slow_device);
  CHECK_THROWS_AS((void)f.array<std::byte>(512 * KiB), ca::out_of_memory);  // does not spill
}

TEST_CASE("the fast heap is defragmented when free bytes suffice but no hole does") {
  auto rt = make_policy_runtime("ca-lm", 256 * KiB);
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 8; ++i) {
    arrays.push_back(rt.array<std::byte>(32 * KiB));
    write_pattern(arrays.back(), i);
  }
  for (int i : {1, 3, 5, 7}) arrays[i].retire();  // 128 KiB free in 32 KiB holes
  auto big = rt.array<std::byte>(96 * KiB);
  CHECK(where(big) == fast_device);
  CHECK(rt.stats().policy.defrags == 1);
  CHECK(rt.stats().policy.evictions == 0);
  for (int i : {0, 2, 4, 6}) CHECK(reads_pattern(arrays[i], i));
}

TEST_CASE("a pinned object is never chosen as a victim") {
  auto rt = make_policy_runtime("ca-lm", 128 * KiB);
  auto a = rt.array<std::byte>(64 * KiB);
  write_pattern(a, 1);
  auto b = rt.array<std::byte>(64 * KiB);
  write_pattern(b, 2);
  {
    auto pin = a.read();  // a is the least recently used... but pinned
    auto c = rt.array<std::byte>(64 * KiB);
    CHECK(where(a) == fast_device);
    CHECK(where(b) == slow_device);
    CHECK(where(c) == fast_device);
  }
  CHECK(reads_pattern(b, 2));
}

TEST_CASE("registry: names, descriptions and custom policies") {
  auto registry = ca::policy::Registry::builtin();
  const auto names = registry.names();
  for (const char* expected : {"all-fast", "all-slow", "ca", "ca-l", "ca-lm", "ca-lmp", "first-touch"}) {
    CHECK(registry.contains(expected));
    CHECK(!registry.description(expected).empty());
  }
  CHECK(registry.make("ca-lmp")->name() == "ca-lmp");
  CHECK(registry.make("ca-pml")->name() == "ca-lmp");  // any letter order
  registry.add("mine", "test", [] { return std::make_unique<ca::policy::FirstTouch>(); });
  CHECK(registry.make("mine")->name() == "first-touch");
}

TEST_CASE("hw-cache: created in slow memory, filled into fast on every use, blind to archive") {
  auto rt = make_policy_runtime("hw-cache", 256 * KiB);
  CHECK(rt.policy_name() == "hw-cache");
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 4; ++i) {
    arrays.push_back(rt.array<std::byte>(64 * KiB));
    CHECK(where(arrays.back()) == slow_device);  // like NVRAM behind the cache
    write_pattern(arrays.back(), i);             // write-allocate: a fill
    CHECK(where(arrays.back()) == fast_device);
  }
  CHECK(rt.stats().policy.prefetches == 4);
  arrays[3].archive();  // no effect: the least recently used is the victim
  auto fifth = rt.array<std::byte>(64 * KiB);
  write_pattern(fifth, 9);
  CHECK(where(arrays[0]) == slow_device);
  CHECK(where(arrays[3]) == fast_device);
  CHECK(rt.stats().policy.writebacks == 1);  // arrays[0] was dirty
  // A read fills too (a hardware cache has no read/write distinction).
  CHECK(reads_pattern(arrays[0], 0));
  CHECK(where(arrays[0]) == fast_device);
  CHECK(rt.stats().policy.prefetches == 6);
  // Retire frees at once.
  const auto destroyed = rt.stats().objects_destroyed;
  arrays[1].retire();
  CHECK(rt.stats().objects_destroyed == destroyed + 1);
  rt.manager().check_invariants(true);
  CHECK(ca::policy::Mode::parse("hw-cache").hardware_cache);
  CHECK(ca::policy::Mode::parse("hw-cache").name() == "hw-cache");
}

TEST_CASE("modes: the named changes set one switch each, and the named modes are the ones parse reads") {
  namespace mode = ca::policy::mode;
  using ca::policy::Mode;
  CHECK(mode::LM.with_async_lookahead() == Mode::parse("ca-lma"));
  CHECK(mode::LM.with_async_lookahead() != mode::LM);
  CHECK(mode::LMPA.with_prefetch(false) == mode::LMA);
  CHECK(mode::none.with_local_allocation().with_memory_optimisations() == mode::LM);
  CHECK(mode::LM.with_offsets(ca::plan::OffsetPlanner::best_fit) == Mode::parse("ca-lm+best-fit"));
  CHECK(mode::LM.with_offsets(ca::plan::OffsetPlanner::best_fit) != mode::LM);
  const std::pair<Mode, const char*> named[] = {
      {mode::none, "ca"},    {mode::L, "ca-l"},       {mode::LM, "ca-lm"},         {mode::LMP, "ca-lmp"},
      {mode::LMA, "ca-lma"}, {mode::LMPA, "ca-lmpa"}, {mode::hw_cache, "hw-cache"}};
  for (const auto& entry : named) {
    const Mode& m = entry.first;
    const char* name = entry.second;
    CAPTURE(name);
    CHECK(m.name() == name);
    CHECK(Mode::parse(name) == m);
  }
}
