// Bad input: each case gets a typed exception whose message says what was
// wrong and what is allowed, and leaves every object intact (as memkind's
// negative_tests.cpp keeps these apart from the behaviour tests). The nn
// library's bad input is in nn_negative_tests.cpp, built only with it.
#include <doctest/doctest.h>
#include <numa.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace fs = std::filesystem;
using test::check_contains, test::contains, test::heap_files, test::ScratchPath;

namespace {

// Runs `f`, expects exception E, and returns its message.
template <typename E, typename F>
std::string expected_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception thrown");
  return {};
}

// The message of the `Exception` that making a heap for `spec` must throw.
template <typename Exception>
std::string thrown_message(const ca::DeviceSpec& spec) {
  INFO("device " << spec.display_name());
  return expected_message<Exception>([&] { (void)ca::detail::make_heap_memory(spec); });
}

using test::MiB;

}  // namespace

// ---- the runtime and the data manager ------------------------------------------

TEST_CASE("negative: zero and overflowing sizes") {
  ca::Runtime rt(test::two_tiers());
  auto keep = rt.array<int>(1000);
  {
    auto w = keep.write();
    std::fill(w.begin(), w.end(), 42);
  }
  CHECK(contains(expected_message<ca::invalid_argument>([&] { (void)rt.array<float>(0); }), "0 elements"));
  CHECK(contains(expected_message<ca::invalid_argument>(
                     [&] { (void)rt.array<double>(std::numeric_limits<std::size_t>::max() / 4); }),
                 "overflows"));
  CHECK(contains(expected_message<ca::invalid_argument>([&] { (void)rt.manager().allocate(0, 0); }), "0 bytes"));
  CHECK(contains(expected_message<ca::invalid_argument>([&] { (void)rt.manager().create_object(0); }), "0 bytes"));
  CHECK(keep.read()[999] == 42);
  rt.manager().check_invariants();
}

TEST_CASE("negative: unknown device") {
  ca::DataManager dm(test::two_tiers());
  const std::string m = expected_message<ca::unknown_device>([&] { (void)dm.allocate(2, 64); });
  CHECK(contains(m, "device 2 does not exist"));
  CHECK(contains(m, "0 'fast'"));
  CHECK(contains(m, "1 'slow'"));
  CHECK_THROWS_AS((void)dm.usage(7), ca::unknown_device);
  CHECK_THROWS_AS(dm.defrag(9), ca::unknown_device);
  CHECK_THROWS_AS(dm.evictfrom(3, 0, 64, [](ca::Region&) { return true; }), ca::unknown_device);
  ca::Region* r = dm.allocate(0, 64);
  CHECK_THROWS_AS((void)dm.getlinked(*r, 5), ca::unknown_device);
  CHECK_THROWS_AS(ca::DataManager({}), ca::invalid_argument);
  std::vector<ca::DeviceSpec> nine(9, ca::dram(4096));
  CHECK(contains(expected_message<ca::invalid_argument>([&] { ca::DataManager too_many(nine); }), "at most 8"));
}

TEST_CASE("negative: every tier full raises out_of_memory naming each device, others intact") {
  ca::Runtime rt(test::two_tiers(64 * 1024, 128 * 1024));
  auto a = rt.array<std::byte>(60 * 1024);
  auto b = rt.array<std::byte>(100 * 1024);
  {
    auto w = a.write();
    test::fill(w.data(), w.size(), 1);
  }
  {
    auto w = b.write();
    test::fill(w.data(), w.size(), 2);
  }
  const auto before = rt.usage();
  std::string m;
  try {
    (void)rt.array<std::byte>(40 * 1024);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    m = e.what();
    CHECK(e.requested_bytes() == 40 * 1024);
    REQUIRE(e.devices().size() == 2);
    CHECK(e.devices()[0].capacity == 64 * 1024);
    CHECK(e.devices()[1].largest_free_block == 28 * 1024);
  }
  CHECK(contains(m, "40.00 KiB"));
  CHECK(contains(m, "device 0 'fast': capacity 64.00 KiB, in use 60.00 KiB"));
  CHECK(contains(m, "device 1 'slow': capacity 128.00 KiB, in use 100.00 KiB"));
  CHECK(contains(m, "largest free block 28.00 KiB"));
  // Nothing changed.
  const auto after = rt.usage();
  CHECK(after[0].bytes_used == before[0].bytes_used);
  CHECK(after[1].bytes_used == before[1].bytes_used);
  CHECK(test::holds(a.read().data(), a.size(), 1));
  CHECK(test::holds(b.read().data(), b.size(), 2));
  rt.manager().check_invariants();
}

