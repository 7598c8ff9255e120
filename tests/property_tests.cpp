// Property test of the DataManager against a simple model (STYLE.md "Tests";
// mimalloc test/test-stress.c): a long random sequence of the paper's
// operations — placement, writes, copies and links, setprimary, Listing 1
// `evict`, Listing 2 `prefetch`, evictfrom with moving or declining
// callbacks, defrag, pins, destroy, and calls that must be refused — over a
// small DRAM heap that fills up often and a larger DAX heap. A model knows,
// for every object, where each of its regions is, which pattern its contents
// hold, which copies are valid and which are dirty. After every operation
// the manager and the model must agree and DESIGN.md's invariants must hold.
//
// CACHEDARRAYS_TEST_SEED replays another sequence; CACHEDARRAYS_PROPERTY_OPS
// sets its length (default 100,000; 25,000 in unoptimised or sanitizer builds).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"

namespace {

namespace ca = cachedarrays;

constexpr ca::DeviceId fast = 0;
constexpr ca::DeviceId slow = 1;
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t fast_capacity = 4 * MiB;
constexpr std::uint64_t slow_capacity = 32 * MiB;
constexpr std::uint64_t alignment = 64;  // DeviceSpec's default
// The population swings between phases: a few hundred objects (~6 MiB, more
// than DRAM holds), ~20 MiB, and more than both heaps hold together, so that
// every allocation path sees a full heap.
constexpr std::array<std::uint64_t, 3> target_objects = {400, 1200, 3000};
constexpr std::uint64_t phase_ops = 6000;

// 100,000 operations take ~15 s in an optimised build; unoptimised and
// sanitizer builds (the CI's Debug ASan/UBSan job) run a quarter of them.
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr std::uint64_t default_ops = 100000;
#else
constexpr std::uint64_t default_ops = 25000;
#endif

std::uint64_t round_up(std::uint64_t bytes) { return (bytes + alignment - 1) & ~(alignment - 1); }

// Content patterns, word at a time (test::pattern_word): cheap enough to
// regenerate and compare every live byte every thousand operations.
using test::pattern_word;

void fill_pattern(std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t w = 0; w * 8 < bytes; ++w) {
    const std::uint64_t v = pattern_word(seed, w);
    std::memcpy(data + w * 8, &v, std::min<std::uint64_t>(8, bytes - w * 8));
  }
}

// Offset of the first byte in [from, to) that is not the pattern's, or `to`.
std::uint64_t locate_mismatch(const std::byte* data, std::uint64_t from, std::uint64_t to, std::uint64_t seed) {
  for (std::uint64_t i = from; i < to; ++i) {
    const std::uint64_t v = pattern_word(seed, i / 8);
    if (data[i] != reinterpret_cast<const std::byte*>(&v)[i % 8]) return i;
  }
  return to;
}

// Offset of the first byte that is not the pattern's, or `bytes`.
std::uint64_t first_mismatch(const std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  const std::uint64_t words = bytes / 8;
  constexpr std::uint64_t chunk = 256;  // words compared without a branch each
  for (std::uint64_t w0 = 0; w0 < words; w0 += chunk) {
    const std::uint64_t end = std::min(words, w0 + chunk);
    std::uint64_t diff = 0;
    for (std::uint64_t w = w0; w < end; ++w) {
      std::uint64_t got = 0;
      std::memcpy(&got, data + w * 8, 8);
      diff |= got ^ pattern_word(seed, w);
    }
    if (diff != 0) return locate_mismatch(data, w0 * 8, end * 8, seed);
  }
  return locate_mismatch(data, words * 8, bytes, seed);
}

// Sizes skewed small, as real programs' objects are: 1 B .. 256 KiB.
std::uint64_t random_size(test::SplitMixRng& rng) {
  const std::uint64_t c = rng.below(100);
  if (c < 45) return rng.between(1, 256);
  if (c < 75) return rng.between(257, 8 * KiB);
  if (c < 93) return rng.between(8 * KiB + 1, 64 * KiB);
  return rng.between(64 * KiB + 1, 256 * KiB);
}

