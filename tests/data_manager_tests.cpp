// Every function of the data management API (paper III-C), with the
// invariants of docs/design.md checked after every step.
#include <doctest/doctest.h>

#include <cstring>

#include "test_support.hpp"

namespace ca = cachedarrays;
using test::two_tiers;

namespace {

using test::fast_device, test::slow_device;

}  // namespace

TEST_CASE("manager: allocate, size, device, pointer, offset, free") {
  ca::DataManager dm(two_tiers());
  CHECK(dm.device_count() == 2);
  ca::Region* r = dm.allocate(fast_device, 1000);
  REQUIRE(r != nullptr);
  CHECK(dm.size(*r) == 1000);
  CHECK(dm.device(*r) == fast_device);
  CHECK(dm.parent(*r) == nullptr);
  CHECK(!dm.isdirty(*r));
  CHECK(reinterpret_cast<std::uintptr_t>(dm.pointer(*r)) % 64 == 0);
  CHECK(dm.usage(fast_device).bytes_used == 1024);  // rounded to the alignment
  CHECK(dm.usage(fast_device).live_regions == 1);
  dm.check_invariants();
  ca::Region* s = dm.allocate(slow_device, 1000);
  REQUIRE(s != nullptr);
  CHECK(dm.device(*s) == slow_device);
  CHECK(dm.offset(*s) == 0);
  dm.free(*r);
  dm.free(*s);
  dm.check_invariants();
  CHECK(dm.usage(fast_device).bytes_used == 0);
  CHECK(dm.stats().devices[fast_device].allocations == 1);
  CHECK(dm.stats().devices[fast_device].frees == 1);
}

TEST_CASE("manager: a freed region is reused, last freed first, as new") {
  // Regions are kept for reuse rather than deleted: the one freed last
  // comes back first, with nothing of its past life, and a run of
  // allocate/free pairs keeps reusing the same few.
  ca::DataManager dm(two_tiers());
  ca::Object& object = dm.create_object(256);
  ca::Region* a = dm.allocate(fast_device, 256);
  ca::Region* b = dm.allocate(slow_device, 256);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  dm.setprimary(object, *a);
  dm.setdirty(*a, true);
  dm.copyto(*b, *a);
  dm.link(*a, *b);
  dm.unlink(*a, *b);
  dm.free(*b);
  ca::Region* c = dm.allocate(fast_device, 100);
  CHECK(c == b);  // the spare one, not a new one
  CHECK(dm.size(*c) == 100);
  CHECK(dm.device(*c) == fast_device);
  CHECK(dm.parent(*c) == nullptr);
  CHECK(!dm.isdirty(*c));
  CHECK(dm.offset(*c) == 256);
  CHECK(dm.pointer(*c) != dm.pointer(*a));
  dm.check_invariants();
  // Freed in the order d, c: allocated again in the order c, d.
  ca::Region* d = dm.allocate(fast_device, 64);
  REQUIRE(d != nullptr);
  dm.free(*d);
  dm.free(*c);
  CHECK(dm.allocate(fast_device, 64) == c);
  CHECK(dm.allocate(fast_device, 64) == d);
  for (int i = 0; i < 1000; ++i) {
    ca::Region* r = dm.allocate(fast_device, 64 + 64 * static_cast<std::uint64_t>(i % 7));
    REQUIRE(r != nullptr);
    ca::Region* s = dm.allocate(slow_device, 128);
    REQUIRE(s != nullptr);
    dm.free(*r);
    dm.free(*s);
  }
  CHECK(dm.usage(fast_device).live_regions == 3);
  CHECK(dm.usage(slow_device).live_regions == 0);
  dm.check_invariants();
}

TEST_CASE("manager: allocate returns null when the device is full, and counts it") {
  ca::DataManager dm(two_tiers(64 * 1024));
  ca::Region* whole = dm.allocate(fast_device, 64 * 1024);
  REQUIRE(whole != nullptr);
  CHECK(dm.allocate(fast_device, 1) == nullptr);
  CHECK(dm.allocate(fast_device, std::uint64_t{1} << 62) == nullptr);
  CHECK(dm.stats().devices[fast_device].failed_allocations == 2);
  CHECK(dm.usage(fast_device).largest_free_block == 0);
  dm.check_invariants();
}

