// Kernel signatures, profiles and the roofline (plan/): the signature's
// fields read back, the profile cache file's round trip and when it measures
// again, the errors of a malformed file, and the roofline's arithmetic on
// synthetic numbers. The nn side (signatures of real kernels, the profiler)
// is in nn_profiler_tests.cpp.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "cachedarrays/plan/program/profiled_time.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace plan = cachedarrays::plan;

namespace {

const plan::MachineKey here{"Test CPU", 2, "2.6.3 (test)", "optane"};

plan::KernelProfiles two_kernel_profiles(const plan::MachineKey& key = here) {
  plan::KernelProfiles p(key);
  p.set("conv s1p1 src=2x3x8x8:abcd flops=1000", {2e-3, 3e-3, 1000, 4096, 2048});
  p.set("relu src=2x3x8x8:abcd dst=2x3x8x8:abcd flops=384", {1e-4, 5e-4, 384, 1536, 1536});
  return p;
}

void write_profile_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// The message of the invalid_argument that loading `text` throws.
std::string load_error(const std::string& text) {
  const test::ScratchPath file("profiles-bad.json");
  write_profile_text(file.path, text);
  return test::invalid_argument_of([&] { (void)plan::KernelProfiles::load(file.path.string()); });
}

}  // namespace

TEST_CASE("kernel signature: kind first, arguments, FLOPs last, and each read back") {
  const std::vector<plan::SignatureArg> args{{"src", {4, 3, 32, 32}, "abcd"}, {"dst", {4, 64, 32, 32}, "aBcd16b"}};
  const std::string s = plan::make_signature("conv s1p1", args, 28311552);
  CHECK(s == "conv s1p1 src=4x3x32x32:abcd dst=4x64x32x32:aBcd16b flops=28311552");
  CHECK(plan::kernel_kind(s) == "conv");
  CHECK(plan::kernel_flops(s) == 28311552);

  SUBCASE("no FLOPs: none written, 0 read") {
    const std::string r = plan::make_signature("reorder", args, 0);
    CHECK(r == "reorder src=4x3x32x32:abcd dst=4x64x32x32:aBcd16b");
    CHECK(plan::kernel_flops(r) == 0);
    CHECK(plan::kernel_flops("read()") == 0);
    CHECK(plan::kernel_kind("read()") == "read()");
  }
  SUBCASE("a field holding a separator, an empty kind or a bad count is refused") {
    const std::vector<plan::SignatureArg> bad{{"src", {1}, "a b"}};
    CHECK_THROWS_AS((void)plan::make_signature("relu", bad, 0), ca::invalid_argument);
    CHECK_THROWS_AS((void)plan::make_signature("", args, 0), ca::invalid_argument);
    CHECK_THROWS_AS((void)plan::kernel_flops("conv flops=12x"), ca::invalid_argument);
    CHECK_THROWS_AS((void)plan::kernel_flops("conv flops="), ca::invalid_argument);
  }
}

TEST_CASE("kernel profiles: JSON round trip") {
  const plan::KernelProfiles p = two_kernel_profiles();
  CHECK(plan::KernelProfiles::from_json(p.to_json()) == p);
  const test::ScratchPath file("profiles.json");
  p.save(file.path.string());
  const plan::KernelProfiles loaded = plan::KernelProfiles::load(file.path.string());
  CHECK(loaded == p);
  REQUIRE(loaded.find("conv s1p1 src=2x3x8x8:abcd flops=1000") != nullptr);
  CHECK(loaded.find("conv s1p1 src=2x3x8x8:abcd flops=1000")->slow_seconds == 3e-3);
  CHECK(loaded.find("conv") == nullptr);
}

