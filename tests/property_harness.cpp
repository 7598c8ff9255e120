// The property harness's bookkeeping, its checks of the manager against the
// model after every operation, and the run that draws the operations.
#include "property_model.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace property {

ModelObject* Harness::pick(const std::function<bool(const ModelObject&)>& want, int tries) {
  if (ids_.empty()) return nullptr;
  for (int i = 0; i < tries; ++i) {
    ModelObject& m = objects_.at(ids_[rng_.below(ids_.size())]);
    if (!want || want(m)) return &m;
  }
  return nullptr;
}

// loose_ is ordered by the addresses of the Region nodes, which change with
// everything the process allocated before; heap order does not, so choosing
// in it keeps a seed's operations the same in every build and every run.
std::vector<ca::Region*> Harness::loose_in_heap_order() const {
  std::vector<ca::Region*> order;
  for (const auto& [r, l] : loose_) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](const ca::Region* a, const ca::Region* b) {
    return std::pair(dm_.device(*a), dm_.offset(*a)) < std::pair(dm_.device(*b), dm_.offset(*b));
  });
  return order;
}

Loose* Harness::pick_loose(ca::Region** region) {
  if (loose_.empty()) return nullptr;
  const std::vector<ca::Region*> order = loose_in_heap_order();
  *region = order[rng_.below(order.size())];
  return &loose_.at(*region);
}

// After dm_.destroy: m.object is gone, so the id comes from the slot.
void Harness::erase(ModelObject& m) {
  const std::size_t slot = m.slot;
  const std::uint64_t id = ids_[slot];
  ids_[slot] = ids_.back();
  objects_.at(ids_[slot]).slot = slot;
  ids_.pop_back();
  objects_.erase(id);
}

// ---- checks -------------------------------------------------------------------

void Harness::check_object(const ModelObject& m, bool contents) {
  INFO("object #" << m.object->id() << " of " << m.bytes << " bytes, primary on device " << m.primary);
  const ca::Object& o = *m.object;
  REQUIRE(o.bytes() == m.bytes);
  REQUIRE_FALSE(o.pinned());
  const ca::Region& p = primary(m);
  REQUIRE(dm_.device(p) == m.primary);
  REQUIRE(dm_.parent(p) == &o);
  REQUIRE(dm_.isvalid(p));  // a primary is always the current contents
  for (ca::DeviceId d = 0; d < 2; ++d) {
    const Copy& c = m.copies[d];
    const ca::Region* r = dm_.getlinked(p, d);
    INFO("device " << d);
    REQUIRE((r != nullptr) == c.present);
    if (r == nullptr) continue;
    // Invariant 2: one region per device, same size, same parent.
    REQUIRE(dm_.size(*r) == m.bytes);
    REQUIRE(dm_.device(*r) == d);
    REQUIRE(dm_.parent(*r) == &o);
    REQUIRE(dm_.isdirty(*r) == c.dirty);
    if (d == m.primary) {
      REQUIRE(r == &p);
      REQUIRE(c.epoch == m.epoch);
      continue;
    }
    // Asked before in_flight: the mover may land the copy in between, and
    // a copy that was in flight after the isvalid call was in flight
    // during it.
    const bool valid = dm_.isvalid(*r);
    if (dm_.in_flight(*r)) {
      // Invariant 7: not a valid copy, and not to be read, until it lands.
      REQUIRE_FALSE(valid);
      ++counts.async_in_flight_at_check;
      continue;
    }
    if (valid != m.valid(d)) REQUIRE(dm_.isvalid(*r) == m.valid(d));  // landed since the first call
    if (m.valid(d)) REQUIRE(c.seed == m.seed);                        // the model's own consistency
    // A stale copy keeps the older contents it was given: nothing but a
    // copyto may change a region's bytes.
    if (contents && c.seed) {
      REQUIRE_MESSAGE(first_mismatch(dm_.pointer(*r), m.bytes, *c.seed) == m.bytes, "a secondary lost its contents");
    }
  }
  if (contents) {
    const std::uint64_t at = first_mismatch(dm_.pointer(p), m.bytes, m.seed);
    REQUIRE_MESSAGE(at == m.bytes, "invariant 5: byte " << at << " of the primary changed");
  }
}

