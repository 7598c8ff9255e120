// The A modes' lookahead on a recorded program (policy/cachedarrays_policy):
// an object the window needs is copied ahead by the mover even when it is
// larger than the byte budget; dirty objects used after the window start
// their write-backs before the program needs their room, so that making
// room later copies nothing on the compute thread; and when the program
// never needs their room, nothing is written back and no victim is looked for.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

using test::all_equal, test::device_of, test::KiB;

// A CA:LMA runtime over 1 MiB of fast memory, looking 4 kernels ahead with
// a budget of a quarter of it (256 KiB).
std::unique_ptr<ca::Runtime> lookahead_runtime(bool bound_reserve_walks = true) {
  ca::policy::Lookahead lookahead;
  lookahead.kernels = 4;
  lookahead.fast_fraction = 0.25;
  lookahead.bound_reserve_walks = bound_reserve_walks;
  return std::make_unique<ca::Runtime>(
      test::two_tiers(1 << 20, 8 << 20),
      std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LMA, lookahead));
}

void read_kernel(ca::Runtime& rt, const ca::CachedArray<std::byte>& a) {
  rt.kernel(ca::reads(a), [](std::span<const std::byte>) {});
}

}  // namespace

TEST_CASE("lookahead: an object larger than the byte budget is copied ahead alone") {
  auto rt = lookahead_runtime();
  auto small = rt->array<std::byte>(4 * KiB);
  auto big = rt->array<std::byte>(400 * KiB);  // more than the 256 KiB budget
  {
    auto w = big.write();
    std::fill(w.begin(), w.end(), std::byte{7});
  }
  {
    // Fill fast memory until the big array is evicted to the slow tier;
    // the fillers die at the end of the scope, leaving fast memory free.
    std::vector<ca::CachedArray<std::byte>> fillers;
    for (int i = 0; i < 3; ++i) {
      fillers.push_back(rt->array<std::byte>(300 * KiB));
      auto w = fillers.back().write();
    }
  }
  REQUIRE(device_of(*rt, big) == 1);
  rt->record_program();
  // Iteration 1 is recorded, 2 binds the objects to the program, 3 looks
  // ahead from kernel 0 to the big array's use at kernel 2.
  for (int iteration = 0; iteration < 3; ++iteration) {
    rt->begin_iteration();
    read_kernel(*rt, small);
    read_kernel(*rt, small);
    read_kernel(*rt, big);
  }
  rt->collect();
  // CA:LMA reads in place (no P): only a copy made ahead brings it in.
  CHECK(device_of(*rt, big) == 0);
  const ca::Stats s = rt->stats();
  CHECK(s.async.bytes >= 400 * KiB);
  CHECK(all_equal(big, std::byte{7}));
}

namespace {

// 900 KiB of arrays written at the start of the iteration and read at its
// end, with small reads between (far beyond the 4-kernel window); with
// `temporary` bytes, an array created and retired between the small reads
// needs room the far ones hold.
struct FarIteration {
  ca::Runtime& rt;
  std::uint64_t temporary = 0;
  int small_reads = 4;                 // before the temporary, and again after it
  std::function<void()> after_kernel;  // if set, runs after every kernel
  ca::CachedArray<std::byte> small = rt.array<std::byte>(4 * KiB);
  std::vector<ca::CachedArray<std::byte>> far;

  explicit FarIteration(ca::Runtime& runtime, std::uint64_t temporary_bytes) : rt(runtime), temporary(temporary_bytes) {
    for (int i = 0; i < 3; ++i) far.push_back(rt.array<std::byte>(300 * KiB));
  }
  // `after_writes` runs once the far arrays are written, `before_temporary`
  // just before the temporary array is created.
  template <typename F, typename G>
  void run(F&& after_writes, G&& before_temporary) {
    const auto done = [&] {
      if (after_kernel) after_kernel();
    };
    rt.begin_iteration();
    for (auto& a : far) {
      rt.kernel(ca::writes(a), [](std::span<std::byte> d) { std::fill(d.begin(), d.end(), std::byte{3}); });
      done();
    }
    after_writes();
    for (int k = 0; k < small_reads; ++k, done()) read_kernel(rt, small);
    if (temporary > 0) {
      before_temporary();
      auto t = rt.array<std::byte>(temporary);
      rt.kernel(ca::writes(t), [](std::span<std::byte> d) { std::fill(d.begin(), d.end(), std::byte{5}); });
      done();
      t.retire();
    }
    for (int k = 0; k < small_reads; ++k, done()) read_kernel(rt, small);
    for (auto& a : far) {
      read_kernel(rt, a);
      done();
    }
  }
  void run() {
    run([] {}, [] {});
  }
};

void finish_copies(ca::Runtime& rt) {
  auto guard = rt.lock();
  rt.manager().finish_copies();  // the mover's outcomes are counted once applied
}

const ca::policy::CachedArraysPolicy& lookahead_policy(ca::Runtime& rt) {
  return dynamic_cast<const ca::policy::CachedArraysPolicy&>(rt.policy());
}

std::uint64_t objects_examined(ca::Runtime& rt) { return lookahead_policy(rt).objects_examined(); }

}  // namespace