TEST_CASE("negative: reading or writing a retired array") {
  ca::Runtime rt(test::two_tiers());
  auto a = rt.array<int>(10);
  a.retire();
  CHECK(a.retired());
  CHECK(contains(expected_message<ca::retired_error>([&] { (void)a.read(); }), "retired"));
  CHECK_THROWS_AS((void)a.write(), ca::retired_error);
  CHECK_THROWS_AS(a.will_read(), ca::retired_error);
  CHECK_THROWS_AS(a.retire(), ca::retired_error);
  auto b = rt.array<int>(10);
  auto c = std::move(b);
  CHECK_THROWS_AS((void)b.read(),
                  ca::retired_error);  // NOLINT(bugprone-use-after-move): the use after the move is the point
  CHECK_THROWS_AS(rt.kernel(ca::reads(a), [](std::span<const int>) {}), ca::retired_error);
}

TEST_CASE("negative: evicting, freeing, moving or retiring a pinned object") {
  ca::Runtime rt(test::two_tiers(64 * 1024));
  auto a = rt.array<std::byte>(32 * 1024);
  ca::DataManager& dm = rt.manager();
  auto access = a.read();
  ca::Object& o = a.object();
  ca::Region* primary = dm.getprimary(o);
  CHECK(contains(
      expected_message<ca::pinned_error>([&] { dm.evictfrom(0, 0, 64 * 1024, [](ca::Region&) { return true; }); }),
      "pinned"));
  CHECK_THROWS_AS(a.retire(), ca::pinned_error);
  CHECK_THROWS_AS(dm.destroy(o), ca::pinned_error);
  ca::Region* other = dm.allocate(1, o.bytes());
  dm.copyto(*other, *primary);
  dm.link(*primary, *other);
  CHECK_THROWS_AS(dm.setprimary(o, *other), ca::pinned_error);
  CHECK_THROWS_AS(dm.copyto(*primary, *other), ca::pinned_error);
  CHECK(dm.defrag(0) == 0);  // a pinned primary is never defragmented
  CHECK(dm.getprimary(o) == primary);
  CHECK(!a.retired());
  dm.check_invariants(true);
}

TEST_CASE("negative: copyto between regions of different sizes") {
  ca::DataManager dm(test::two_tiers());
  ca::Object& o = test::make_object(dm, 0, 100, 11);
  ca::Region* other = dm.allocate(1, 200);
  const std::string m = expected_message<ca::invalid_operation>([&] { dm.copyto(*other, *dm.getprimary(o)); });
  CHECK(contains(m, "different sizes"));
  CHECK(contains(m, "200"));
  CHECK(contains(m, "100"));
  CHECK_THROWS_AS(dm.copyto(*other, *other), ca::invalid_operation);
  CHECK(test::object_holds(dm, o, 11));
  dm.check_invariants();
}

TEST_CASE("negative: linking two regions on one device, or of two objects") {
  ca::DataManager dm(test::two_tiers());
  ca::Object& o = test::make_object(dm, 0, 100, 1);
  ca::Object& p = test::make_object(dm, 1, 100, 2);
  ca::Region* same_device = dm.allocate(0, 100);
  CHECK(contains(expected_message<ca::invalid_operation>([&] { dm.link(*dm.getprimary(o), *same_device); }),
                 "same device"));
  CHECK(contains(expected_message<ca::invalid_operation>([&] { dm.link(*dm.getprimary(o), *dm.getprimary(p)); }),
                 "different objects"));
  ca::Region* loose1 = dm.allocate(0, 100);
  ca::Region* loose2 = dm.allocate(1, 100);
  CHECK_THROWS_AS(dm.link(*loose1, *loose2), ca::invalid_operation);
  ca::Region* wrong_size = dm.allocate(1, 99);
  CHECK_THROWS_AS(dm.link(*dm.getprimary(o), *wrong_size), ca::invalid_operation);
  // The primary of an object cannot be freed (invariant 1).
  CHECK_THROWS_AS(dm.free(*dm.getprimary(o)), ca::invalid_operation);
  CHECK(dm.getlinked(*dm.getprimary(o), 1) == nullptr);
  CHECK(test::object_holds(dm, o, 1));
  CHECK(test::object_holds(dm, p, 2));
  dm.check_invariants();
}

