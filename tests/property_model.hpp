// The model and the harness of the property test (docs/building.md, "The test suite";
// mimalloc test/test-stress.c): a long random sequence of the paper's
// operations — placement, writes, copies and links, setprimary, Listing 1
// `evict`, Listing 2 `prefetch`, evictfrom with moving or declining
// callbacks, defrag, pins, destroy, asynchronous copies left in flight
// across the following operations, and calls that must be refused — over a
// small DRAM heap that fills up often and a larger DAX heap. A model knows,
// for every object, where each of its regions is, which pattern its contents
// hold, which copies are valid and which are dirty. After every operation
// the manager and the model must agree and docs/design.md's invariants must
// hold.
//
// Harness::run draws the operations (property_harness.cpp, with the
// checks); the operations live in property_operations.cpp,
// property_moves.cpp and property_refusals.cpp; the cases in
// property_tests.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace property {

namespace ca = cachedarrays;

// The device ids and sizes every test file shares (test_support.hpp).
using test::fast_device, test::slow_device, test::KiB, test::MiB;
constexpr std::uint64_t fast_capacity = 4 * MiB;
constexpr std::uint64_t slow_capacity = 32 * MiB;
constexpr std::uint64_t alignment = 64;  // DeviceSpec's default
// The population swings between phases: a few hundred objects (~6 MiB, more
// than DRAM holds), ~20 MiB, and more than both heaps hold together, so that
// every allocation path sees a full heap.
constexpr std::array<std::uint64_t, 3> target_objects = {400, 1200, 3000};
constexpr std::uint64_t phase_ops = 6000;

// 100,000 operations in an optimised build; unoptimised and sanitizer builds
// (CI's ASan/UBSan build), many times slower, run a quarter of them.
constexpr std::uint64_t default_ops = test::full_speed_build ? 100000 : 25000;

inline std::uint64_t round_up(std::uint64_t bytes) { return (bytes + alignment - 1) & ~(alignment - 1); }

// Content patterns, word at a time (test::pattern_word): cheap enough to
// regenerate and compare every live byte every thousand operations.
using test::pattern_word;

inline void fill_pattern(std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t w = 0; w * 8 < bytes; ++w) {
    const std::uint64_t v = pattern_word(seed, w);
    std::memcpy(data + w * 8, &v, std::min<std::uint64_t>(8, bytes - w * 8));
  }
}

// Offset of the first byte in [from, to) that is not the pattern's, or `to`.
inline std::uint64_t locate_mismatch(const std::byte* data, std::uint64_t from, std::uint64_t to, std::uint64_t seed) {
  for (std::uint64_t i = from; i < to; ++i) {
    const std::uint64_t v = pattern_word(seed, i / 8);
    if (data[i] != reinterpret_cast<const std::byte*>(&v)[i % 8]) return i;
  }
  return to;
}

// Offset of the first byte that is not the pattern's, or `bytes`.
inline std::uint64_t first_mismatch(const std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
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
inline std::uint64_t random_size(test::SplitMixRng& rng) {
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
  ca::DeviceId primary = fast_device;
  std::array<Copy, 2> copies{};
  std::size_t slot = 0;  // index in Harness::ids_
  [[nodiscard]] bool valid(ca::DeviceId d) const {
    return d != primary && copies[d].present && copies[d].epoch != 0 && copies[d].epoch == epoch;
  }
};

// A free-standing region the test holds (no object).
struct Loose {
  ca::DeviceId device = fast_device;
  std::uint64_t bytes = 0;
  std::optional<std::uint64_t> seed;
  std::uint64_t epoch = 0;  // the contents' epoch if it was copied from an object
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
  [[nodiscard]] std::vector<ca::Region*> loose_in_heap_order() const;
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

  // ---- checks (property_harness.cpp) ------------------------------------------
  void check_object(const ModelObject& m, bool contents);
  void check_loose(ca::Region* region, const Loose& l, bool contents);
  void check_usage();
  void check_invariant2();
  void check_step(std::uint64_t step);
  Snapshot snapshot() const;
  void check_range_clear(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes);

  // ---- operations on objects and regions (property_operations.cpp) ----------
  void op_create();
  void op_write();
  void op_clean();
  void op_read();
  void op_copy_link();
  void op_copy_link_async();
  void op_setprimary();
  void op_stale_setprimary();
  void op_setprimary_join();
  void refuse_setprimary(const ModelObject& m, ca::Region& r);
  void refresh_and_promote(ModelObject& m, ca::Region& r);
  void op_unlink();
  void op_relink();
  void op_loose_alloc();
  void op_loose_free();
  void op_overwrite();
  void op_destroy();

  // ---- moves: Listing 1 and 2, evictfrom, defrag (property_moves.cpp) -------
  void op_evict(ca::DeviceId from, ca::DeviceId to);
  void op_evict_down() { op_evict(fast_device, slow_device); }
  void op_evict_up() { op_evict(slow_device, fast_device); }
  bool do_evict(ModelObject& m, ca::DeviceId from, ca::DeviceId to);
  void op_prefetch();
  void op_evictfrom(ca::DeviceId d);
  void op_evictfrom_fast() { op_evictfrom(fast_device); }
  void op_evictfrom_slow() { op_evictfrom(slow_device); }
  bool evict_range(ca::DeviceId d, std::uint64_t start, std::uint64_t bytes, int declines_after);
  void op_defrag(ca::DeviceId d, bool pinned = false);
  void op_defrag_either() { op_defrag(rng_.percent(70) ? fast_device : slow_device); }  // DRAM's more often
  void op_make_hole();

  // ---- calls the manager must refuse (property_refusals.cpp) ----------------
  void op_pinned();
  void op_torn_copy();
  void op_errors();

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
    std::uint64_t creates = 0, failed_creates = 0, evicts = 0, evicts_refused = 0, prefetches = 0, prefetch_room = 0,
                  evictfrom_cleared = 0, evictfrom_declined = 0, defrags = 0, defrag_moves = 0, holes_made = 0,
                  hole_moves = 0, pinned_refusals = 0, expected_errors = 0, destroys = 0, relinks = 0,
                  relinked_valid = 0, async_copies = 0, async_in_flight_at_check = 0;
  } counts;
};

}  // namespace property
