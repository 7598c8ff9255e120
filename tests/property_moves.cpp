// The property harness's moves, each outcome predicted by the model:
// Listing 1 `evict`, Listing 2 `prefetch`, evictfrom over a range whose
// callback moves or declines, and defrag.
#include "property_model.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace property {

// Listing 1 through policy::evict, with its outcome predicted by the model:
// it moves when the primary is on `from` and `to` has a linked region or a
// hole, and writes back unless `to` holds a valid copy (also of a dirty
// primary, copied since its last write).
bool Harness::do_evict(ModelObject& m, ca::DeviceId from, ca::DeviceId to) {
  const Copy& y = m.copies[to];
  const bool allocated = !y.present;
  const bool movable =
      m.primary == from && !m.object->pinned() && (!allocated || dm_.usage(to).largest_free_block >= round_up(m.bytes));
  const bool write_back = allocated || !m.valid(to);
  const ca::policy::EvictOutcome out = ca::policy::evict(dm_, *m.object, from, to);
  REQUIRE(out.moved == movable);
  if (!out.moved) return false;
  REQUIRE(out.wrote_back == write_back);
  if (write_back) m.copies[to] = {true, m.epoch, m.seed, false};
  REQUIRE(m.copies[to].epoch == m.epoch);
  m.copies[from] = {};
  m.primary = to;
  touch(m);
  return true;
}

void Harness::op_evict(ca::DeviceId from, ca::DeviceId to) {
  ModelObject* m = pick([from](const ModelObject& x) { return x.primary == from; }, 4);
  if (m == nullptr) m = pick();
  if (m == nullptr) return;
  if (do_evict(*m, from, to))
    ++counts.evicts;
  else
    ++counts.evicts_refused;
}

// Listing 2 through policy::prefetch. An object whose primary is slow may
// also have a fast secondary (this test breaks the paper's policy invariant
// on purpose): a valid one is promoted without a copy, a stale one dropped.
void Harness::op_prefetch() {
  ModelObject* m = pick([](const ModelObject& x) { return x.primary == slow_device; }, 6);
  if (m == nullptr) m = pick();
  if (m == nullptr) return;
  if (m->primary == fast_device) {  // nothing to do
    const Snapshot before = snapshot();
    REQUIRE(ca::policy::prefetch(dm_, *m->object, fast_device, slow_device));
    REQUIRE(snapshot() == before);
    touch(*m);
    return;
  }
  const bool had_fast = m->copies[fast_device].present;
  const bool promote = m->valid(fast_device);
  // Without a fast region the outcome is predictable: room now, or make_room.
  const bool fits = !had_fast && dm_.usage(fast_device).largest_free_block >= round_up(m->bytes);
  std::optional<bool> room;  // what make_room returned, if it was called
  std::function<bool(std::uint64_t)> make_room;
  if (rng_.percent(60)) {
    make_room = [&](std::uint64_t bytes) {
      REQUIRE(bytes == m->bytes);
      REQUIRE_FALSE(dm_.getlinked(primary(*m), fast_device));  // a stale fast copy is gone by now
      const std::uint64_t start = rng_.below(fast_capacity - round_up(bytes) + 1);
      room = evict_range(fast_device, start, bytes, rng_.percent(20) ? static_cast<int>(rng_.below(3)) : -1);
      return *room;
    };
  }
  const std::uint64_t copies_before = dm_.stats().copies[slow_device][fast_device];
  const bool ok = ca::policy::prefetch(dm_, *m->object, fast_device, slow_device, make_room);
  if (promote) {
    REQUIRE(ok);
    REQUIRE_FALSE(room.has_value());
    REQUIRE(dm_.stats().copies[slow_device][fast_device] == copies_before);  // no copy needed
    m->primary = fast_device;
  } else {
    if (fits) REQUIRE_FALSE(room.has_value());
    if (room) REQUIRE(ok == *room);  // a cleared range always takes the allocation
    if (!had_fast) REQUIRE(ok == (fits || room.value_or(false)));
    m->copies[fast_device] = {};
    if (ok) {
      m->copies[fast_device] = {true, m->epoch, m->seed, false};
      m->primary = fast_device;
    }
  }
  if (ok) {
    REQUIRE(m->valid(slow_device));
    ++counts.prefetches;
  }
  if (room) ++counts.prefetch_room;
  touch(*m);
}

