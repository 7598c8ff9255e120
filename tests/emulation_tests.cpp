// The emulated slow tier's model: the arithmetic of charged time (not wall
// clocks), and virtual devices that store nothing.
#include <doctest/doctest.h>

#include <cmath>

#include "test_support.hpp"

namespace ca = cachedarrays;
namespace em = cachedarrays::emulation;

namespace {

ca::EmulationProfile profile(double read, double write, double latency, double dram_read, double dram_write) {
  ca::EmulationProfile p;
  p.name = "test";
  p.read_gbps = read;
  p.write_gbps = write;
  p.latency_ns = latency;
  p.dram_read_gbps = dram_read;
  p.dram_write_gbps = dram_write;
  return p;
}

}  // namespace

TEST_CASE("emulation: read, write and copy time follow bytes / bandwidth + latency") {
  const auto p = profile(10.0, 2.0, 300.0, 30.0, 12.0);  // GB/s == bytes/ns
  CHECK(em::read_ns(p, 1'000'000) == doctest::Approx(300.0 + 100'000.0));
  CHECK(em::write_ns(p, 1'000'000) == doctest::Approx(300.0 + 500'000.0));
  // A copy is as slow as its slower side; no emulated side costs nothing.
  CHECK(em::copy_ns(p, std::nullopt, 1'000'000) == doctest::Approx(100'300.0));
  CHECK(em::copy_ns(std::nullopt, p, 1'000'000) == doctest::Approx(500'300.0));
  CHECK(em::copy_ns(p, p, 1'000'000) == doctest::Approx(500'300.0));
  CHECK(em::copy_ns(std::nullopt, std::nullopt, 1'000'000) == 0.0);
}

TEST_CASE("emulation: kernels are charged only the extra time over DRAM") {
  const auto p = profile(10.0, 2.0, 300.0, 30.0, 12.0);
  const std::uint64_t b = 6'000'000;
  CHECK(em::kernel_extra_ns(p, b, ca::Access::read) == doctest::Approx(6e6 / 10.0 - 6e6 / 30.0));
  CHECK(em::kernel_extra_ns(p, b, ca::Access::write) == doctest::Approx(6e6 / 2.0 - 6e6 / 12.0));
  // A device faster than the reference is never charged negative time.
  CHECK(em::kernel_extra_ns(profile(50.0, 50.0, 0, 30.0, 12.0), b, ca::Access::read) == 0.0);
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
  CHECK_THROWS_AS((void)em::profile("hbm"), ca::invalid_argument);
  CHECK(em::describe(o).find("emulated") != std::string::npos);
}

TEST_CASE("emulation: accesses are counted per device and charged through the stats") {
  auto slow = ca::dax_file({}, 4 << 20, "slow");
  slow.emulation = profile(10.0, 2.0, 0.0, 30.0, 12.0);
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
  ca::Runtime rt({ca::virtual_device(std::uint64_t{1} << 40, "fast"), ca::virtual_device(std::uint64_t{1} << 41, "slow")},
                 ca::policy::Registry::builtin().make("ca-lm"));
  CHECK(rt.manager().is_virtual(0));
  CHECK(rt.manager().describe(0).find("no memory") != std::string::npos);
  // 3 TiB of arrays on a machine with 24 GiB: nothing is touched.
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (int i = 0; i < 3; ++i) arrays.push_back(rt.array<std::byte>(std::uint64_t{700} << 30));
  rt.kernel(ca::reads(arrays[0]), ca::writes(arrays[1]), [](std::span<const std::byte>, std::span<std::byte>) {});
  const ca::Stats s = rt.stats();
  CHECK(s.policy.evictions >= 1);
  CHECK(s.bytes_copied[0][1] >= std::uint64_t{700} << 30);
  rt.manager().check_invariants(true);
  CHECK_THROWS_AS(ca::Runtime({ca::virtual_device(0)}), ca::invalid_argument);
}
