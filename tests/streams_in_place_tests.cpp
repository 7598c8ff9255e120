// Streams served in place (policy/cachedarrays_policy, docs/design.md
// "Streams served in place"): reuse distances are exact LRU stack distances
// in bytes, and the modes without lookahead leave an object whose last two
// reuses passed the fast tier where it lies instead of copying it in, while
// an object with a short reuse still moves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/detail/reuse_distance.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::policy::detail::ReuseDistance;

namespace {

using test::all_equal, test::device_of, test::KiB;

// The distinct bytes of other objects touched since `object`'s last touch,
// by walking the history: what ReuseDistance must compute.
std::uint64_t brute_force_distance(const std::vector<int>& history, const std::map<int, std::uint64_t>& bytes,
                                   const std::map<int, bool>& alive, int object) {
  const auto last = std::find(history.rbegin(), history.rend(), object);
  if (last == history.rend()) return ReuseDistance::never;
  std::vector<int> seen;
  for (auto it = history.rbegin(); it != last; ++it) {
    if (alive.at(*it) && std::find(seen.begin(), seen.end(), *it) == seen.end()) seen.push_back(*it);
  }
  std::uint64_t total = 0;
  for (int o : seen) total += bytes.at(o);
  return total;
}

std::unique_ptr<ca::Runtime> runtime(ca::policy::Mode mode) {
  return std::make_unique<ca::Runtime>(test::two_tiers(1 << 20, 16 << 20),
                                       std::make_unique<ca::policy::CachedArraysPolicy>(mode));
}

void write_kernel(ca::Runtime& rt, ca::CachedArray<std::byte>& a, std::byte value) {
  rt.kernel(ca::writes(a), [value](std::span<std::byte> d) { std::fill(d.begin(), d.end(), value); });
}

}  // namespace

TEST_CASE("reuse distance: the distinct bytes touched since the last touch, through forgets and renumbering") {
  // 40 objects of random sizes, 4000 touches (the 1024 times are
  // renumbered several times over), some objects forgotten and made again.
  std::mt19937 random(7);
  ReuseDistance clock;
  std::vector<ReuseDistance::Stamp> stamps(40);
  std::map<int, std::uint64_t> bytes;
  std::map<int, bool> alive;
  for (int o = 0; o < 40; ++o) {
    bytes[o] = 64 + random() % 4096;
    alive[o] = true;
  }
  std::vector<int> history;
  int checked = 0;
  for (int step = 0; step < 4000; ++step) {
    const int o = static_cast<int>(random() % 40);
    if (random() % 50 == 0) {
      clock.forget(stamps[o]);
      alive[o] = false;
      history.erase(std::remove(history.begin(), history.end(), o), history.end());
      continue;
    }
    alive[o] = true;
    const std::uint64_t expected = brute_force_distance(history, bytes, alive, o);
    const std::uint64_t got = clock.touch(stamps[o], bytes[o]);
    if (got != expected) {
      FAIL("step " << step << ", object " << o << ": distance " << got << ", expected " << expected);
    }
    ++checked;
    history.push_back(o);
  }
  CHECK(checked > 3800);
}

TEST_CASE("reuse distance: a first touch has none, and an object touched twice in a row has zero") {
  ReuseDistance clock;
  ReuseDistance::Stamp a;
  ReuseDistance::Stamp b;
  CHECK(clock.touch(a, 100) == ReuseDistance::never);
  CHECK(clock.touch(a, 100) == 0);
  CHECK(clock.touch(b, 30) == ReuseDistance::never);
  CHECK(clock.touch(b, 30) == 0);
  CHECK(clock.touch(a, 100) == 30);
  CHECK(clock.touch(a, 100) == 0);
  clock.forget(b);
  CHECK(clock.touch(b, 30) == ReuseDistance::never);
}

namespace {

// 12 arrays of 200 KiB (2.4x the 1 MiB fast tier) written one after the
// other, sweep after sweep: each one's reuses pass the fast tier.
struct Stream {
  ca::Runtime& rt;
  std::vector<ca::CachedArray<std::byte>> blocks;
  explicit Stream(ca::Runtime& runtime) : rt(runtime) {
    for (int i = 0; i < 12; ++i) blocks.push_back(rt.array<std::byte>(200 * KiB));
  }
  void sweep(std::byte value) {
    for (auto& b : blocks) write_kernel(rt, b, value);
  }
};

}  // namespace

TEST_CASE("streams in place: ca-lm writes a stream where it lies once two of its reuses passed the fast tier") {
  auto rt = runtime(ca::policy::mode::LM);
  Stream stream(*rt);
  stream.sweep(std::byte{1});  // first touches: moved as before
  stream.sweep(std::byte{2});  // one long reuse each: still moved
  const ca::Stats before = rt->stats();
  stream.sweep(std::byte{3});
  stream.sweep(std::byte{4});
  const ca::Stats s = rt->stats().since(before);
  CAPTURE(s.policy.prefetches);
  CAPTURE(s.policy.evictions);
  // Every write of the last two sweeps found its block where the second
  // sweep left it: in the slow tier, served there, nothing copied.
  CHECK(s.policy.served_in_place > 0);
  CHECK(s.policy.prefetches == 0);
  CHECK(s.policy.evictions == 0);
  CHECK(s.total_bytes_copied() == 0);
  for (auto& b : stream.blocks) CHECK(all_equal(b, std::byte{4}));
}

TEST_CASE("streams in place: an array reused within the fast tier still moves in, beside a stream") {
  auto rt = runtime(ca::policy::mode::LM);
  Stream stream(*rt);
  auto hot = rt->array<std::byte>(100 * KiB);
  const auto sweep_with_hot = [&](std::byte value) {
    for (auto& b : stream.blocks) {
      write_kernel(*rt, b, value);
      write_kernel(*rt, hot, value);  // reused after 200 KiB: within the tier
    }
  };
  for (int v = 1; v <= 4; ++v) sweep_with_hot(std::byte(v));
  CHECK(rt->stats().policy.served_in_place > 0);
  {
    // A new array of nearly the whole tier pushes the hot one out ...
    auto big = rt->array<std::byte>(900 * KiB);
    REQUIRE(device_of(*rt, hot) == 1);
    big.retire();
  }
  // ... and its next write, a short reuse after short ones, brings it back.
  const ca::Stats before = rt->stats();
  sweep_with_hot(std::byte{5});
  const ca::Stats s = rt->stats().since(before);
  CHECK(device_of(*rt, hot) == 0);
  CHECK(s.policy.prefetches == 1);
  CHECK(s.policy.served_in_place == stream.blocks.size());
  CHECK(all_equal(hot, std::byte{5}));
  for (auto& b : stream.blocks) CHECK(all_equal(b, std::byte{5}));
}

TEST_CASE("streams in place: the lookahead modes and the hardware cache model move every stream as before") {
  for (const ca::policy::Mode mode : {ca::policy::mode::LMA, ca::policy::mode::hw_cache}) {
    CAPTURE(mode.name());
    auto rt = runtime(mode);
    Stream stream(*rt);
    for (int v = 1; v <= 4; ++v) stream.sweep(std::byte(v));
    const ca::Stats s = rt->stats();
    CHECK(s.policy.served_in_place == 0);
    CHECK(s.policy.evictions > 0);
    for (auto& b : stream.blocks) CHECK(all_equal(b, std::byte{4}));
  }
}