// evictfrom over [start, start + bytes) of device d whose callback moves each
// primary to the other device (Listing 1), frees secondaries and
// free-standing regions, and declines after `declines_after` regions (-1:
// never). Returns what evictfrom returned, which must be "cleared" exactly
// when no callback declined.
bool Harness::evict_range(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes, int declines_after) {
  const ca::DeviceId other = 1 - d;
  const std::uint64_t evictions_before = dm_.stats().devices[d].evictions;
  std::uint64_t accepted = 0;
  bool declined = false;
  const bool cleared = dm_.evictfrom(d, start, bytes, [&](ca::Region& r) {
    REQUIRE_FALSE(declined);  // the walk stops at the first decline
    REQUIRE(dm_.device(r) == d);
    if (declines_after >= 0 && accepted == static_cast<std::uint64_t>(declines_after)) {
      declined = true;
      return false;
    }
    ca::Object* o = dm_.parent(r);
    if (o == nullptr) {
      REQUIRE(loose_.count(&r) == 1);
      loose_.erase(&r);
      dm_.free(r);
    } else if (dm_.getprimary(*o) != &r) {
      model_of(*o).copies[d] = {};
      dm_.free(r);
      touch(model_of(*o));
    } else if (!do_evict(model_of(*o), d, other)) {
      declined = true;  // the other device is full
      return false;
    }
    ++accepted;
    return true;
  });
  REQUIRE(cleared == !declined);
  REQUIRE(dm_.stats().devices[d].evictions - evictions_before == accepted);
  if (cleared) {
    check_range_clear(d, start, bytes);
    ++counts.evictfrom_cleared;
  } else {
    ++counts.evictfrom_declined;
  }
  return cleared;
}

void Harness::op_evictfrom(ca::DeviceId d) {
  const std::uint64_t capacity = d == fast_device ? fast_capacity : slow_capacity;
  const std::uint64_t bytes = rng_.percent(50) ? rng_.between(1, 16 * KiB) : rng_.between(1, 512 * KiB);
  const std::uint64_t start = rng_.below(capacity - bytes + 1);
  evict_range(d, start, bytes, rng_.percent(25) ? static_cast<int>(rng_.below(4)) : -1);
}

// defrag slides regions down: every moved region keeps its contents, and with
// nothing pinned the free space ends as one hole.
void Harness::op_defrag(ca::DeviceId d, bool pinned) {
  std::map<ca::Region*, std::uint64_t> offsets;
  dm_.for_each_region(d, [&](ca::Region& r) { offsets[&r] = dm_.offset(r); });
  const std::uint64_t moves_before = dm_.stats().devices[d].defrag_moves;
  const std::uint64_t moved = dm_.defrag(d);
  REQUIRE(dm_.stats().devices[d].defrag_moves - moves_before == moved);
  std::uint64_t changed = 0;
  dm_.for_each_region(d, [&](ca::Region& r) {
    REQUIRE(offsets.count(&r) == 1);
    if (offsets[&r] == dm_.offset(r)) return;
    REQUIRE(dm_.offset(r) < offsets[&r]);  // slid towards the start
    ++changed;
    if (ca::Object* o = dm_.parent(r))
      touch(model_of(*o));
    else
      check_loose(&r, loose_.at(&r), true);
  });
  REQUIRE(changed == moved);
  const ca::DeviceUsage u = dm_.usage(d);
  if (!pinned && u.bytes_used < u.capacity) REQUIRE(u.largest_free_block == u.capacity - u.bytes_used);
  ++counts.defrags;
  counts.defrag_moves += moved;
}

// make_hole moves the regions of one window into holes outside it: every
// moved region keeps its contents, no pinned primary moves, and when it
// reports success a hole of the size asked for exists.
void Harness::op_make_hole() {
  const ca::DeviceId d = rng_.percent(70) ? fast_device : slow_device;
  const std::uint64_t capacity = d == fast_device ? fast_capacity : slow_capacity;
  const std::uint64_t bytes = rng_.between(1, capacity / 4);
  std::map<ca::Region*, std::uint64_t> offsets;
  dm_.for_each_region(d, [&](ca::Region& r) { offsets[&r] = dm_.offset(r); });
  const bool had_hole = dm_.usage(d).largest_free_block >= bytes;
  const std::uint64_t moves_before = dm_.stats().devices[d].defrag_moves;
  const bool made = dm_.make_hole(d, bytes);
  const std::uint64_t moved = dm_.stats().devices[d].defrag_moves - moves_before;
  std::uint64_t changed = 0;
  dm_.for_each_region(d, [&](ca::Region& r) {
    REQUIRE(offsets.count(&r) == 1);
    if (offsets[&r] == dm_.offset(r)) return;
    ++changed;
    ca::Object* o = dm_.parent(r);
    REQUIRE_FALSE((o != nullptr && dm_.getprimary(*o) == &r && o->pinned()));
    if (o != nullptr)
      touch(model_of(*o));
    else
      check_loose(&r, loose_.at(&r), true);
  });
  REQUIRE(changed == moved);
  if (had_hole) REQUIRE((made && moved == 0));
  if (made) REQUIRE(dm_.usage(d).largest_free_block >= bytes);
  if (made && !had_hole) ++counts.holes_made;
  counts.hole_moves += moved;
}

}  // namespace property