void Harness::check_loose(ca::Region* region, const Loose& l, bool contents) {
  REQUIRE(dm_.parent(*region) == nullptr);
  REQUIRE(dm_.device(*region) == l.device);
  REQUIRE(dm_.size(*region) == l.bytes);
  REQUIRE(dm_.isdirty(*region) == l.dirty);
  REQUIRE_FALSE(dm_.isvalid(*region));
  if (contents && l.seed && !dm_.in_flight(*region)) {
    REQUIRE_MESSAGE(first_mismatch(dm_.pointer(*region), l.bytes, *l.seed) == l.bytes,
                    "a free-standing region lost its contents");
  }
}

// Invariant 6: each heap's bytes in use are the rounded sizes of the live
// regions the model knows of; and the stats agree.
void Harness::check_usage() {
  std::array<std::uint64_t, 2> bytes{};
  std::array<std::uint64_t, 2> count{};
  for (const auto& [id, m] : objects_) {
    for (ca::DeviceId d = 0; d < 2; ++d) {
      if (!m.copies[d].present) continue;
      bytes[d] += round_up(m.bytes);
      ++count[d];
    }
  }
  for (const auto& [r, l] : loose_) {
    bytes[l.device] += round_up(l.bytes);
    ++count[l.device];
  }
  const ca::Stats& stats = dm_.stats();
  for (ca::DeviceId d = 0; d < 2; ++d) {
    INFO("device " << d);
    const ca::DeviceUsage u = dm_.usage(d);
    REQUIRE(u.bytes_used == bytes[d]);
    REQUIRE(u.live_regions == count[d]);
    REQUIRE(stats.devices[d].bytes_in_use == bytes[d]);
    REQUIRE(stats.devices[d].live_regions == count[d]);
    REQUIRE(u.largest_free_block <= u.capacity - u.bytes_used);
  }
  REQUIRE(stats.objects_created - stats.objects_destroyed == objects_.size());
}

// Invariant 2 from the heaps' side: every live region belongs to exactly one
// thing the model knows, and no object has two regions on one device.
void Harness::check_invariant2() {
  for (ca::DeviceId d = 0; d < 2; ++d) {
    std::map<const ca::Object*, int> per_object;
    std::uint64_t regions = 0;
    dm_.for_each_region(d, [&](ca::Region& r) {
      ++regions;
      REQUIRE(dm_.device(r) == d);
      if (const ca::Object* o = dm_.parent(r)) {
        REQUIRE(++per_object[o] == 1);
        REQUIRE(dm_.getlinked(r, d) == &r);
        REQUIRE(dm_.size(r) == o->bytes());
        REQUIRE(objects_.count(o->id()) == 1);
        REQUIRE(objects_.at(o->id()).copies[d].present);
      } else {
        REQUIRE(loose_.count(&r) == 1);
      }
    });
    std::uint64_t objects_here = 0;
    dm_.for_each_object([&](const ca::Object& o) {
      if (dm_.getlinked(*dm_.getprimary(o), d) != nullptr) ++objects_here;
    });
    REQUIRE(objects_here == per_object.size());
  }
  std::uint64_t live = 0;
  dm_.for_each_object([&](const ca::Object&) { ++live; });
  REQUIRE(live == objects_.size());
}

void Harness::check_step(std::uint64_t step) {
  const bool deep = step % 100 == 0;
  const bool all_contents = step % 1000 == 0;
  try {
    dm_.check_invariants(deep);  // deep: valid secondaries equal their primaries byte for byte
  } catch (const ca::invariant_violation& e) {
    FAIL("check_invariants: " << std::string(e.what()));
  }
  check_usage();
  for (std::uint64_t id : touched_) {
    if (auto it = objects_.find(id); it != objects_.end()) check_object(it->second, true);
  }
  touched_.clear();
  if (deep) {
    check_invariant2();
    for (const auto& [id, m] : objects_) check_object(m, all_contents);
    for (const auto& [r, l] : loose_) check_loose(r, l, all_contents);
  }
}