TEST_CASE("manager: objects, setprimary and getprimary") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = dm.create_object(4096);
  CHECK(dm.getprimary(o) == nullptr);
  ca::Region* r = dm.allocate(slow_device, 4096);
  dm.setprimary(o, *r);
  CHECK(dm.getprimary(o) == r);
  CHECK(dm.parent(*r) == &o);
  CHECK(dm.getlinked(*r, slow_device) == r);
  CHECK(dm.getlinked(*r, fast_device) == nullptr);
  dm.check_invariants();
  dm.destroy(o);
  dm.check_invariants();
  CHECK(dm.usage(slow_device).bytes_used == 0);
  CHECK(dm.stats().objects_created == 1);
  CHECK(dm.stats().objects_destroyed == 1);
}

TEST_CASE("manager: copyto, link, getlinked and the Listing 2 prefetch sequence") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, slow_device, 10000, 7);
  ca::Region* x = dm.getprimary(o);
  ca::Region* y = dm.allocate(fast_device, 10000);
  dm.copyto(*y, *x);
  CHECK(!dm.isdirty(*y));
  CHECK(std::memcmp(dm.pointer(*x), dm.pointer(*y), 10000) == 0);
  dm.link(*x, *y);
  CHECK(dm.parent(*y) == &o);
  CHECK(dm.getlinked(*x, fast_device) == y);
  CHECK(dm.getlinked(*y, slow_device) == x);
  dm.setprimary(o, *y);
  CHECK(dm.getprimary(o) == y);
  CHECK(dm.isvalid(*x));
  dm.check_invariants(true);
  CHECK(dm.stats().bytes_copied[slow_device][fast_device] == 10000);
  CHECK(dm.stats().copies[slow_device][fast_device] == 1);
  CHECK(test::object_holds(dm, o, 7));
}

TEST_CASE("manager: dirty primary makes secondaries stale; clean eviction elides the copy") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, slow_device, 5000, 1);
  REQUIRE(ca::policy::prefetch(dm, o, fast_device, slow_device));
  ca::Region* y = dm.getprimary(o);
  ca::Region* x = dm.getlinked(*y, slow_device);
  REQUIRE(x != nullptr);
  CHECK(dm.isvalid(*x));

  SUBCASE("clean: no write-back") {
    const auto before = dm.stats().bytes_copied[fast_device][slow_device];
    const auto outcome = ca::policy::evict(dm, o, fast_device, slow_device);
    CHECK(outcome.moved);
    CHECK(!outcome.wrote_back);
    CHECK(dm.stats().bytes_copied[fast_device][slow_device] == before);
    CHECK(dm.getprimary(o) == x);
    CHECK(test::object_holds(dm, o, 1));
  }
  SUBCASE("dirty: written back, contents follow") {
    dm.pin(o, ca::Access::write);
    test::fill(dm.pointer(*y), 5000, 2);
    ca::DataManager::unpin(o, ca::Access::write);
    CHECK(dm.isdirty(*y));
    CHECK(!dm.isvalid(*x));
    // Invariant 4: the stale slow copy can never become the primary.
    CHECK_THROWS_AS(dm.setprimary(o, *x), ca::invalid_operation);
    CHECK(dm.getprimary(o) == y);
    const auto outcome = ca::policy::evict(dm, o, fast_device, slow_device);
    CHECK(outcome.wrote_back);
    CHECK(dm.getprimary(o) == x);
    CHECK(test::object_holds(dm, o, 2));
  }
  dm.check_invariants(true);
  CHECK(dm.usage(fast_device).bytes_used == 0);
}

TEST_CASE("manager: a copy taken while the object is being written is never valid") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, fast_device, 256, 3);
  dm.pin(o, ca::Access::write);
  ca::Region* copy = dm.allocate(slow_device, 256);
  dm.copyto(*copy, *dm.getprimary(o));
  dm.link(*dm.getprimary(o), *copy);
  ca::DataManager::unpin(o, ca::Access::write);
  CHECK(!dm.isvalid(*copy));
  CHECK_THROWS_AS(dm.setprimary(o, *copy), ca::invalid_operation);
  dm.check_invariants(true);
}

TEST_CASE("manager: unlink detaches the non-primary region") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, slow_device, 128, 4);
  REQUIRE(ca::policy::prefetch(dm, o, fast_device, slow_device));
  ca::Region* y = dm.getprimary(o);
  ca::Region* x = dm.getlinked(*y, slow_device);
  dm.unlink(*y, *x);  // argument order does not matter: the primary stays
  CHECK(dm.parent(*x) == nullptr);
  CHECK(dm.getlinked(*y, slow_device) == nullptr);
  CHECK(dm.getprimary(o) == y);
  dm.check_invariants();
  dm.free(*x);
  dm.check_invariants();
}