TEST_CASE("negative: setprimary with a region of another object or size, or a second region on a device") {
  ca::DataManager dm(test::two_tiers());
  ca::Object& o = test::make_object(dm, 0, 100, 1);
  ca::Object& p = test::make_object(dm, 1, 100, 2);
  CHECK_THROWS_AS(dm.setprimary(o, *dm.getprimary(p)), ca::invalid_operation);
  ca::Region* wrong_size = dm.allocate(1, 64);
  CHECK_THROWS_AS(dm.setprimary(o, *wrong_size), ca::invalid_operation);
  ca::Region* second_on_0 = dm.allocate(0, 100);
  CHECK_THROWS_AS(dm.setprimary(o, *second_on_0), ca::invalid_operation);
  // A fresh region that was never filled is not a valid copy either.
  ca::Region* fresh = dm.allocate(1, 100);
  CHECK_THROWS_AS(dm.setprimary(o, *fresh), ca::invalid_operation);
  CHECK(test::object_holds(dm, o, 1));
  dm.check_invariants();
}

TEST_CASE("negative: evictfrom outside the heap") {
  ca::DataManager dm(test::two_tiers(64 * 1024));
  const auto none = [](ca::Region&) { return true; };
  CHECK(contains(expected_message<ca::invalid_argument>([&] { dm.evictfrom(0, 64 * 1024, 64, none); }), "outside"));
  CHECK_THROWS_AS(dm.evictfrom(0, 0, 0, none), ca::invalid_argument);
  CHECK_THROWS_AS(dm.evictfrom(0, 1024, 64 * 1024, none), ca::invalid_argument);
}

TEST_CASE("negative: allocate_at unaligned, outside the heap, empty, or over live regions") {
  ca::DataManager dm(test::two_tiers(64 * 1024));
  ca::Object& o = test::make_object(dm, 0, 4096, 1);  // at offset 0
  ca::Region& planned = dm.allocate_at(0, 8192, 100);
  const ca::DeviceUsage before = dm.usage(0);
  const auto argument = [&](std::uint64_t offset, std::uint64_t bytes) {
    INFO("allocate_at [" << offset << ", +" << bytes << ")");
    // Bad input is an error for both forms, never a null.
    CHECK_THROWS_AS((void)dm.try_allocate_at(0, offset, bytes), ca::invalid_argument);
    return expected_message<ca::invalid_argument>([&] { (void)dm.allocate_at(0, offset, bytes); });
  };
  std::string m = argument(100, 64);
  check_contains(m, "offset 100 on device 0 'fast' is not a multiple of its alignment of 64 bytes");
  check_contains(m, "64 and 128");
  m = argument(64 * 1024, 64);
  check_contains(m, "outside device 0 'fast', whose heap holds 65536 bytes");
  check_contains(argument(60 * 1024, 8 * 1024), "outside");
  check_contains(argument(std::numeric_limits<std::uint64_t>::max() - 63, 64), "outside");
  check_contains(argument(16 * 1024, 0), "0 bytes");
  CHECK_THROWS_AS((void)dm.allocate_at(2, 0, 64), ca::unknown_device);
  // A range that is not free names what is there.
  m = expected_message<ca::invalid_operation>([&] { (void)dm.allocate_at(0, 2048, 8192); });
  check_contains(m, "[2048, +8192) of device 0 'fast' is not free");
  check_contains(m, "overlaps the region of 4.00 KiB at offset 0 on device 0 'fast' (primary of object #1)");
  check_contains(m, "the region of 100 B at offset 8192");
  check_contains(m, "evictfrom");
  // Nothing changed.
  const ca::DeviceUsage after = dm.usage(0);
  CHECK(after.bytes_used == before.bytes_used);
  CHECK(after.largest_free_block == before.largest_free_block);
  CHECK(after.live_regions == before.live_regions);
  CHECK(test::object_holds(dm, o, 1));
  CHECK(dm.offset(planned) == 8192);
  dm.check_invariants(true);
}

TEST_CASE("negative: using a freed region") {
  ca::DataManager dm(test::two_tiers());
  ca::Region* r = dm.allocate(0, 64);
  ca::Region* s = dm.allocate(1, 64);
  dm.free(*r);
  CHECK(contains(expected_message<ca::invalid_operation>([&] { dm.copyto(*s, *r); }), "not live"));
  CHECK_THROWS_AS(dm.free(*r), ca::invalid_operation);
  dm.check_invariants();
}

// ---- bad device specs ----------------------------------------------------------

