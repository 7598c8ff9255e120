// The property harness's calls that the manager must refuse — on a pinned
// object, on a copy torn by an open write, with bad regions, devices or
// sizes — each leaving every region as it was.
#include "property_model.hpp"

#include <algorithm>
#include <cstdint>

namespace property {

// Invariant 3: while an access is open the object's primary neither moves
// nor goes away, whatever is asked of the manager.
void Harness::op_pinned() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  ca::Object& o = *m->object;
  const ca::DeviceId d = m->primary;
  dm_.pin(o, ca::Access::read);
  ca::Region& p = primary(*m);
  std::byte* const data = dm_.pointer(p);
  const std::uint64_t at = dm_.offset(p);
  const std::uint64_t capacity = d == fast_device ? fast_capacity : slow_capacity;
  switch (rng_.below(3)) {
    case 0: {  // an evictfrom range holding the pinned primary is refused untouched
      const std::uint64_t start = at - rng_.below(std::min<std::uint64_t>(at, 256 * KiB) + 1);
      const std::uint64_t bytes = rng_.between(at - start + 1, std::min(capacity - start, at - start + 512 * KiB));
      const Snapshot before = snapshot();
      bool called = false;
      CHECK_THROWS_AS(dm_.evictfrom(d, start, bytes, [&](ca::Region&) { return called = true; }), ca::pinned_error);
      REQUIRE_FALSE(called);
      REQUIRE(snapshot() == before);
      ++counts.pinned_refusals;
      break;
    }
    case 1: op_defrag(d, /*pinned=*/true); break;
    default: {  // moves and frees are refused or declined
      const Snapshot before = snapshot();
      REQUIRE_FALSE(ca::policy::evict(dm_, o, d, 1 - d).moved);
      if (d == slow_device) REQUIRE_FALSE(ca::policy::prefetch(dm_, o, fast_device, slow_device));
      if (m->valid(1 - d)) CHECK_THROWS_AS(dm_.setprimary(o, *region_on(*m, 1 - d)), ca::pinned_error);
      CHECK_THROWS_AS(dm_.destroy(o), ca::pinned_error);
      CHECK_THROWS_AS(dm_.copyto(p, p), ca::invalid_operation);
      REQUIRE(snapshot() == before);
      if (ca::Region* src = dm_.allocate(1 - d, m->bytes)) {
        CHECK_THROWS_AS(dm_.copyto(p, *src), ca::pinned_error);
        dm_.free(*src);
      }
      ++counts.pinned_refusals;
      break;
    }
  }
  REQUIRE(dm_.getprimary(o) == &p);
  REQUIRE(dm_.pointer(p) == data);
  REQUIRE(first_mismatch(data, m->bytes, m->seed) == m->bytes);
  ca::DataManager::unpin(o, ca::Access::read);
  touch(*m);
}

// A copy taken while a write access is open may be torn: it never counts
// as valid, neither during the access nor after it.
void Harness::op_torn_copy() {
  ModelObject* m = pick([](const ModelObject& x) { return !x.copies[1 - x.primary].present; });
  if (m == nullptr) return;
  const ca::DeviceId e = 1 - m->primary;
  ca::Object& o = *m->object;
  ca::Region* r = dm_.allocate(e, m->bytes);
  if (r == nullptr) return;
  const std::uint64_t seed = new_seed();
  dm_.pin(o, ca::Access::write);
  fill_pattern(dm_.pointer(primary(*m)), m->bytes, seed);
  dm_.copyto(*r, primary(*m));
  dm_.link(primary(*m), *r);
  REQUIRE_FALSE(dm_.isvalid(*r));
  CHECK_THROWS_AS(dm_.setprimary(o, *r), ca::pinned_error);
  ca::DataManager::unpin(o, ca::Access::write);
  bump(*m, seed);
  m->copies[e] = {true, 0, std::nullopt, false};
  REQUIRE_FALSE(dm_.isvalid(*r));
  CHECK_THROWS_AS(dm_.setprimary(o, *r), ca::invalid_operation);
  counts.expected_errors += 2;
  touch(*m);
}