// One region of an object as the model expects it. Epochs stand for the
// contents an object has had: every write gives the object a new one, and a
// secondary is a valid copy exactly when it holds the object's current epoch
// (0: never valid, e.g. a copy torn by an open write).
struct Copy {
  bool present = false;
  std::uint64_t epoch = 0;
  std::optional<std::uint64_t> seed;  // the pattern it holds, when known
  bool dirty = false;
};

struct ModelObject {
  ca::Object* object = nullptr;
  std::uint64_t bytes = 0;
  std::uint64_t epoch = 0;
  std::uint64_t seed = 0;  // the pattern the object's contents hold
  ca::DeviceId primary = fast;
  std::array<Copy, 2> copies{};
  std::size_t slot = 0;  // index in Harness::ids_
  [[nodiscard]] bool valid(ca::DeviceId d) const {
    return d != primary && copies[d].present && copies[d].epoch != 0 && copies[d].epoch == epoch;
  }
};

// A free-standing region the test holds (no object).
struct Loose {
  ca::DeviceId device = fast;
  std::uint64_t bytes = 0;
  std::optional<std::uint64_t> seed;
  std::uint64_t epoch = 0;        // the contents' epoch if it was copied from an object
  bool dirty = false;
  std::uint64_t from_object = 0;  // the object it was unlinked from, or 0
};

// Live regions in address order, with what they belong to: to show that a
// refused call changed nothing.
using Snapshot = std::vector<std::tuple<ca::Region*, std::uint64_t, ca::Object*, bool>>;

class Harness {
 public:
  explicit Harness(std::uint64_t seed)
      : rng_{seed}, dm_({ca::dram(fast_capacity, "fast"), ca::dax_file({}, slow_capacity, "slow")}) {}

  void run(std::uint64_t ops);
  [[nodiscard]] ca::Stats stats() const { return dm_.stats(); }

 private:
  // ---- model bookkeeping ----------------------------------------------------
  std::uint64_t new_seed() { return rng_() | 1; }
  ModelObject& model_of(const ca::Object& object) {
    auto it = objects_.find(object.id());
    REQUIRE_MESSAGE(it != objects_.end(), "object #" << object.id() << " is not in the model");
    return it->second;
  }
  ModelObject* pick(const std::function<bool(const ModelObject&)>& want = {}, int tries = 12);
  Loose* pick_loose(ca::Region** region);
  void erase(ModelObject& m);
  ca::Region& primary(const ModelObject& m) {
    ca::Region* p = dm_.getprimary(*m.object);
    REQUIRE(p != nullptr);
    return *p;
  }
  ca::Region* region_on(const ModelObject& m, ca::DeviceId d) { return dm_.getlinked(primary(m), d); }
  // New contents written into the object's primary.
  void bump(ModelObject& m, std::uint64_t seed) {
    m.epoch = next_epoch_++;
    m.seed = seed;
    m.copies[m.primary] = {true, m.epoch, seed, true};
  }
  void touch(const ModelObject& m) { touched_.push_back(m.object->id()); }

  // ---- checks -----------------------------------------------------------------
  void check_object(const ModelObject& m, bool contents);
  void check_loose(ca::Region* region, const Loose& l, bool contents);
  void check_usage();
  void check_invariant2();
  void check_step(std::uint64_t step);
  Snapshot snapshot() const;
  void check_range_clear(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes);

