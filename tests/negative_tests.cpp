// Bad input: each case gets a typed exception whose message says what was
// wrong and what is allowed, and leaves every object intact (as memkind's
// negative_tests.cpp keeps these apart from the behaviour tests).
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// Runs `f`, expects exception E, and returns its message.
template <typename E, typename F>
std::string message_of(F&& f) {
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("negative: zero and overflowing sizes") {
  ca::Runtime rt(test::two_tiers());
  auto keep = rt.array<int>(1000);
  { auto w = keep.write(); std::fill(w.begin(), w.end(), 42); }
  CHECK(contains(message_of<ca::invalid_argument>([&] { (void)rt.array<float>(0); }), "0 elements"));
  CHECK(contains(message_of<ca::invalid_argument>([&] {
                   (void)rt.array<double>(std::numeric_limits<std::size_t>::max() / 4);
                 }),
                 "overflows"));
  CHECK(contains(message_of<ca::invalid_argument>([&] { (void)rt.manager().allocate(0, 0); }), "0 bytes"));
  CHECK(contains(message_of<ca::invalid_argument>([&] { (void)rt.manager().create_object(0); }), "0 bytes"));
  CHECK(keep.read()[999] == 42);
  rt.manager().check_invariants();
}

TEST_CASE("negative: unknown device") {
  ca::DataManager dm(test::two_tiers());
  const std::string m = message_of<ca::unknown_device>([&] { (void)dm.allocate(2, 64); });
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
  CHECK(contains(message_of<ca::invalid_argument>([&] { ca::DataManager too_many(nine); }), "at most 8"));
}

TEST_CASE("negative: every tier full raises out_of_memory naming each device, others intact") {
  ca::Runtime rt(test::two_tiers(64 * 1024, 128 * 1024));
  auto a = rt.array<std::byte>(60 * 1024);
  auto b = rt.array<std::byte>(100 * 1024);
  { auto w = a.write(); test::fill(w.data(), w.size(), 1); }
  { auto w = b.write(); test::fill(w.data(), w.size(), 2); }
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
  CHECK(contains(message_of<ca::retired_error>([&] { (void)a.read(); }), "retired"));
  CHECK_THROWS_AS((void)a.write(), ca::retired_error);
  CHECK_THROWS_AS(a.will_read(), ca::retired_error);
  CHECK_THROWS_AS(a.retire(), ca::retired_error);
  auto b = rt.array<int>(10);
  auto c = std::move(b);
  CHECK_THROWS_AS((void)b.read(), ca::retired_error);  // NOLINT: use after move is the point
  CHECK_THROWS_AS(rt.kernel(ca::reads(a), [](std::span<const int>) {}), ca::retired_error);
}

TEST_CASE("negative: evicting, freeing, moving or retiring a pinned object") {
  ca::Runtime rt(test::two_tiers(64 * 1024));
  auto a = rt.array<std::byte>(32 * 1024);
  ca::DataManager& dm = rt.manager();
  auto access = a.read();
  ca::Object& o = a.object();
  ca::Region* primary = dm.getprimary(o);
  CHECK(contains(message_of<ca::pinned_error>([&] {
                   dm.evictfrom(0, 0, 64 * 1024, [](ca::Region&) { return true; });
                 }),
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
  const std::string m = message_of<ca::invalid_operation>([&] { dm.copyto(*other, *dm.getprimary(o)); });
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
  CHECK(contains(message_of<ca::invalid_operation>([&] { dm.link(*dm.getprimary(o), *same_device); }),
                 "same device"));
  CHECK(contains(message_of<ca::invalid_operation>([&] { dm.link(*dm.getprimary(o), *dm.getprimary(p)); }),
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
  CHECK(contains(message_of<ca::invalid_argument>([&] { dm.evictfrom(0, 64 * 1024, 64, none); }), "outside"));
  CHECK_THROWS_AS(dm.evictfrom(0, 0, 0, none), ca::invalid_argument);
  CHECK_THROWS_AS(dm.evictfrom(0, 1024, 64 * 1024, none), ca::invalid_argument);
}

TEST_CASE("negative: using a freed region") {
  ca::DataManager dm(test::two_tiers());
  ca::Region* r = dm.allocate(0, 64);
  ca::Region* s = dm.allocate(1, 64);
  dm.free(*r);
  CHECK(contains(message_of<ca::invalid_operation>([&] { dm.copyto(*s, *r); }), "not live"));
  CHECK_THROWS_AS(dm.free(*r), ca::invalid_operation);
  dm.check_invariants();
}