TEST_CASE("negative: capacity 0 is an invalid argument naming the device") {
  for (const auto& spec : {ca::dram(0, "fast0"), ca::dax_file({}, 0, "slow0"), ca::numa_node(0, 0, "far0")}) {
    const std::string message = thrown_message<ca::invalid_argument>(spec);
    check_contains(message, spec.display_name());
    check_contains(message, "capacity");
  }
  CHECK_THROWS_AS(ca::Runtime({ca::virtual_device(0)}), ca::invalid_argument);
}

TEST_CASE("negative: an alignment that is not a power of two >= 8 is an invalid argument") {
  for (const std::uint64_t alignment : {48, 4, 0, 100}) {
    ca::DeviceSpec spec = ca::dram(8 * MiB);
    spec.alignment = alignment;
    const std::string message = thrown_message<ca::invalid_argument>(spec);
    check_contains(message, "alignment " + std::to_string(alignment) + " ");
    check_contains(message, "power of two");
  }
}

TEST_CASE("negative: an alignment larger than the capacity is an invalid argument") {
  ca::DeviceSpec spec = ca::dram(8 * MiB);
  spec.alignment = 16 * MiB;
  const std::string message = thrown_message<ca::invalid_argument>(spec);
  check_contains(message, std::to_string(16 * MiB));
  check_contains(message, ca::format_bytes(8 * MiB));
}

TEST_CASE("negative: dax heap in a directory that does not exist") {
  ScratchPath scratch("missing-dir");  // removed, so it does not exist
  const fs::path file = scratch.path / "heap";
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(file, 8 * MiB));
  check_contains(message, "directory " + scratch.path.string() + " does not exist");
  CHECK_FALSE(fs::exists(scratch.path));
}

TEST_CASE("negative: dax heap on an existing file that is too small: error, file untouched") {
  ScratchPath scratch("small-file");
  {
    std::ofstream out(scratch.path, std::ios::binary);
    const std::vector<char> contents(1 * MiB, 'u');
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(scratch.path, 8 * MiB));
  check_contains(message, scratch.path.string());
  check_contains(message, ca::format_bytes(1 * MiB));
  check_contains(message, ca::format_bytes(8 * MiB));
  REQUIRE(fs::exists(scratch.path));  // never removed or resized: not ours
  CHECK(fs::file_size(scratch.path) == 1 * MiB);
}

TEST_CASE("negative: dax heap larger than the free space of its filesystem") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const std::uint64_t capacity = std::uint64_t{1} << 50;  // 1 PiB
  const std::set<std::string> before = heap_files("/dev/shm");
  const fs::path named = "/dev/shm/cachedarrays-test-" + std::to_string(::getpid()) + "-huge";
  for (const fs::path& path : {fs::path{}, fs::path("/dev/shm"), named}) {
    ca::DeviceSpec spec = ca::dax_file(path, capacity);
    spec.prefault = false;
    const std::string message = thrown_message<ca::heap_error>(spec);
    check_contains(message, "filesystem of /dev/shm has ");
    check_contains(message, "heap needs " + ca::format_bytes(capacity));
  }
  CHECK(heap_files("/dev/shm") == before);  // nothing left behind
  CHECK_FALSE(fs::exists(named));
}

TEST_CASE("negative: a NUMA node that does not exist") {
  const std::string numa_message = thrown_message<ca::heap_error>(ca::numa_node(4096, 8 * MiB));
  check_contains(numa_message, "node 4096");
  check_contains(numa_message, "valid node");

  ca::DeviceSpec bound = ca::dram(8 * MiB);
  bound.numa_node = 4096;
  const std::string dram_message = thrown_message<ca::heap_error>(bound);
  check_contains(dram_message, "node 4096");
  check_contains(dram_message, "valid node");
}

TEST_CASE("negative: a numa device without a node is an invalid argument") {
  const std::string message = thrown_message<ca::invalid_argument>(ca::numa_node(-1, 8 * MiB));
  check_contains(message, "numa_node is -1");
}

TEST_CASE("negative: a numa device larger than its node") {
  if (numa_available() < 0) {
    MESSAGE("skipped: no NUMA support on this machine");
    return;
  }
  const auto node_bytes = static_cast<std::uint64_t>(numa_node_size64(0, nullptr));
  ca::DeviceSpec spec = ca::numa_node(0, node_bytes * 2);
  spec.prefault = false;
  const std::string message = thrown_message<ca::heap_error>(spec);
  check_contains(message, ca::format_bytes(node_bytes * 2));
  check_contains(message, ca::format_bytes(node_bytes));
}

