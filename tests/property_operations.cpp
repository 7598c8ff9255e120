// The property harness's operations on objects and regions: create, write,
// read, copies and links, setprimary, unlink and relink, free-standing
// regions, overwrite and destroy — each mirrored in the model.
#include "property_model.hpp"

#include <cstdint>

namespace property {

void Harness::op_create() {
  const std::uint64_t bytes = random_size(rng_);
  ca::DeviceId d = rng_.percent(70) ? fast_device : slow_device;  // new objects start fast, mostly
  ca::Object& o = dm_.create_object(bytes);
  ca::Region* r = dm_.allocate(d, bytes);
  if (r == nullptr) {
    d = 1 - d;
    r = dm_.allocate(d, bytes);
  }
  if (r == nullptr) {  // both heaps full: nothing else may change
    dm_.destroy(o);
    ++counts.failed_creates;
    return;
  }
  REQUIRE(dm_.parent(*r) == nullptr);
  REQUIRE_FALSE(dm_.isdirty(*r));
  dm_.setprimary(o, *r);
  const std::uint64_t seed = new_seed();
  if (rng_.percent(50)) {
    dm_.pin(o, ca::Access::write);
    fill_pattern(dm_.pointer(*r), bytes, seed);
    ca::DataManager::unpin(o, ca::Access::write);
  } else {
    dm_.setdirty(*r, true);
    fill_pattern(dm_.pointer(*r), bytes, seed);
  }
  ModelObject m;
  m.object = &o;
  m.bytes = bytes;
  m.primary = d;
  m.slot = ids_.size();
  bump(m, seed);
  ids_.push_back(o.id());
  touch(objects_.emplace(o.id(), m).first->second);
  ++counts.creates;
}

void Harness::op_write() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  const std::uint64_t seed = new_seed();
  ca::Region& p = primary(*m);
  if (rng_.percent(75)) {
    dm_.pin(*m->object, ca::Access::write);
    REQUIRE(m->object->being_written());
    fill_pattern(dm_.pointer(p), m->bytes, seed);
    ca::DataManager::unpin(*m->object, ca::Access::write);
  } else {  // a policy writing through the pointer marks the primary dirty first
    dm_.setdirty(p, true);
    fill_pattern(dm_.pointer(p), m->bytes, seed);
  }
  bump(*m, seed);
  touch(*m);
}

void Harness::op_clean() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  dm_.setdirty(primary(*m), false);
  m->copies[m->primary].dirty = false;
  touch(*m);
}

void Harness::op_read() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  dm_.pin(*m->object, ca::Access::read);
  REQUIRE(m->object->pinned());
  REQUIRE_FALSE(m->object->being_written());
  const std::uint64_t at = first_mismatch(dm_.pointer(primary(*m)), m->bytes, m->seed);
  ca::DataManager::unpin(*m->object, ca::Access::read);
  REQUIRE_MESSAGE(at == m->bytes, "read: byte " << at << " changed");
  touch(*m);
}

// A secondary on the other device: a fresh copy, or a stale one refreshed.
void Harness::op_copy_link() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Region& p = primary(*m);
  if (ca::Region* existing = dm_.getlinked(p, e)) {
    dm_.copyto(*existing, p);
  } else {
    ca::Region* r = dm_.allocate(e, m->bytes);
    if (r == nullptr) return;
    dm_.copyto(*r, p);
    if (rng_.percent(50))
      dm_.link(p, *r);
    else
      dm_.link(*r, p);
    REQUIRE(dm_.parent(*r) == m->object);
  }
  m->copies[e] = {true, m->epoch, m->seed, false};
  touch(*m);
}

// The same with copyto_async, left in flight: whatever operation comes next
// must wait for it where it needs the bytes (invariant 7), and the model
// counts the copy as valid, as it will be once it lands.
void Harness::op_copy_link_async() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Region& p = primary(*m);
  ca::Region* r = dm_.getlinked(p, e);
  if (r == nullptr) {
    r = dm_.allocate(e, m->bytes);
    if (r == nullptr) return;
    dm_.link(p, *r);
  }
  // The fence is dropped: the manager keeps the copy's state.
  (void)dm_.copyto_async(*r, p);
  m->copies[e] = {true, m->epoch, m->seed, false};
  ++counts.async_copies;
  touch(*m);
}

void Harness::op_setprimary() {
  ModelObject* m = pick([](const ModelObject& x) { return x.valid(1 - x.primary); });
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  dm_.setprimary(*m->object, *region_on(*m, e));
  m->primary = e;  // the old primary stays as a valid secondary
  REQUIRE(m->valid(1 - e));
  touch(*m);
}

// setprimary with `r`, which holds no copy of the object's contents, is
// refused and changes nothing.
void Harness::refuse_setprimary(const ModelObject& m, ca::Region& r) {
  const Snapshot before = snapshot();
  CHECK_THROWS_AS(dm_.setprimary(*m.object, r), ca::invalid_operation);
  REQUIRE(snapshot() == before);
  ++counts.expected_errors;
}

// `r`, on the device other than the primary's, given the current contents
// and made the primary.
void Harness::refresh_and_promote(ModelObject& m, ca::Region& r) {
  const ca::DeviceId e = 1 - m.primary;
  dm_.copyto(r, primary(m));
  dm_.setprimary(*m.object, r);
  m.copies[e] = {true, m.epoch, m.seed, false};
  m.primary = e;
}

