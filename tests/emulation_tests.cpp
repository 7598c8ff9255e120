// The emulated slow tier's model: the arithmetic of charged time (not wall
// clocks), and virtual devices that store nothing. Bad profiles are in
// negative_tests.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "test_support.hpp"

namespace ca = cachedarrays;
namespace em = cachedarrays::emulation;

using test::emulation_profile;

TEST_CASE("emulation: read, write and copy time follow bytes / bandwidth + latency") {
  const auto p = emulation_profile(10.0, 2.0, 300.0, 30.0, 12.0);  // GB/s == bytes/ns
  CHECK(em::read_ns(p, 1'000'000) == doctest::Approx(300.0 + 100'000.0));
  CHECK(em::write_ns(p, 1'000'000) == doctest::Approx(300.0 + 500'000.0));
  // A copy is as slow as its slower side; no emulated side costs nothing.
  CHECK(em::copy_ns(p, std::nullopt, 1'000'000) == doctest::Approx(100'300.0));
  CHECK(em::copy_ns(std::nullopt, p, 1'000'000) == doctest::Approx(500'300.0));
  CHECK(em::copy_ns(p, p, 1'000'000) == doctest::Approx(500'300.0));
  CHECK(em::copy_ns(std::nullopt, std::nullopt, 1'000'000) == 0.0);
}

TEST_CASE("emulation: kernels are charged only the extra time over DRAM") {
  const auto p = emulation_profile(10.0, 2.0, 300.0, 30.0, 12.0);
  const std::uint64_t b = 6'000'000;
  CHECK(em::kernel_extra_ns(p, b, ca::Access::read) == doctest::Approx(6e6 / 10.0 - 6e6 / 30.0));
  CHECK(em::kernel_extra_ns(p, b, ca::Access::write) == doctest::Approx(6e6 / 2.0 - 6e6 / 12.0));
  // A device faster than the reference is never charged negative time.
  CHECK(em::kernel_extra_ns(emulation_profile(50.0, 50.0, 0, 30.0, 12.0), b, ca::Access::read) == 0.0);
}

TEST_CASE("emulation: built-in profiles keep the published ratios against this machine's DRAM") {
  const em::DramBandwidth dram{120.0, 60.0};
  const auto o = em::optane(dram);
  CHECK(o.read_gbps == doctest::Approx(120.0 * 39.4 / 118.0));
  CHECK(o.write_gbps == doctest::Approx(60.0 * 13.9 / 83.0));
  CHECK(o.dram_read_gbps == 120.0);
  CHECK(o.latency_ns == 305.0);
  // Reads about 3x, writes about 6x slower than DRAM.
  CHECK(dram.read_gbps / o.read_gbps == doctest::Approx(3.0).epsilon(0.02));
  CHECK(dram.write_gbps / o.write_gbps == doctest::Approx(6.0).epsilon(0.03));
  const auto c = em::cxl(dram);
  CHECK(c.read_gbps == doctest::Approx(60.0));
  CHECK(c.latency_ns == 180.0);
  CHECK(!em::profile("none").has_value());
  CHECK(em::describe(o).find("emulated") != std::string::npos);
}

TEST_CASE("emulation: accesses are counted per device and charged through the stats") {
  auto slow = ca::dax_file({}, 4 << 20, "slow");
  slow.emulation = emulation_profile(10.0, 2.0, 0.0, 30.0, 12.0);
  ca::Runtime rt({ca::dram(256 << 10, "fast"), slow});
  auto a = rt.array<std::byte>(100'000);  // fast
  auto b = rt.array<std::byte>(600'000);  // does not fit: slow, emulated
  { auto r = a.read(); }
  { auto w = b.write(); }
  const ca::Stats s = rt.stats();
  CHECK(s.kernel_bytes_read[0] == 100'000);
  CHECK(s.kernel_bytes_written[1] == 600'000);
  CHECK(s.accesses == 2);
  const double expected = em::kernel_extra_ns(*slow.emulation, 600'000, ca::Access::write);
  CHECK(static_cast<double>(s.emulated_kernel_ns) == doctest::Approx(expected).epsilon(0.001));
  CHECK(rt.manager().describe(1).find("emulated") != std::string::npos);
}

TEST_CASE("virtual devices: allocation and policies work, copies are counted but never made") {
  ca::Runtime rt(
      {ca::virtual_device(std::uint64_t{1} << 40, "fast"), ca::virtual_device(std::uint64_t{1} << 41, "slow")},
      ca::policy::Registry::builtin().make("ca-lm"));
  CHECK(rt.manager().is_virtual(0));
  CHECK(rt.manager().describe(0).find("no memory") != std::string::npos);
  // Terabytes of arrays, far more than the machine has: nothing is touched.
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 3; ++i) arrays.push_back(rt.array<std::byte>(std::uint64_t{700} << 30));
  rt.kernel(ca::reads(arrays[0]), ca::writes(arrays[1]), [](std::span<const std::byte>, std::span<std::byte>) {});
  const ca::Stats s = rt.stats();
  CHECK(s.policy.evictions >= 1);
  CHECK(s.bytes_copied[0][1] >= std::uint64_t{700} << 30);
  rt.manager().check_invariants(true);
}

TEST_CASE("emulation: memory mode charges only the DRAM cache's misses, at the slow device's bandwidth") {
  const auto p = emulation_profile(10.0, 2.0, 300.0, 30.0, 12.0);
  ca::TwoLmCounters delta;
  delta.hits = 1000;  // free: the real access already ran at DRAM speed
  delta.clean_misses = 30;
  delta.dirty_misses = 10;
  // 40 line fills read from the device, 10 dirty victims written to it.
  CHECK(em::memory_mode_extra_ns(p, delta) == doctest::Approx(40 * 64 / 10.0 + 10 * 64 / 2.0));
  CHECK(em::memory_mode_extra_ns(p, ca::TwoLmCounters{}) == 0.0);

  const auto m = em::memory_mode(p, 1 << 20);
  CHECK(m.memory_mode_cache_bytes == 1 << 20);
  CHECK(m.name == "test 2LM");
  CHECK(em::describe(m).find("memory mode") != std::string::npos);
}

TEST_CASE("emulation: a device in memory mode streams every access through its DRAM cache model") {
  // One device, as in 2LM: everything lives "in NVRAM" behind a 4 KiB cache.
  auto nvram = ca::dax_file({}, 1 << 20, "nvram");
  nvram.emulation = em::memory_mode(emulation_profile(10.0, 2.0, 0.0, 30.0, 12.0), 4096);
  ca::Runtime rt({nvram});
  auto small = rt.array<std::byte>(2048);  // 32 lines: fits the cache
  auto big = rt.array<std::byte>(8192);    // 128 lines: twice the cache
  { auto r = small.read(); }
  CHECK(rt.stats().memory_mode.clean_misses == 32);
  { auto r = small.read(); }
  CHECK(rt.stats().memory_mode.hits == 32);  // the second pass hits
  { auto w = small.write(); }
  CHECK(rt.stats().memory_mode.hits == 64);
  const ca::Stats before = rt.stats();
  { auto r = big.read(); }
  // `big` covers lines 32..159 (it starts at offset 2048). Lines 64..95
  // map onto sets 0..31, which hold `small`'s dirty lines: 32 dirty misses.
  // The other 96 miss clean: their sets are empty or hold big's own lines.
  const ca::Stats d = rt.stats().since(before);
  CHECK(rt.manager().offset(*rt.manager().getprimary(big.object())) == 2048);
  CHECK(d.memory_mode.hits == 0);
  CHECK(d.memory_mode.dirty_misses == 32);
  CHECK(d.memory_mode.clean_misses == 96);
  CHECK(d.memory_mode.nvram_bytes_written == 32 * 64);
  const double expected = em::memory_mode_extra_ns(*nvram.emulation, d.memory_mode);
  CHECK(static_cast<double>(d.emulated_kernel_ns) == doctest::Approx(expected).epsilon(0.001));
  CHECK(rt.stats().to_string().find("2LM memory mode (emulated") != std::string::npos);
}

TEST_CASE("emulation: a fast budget becomes the largest whole-line memory-mode cache within it") {
  CHECK(ca::emulation::memory_mode_cache_within(4096) == 4096);
  CHECK(ca::emulation::memory_mode_cache_within(4100) == 4096);
  CHECK(ca::emulation::memory_mode_cache_within(127) == 64);
  CHECK(ca::emulation::memory_mode_cache_within(0) == 64);  // at least one line
  const auto p = ca::emulation::memory_mode(emulation_profile(10.0, 2.0, 0.0, 30.0, 12.0),
                                            ca::emulation::memory_mode_cache_within(1000));
  CHECK(p.memory_mode_cache_bytes == 960);
}