TEST_CASE("manager: setdirty and isdirty") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, fast_device, 64, 5);
  ca::Region* p = dm.getprimary(o);
  CHECK(dm.isdirty(*p));  // written through a write pin
  dm.setdirty(*p, false);
  CHECK(!dm.isdirty(*p));
  dm.setdirty(*p, true);
  CHECK(dm.isdirty(*p));
}

TEST_CASE("manager: evictfrom clears a contiguous range through the policy's callback") {
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (int i = 0; i < 8; ++i) objects.push_back(&test::make_object(dm, fast_device, 8 * 1024, 100 + i));
  CHECK(dm.allocate(fast_device, 1) == nullptr);
  int calls = 0;
  const bool cleared = dm.evictfrom(fast_device, 16 * 1024, 24 * 1024, [&](ca::Region& r) {
    ++calls;
    return ca::policy::evict(dm, *dm.parent(r), fast_device, slow_device).moved;
  });
  CHECK(cleared);
  CHECK(calls == 3);
  CHECK(dm.usage(fast_device).largest_free_block == 24 * 1024);
  CHECK(dm.stats().devices[fast_device].evictions == 3);
  for (int i = 0; i < 8; ++i) CHECK(test::object_holds(dm, *objects[i], 100 + i));
  CHECK(dm.device(*dm.getprimary(*objects[2])) == slow_device);
  CHECK(dm.device(*dm.getprimary(*objects[5])) == fast_device);
  dm.check_invariants(true);
}

TEST_CASE("manager: a declined evictfrom leaves every object and the heap intact") {
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (int i = 0; i < 8; ++i) objects.push_back(&test::make_object(dm, fast_device, 8 * 1024, i));
  int calls = 0;
  const bool cleared = dm.evictfrom(fast_device, 0, 32 * 1024, [&](ca::Region& r) {
    if (++calls == 2) return false;
    return ca::policy::evict(dm, *dm.parent(r), fast_device, slow_device).moved;
  });
  CHECK(!cleared);
  dm.check_invariants(true);
  for (int i = 0; i < 8; ++i) CHECK(test::object_holds(dm, *objects[i], i));
  CHECK(dm.usage(fast_device).bytes_used == 7 * 8 * 1024);
}

TEST_CASE("manager: evictfrom over a pinned object throws before changing anything") {
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (int i = 0; i < 4; ++i) objects.push_back(&test::make_object(dm, fast_device, 8 * 1024, i));
  dm.pin(*objects[2], ca::Access::read);
  int calls = 0;
  CHECK_THROWS_AS(dm.evictfrom(fast_device, 0, 32 * 1024,
                               [&](ca::Region&) {
                                 ++calls;
                                 return false;
                               }),
                  ca::pinned_error);
  CHECK(calls == 0);
  ca::DataManager::unpin(*objects[2], ca::Access::read);
  dm.check_invariants();
}

TEST_CASE("manager: defrag slides regions down, moves data with them, never a pinned primary") {
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (int i = 0; i < 8; ++i) objects.push_back(&test::make_object(dm, fast_device, 8 * 1024, 40 + i));
  for (int i : {0, 2, 5}) dm.destroy(*objects[i]);
  dm.pin(*objects[4], ca::Access::read);
  const std::byte* pinned_at = dm.pointer(*dm.getprimary(*objects[4]));
  const auto moved = dm.defrag(fast_device);
  CHECK(moved >= 2);
  CHECK(dm.pointer(*dm.getprimary(*objects[4])) == pinned_at);
  CHECK(dm.offset(*dm.getprimary(*objects[1])) == 0);
  for (int i : {1, 3, 4, 6, 7}) CHECK(test::object_holds(dm, *objects[i], 40 + i));
  CHECK(dm.stats().devices[fast_device].defrag_moves == moved);
  ca::DataManager::unpin(*objects[4], ca::Access::read);
  dm.check_invariants(true);
  // With nothing pinned, a second defrag leaves one hole at the end.
  dm.defrag(fast_device);
  CHECK(dm.usage(fast_device).largest_free_block == 3 * 8 * 1024);
}