// Calls the manager must refuse, each leaving every region as it was.
void Harness::op_errors() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  ca::Object& o = *m->object;
  ca::Region& p = primary(*m);
  const ca::DeviceId e = 1 - m->primary;
  const Snapshot before = snapshot();
  switch (rng_.below(9)) {
    case 0: {  // copyto and link between regions of different sizes
      const std::uint64_t other = m->bytes > 1 && rng_.percent(50) ? m->bytes - 1 : m->bytes + 1;
      ca::Region* r = dm_.allocate(static_cast<ca::DeviceId>(rng_.below(2)), other);
      if (r == nullptr) return;
      CHECK_THROWS_AS(dm_.copyto(*r, p), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.copyto(p, *r), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.link(p, *r), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.setprimary(o, *r), ca::invalid_operation);
      dm_.free(*r);
      break;
    }
    case 1: {  // a second region on a device the object already uses
      ca::Region* r = dm_.allocate(m->primary, m->bytes);
      if (r == nullptr) return;
      CHECK_THROWS_AS(dm_.link(p, *r), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.setprimary(o, *r), ca::invalid_operation);
      dm_.free(*r);
      break;
    }
    case 2:  // an object always keeps its primary
      CHECK_THROWS_AS(dm_.free(p), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.copyto(p, p), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.unlink(p, p), ca::invalid_operation);
      break;
    case 3: {  // regions of two objects cannot be linked; another object's copy is no copy
      ModelObject* n = pick([&](const ModelObject& x) { return x.object != &o && x.bytes == m->bytes; }, 4);
      ca::Region* r = dm_.allocate(e, m->bytes);
      if (r == nullptr) return;
      CHECK_THROWS_AS(dm_.link(*r, *r), ca::invalid_operation);  // same device, no object
      if (n != nullptr) {
        dm_.copyto(*r, primary(*n));
        CHECK_THROWS_AS(dm_.setprimary(o, *r), ca::invalid_operation);
        CHECK_THROWS_AS(dm_.link(p, primary(*n)), ca::invalid_operation);
      }
      dm_.free(*r);
      break;
    }
    case 4: {  // no object: nothing to link to
      ca::Region* a = dm_.allocate(fast_device, 64);
      ca::Region* b = dm_.allocate(slow_device, 64);
      if (a != nullptr && b != nullptr) CHECK_THROWS_AS(dm_.link(*a, *b), ca::invalid_operation);
      if (a != nullptr) dm_.free(*a);
      if (b != nullptr) dm_.free(*b);
      break;
    }
    case 5:  // bad devices and sizes
      CHECK_THROWS_AS((void)dm_.allocate(fast_device, 0), ca::invalid_argument);
      CHECK_THROWS_AS((void)dm_.allocate(2, 64), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.getlinked(p, 7), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.usage(2), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.create_object(0), ca::invalid_argument);
      CHECK(dm_.allocate(fast_device, fast_capacity + 1) == nullptr);  // too big is "full", not an error
      break;
    case 6: {  // evictfrom outside the heap
      const auto never = [](ca::Region&) -> bool {
        FAIL("evictfrom called back for a bad range");
        return false;
      };
      CHECK_THROWS_AS(dm_.evictfrom(fast_device, 0, 0, never), ca::invalid_argument);
      CHECK_THROWS_AS(dm_.evictfrom(fast_device, fast_capacity, 64, never), ca::invalid_argument);
      CHECK_THROWS_AS(dm_.evictfrom(fast_device, fast_capacity - 64, 128, never), ca::invalid_argument);
      CHECK_THROWS_AS(dm_.evictfrom(5, 0, 64, never), ca::unknown_device);
      CHECK_THROWS_AS(dm_.defrag(5), ca::unknown_device);
      break;
    }
    case 7: {  // a freed region is not live any more
      ca::Region* r = dm_.allocate(e, m->bytes);
      if (r == nullptr) return;
      dm_.free(*r);
      // The node may be recycled by the next allocate: only use it before that.
      CHECK_THROWS_AS(dm_.free(*r), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.copyto(*r, p), ca::invalid_operation);
      CHECK_THROWS_AS(dm_.link(p, *r), ca::invalid_operation);
      break;
    }
    default: {  // setprimary to another object's primary
      ModelObject* n = pick([&](const ModelObject& x) { return x.object != &o && x.bytes == m->bytes; }, 4);
      if (n != nullptr) CHECK_THROWS_AS(dm_.setprimary(o, primary(*n)), ca::invalid_operation);
      break;
    }
  }
  REQUIRE(snapshot() == before);
  ++counts.expected_errors;
  touch(*m);
}

}  // namespace property