TEST_CASE("negative: dax heap in a place where no file can be created, even by root") {
  // sysfs refuses new files to every user (EACCES even for root), while
  // access(W_OK) says yes to root: this exercises the real open error.
  if (!fs::is_directory("/sys/kernel")) {
    MESSAGE("skipped: no sysfs on this machine");
    return;
  }
  const fs::path file = "/sys/cachedarrays-test-heap";
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(file, 8 * MiB));
  check_contains(message, "/sys");
  CHECK_FALSE(fs::exists(file));
}

TEST_CASE("negative: dax heap whose parent is a file, not a directory") {
  ScratchPath scratch("parent-file");
  { std::ofstream out(scratch.path); }
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(scratch.path / "heap", 8 * MiB));
  check_contains(message, scratch.path.string() + " is not a directory");
}

// ---- emulation profiles --------------------------------------------------------

TEST_CASE("negative: an unknown emulation profile name") {
  CHECK_THROWS_AS((void)ca::emulation::profile("hbm"), ca::invalid_argument);
}

TEST_CASE("negative: a memory-mode cache that is not whole 64-byte lines") {
  const auto p = test::emulation_profile(10.0, 2.0, 300.0, 30.0, 12.0);
  CHECK_THROWS_WITH_AS((void)ca::emulation::memory_mode(p, 1000), doctest::Contains("multiple of 64"),
                       ca::invalid_argument);
  CHECK_THROWS_AS((void)ca::emulation::memory_mode(p, 0), ca::invalid_argument);
  // Refused when the runtime starts, too.
  auto nvram = ca::dax_file({}, 1 << 20, "nvram");
  nvram.emulation = test::emulation_profile(10.0, 2.0, 0.0, 30.0, 12.0);
  nvram.emulation->memory_mode_cache_bytes = 100;
  CHECK_THROWS_WITH_AS(ca::Runtime({nvram}), doctest::Contains("64-byte lines"), ca::invalid_argument);
}

// ---- policies ------------------------------------------------------------------

TEST_CASE("negative: an unknown policy name lists the valid ones") {
  const auto registry = ca::policy::Registry::builtin();
  const std::string m = expected_message<ca::invalid_argument>([&] { (void)registry.make("lru"); });
  CHECK(m.find("unknown policy 'lru'") != std::string::npos);
  CHECK(m.find("ca-lmp") != std::string::npos);
  CHECK(m.find("first-touch") != std::string::npos);
}

TEST_CASE("negative: a CachedArrays mode spelled with a repeated or unknown switch") {
  CHECK_THROWS_AS((void)ca::policy::Mode::parse("ca-ll"), ca::invalid_argument);
  CHECK_THROWS_AS((void)ca::policy::Mode::parse("ca-x"), ca::invalid_argument);
}

TEST_CASE("negative: registering a policy name twice") {
  auto registry = ca::policy::Registry::builtin();
  registry.add("mine", "test", [] { return std::make_unique<ca::policy::FirstTouch>(); });
  CHECK_THROWS_AS(registry.add("mine", "again", [] { return std::make_unique<ca::policy::FirstTouch>(); }),
                  ca::invalid_argument);
  CHECK(registry.make("mine")->name() == "first-touch");  // the first registration stands
}

TEST_CASE("negative: a CachedArrays mode on a single device") {
  CHECK_THROWS_AS(ca::Runtime({ca::dram(1 << 20)}, ca::policy::Registry::builtin().make("ca-lm")),
                  ca::invalid_argument);
}

// ---- traces --------------------------------------------------------------------

TEST_CASE("negative: saving a trace under an unknown extension or into a missing directory") {
  ca::Runtime rt(test::two_tiers(128 * 1024, 1 << 20), ca::policy::Registry::builtin().make("ca-lm"));
  const ca::Trace& t = rt.start_trace();
  auto x = rt.array<std::byte>(60 * 1024);
  auto y = rt.array<std::byte>(60 * 1024);
  rt.kernel(ca::reads(x), ca::writes(y), [](std::span<const std::byte>, std::span<std::byte>) {});
  CHECK_THROWS_AS(t.save("/tmp/trace.txt", rt.device_names()), ca::invalid_argument);
  CHECK_THROWS_AS(t.save("/nonexistent-dir/trace.json", rt.device_names()), ca::heap_error);
}