TEST_CASE("lookahead: with everything in fast memory nothing is written back and no fast object is examined") {
  // 124 KiB stay free, under the 256 KiB the lookahead may fill, but the
  // program never asks for more: a write-back would be a copy for nothing,
  // and a search for victims work for nothing.
  auto rt = lookahead_runtime();
  FarIteration iteration(*rt, 0);
  rt->record_program();
  iteration.run();  // recorded
  iteration.run();  // binds the objects to the program
  finish_copies(*rt);
  const ca::Stats before = rt->stats();
  const std::uint64_t examined_before = objects_examined(*rt);
  for (int i = 0; i < 3; ++i) {
    iteration.run();
    for (auto& a : iteration.far) a.archive();  // archived, still nothing needs their room
  }
  finish_copies(*rt);
  const ca::Stats s = rt->stats().since(before);
  CAPTURE(s.policy.writeback_bytes);
  CHECK(s.total_bytes_copied() == 0);
  CHECK(s.async.copies == 0);
  CHECK(s.policy.writebacks == 0);
  CHECK(s.policy.evictions == 0);
  CHECK(objects_examined(*rt) == examined_before);
  for (auto& a : iteration.far) CHECK(all_equal(a, std::byte{3}));
}

TEST_CASE("lookahead: dirty objects used after the window start their write-backs before room is needed") {
  // A 200 KiB array created mid-iteration needs more than the 124 KiB
  // free: the farthest-used dirty array starts its write-back at once, so
  // that by the time the room is needed, leaving costs no copy.
  auto rt = lookahead_runtime();
  FarIteration iteration(*rt, 200 * KiB);
  rt->record_program();
  iteration.run();  // recorded
  iteration.run();  // binds the objects to the program
  finish_copies(*rt);
  const ca::Stats before = rt->stats();
  // Writing a far array the last iteration left on the slow tier, or whose
  // room the temporary split, may evict another: the lookahead's part
  // starts once they are written.
  ca::Stats written;
  ca::Stats at_temporary;
  iteration.run([&] { written = rt->stats(); },
                [&] {
                  finish_copies(*rt);
                  at_temporary = rt->stats().since(before);
                });
  finish_copies(*rt);
  const ca::Stats s = rt->stats().since(before);
  CAPTURE(at_temporary.policy.writebacks);
  CAPTURE(s.policy.writebacks_elided);
  CAPTURE(s.policy.writeback_bytes);
  // Written back in the background before anything was evicted ...
  CHECK(at_temporary.policy.evictions == written.since(before).policy.evictions);
  CHECK(at_temporary.policy.writebacks >= 1);
  CHECK(at_temporary.async.bytes >= 300 * KiB);
  // ... so that the eviction making room for the new array copied nothing.
  CHECK(s.policy.evictions >= 1);
  CHECK(s.policy.writebacks_elided >= 1);
  for (auto& a : iteration.far) CHECK(all_equal(a, std::byte{3}));
}

TEST_CASE("lookahead: a kernel whose clean reserve provably holds skips the walk, and decides as the walk would") {
  // Between the far arrays' writes and the temporary, 24 small reads find
  // free memory under the reserve the temporary needs, and the far arrays
  // clean or on their way: the walk at each of them would start nothing.
  // The same iterations with a walk at every kernel make the same copies
  // (each kernel waits for the mover, so that its timing decides nothing).
  struct Run {
    ca::Stats stats;
    std::uint64_t walks = 0;
    std::uint64_t skipped = 0;
    std::uint64_t examined = 0;
  };
  const auto run = [](bool bound) {
    auto rt = lookahead_runtime(bound);
    FarIteration iteration(*rt, 200 * KiB);
    iteration.small_reads = 24;
    iteration.after_kernel = [&] { finish_copies(*rt); };
    rt->record_program();
    iteration.run();  // recorded
    iteration.run();  // binds the objects to the program
    finish_copies(*rt);
    const ca::Stats before = rt->stats();
    for (int i = 0; i < 3; ++i) iteration.run();
    finish_copies(*rt);
    for (auto& a : iteration.far) CHECK(all_equal(a, std::byte{3}));
    const auto& policy = lookahead_policy(*rt);
    return Run{rt->stats().since(before), policy.reserve_walks(), policy.reserve_walks_skipped(),
               policy.objects_examined()};
  };
  const Run bounded = run(true);
  const Run walked = run(false);
  CAPTURE(bounded.walks);
  CAPTURE(bounded.skipped);
  CAPTURE(walked.walks);
  CHECK(walked.skipped == 0);
  CHECK(bounded.skipped > 0);
  CHECK(bounded.walks + bounded.skipped == walked.walks);
  CHECK(bounded.examined < walked.examined);
  CHECK(bounded.stats.policy.writebacks >= 1);
  CHECK(bounded.stats.policy.writebacks == walked.stats.policy.writebacks);
  CHECK(bounded.stats.policy.writeback_bytes == walked.stats.policy.writeback_bytes);
  CHECK(bounded.stats.policy.evictions == walked.stats.policy.evictions);
  CHECK(bounded.stats.async.copies == walked.stats.async.copies);
  CHECK(bounded.stats.total_bytes_copied() == walked.stats.total_bytes_copied());
}