// Invariant 4: a copy taken before the last write cannot become the primary.
void Harness::op_stale_setprimary() {
  ModelObject* m = pick([](const ModelObject& x) { return x.copies[1 - x.primary].present; });
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  const std::uint64_t seed = new_seed();
  dm_.pin(*m->object, ca::Access::write);
  fill_pattern(dm_.pointer(primary(*m)), m->bytes, seed);
  ca::DataManager::unpin(*m->object, ca::Access::write);
  bump(*m, seed);
  ca::Region* stale = region_on(*m, e);
  REQUIRE_FALSE(dm_.isvalid(*stale));
  refuse_setprimary(*m, *stale);
  check_object(*m, true);
  if (rng_.percent(50)) refresh_and_promote(*m, *stale);  // refreshed, it may
  touch(*m);
}

// setprimary with a free-standing region: it joins the object, but only as a
// copy of the current contents.
void Harness::op_setprimary_join() {
  ModelObject* m = pick([](const ModelObject& x) { return !x.copies[1 - x.primary].present; });
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Region* r = dm_.allocate(e, m->bytes);
  if (r == nullptr) return;
  if (rng_.percent(30)) {  // never copied: not the object's contents
    refuse_setprimary(*m, *r);
    dm_.free(*r);
  } else {
    refresh_and_promote(*m, *r);
  }
  touch(*m);
}

// Drop a secondary: unlink (either order) then free, free directly, or keep
// the unlinked region free-standing for a later relink.
void Harness::op_unlink() {
  ModelObject* m = pick([](const ModelObject& x) { return x.copies[1 - x.primary].present; });
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Region& p = primary(*m);
  ca::Region* s = region_on(*m, e);
  const std::uint64_t how = rng_.below(3);
  if (how == 0) {
    dm_.free(*s);
  } else {
    if (rng_.percent(50))
      dm_.unlink(p, *s);
    else
      dm_.unlink(*s, p);
    REQUIRE(dm_.parent(*s) == nullptr);
    REQUIRE(dm_.getlinked(p, e) == nullptr);
    REQUIRE_FALSE(dm_.isvalid(*s));
    const Copy& c = m->copies[e];
    if (how == 1 || loose_.size() >= 24)
      dm_.free(*s);
    else
      loose_[s] = {e, m->bytes, c.seed, c.epoch, c.dirty, m->object->id()};
  }
  m->copies[e] = {};
  touch(*m);
}

// A region unlinked earlier goes back to its object: it is a valid copy
// again exactly when the object has not been written since.
void Harness::op_relink() {
  for (ca::Region* r : loose_in_heap_order()) {
    Loose& l = loose_.at(r);
    if (l.from_object == 0) continue;
    auto it = objects_.find(l.from_object);
    if (it == objects_.end()) {
      l.from_object = 0;
      continue;
    }
    ModelObject& m = it->second;
    if (m.copies[l.device].present) continue;
    ca::Region* region = r;
    if (rng_.percent(50))
      dm_.link(primary(m), *region);
    else
      dm_.link(*region, primary(m));
    m.copies[l.device] = {true, l.epoch, l.seed, l.dirty};
    ++counts.relinks;
    if (m.valid(l.device)) ++counts.relinked_valid;
    loose_.erase(region);
    touch(m);
    return;
  }
}

void Harness::op_loose_alloc() {
  if (loose_.size() >= 24) return;
  const auto d = static_cast<ca::DeviceId>(rng_.below(2));
  const std::uint64_t bytes = random_size(rng_);
  ca::Region* r = dm_.allocate(d, bytes);
  if (r == nullptr) return;
  const std::uint64_t seed = new_seed();
  fill_pattern(dm_.pointer(*r), bytes, seed);
  const bool dirty = rng_.percent(30);
  if (dirty) dm_.setdirty(*r, true);
  loose_[r] = {d, bytes, seed, 0, dirty, 0};
}

void Harness::op_loose_free() {
  ca::Region* r = nullptr;
  if (pick_loose(&r) == nullptr) return;
  dm_.free(*r);
  loose_.erase(r);
}

// copyto into a primary gives the object new contents: from a free-standing
// region, or restored from its own secondary.
void Harness::op_overwrite() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Region& p = primary(*m);
  if (m->copies[e].seed && rng_.percent(40)) {
    const std::uint64_t seed = *m->copies[e].seed;
    dm_.copyto(p, *region_on(*m, e));
    bump(*m, seed);
  } else {
    const auto d = static_cast<ca::DeviceId>(rng_.below(2));
    ca::Region* src = dm_.allocate(d, m->bytes);
    if (src == nullptr) return;
    const std::uint64_t seed = new_seed();
    fill_pattern(dm_.pointer(*src), m->bytes, seed);
    dm_.copyto(p, *src);
    bump(*m, seed);
    if (rng_.percent(50) || loose_.size() >= 24)
      dm_.free(*src);
    else
      loose_[src] = {d, m->bytes, seed};
  }
  touch(*m);
}

void Harness::op_destroy() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  dm_.destroy(*m->object);
  erase(*m);
  ++counts.destroys;
}

}  // namespace property