TEST_CASE("kernel profiles: the cache measures only when it lacks the machine or a kernel") {
  const test::ScratchPath file("profiles-cache.json");
  const std::string path = file.path.string();
  const std::vector<std::string> needed{"conv s1p1 src=2x3x8x8:abcd flops=1000",
                                        "relu src=2x3x8x8:abcd dst=2x3x8x8:abcd flops=384"};
  int measurements = 0;
  const auto measure_on = [&](const plan::MachineKey& key) {
    return [&measurements, key] {
      ++measurements;
      return two_kernel_profiles(key);
    };
  };

  const plan::KernelProfiles first = plan::load_or_measure(path, here, needed, measure_on(here));
  CHECK(measurements == 1);
  CHECK(std::filesystem::exists(file.path));
  CHECK(first == two_kernel_profiles());

  SUBCASE("same machine, every kernel there: loaded, not measured") {
    const plan::KernelProfiles again = plan::load_or_measure(path, here, needed, measure_on(here));
    CHECK(measurements == 1);
    CHECK(again == first);
  }
  SUBCASE("another machine: measured again, and the file now says so") {
    const std::vector<plan::MachineKey> others{{"Other CPU", 2, "2.6.3 (test)", "optane"},
                                               {"Test CPU", 4, "2.6.3 (test)", "optane"},
                                               {"Test CPU", 2, "3.0.0 (test)", "optane"},
                                               {"Test CPU", 2, "2.6.3 (test)", "cxl"}};
    for (const plan::MachineKey& other : others) {
      CAPTURE(other.describe());
      const int before = measurements;
      const plan::KernelProfiles p = plan::load_or_measure(path, other, needed, measure_on(other));
      CHECK(measurements == before + 1);
      CHECK(p.key() == other);
      CHECK(plan::KernelProfiles::load(path).key() == other);
    }
  }
  SUBCASE("a kernel the file lacks: measured and merged") {
    std::vector<std::string> more = needed;
    more.emplace_back("add src=2x3x8x8:abcd flops=384");
    const plan::KernelProfiles p = plan::load_or_measure(path, here, more, [&] {
      ++measurements;
      plan::KernelProfiles m(here);
      m.set("add src=2x3x8x8:abcd flops=384", {1e-5, 2e-5, 384, 3072, 1536});
      return m;
    });
    CHECK(measurements == 2);
    CHECK(p.kernels().size() == 3);
    CHECK(plan::KernelProfiles::load(path).kernels().size() == 3);
  }
  SUBCASE("a malformed file throws naming the field, and is left as it was") {
    std::string text = first.to_json();
    text.replace(text.find("\"cores\": 2"), 10, "\"cores\": \"two\"");
    write_profile_text(file.path, text);
    try {
      (void)plan::load_or_measure(path, here, needed, measure_on(here));
      FAIL("no exception");
    } catch (const ca::invalid_argument& e) {
      test::check_contains(e.what(), "machine.cores");
      test::check_contains(e.what(), path);
    }
    CHECK(measurements == 1);
    std::ifstream in(path);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(kept == text);
  }
}

TEST_CASE("kernel profiles: every malformed field is named") {
  const std::string good = two_kernel_profiles().to_json();
  const auto without = [&](const std::string& field) {
    nlohmann::json j = nlohmann::json::parse(good);
    j.erase(field);
    return j.dump();
  };
  test::check_contains(load_error("{not json"), "is not JSON");
  test::check_contains(load_error(without("format")), "format: is missing");
  test::check_contains(load_error(without("machine")), "machine: is missing");
  test::check_contains(load_error(without("kernels")), "kernels: is missing");
  nlohmann::json j = nlohmann::json::parse(good);
  j["version"] = 7;
  test::check_contains(load_error(j.dump()), "version: 7");
  j = nlohmann::json::parse(good);
  j["machine"].erase("onednn");
  test::check_contains(load_error(j.dump()), "machine.onednn: is missing");
  j = nlohmann::json::parse(good);
  j["kernels"]["relu src=2x3x8x8:abcd dst=2x3x8x8:abcd flops=384"]["fast_seconds"] = -1;
  test::check_contains(load_error(j.dump()),
                       "kernels[\"relu src=2x3x8x8:abcd dst=2x3x8x8:abcd flops=384\"].fast_seconds");
  j = nlohmann::json::parse(good);
  j["kernels"]["conv s1p1 src=2x3x8x8:abcd flops=1000"].erase("bytes_written");
  test::check_contains(load_error(j.dump()), "bytes_written: is missing");
}

TEST_CASE("roofline: the larger of compute and memory time") {
  // 1 GFLOP/s; a fast tier of 10 GB/s read, 5 GB/s write.
  const plan::Roofline roofline(1e9, {10, 5});
  const std::vector<plan::ArgTraffic> args{{1000, ca::Access::read, 10}, {1000, ca::Access::write, 5}};
  const double memory = (1000 / 10.0 + 1000 / 5.0) * 1e-9;  // 300 ns
  CHECK(plan::memory_seconds(args) == doctest::Approx(memory));

  SUBCASE("compute-bound: FLOPs over the rate") {
    CHECK(roofline.seconds("conv flops=1000", args) == doctest::Approx(1e-6));
    CHECK(roofline.compute_seconds("conv flops=1000") == doctest::Approx(1e-6));
  }
  SUBCASE("memory-bound: bytes over each argument's bandwidth") {
    CHECK(roofline.seconds("relu flops=100", args) == doctest::Approx(memory));
    CHECK(roofline.seconds("reorder", args) == doctest::Approx(memory));
  }
  SUBCASE("the bound is the max of the two, wherever the crossover") {
    for (const std::uint64_t flops : {0, 100, 299, 300, 301, 1000, 100000}) {
      CAPTURE(flops);
      const std::string s = "k flops=" + std::to_string(flops);
      const double t = roofline.seconds(s, args);
      CHECK(t == doctest::Approx(std::max(static_cast<double>(flops) * 1e-9, memory)));
      CHECK(t >= roofline.compute_seconds(s));
      CHECK(t >= plan::memory_seconds(args));
    }
  }
  SUBCASE("MemoryBound ignores the FLOPs") {
    CHECK(plan::MemoryBound().seconds("conv flops=1000000", args) == doctest::Approx(memory));
  }
  SUBCASE("bad rates and bandwidths are refused") {
    CHECK_THROWS_AS(plan::Roofline(0, {10, 5}), ca::invalid_argument);
    CHECK_THROWS_AS(plan::Roofline(1e9, {10, 0}), ca::invalid_argument);
    const std::vector<plan::ArgTraffic> nowhere{{1000, ca::Access::read, 0}};
    CHECK_THROWS_AS((void)plan::memory_seconds(nowhere), ca::invalid_argument);
  }
}

