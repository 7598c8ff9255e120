// The property test's cases: the long random run of data-manager
// operations against the model (property_model.hpp), and small cases that
// show the run's checks and moves are sound.
//
// CACHEDARRAYS_TEST_SEED replays another sequence; CACHEDARRAYS_PROPERTY_OPS
// sets its length (default 100,000; 25,000 in unoptimised or sanitizer builds).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "cachedarrays/cachedarrays.hpp"
#include "property_model.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

using property::fast_device, property::slow_device, property::MiB, property::first_mismatch, property::fill_pattern;

}  // namespace

TEST_CASE("property: random data-manager operations keep every byte and every invariant") {
  const std::uint64_t seed = test::test_seed(20240611);
  const std::uint64_t ops = test::env_or("CACHEDARRAYS_PROPERTY_OPS", property::default_ops);
  CAPTURE(seed);
  CAPTURE(ops);
  property::Harness h(seed);
  h.run(ops);
  const property::Harness::Counts& c = h.counts;
  const ca::Stats stats = h.stats();
  MESSAGE("seed " << seed << ", " << ops << " ops: " << c.creates << " creates (" << c.failed_creates
                  << " found both heaps full), " << c.destroys << " destroys, " << c.evicts << " evicts ("
                  << c.evicts_refused << " refused), " << c.prefetches << " prefetches (" << c.prefetch_room
                  << " made room), evictfrom " << c.evictfrom_cleared << " cleared / " << c.evictfrom_declined
                  << " declined, " << c.defrags << " defrags moving " << c.defrag_moves << " regions, " << c.holes_made
                  << " holes made moving " << c.hole_moves << " regions, " << c.relinks << " relinks ("
                  << c.relinked_valid << " valid again), " << c.pinned_refusals << " pinned refusals, "
                  << c.expected_errors << " expected errors, " << c.async_copies << " asynchronous copies ("
                  << c.async_in_flight_at_check << " seen in flight by a check, " << stats.async.fence_waits
                  << " waited for); allocations that found "
                  << "the heap full: fast " << stats.devices[fast_device].failed_allocations << " of "
                  << stats.devices[fast_device].allocations + stats.devices[fast_device].failed_allocations << ", slow "
                  << stats.devices[slow_device].failed_allocations << " of "
                  << stats.devices[slow_device].allocations + stats.devices[slow_device].failed_allocations);
  if (ops >= 20000) {  // the run really went through the interesting paths
    CHECK(c.evictfrom_cleared > 0);
    CHECK(c.evictfrom_declined > 0);
    CHECK(c.prefetch_room > 0);
    CHECK(c.defrag_moves > 0);
    CHECK(c.hole_moves > 0);
    CHECK(c.evicts_refused > 0);
    CHECK(c.relinked_valid > 0);
    CHECK(c.pinned_refusals > 0);
    CHECK(c.failed_creates > 0);
    CHECK(c.async_copies > 0);
    CHECK(stats.async.copies + stats.async.fence_waits > 0);
    CHECK(stats.devices[fast_device].failed_allocations > 0);
  }
}

// The checks above are not vacuous: a byte changed behind the manager's back
// in a primary or in a valid secondary is seen by the model's comparison and
// by check_invariants(true).
TEST_CASE("property: the content checks catch a changed byte") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, fast_device, 1000, 0);
  ca::Region& p = *dm.getprimary(o);
  fill_pattern(dm.pointer(p), 1000, 42);
  REQUIRE(first_mismatch(dm.pointer(p), 1000, 42) == 1000);
  ca::Region* s = dm.allocate(slow_device, 1000);
  REQUIRE(s != nullptr);
  dm.copyto(*s, p);
  dm.link(p, *s);
  REQUIRE(dm.isvalid(*s));
  dm.check_invariants(true);
  dm.pointer(*s)[999] ^= std::byte{1};
  CHECK_THROWS_AS(dm.check_invariants(true), ca::invariant_violation);
  CHECK(first_mismatch(dm.pointer(*s), 1000, 42) == 999);
  dm.pointer(*s)[999] ^= std::byte{1};
  dm.pointer(p)[3] ^= std::byte{0x80};
  CHECK(first_mismatch(dm.pointer(p), 1000, 42) == 3);
  CHECK(first_mismatch(dm.pointer(p), 997, 42) == 3);        // a tail shorter than a word too
  CHECK(first_mismatch(dm.pointer(p) + 8, 992, 42) != 992);  // a shifted pattern is not the pattern
}

// moves.hpp's prefetch was written for the paper's policy invariant (a fast
// region of an object is its primary). When the object has a fast secondary
// anyway, prefetch must leave no region that nobody owns: a valid secondary
// is promoted, a stale one replaced by a fresh copy.
TEST_CASE("property: prefetch of an object with a fast secondary leaves no orphan region") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, slow_device, 1000, 7);
  ca::Region* f = dm.allocate(fast_device, 1000);
  REQUIRE(f != nullptr);
  dm.copyto(*f, *dm.getprimary(o));
  dm.link(*dm.getprimary(o), *f);
  REQUIRE(dm.isvalid(*f));
  bool stale = false;
  SUBCASE("valid fast secondary") {}
  SUBCASE("stale fast secondary") {
    stale = true;
    dm.pin(o, ca::Access::write);
    test::fill(dm.pointer(*dm.getprimary(o)), 1000, 8);
    ca::DataManager::unpin(o, ca::Access::write);
    REQUIRE_FALSE(dm.isvalid(*f));
  }
  bool moved = false;
  try {
    moved = ca::policy::prefetch(dm, o, fast_device, slow_device);
  } catch (const ca::error& e) {
    FAIL("prefetch threw: " << std::string(e.what()));
  }
  std::uint64_t orphans = 0;
  dm.for_each_region(fast_device, [&](ca::Region& r) { orphans += dm.parent(r) == nullptr ? 1 : 0; });
  CHECK(orphans == 0);
  CHECK(dm.usage(fast_device).live_regions == 1);
  CHECK(moved);
  CHECK(dm.device(*dm.getprimary(o)) == fast_device);
  dm.check_invariants(true);
  CHECK(test::object_holds(dm, o, stale ? 8 : 7));
}

// Invariant 4 through the API: a copy that was written and marked dirty is
// no longer a copy of its object's contents, whether it is marked while
// linked or while free-standing and linked back afterwards; it must not count
// as valid nor be accepted by setprimary.
TEST_CASE("property: a secondary marked dirty stops counting as a valid copy") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, fast_device, 1000, 7);
  ca::Region& p = *dm.getprimary(o);
  ca::Region* s = dm.allocate(slow_device, 1000);
  REQUIRE(s != nullptr);
  dm.copyto(*s, p);
  dm.link(p, *s);
  REQUIRE(dm.isvalid(*s));

  SUBCASE("marked dirty while linked") {
    dm.setdirty(*s, true);
    test::fill(dm.pointer(*s), 1000, 99);
  }
  SUBCASE("marked dirty while free-standing, then linked back") {
    dm.unlink(p, *s);
    dm.setdirty(*s, true);
    test::fill(dm.pointer(*s), 1000, 99);
    dm.link(p, *s);
  }
  CHECK_FALSE(dm.isvalid(*s));
  CHECK_NOTHROW(dm.check_invariants(true));
  CHECK_THROWS_AS(dm.setprimary(o, *s), ca::invalid_operation);
  CHECK(test::object_holds(dm, o, 7));
}