TEST_CASE("manager: make_hole moves only the cheapest window's regions, with their data, never a pinned primary") {
  // Sixteen 4 KiB regions, holes at 1 and 14: a hole of 8 KiB needs one
  // region moved (0, the lowest beside a hole, into hole 14), where sliding
  // the heap down would move twelve (2 to 13).
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (int i = 0; i < 16; ++i) objects.push_back(&test::make_object(dm, fast_device, 4 * 1024, 70 + i));
  for (int i : {1, 14}) dm.destroy(*objects[i]);
  CHECK(dm.make_hole(fast_device, 4 * 1024));  // a hole already: nothing moves
  CHECK(dm.stats().devices[fast_device].defrag_moves == 0);
  CHECK(dm.make_hole(fast_device, 8 * 1024));
  CHECK(dm.usage(fast_device).largest_free_block == 8 * 1024);
  CHECK(dm.stats().devices[fast_device].defrag_moves == 1);
  CHECK(dm.stats().devices[fast_device].defrag_bytes == 4 * 1024);
  CHECK(dm.offset(*dm.getprimary(*objects[0])) == 14 * 4 * 1024);
  CHECK(dm.offset(*dm.getprimary(*objects[2])) == 2 * 4 * 1024);  // the rest stayed
  CHECK(dm.offset(*dm.getprimary(*objects[13])) == 13 * 4 * 1024);
  for (int i = 0; i < 16; ++i) {
    if (i != 1 && i != 14) CHECK(test::object_holds(dm, *objects[i], 70 + i));
  }
  dm.check_invariants(true);

  // Pinned, the cheapest window's region stays: another window is cleared.
  ca::DataManager pinned(two_tiers(64 * 1024));
  objects.clear();
  for (int i = 0; i < 16; ++i) objects.push_back(&test::make_object(pinned, fast_device, 4 * 1024, 90 + i));
  for (int i : {1, 14}) pinned.destroy(*objects[i]);
  pinned.pin(*objects[0], ca::Access::read);
  CHECK(pinned.make_hole(fast_device, 8 * 1024));
  CHECK(pinned.offset(*pinned.getprimary(*objects[0])) == 0);
  CHECK(pinned.offset(*pinned.getprimary(*objects[2])) == 14 * 4 * 1024);  // the next window's region went
  CHECK(pinned.usage(fast_device).largest_free_block >= 8 * 1024);
  CHECK(pinned.stats().devices[fast_device].defrag_moves == 1);
  ca::DataManager::unpin(*objects[0], ca::Access::read);
  for (int i = 0; i < 16; ++i) {
    if (i != 1 && i != 14) CHECK(test::object_holds(pinned, *objects[i], 90 + i));
  }
  pinned.check_invariants(true);
  // More than the free bytes: no hole, nothing moved.
  CHECK(!pinned.make_hole(fast_device, 12 * 1024));
  CHECK(pinned.stats().devices[fast_device].defrag_moves == 1);
  pinned.check_invariants(true);
}

TEST_CASE("manager: stats count copies per device pair and peak occupancy") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, slow_device, 1 << 16, 9);
  ca::policy::prefetch(dm, o, fast_device, slow_device);
  ca::policy::evict(dm, o, fast_device, slow_device);  // clean: elided
  const ca::Stats& s = dm.stats();
  CHECK(s.bytes_copied[slow_device][fast_device] == 1 << 16);
  CHECK(s.bytes_copied[fast_device][slow_device] == 0);
  CHECK(s.bytes_copied_into(fast_device) == 1 << 16);
  CHECK(s.devices[fast_device].peak_bytes_in_use == 1 << 16);
  CHECK(s.devices[fast_device].bytes_in_use == 0);
  const std::string text = s.to_string();
  CHECK(text.find("slow -> fast: 64.00 KiB in 1 copies") != std::string::npos);
  ca::Stats later = dm.stats();
  CHECK(later.since(s).total_bytes_copied() == 0);
}

TEST_CASE("manager: invariant check catches a corrupted byte count") {
  // check_invariants must be able to fail: use a policy mistake it detects,
  // an object left without a primary.
  ca::DataManager dm(two_tiers());
  dm.create_object(100);
  CHECK_THROWS_AS(dm.check_invariants(), ca::invariant_violation);
}