  // ---- operations ---------------------------------------------------------------
  void op_create();
  void op_write();
  void op_clean();
  void op_read();
  void op_copy_link();
  void op_setprimary();
  void op_stale_setprimary();
  void op_setprimary_join();
  void op_evict(ca::DeviceId from, ca::DeviceId to);
  bool do_evict(ModelObject& m, ca::DeviceId from, ca::DeviceId to);
  void op_prefetch();
  void op_unlink();
  void op_relink();
  void op_loose_alloc();
  void op_loose_free();
  void op_overwrite();
  void op_evictfrom(ca::DeviceId d);
  bool evict_range(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes, int declines_after);
  void op_defrag(ca::DeviceId d, bool pinned = false);
  void op_pinned();
  void op_torn_copy();
  void op_errors();
  void op_destroy();

  test::SplitMixRng rng_;
  ca::DataManager dm_;
  std::map<std::uint64_t, ModelObject> objects_;  // by object id
  std::vector<std::uint64_t> ids_;                // for picking at random
  std::map<ca::Region*, Loose> loose_;
  std::vector<std::uint64_t> touched_;
  std::uint64_t next_epoch_ = 1;

 public:
  // What the run exercised, reported at the end and checked to be non-zero.
  struct Counts {
    std::uint64_t creates = 0, failed_creates = 0, evicts = 0, evicts_refused = 0, prefetches = 0,
                  prefetch_room = 0, evictfrom_cleared = 0, evictfrom_declined = 0, defrags = 0,
                  defrag_moves = 0, pinned_refusals = 0, expected_errors = 0, destroys = 0,
                  relinks = 0, relinked_valid = 0;
  } counts;
};

ModelObject* Harness::pick(const std::function<bool(const ModelObject&)>& want, int tries) {
  if (ids_.empty()) return nullptr;
  for (int i = 0; i < tries; ++i) {
    ModelObject& m = objects_.at(ids_[rng_.below(ids_.size())]);
    if (!want || want(m)) return &m;
  }
  return nullptr;
}