TEST_CASE("roofline: a profiled kernel takes its measured fast time plus what the placement adds") {
  plan::KernelProfiles profiles(here);
  // Measured 2 us all-fast, more than its roofline (its fixed cost).
  profiles.set("relu flops=100", {2e-6, 0, 100, 1000, 1000});
  const plan::Roofline roofline(1e9, {10, 5}, &profiles);
  const std::vector<plan::ArgTraffic> fast{{1000, ca::Access::read, 10}, {1000, ca::Access::write, 5}};
  const std::vector<plan::ArgTraffic> slow{{1000, ca::Access::read, 2}, {1000, ca::Access::write, 1}};
  CHECK(roofline.seconds("relu flops=100", fast) == doctest::Approx(2e-6));
  // The slow placement adds (1000/2 + 1000/1) - (1000/10 + 1000/5) = 1200 ns.
  CHECK(roofline.seconds("relu flops=100", slow) == doctest::Approx(2e-6 + 1.2e-6));
  // A kernel without a profile keeps its roofline.
  CHECK(roofline.seconds("relu flops=101", slow) == doctest::Approx(1.5e-6));
}

TEST_CASE("profiled time: the measured ends, and between them the share of memory time moved to the slow tier") {
  plan::KernelProfiles profiles(here);
  // Measured 2 us with both arguments fast, 8 us with both slow.
  profiles.set("conv flops=5000", {2e-6, 8e-6, 5000, 1000, 1000});
  const plan::Roofline roofline(1e9, {10, 5});
  // Fast tier 10/5 GB/s, slow tier 2/1 GB/s.
  const plan::ProfiledTime model(profiles, {10, 5}, {2, 1}, roofline);
  const plan::ArgTraffic in_fast{1000, ca::Access::read, 10}, in_slow{1000, ca::Access::read, 2};
  const plan::ArgTraffic out_fast{1000, ca::Access::write, 5}, out_slow{1000, ca::Access::write, 1};
  const auto seconds = [&](plan::ArgTraffic in, plan::ArgTraffic out) {
    const std::vector<plan::ArgTraffic> args{in, out};
    return model.seconds("conv flops=5000", args);
  };
  CHECK(seconds(in_fast, out_fast) == doctest::Approx(2e-6));
  CHECK(seconds(in_slow, out_slow) == doctest::Approx(8e-6));
  // The input moves 500 - 100 = 400 ns of the 1200 ns that all-slow adds.
  CHECK(seconds(in_slow, out_fast) == doctest::Approx(2e-6 + 6e-6 * 400 / 1200));
  // The output the other 800 ns: the two halves add up to the whole.
  CHECK(seconds(in_fast, out_slow) == doctest::Approx(2e-6 + 6e-6 * 800 / 1200));
  // Unprofiled kernels take the fallback's time: here the compute bound.
  const std::vector<plan::ArgTraffic> args{in_slow, out_slow};
  CHECK(model.seconds("conv flops=7000", args) == doctest::Approx(roofline.seconds("conv flops=7000", args)));
  // A kernel without bytes does not depend on the placement.
  CHECK(model.slow_share({}) == 0.0);
  CHECK_THROWS_AS(plan::ProfiledTime(profiles, {10, 5}, {0, 1}, roofline), ca::invalid_argument);
}

TEST_CASE("compute_rate: FLOPs over fast seconds of the compute-dense kernels only") {
  plan::KernelProfiles p(here);
  p.set("conv a", {1e-3, 0, 2'000'000, 10'000, 10'000});  // 100 FLOPs/byte, 2 GFLOP/s
  p.set("conv b", {3e-3, 0, 2'000'000, 10'000, 10'000});  // 100 FLOPs/byte
  p.set("relu", {1e-3, 0, 1'000, 4'000, 4'000});          // memory-bound: left out
  CHECK(plan::compute_rate(p) == doctest::Approx(4e6 / 4e-3));
  CHECK_THROWS_AS((void)plan::compute_rate(two_kernel_profiles()), ca::invalid_argument);
}