TEST_CASE("manager: allocate_at places a region at a planned offset; a taken range gets null and changes nothing") {
  ca::DataManager dm(two_tiers(64 * 1024));
  ca::Region& first = dm.allocate_at(fast_device, 0, 64);
  ca::Region* r = dm.try_allocate_at(fast_device, 8192, 1000);
  REQUIRE(r != nullptr);
  CHECK(dm.offset(*r) == 8192);
  CHECK(dm.size(*r) == 1000);
  CHECK(dm.device(*r) == fast_device);
  CHECK(dm.parent(*r) == nullptr);
  CHECK(dm.pointer(*r) - dm.pointer(first) == 8192);
  CHECK(dm.usage(fast_device).bytes_used == 64 + 1024);
  CHECK(dm.stats().devices[fast_device].allocations == 2);
  CHECK(dm.stats().devices[fast_device].peak_extent == 8192 + 1024);
  dm.check_invariants();

  ca::Object& o = dm.create_object(1000);
  dm.setprimary(o, *r);
  test::fill(dm.pointer(*r), 1000, 3);
  const ca::DeviceUsage before = dm.usage(fast_device);
  const ca::Stats stats_before = dm.stats();
  CHECK(dm.try_allocate_at(fast_device, 8192, 64) == nullptr);          // its first bytes
  CHECK(dm.try_allocate_at(fast_device, 8192 - 64, 128) == nullptr);    // straddles its start
  CHECK(dm.try_allocate_at(fast_device, 8192 + 960, 4096) == nullptr);  // straddles its end
  CHECK(dm.try_allocate_at(fast_device, 4096, 60 * 1024) == nullptr);   // covers it
  CHECK_THROWS_AS(dm.allocate_at(fast_device, 8192 + 512, 64), ca::invalid_operation);
  const ca::DeviceUsage after = dm.usage(fast_device);
  CHECK(after.bytes_used == before.bytes_used);
  CHECK(after.largest_free_block == before.largest_free_block);
  CHECK(after.live_regions == before.live_regions);
  CHECK(dm.stats().since(stats_before).devices[fast_device].allocations == 0);
  CHECK(dm.stats().since(stats_before).devices[fast_device].failed_allocations == 0);
  CHECK(dm.getprimary(o) == r);
  CHECK(test::object_holds(dm, o, 3));
  dm.check_invariants(true);

  // Around it the heap serves online allocations as before: the hole in
  // front of the planned region first (best fit), then the end.
  ca::Region* online = dm.allocate(fast_device, 4096);
  REQUIRE(online != nullptr);
  CHECK(dm.offset(*online) == 64);
  dm.free(*online);
  dm.free(first);
  dm.destroy(o);
  dm.check_invariants();
  CHECK(dm.usage(fast_device).largest_free_block == 64 * 1024);
}

TEST_CASE("manager: regions placed by allocate_at are evicted, defragmented and freed like any other") {
  ca::DataManager dm(two_tiers(64 * 1024));
  std::vector<ca::Object*> objects;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ca::Object& o = dm.create_object(8 * 1024);
    dm.setprimary(o, dm.allocate_at(fast_device, (2 + 2 * i) * 8 * 1024, 8 * 1024));  // 16, 32 and 48 KiB
    dm.pin(o, ca::Access::write);
    test::fill(dm.pointer(*dm.getprimary(o)), 8 * 1024, 60 + i);
    ca::DataManager::unpin(o, ca::Access::write);
    objects.push_back(&o);
  }
  dm.check_invariants(true);
  // defrag slides planned regions down too (their offsets leave the plan),
  // except a pinned primary.
  dm.pin(*objects[1], ca::Access::read);
  CHECK(dm.defrag(fast_device) == 2);
  CHECK(dm.offset(*dm.getprimary(*objects[0])) == 0);
  CHECK(dm.offset(*dm.getprimary(*objects[1])) == 32 * 1024);
  CHECK(dm.offset(*dm.getprimary(*objects[2])) == 40 * 1024);
  ca::DataManager::unpin(*objects[1], ca::Access::read);
  for (std::uint64_t i = 0; i < 3; ++i) CHECK(test::object_holds(dm, *objects[i], 60 + i));
  dm.check_invariants(true);
  // evictfrom clears them through the callback.
  CHECK(dm.evictfrom(fast_device, 32 * 1024, 16 * 1024, [&](ca::Region& region) {
    return ca::policy::evict(dm, *dm.parent(region), fast_device, slow_device).moved;
  }));
  CHECK(dm.device(*dm.getprimary(*objects[1])) == slow_device);
  CHECK(dm.device(*dm.getprimary(*objects[2])) == slow_device);
  for (std::uint64_t i = 0; i < 3; ++i) CHECK(test::object_holds(dm, *objects[i], 60 + i));
  dm.check_invariants(true);
  // The freed range can be placed again, and freeing coalesces to one hole.
  ca::Region& again = dm.allocate_at(fast_device, 32 * 1024, 16 * 1024);
  dm.free(again);
  for (ca::Object* o : objects) dm.destroy(*o);
  dm.check_invariants();
  CHECK(dm.usage(fast_device).bytes_used == 0);
  CHECK(dm.usage(fast_device).largest_free_block == 64 * 1024);
}