Loose* Harness::pick_loose(ca::Region** region) {
  if (loose_.empty()) return nullptr;
  auto it = loose_.begin();
  std::advance(it, static_cast<long>(rng_.below(loose_.size())));
  *region = it->first;
  return &it->second;
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
    REQUIRE(dm_.isvalid(*r) == m.valid(d));
    if (m.valid(d)) REQUIRE(c.seed == m.seed);  // the model's own consistency
    // A stale copy keeps the older contents it was given: nothing but a
    // copyto may change a region's bytes.
    if (contents && c.seed) {
      REQUIRE_MESSAGE(first_mismatch(dm_.pointer(*r), m.bytes, *c.seed) == m.bytes,
                      "a secondary lost its contents");
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
  if (contents && l.seed) {
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
    dm_.for_each_region(d, [&](ca::Region& r) {
      s.emplace_back(&r, dm_.offset(r), dm_.parent(r), dm_.isdirty(r));
    });
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

// ---- operations ---------------------------------------------------------------

void Harness::op_create() {
  const std::uint64_t bytes = random_size(rng_);
  ca::DeviceId d = rng_.percent(70) ? fast : slow;  // new objects start fast, mostly
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
    if (rng_.percent(50)) dm_.link(p, *r); else dm_.link(*r, p);
    REQUIRE(dm_.parent(*r) == m->object);
  }
  m->copies[e] = {true, m->epoch, m->seed, false};
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
  const Snapshot before = snapshot();
  CHECK_THROWS_AS(dm_.setprimary(*m->object, *stale), ca::invalid_operation);
  REQUIRE(snapshot() == before);
  ++counts.expected_errors;
  check_object(*m, true);
  if (rng_.percent(50)) {  // refreshed, it may
    dm_.copyto(*stale, primary(*m));
    dm_.setprimary(*m->object, *stale);
    m->copies[e] = {true, m->epoch, m->seed, false};
    m->primary = e;
  }
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
    const Snapshot before = snapshot();
    CHECK_THROWS_AS(dm_.setprimary(*m->object, *r), ca::invalid_operation);
    REQUIRE(snapshot() == before);
    ++counts.expected_errors;
    dm_.free(*r);
  } else {
    dm_.copyto(*r, primary(*m));
    dm_.setprimary(*m->object, *r);
    m->copies[e] = {true, m->epoch, m->seed, false};
    m->primary = e;
  }
  touch(*m);
}

// Listing 1 through policy::evict, with its outcome predicted by the model:
// it moves when the primary is on `from` and `to` has a linked region or a
// hole, and writes back unless a clean primary has a valid copy there.
bool Harness::do_evict(ModelObject& m, ca::DeviceId from, ca::DeviceId to) {
  const Copy& y = m.copies[to];
  const bool allocated = !y.present;
  const bool movable = m.primary == from && !m.object->pinned() &&
                       (!allocated || dm_.usage(to).largest_free_block >= round_up(m.bytes));
  const bool write_back = m.copies[from].dirty || allocated || !m.valid(to);
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
  if (do_evict(*m, from, to)) ++counts.evicts; else ++counts.evicts_refused;
}

// Listing 2 through policy::prefetch. An object whose primary is slow may
// also have a fast secondary (this test breaks the paper's policy invariant
// on purpose): a valid one is promoted without a copy, a stale one dropped.
void Harness::op_prefetch() {
  ModelObject* m = pick([](const ModelObject& x) { return x.primary == slow; }, 6);
  if (m == nullptr) m = pick();
  if (m == nullptr) return;
  if (m->primary == fast) {  // nothing to do
    const Snapshot before = snapshot();
    REQUIRE(ca::policy::prefetch(dm_, *m->object, fast, slow));
    REQUIRE(snapshot() == before);
    touch(*m);
    return;
  }
  const bool had_fast = m->copies[fast].present;
  const bool promote = m->valid(fast);
  // Without a fast region the outcome is predictable: room now, or make_room.
  const bool fits = !had_fast && dm_.usage(fast).largest_free_block >= round_up(m->bytes);
  std::optional<bool> room;  // what make_room returned, if it was called
  std::function<bool(std::uint64_t)> make_room;
  if (rng_.percent(60)) {
    make_room = [&](std::uint64_t bytes) {
      REQUIRE(bytes == m->bytes);
      REQUIRE_FALSE(dm_.getlinked(primary(*m), fast));  // a stale fast copy is gone by now
      const std::uint64_t start = rng_.below(fast_capacity - round_up(bytes) + 1);
      room = evict_range(fast, start, bytes, rng_.percent(20) ? static_cast<int>(rng_.below(3)) : -1);
      return *room;
    };
  }
  const std::uint64_t copies_before = dm_.stats().copies[slow][fast];
  const bool ok = ca::policy::prefetch(dm_, *m->object, fast, slow, make_room);
  if (promote) {
    REQUIRE(ok);
    REQUIRE_FALSE(room.has_value());
    REQUIRE(dm_.stats().copies[slow][fast] == copies_before);  // no copy needed
    m->primary = fast;
  } else {
    if (fits) REQUIRE_FALSE(room.has_value());
    if (room) REQUIRE(ok == *room);  // a cleared range always takes the allocation
    if (!had_fast) REQUIRE(ok == (fits || room.value_or(false)));
    m->copies[fast] = {};
    if (ok) {
      m->copies[fast] = {true, m->epoch, m->seed, false};
      m->primary = fast;
    }
  }
  if (ok) {
    REQUIRE(m->valid(slow));
    ++counts.prefetches;
  }
  if (room) ++counts.prefetch_room;
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
    if (rng_.percent(50)) dm_.unlink(p, *s); else dm_.unlink(*s, p);
    REQUIRE(dm_.parent(*s) == nullptr);
    REQUIRE(dm_.getlinked(p, e) == nullptr);
    REQUIRE_FALSE(dm_.isvalid(*s));
    const Copy& c = m->copies[e];
    if (how == 1 || loose_.size() >= 24) dm_.free(*s); else loose_[s] = {e, m->bytes, c.seed, c.epoch, c.dirty, m->object->id()};
  }
  m->copies[e] = {};
  touch(*m);
}

