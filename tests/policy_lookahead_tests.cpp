// The A modes' lookahead on a recorded program (policy/cachedarrays_policy):
// an object the window needs is copied ahead by the mover even when it is
// larger than the byte budget, and dirty objects used after the window
// start their write-backs before anything needs their room, so that making
// room later copies nothing on the compute thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t kib = 1024;

// A CA:LMA runtime over 1 MiB of fast memory, looking 4 kernels ahead with
// a budget of a quarter of it (256 KiB).
std::unique_ptr<ca::Runtime> lookahead_runtime() {
  ca::policy::Lookahead lookahead;
  lookahead.kernels = 4;
  lookahead.fast_fraction = 0.25;
  return std::make_unique<ca::Runtime>(
      test::two_tiers(1 << 20, 8 << 20),
      std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LMA, lookahead));
}

ca::DeviceId device_of(ca::Runtime& rt, const ca::CachedArray<std::byte>& a) {
  auto guard = rt.lock();
  return rt.manager().device(*rt.manager().getprimary(a.object()));
}

bool all_equal(const ca::CachedArray<std::byte>& a, std::byte value) {
  const auto r = a.read();
  return std::all_of(r.begin(), r.end(), [&](std::byte b) { return b == value; });
}

void read_kernel(ca::Runtime& rt, const ca::CachedArray<std::byte>& a) {
  rt.kernel(ca::reads(a), [](std::span<const std::byte>) {});
}

}  // namespace

TEST_CASE("lookahead: an object larger than the byte budget is copied ahead alone") {
  auto rt = lookahead_runtime();
  auto small = rt->array<std::byte>(4 * kib);
  auto big = rt->array<std::byte>(400 * kib);  // more than the 256 KiB budget
  { auto w = big.write(); std::fill(w.begin(), w.end(), std::byte{7}); }
  {
    // Fill fast memory until the big array is evicted to the slow tier;
    // the fillers die at the end of the scope, leaving fast memory free.
    std::vector<ca::CachedArray<std::byte>> fillers;
    for (int i = 0; i < 3; ++i) {
      fillers.push_back(rt->array<std::byte>(300 * kib));
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
  CHECK(s.async.bytes >= 400 * kib);
  CHECK(all_equal(big, std::byte{7}));
}

TEST_CASE("lookahead: dirty objects used after the window start their write-backs before room is needed") {
  auto rt = lookahead_runtime();
  auto small = rt->array<std::byte>(4 * kib);
  std::vector<ca::CachedArray<std::byte>> far;
  for (int i = 0; i < 3; ++i) far.push_back(rt->array<std::byte>(300 * kib));  // 900 KiB of 1 MiB
  const auto iteration = [&] {
    rt->begin_iteration();
    for (auto& a : far) rt->kernel(ca::writes(a), [](std::span<std::byte> d) { std::fill(d.begin(), d.end(), std::byte{3}); });
    for (int k = 0; k < 8; ++k) read_kernel(*rt, small);
    for (auto& a : far) read_kernel(*rt, a);
  };
  rt->record_program();
  iteration();  // recorded
  const ca::Stats before = rt->stats();
  iteration();  // with the program: 124 KiB free, below the 256 KiB reserve
  {
    auto guard = rt->lock();
    rt->manager().finish_copies();  // the mover's outcomes are counted once applied
  }
  const ca::Stats s = rt->stats().since(before);
  CAPTURE(s.async.copies);
  CAPTURE(s.async.cancelled);
  CAPTURE(s.policy.writeback_bytes);
  // Nothing had to be evicted (everything fits), yet a far dirty object was
  // written back in the background, behind no eviction.
  CHECK(s.policy.evictions == 0);
  CHECK(s.policy.writebacks >= 1);
  CHECK(s.async.bytes >= 300 * kib);
  for (auto& a : far) CHECK(all_equal(a, std::byte{3}));
}