Snapshot Harness::snapshot() const {
  Snapshot s;
  for (ca::DeviceId d = 0; d < 2; ++d) {
    dm_.for_each_region(d, [&](ca::Region& r) { s.emplace_back(&r, dm_.offset(r), dm_.parent(r), dm_.isdirty(r)); });
  }
  return s;
}

// After evictfrom returned true, no live region overlaps the range.
void Harness::check_range_clear(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes) {
  const std::uint64_t lo = start & ~(alignment - 1);
  const std::uint64_t hi = round_up(start + bytes);
  dm_.for_each_region(d, [&](ca::Region& r) {
    const std::uint64_t b = dm_.offset(r);
    REQUIRE_MESSAGE((b + round_up(dm_.size(r)) <= lo || b >= hi),
                    "evictfrom returned true but a region is left in the range");
  });
  REQUIRE(dm_.usage(d).largest_free_block >= hi - lo);
}

// ---- the run: operations drawn by weight, checks after each ----------------

void Harness::run(std::uint64_t ops) {
  // Each operation once: its name for a failure's report, its weight, and
  // what it does. create's and destroy's weights are set at every step.
  struct Operation {
    const char* name;
    std::uint64_t weight;
    void (Harness::*apply)();
  };
  std::array<Operation, 25> operations{{
      {"create", 14, &Harness::op_create},
      {"write", 9, &Harness::op_write},
      {"clean", 2, &Harness::op_clean},
      {"read", 9, &Harness::op_read},
      {"copy_link", 6, &Harness::op_copy_link},
      {"copy_link_async", 5, &Harness::op_copy_link_async},
      {"setprimary", 5, &Harness::op_setprimary},
      {"stale_setprimary", 2, &Harness::op_stale_setprimary},
      {"setprimary_join", 2, &Harness::op_setprimary_join},
      {"evict_down", 4, &Harness::op_evict_down},
      {"evict_up", 2, &Harness::op_evict_up},
      {"prefetch", 8, &Harness::op_prefetch},
      {"unlink", 5, &Harness::op_unlink},
      {"relink", 2, &Harness::op_relink},
      {"loose_alloc", 2, &Harness::op_loose_alloc},
      {"loose_free", 2, &Harness::op_loose_free},
      {"overwrite", 3, &Harness::op_overwrite},
      {"evictfrom_fast", 2, &Harness::op_evictfrom_fast},
      {"evictfrom_slow", 1, &Harness::op_evictfrom_slow},
      {"defrag", 1, &Harness::op_defrag_either},
      {"make_hole", 1, &Harness::op_make_hole},
      {"pinned", 2, &Harness::op_pinned},
      {"torn_copy", 1, &Harness::op_torn_copy},
      {"errors", 2, &Harness::op_errors},
      {"destroy", 0, &Harness::op_destroy},
  }};
  Operation& create = operations.front();
  Operation& destroy = operations.back();
  for (std::uint64_t step = 1; step <= ops; ++step) {
    // Destroys keep the population near the target: both heaps stay busy and
    // DRAM is full most of the time.
    const std::uint64_t target = target_objects[(step / phase_ops) % target_objects.size()];
    create.weight = ids_.size() < target ? 40 : 14;
    destroy.weight = 14 * ids_.size() / target;
    std::uint64_t total = 0;
    for (const Operation& o : operations) total += o.weight;
    std::uint64_t x = rng_.below(total);
    std::size_t op = 0;
    while (x >= operations[op].weight) x -= operations[op++].weight;
    INFO("step " << step << ": " << std::string(operations[op].name));
    (this->*operations[op].apply)();
    check_step(step);
  }
  // Finally every byte of every object, and a clean teardown of the model.
  check_step(0);
  while (!ids_.empty()) {
    ModelObject& m = objects_.at(ids_.back());
    check_object(m, true);
    dm_.destroy(*m.object);
    erase(m);
  }
  while (!loose_.empty()) {
    dm_.free(*loose_.begin()->first);
    loose_.erase(loose_.begin());
  }
  check_step(0);
  for (ca::DeviceId d = 0; d < 2; ++d) REQUIRE(dm_.usage(d).bytes_used == 0);
}

}  // namespace property