// A region unlinked earlier goes back to its object: it is a valid copy
// again exactly when the object has not been written since.
void Harness::op_relink() {
  for (auto& [r, l] : loose_) {
    if (l.from_object == 0) continue;
    auto it = objects_.find(l.from_object);
    if (it == objects_.end()) {
      l.from_object = 0;
      continue;
    }
    ModelObject& m = it->second;
    if (m.copies[l.device].present) continue;
    ca::Region* region = r;
    if (rng_.percent(50)) dm_.link(primary(m), *region); else dm_.link(*region, primary(m));
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
    if (rng_.percent(50) || loose_.size() >= 24) dm_.free(*src); else loose_[src] = {d, m->bytes, seed};
  }
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
  const std::uint64_t capacity = d == fast ? fast_capacity : slow_capacity;
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
    if (ca::Object* o = dm_.parent(r)) touch(model_of(*o)); else check_loose(&r, loose_.at(&r), true);
  });
  REQUIRE(changed == moved);
  const ca::DeviceUsage u = dm_.usage(d);
  if (!pinned && u.bytes_used < u.capacity) REQUIRE(u.largest_free_block == u.capacity - u.bytes_used);
  ++counts.defrags;
  counts.defrag_moves += moved;
}

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
  const std::uint64_t capacity = d == fast ? fast_capacity : slow_capacity;
  switch (rng_.below(3)) {
    case 0: {  // an evictfrom range holding the pinned primary is refused untouched
      const std::uint64_t start = at - rng_.below(std::min<std::uint64_t>(at, 256 * KiB) + 1);
      const std::uint64_t bytes = rng_.between(at - start + 1, std::min(capacity - start, at - start + 512 * KiB));
      const Snapshot before = snapshot();
      bool called = false;
      CHECK_THROWS_AS(dm_.evictfrom(d, start, bytes, [&](ca::Region&) { return called = true; }),
                      ca::pinned_error);
      REQUIRE_FALSE(called);
      REQUIRE(snapshot() == before);
      ++counts.pinned_refusals;
      break;
    }
    case 1:
      op_defrag(d, /*pinned=*/true);
      break;
    default: {  // moves and frees are refused or declined
      const Snapshot before = snapshot();
      REQUIRE_FALSE(ca::policy::evict(dm_, o, d, 1 - d).moved);
      if (d == slow) REQUIRE_FALSE(ca::policy::prefetch(dm_, o, fast, slow));
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
      ca::Region* a = dm_.allocate(fast, 64);
      ca::Region* b = dm_.allocate(slow, 64);
      if (a != nullptr && b != nullptr) CHECK_THROWS_AS(dm_.link(*a, *b), ca::invalid_operation);
      if (a != nullptr) dm_.free(*a);
      if (b != nullptr) dm_.free(*b);
      break;
    }
    case 5:  // bad devices and sizes
      CHECK_THROWS_AS((void)dm_.allocate(fast, 0), ca::invalid_argument);
      CHECK_THROWS_AS((void)dm_.allocate(2, 64), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.getlinked(p, 7), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.usage(2), ca::unknown_device);
      CHECK_THROWS_AS((void)dm_.create_object(0), ca::invalid_argument);
      CHECK(dm_.allocate(fast, fast_capacity + 1) == nullptr);  // too big is "full", not an error
      break;
    case 6: {  // evictfrom outside the heap
      const auto never = [](ca::Region&) -> bool { FAIL("evictfrom called back for a bad range"); return false; };
      CHECK_THROWS_AS(dm_.evictfrom(fast, 0, 0, never), ca::invalid_argument);
      CHECK_THROWS_AS(dm_.evictfrom(fast, fast_capacity, 64, never), ca::invalid_argument);
      CHECK_THROWS_AS(dm_.evictfrom(fast, fast_capacity - 64, 128, never), ca::invalid_argument);
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

void Harness::op_destroy() {
  ModelObject* m = pick();
  if (m == nullptr) return;
  dm_.destroy(*m->object);
  erase(*m);
  ++counts.destroys;
}

void Harness::run(std::uint64_t ops) {
  enum Op : int {
    create, write, clean, read, copy_link, setprimary, stale_setprimary, setprimary_join, evict_down,
    evict_up, prefetch, unlink, relink, loose_alloc, loose_free, overwrite, evictfrom_fast,
    evictfrom_slow, defrag, pinned, torn_copy, errors, destroy, op_count
  };
  static constexpr std::array<const char*, op_count> names = {
      "create", "write", "clean", "read", "copy_link", "setprimary", "stale_setprimary",
      "setprimary_join", "evict_down", "evict_up", "prefetch", "unlink", "relink", "loose_alloc",
      "loose_free", "overwrite", "evictfrom_fast", "evictfrom_slow", "defrag", "pinned",
      "torn_copy", "errors", "destroy"};
  std::array<std::uint64_t, op_count> weights = {14, 9, 2, 9, 9, 5, 2, 2, 4, 2, 8, 5, 2, 2, 2, 3, 2, 1, 1, 2, 1, 2, 0};
  std::array<std::uint64_t, op_count> done{};
  for (std::uint64_t step = 1; step <= ops; ++step) {
    // Destroys keep the population near the target: both heaps stay busy and
    // DRAM is full most of the time.
    const std::uint64_t target = target_objects[(step / phase_ops) % target_objects.size()];
    weights[create] = ids_.size() < target ? 40 : 14;
    weights[destroy] = 14 * ids_.size() / target;
    std::uint64_t total = 0;
    for (std::uint64_t w : weights) total += w;
    std::uint64_t x = rng_.below(total);
    int op = 0;
    while (x >= weights[static_cast<std::size_t>(op)]) x -= weights[static_cast<std::size_t>(op++)];
    INFO("step " << step << ": " << std::string(names[static_cast<std::size_t>(op)]));
    switch (op) {
      case create: op_create(); break;
      case write: op_write(); break;
      case clean: op_clean(); break;
      case read: op_read(); break;
      case copy_link: op_copy_link(); break;
      case setprimary: op_setprimary(); break;
      case stale_setprimary: op_stale_setprimary(); break;
      case setprimary_join: op_setprimary_join(); break;
      case evict_down: op_evict(fast, slow); break;
      case evict_up: op_evict(slow, fast); break;
      case prefetch: op_prefetch(); break;
      case unlink: op_unlink(); break;
      case relink: op_relink(); break;
      case loose_alloc: op_loose_alloc(); break;
      case loose_free: op_loose_free(); break;
      case overwrite: op_overwrite(); break;
      case evictfrom_fast: op_evictfrom(fast); break;
      case evictfrom_slow: op_evictfrom(slow); break;
      case defrag: op_defrag(rng_.percent(70) ? fast : slow); break;
      case pinned: op_pinned(); break;
      case torn_copy: op_torn_copy(); break;
      case errors: op_errors(); break;
      default: op_destroy(); break;
    }
    ++done[static_cast<std::size_t>(op)];
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

}  // namespace

TEST_CASE("property: random data-manager operations keep every byte and every invariant") {
  const std::uint64_t seed = test::test_seed(20240611);
  const std::uint64_t ops = test::env_or("CACHEDARRAYS_PROPERTY_OPS", default_ops);
  CAPTURE(seed);
  CAPTURE(ops);
  Harness h(seed);
  h.run(ops);
  const Harness::Counts& c = h.counts;
  const ca::Stats stats = h.stats();
  MESSAGE("seed " << seed << ", " << ops << " ops: " << c.creates << " creates (" << c.failed_creates
                  << " found both heaps full), " << c.destroys << " destroys, " << c.evicts << " evicts ("
                  << c.evicts_refused << " refused), " << c.prefetches << " prefetches (" << c.prefetch_room
                  << " made room), evictfrom " << c.evictfrom_cleared << " cleared / " << c.evictfrom_declined
                  << " declined, " << c.defrags << " defrags moving " << c.defrag_moves << " regions, "
                  << c.relinks << " relinks (" << c.relinked_valid << " valid again), " << c.pinned_refusals
                  << " pinned refusals, " << c.expected_errors << " expected errors; allocations that found "
                  << "the heap full: fast " << stats.devices[fast].failed_allocations << " of "
                  << stats.devices[fast].allocations + stats.devices[fast].failed_allocations << ", slow "
                  << stats.devices[slow].failed_allocations << " of "
                  << stats.devices[slow].allocations + stats.devices[slow].failed_allocations);
  if (ops >= 20000) {  // the run really went through the interesting paths
    CHECK(c.evictfrom_cleared > 0);
    CHECK(c.evictfrom_declined > 0);
    CHECK(c.prefetch_room > 0);
    CHECK(c.defrag_moves > 0);
    CHECK(c.evicts_refused > 0);
    CHECK(c.relinked_valid > 0);
    CHECK(c.pinned_refusals > 0);
    CHECK(c.failed_creates > 0);
    CHECK(stats.devices[fast].failed_allocations > 0);
  }
}

// The checks above are not vacuous: a byte changed behind the manager's back
// in a primary or in a valid secondary is seen by the model's comparison and
// by check_invariants(true).
TEST_CASE("property: the content checks catch a changed byte") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, fast, 1000, 0);
  ca::Region& p = *dm.getprimary(o);
  fill_pattern(dm.pointer(p), 1000, 42);
  REQUIRE(first_mismatch(dm.pointer(p), 1000, 42) == 1000);
  ca::Region* s = dm.allocate(slow, 1000);
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
  CHECK(first_mismatch(dm.pointer(p), 997, 42) == 3);  // a tail shorter than a word too
  CHECK(first_mismatch(dm.pointer(p) + 8, 992, 42) != 992);  // a shifted pattern is not the pattern
}

// moves.hpp's prefetch was written for the paper's policy invariant (a fast
// region of an object is its primary). When the object has a fast secondary
// anyway, prefetch must leave no region that nobody owns: a valid secondary
// is promoted, a stale one replaced by a fresh copy.
TEST_CASE("property: prefetch of an object with a fast secondary leaves no orphan region") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, slow, 1000, 7);
  ca::Region* f = dm.allocate(fast, 1000);
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
    moved = ca::policy::prefetch(dm, o, fast, slow);
  } catch (const ca::error& e) {
    FAIL("prefetch threw: " << std::string(e.what()));
  }
  std::uint64_t orphans = 0;
  dm.for_each_region(fast, [&](ca::Region& r) { orphans += dm.parent(r) == nullptr ? 1 : 0; });
  CHECK(orphans == 0);
  CHECK(dm.usage(fast).live_regions == 1);
  CHECK(moved);
  CHECK(dm.device(*dm.getprimary(o)) == fast);
  dm.check_invariants(true);
  CHECK(test::object_holds(dm, o, stale ? 8 : 7));
}

// Invariant 4 through the API: a copy that was written and marked dirty is
// no longer a copy of its object's contents, whether it is marked while
// linked or while free-standing and linked back afterwards; it must not count
// as valid nor be accepted by setprimary.
TEST_CASE("property: a secondary marked dirty stops counting as a valid copy") {
  ca::DataManager dm({ca::dram(1 * MiB, "fast"), ca::dax_file({}, 4 * MiB, "slow")});
  ca::Object& o = test::make_object(dm, fast, 1000, 7);
  ca::Region& p = *dm.getprimary(o);
  ca::Region* s = dm.allocate(slow, 1000);
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
