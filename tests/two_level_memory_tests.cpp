// The 2LM model: hit / clean-miss / dirty-miss counts on hand-computed
// access sequences, the interval implementation against a naive per-line
// model, and simulate_2lm on hand-made traces.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/runtime/runtime.hpp"
#include "cachedarrays/sim/simulate_2lm.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t line_size = 64;

struct Counts {
  std::uint64_t hits, clean, dirty;
  bool operator==(const Counts&) const = default;
};

Counts counts(const ca::TwoLevelMemory& m) {
  return {m.counters().hits, m.counters().clean_misses, m.counters().dirty_misses};
}

// One entry per set: the obvious model the interval map must agree with.
class NaiveCache {
 public:
  NaiveCache(std::uint64_t sets, std::uint64_t line_bytes) : sets_(sets), line_(line_bytes), lines_(sets) {}

  void access(std::uint64_t address, std::uint64_t bytes, bool write) {
    if (bytes == 0) return;
    for (std::uint64_t l = address / line_; l <= (address + bytes - 1) / line_; ++l) {
      Line& slot = lines_[l % sets_];
      const std::uint64_t tag = l / sets_;
      if (slot.valid && slot.tag == tag) {
        ++c.hits;
        slot.dirty = slot.dirty || write;
      } else {
        if (slot.valid && slot.dirty) {
          ++c.dirty_misses;
          c.nvram_bytes_written += line_;
          c.dram_bytes_read += line_;
        } else {
          ++c.clean_misses;
        }
        c.nvram_bytes_read += line_;
        c.dram_bytes_written += line_;
        slot = {true, tag, write};
      }
      if (write)
        c.dram_bytes_written += line_;
      else
        c.dram_bytes_read += line_;
    }
  }

  ca::TwoLmCounters c;

 private:
  struct Line {
    bool valid = false;
    std::uint64_t tag = 0;
    bool dirty = false;
  };
  std::uint64_t sets_;
  std::uint64_t line_;
  std::vector<Line> lines_;
};

void check_equal(const ca::TwoLmCounters& a, const ca::TwoLmCounters& b) {
  for (const auto& field : ca::TwoLmCounters::fields()) {
    CAPTURE(field.name);
    CHECK(a.*field.member == b.*field.member);
  }
}

}  // namespace

TEST_CASE("2lm: a read misses once, then hits; traffic is counted in whole lines") {
  ca::TwoLevelMemory m(4 * line_size);
  m.access(0, 64, false);
  CHECK(counts(m) == Counts{0, 1, 0});
  m.access(0, 64, false);
  CHECK(counts(m) == Counts{1, 1, 0});
  CHECK(m.counters().nvram_bytes_read == 64);
  CHECK(m.counters().dram_bytes_written == 64);  // the fill
  CHECK(m.counters().dram_bytes_read == 128);    // two demand reads
  CHECK(m.counters().nvram_bytes_written == 0);
  m.access(0, 0, true);  // nothing
  CHECK(m.counters().lines() == 2);
}

TEST_CASE("2lm: conflicting lines evict each other; a dirty victim is written back") {
  ca::TwoLevelMemory m(4 * line_size);
  m.access(0, 64, false);    // set 0, tag 0: clean miss
  m.access(256, 64, false);  // set 0, tag 1: clean miss (clean victim)
  m.access(0, 64, false);    // clean miss again
  CHECK(counts(m) == Counts{0, 3, 0});
  m.access(0, 64, true);     // write hit: now dirty
  m.access(256, 64, false);  // dirty miss
  CHECK(counts(m) == Counts{1, 3, 1});
  CHECK(m.counters().nvram_bytes_written == 64);
  CHECK(m.counters().nvram_bytes_read == 4 * 64);
  m.access(512, 64, false);  // the victim (tag 1) is clean
  CHECK(counts(m) == Counts{1, 4, 1});
}

TEST_CASE("2lm: a write miss allocates the line and leaves it dirty") {
  ca::TwoLevelMemory m(4 * line_size);
  m.access(64, 64, true);
  CHECK(counts(m) == Counts{0, 1, 0});
  CHECK(m.counters().nvram_bytes_read == 64);     // write-allocate fills
  CHECK(m.counters().dram_bytes_written == 128);  // fill + the write
  m.access(64 + 256, 64, true);
  CHECK(counts(m) == Counts{0, 1, 1});
}

TEST_CASE("2lm: a range that wraps around the cache meets its own earlier lines") {
  SUBCASE("write: the second pass finds the first pass's dirty lines") {
    ca::TwoLevelMemory m(4 * line_size);
    m.access(128, 384, true);  // lines 2..7: sets 2,3 (tag 0), then sets 0..3 (tag 1)
    CHECK(counts(m) == Counts{0, 4, 2});
  }
  SUBCASE("read: everything is clean") {
    ca::TwoLevelMemory m(4 * line_size);
    m.access(128, 384, false);
    CHECK(counts(m) == Counts{0, 6, 0});
  }
  SUBCASE("a range four times the cache, read then written") {
    ca::TwoLevelMemory m(4 * line_size);
    m.access(0, 16 * line_size, false);
    CHECK(counts(m) == Counts{0, 16, 0});
    m.access(0, 16 * line_size, true);  // sets hold tag 3: the first pass misses clean, later passes dirty
    CHECK(counts(m) == Counts{0, 20, 12});
  }
}

TEST_CASE("2lm: partial and unaligned ranges touch every line they overlap") {
  ca::TwoLevelMemory m(4 * line_size);
  m.access(60, 8, false);  // lines 0 and 1
  CHECK(counts(m) == Counts{0, 2, 0});
  m.access(0, 1, false);
  m.access(127, 1, false);
  CHECK(counts(m) == Counts{2, 2, 0});
  m.access(100, 200, true);  // lines 1..4: hit, miss, miss, miss (set 0, tag 1; victim clean)
  CHECK(counts(m) == Counts{3, 5, 0});
  m.access(0, 1, false);  // set 0 now holds tag 1, dirty
  CHECK(counts(m) == Counts{3, 5, 1});
}

TEST_CASE("2lm: write after read dirties only the written lines") {
  ca::TwoLevelMemory m(4 * line_size);
  m.access(0, 256, false);
  m.access(64, 128, true);  // two hits
  CHECK(counts(m) == Counts{2, 4, 0});
  m.access(256, 256, false);  // sets 0..3 with tag 1: sets 1 and 2 were dirty
  CHECK(counts(m) == Counts{2, 6, 2});
  CHECK(m.counters().nvram_bytes_written == 128);
}

namespace {

struct RandomAccess {
  std::uint64_t address;
  std::uint64_t bytes;
  bool write;
};

// Runs `count` accesses drawn by `draw` through the interval model and the
// per-line model of a cache of `sets` sets, requiring equal counts after each.
template <typename Draw>
void agree_with_per_line_model(std::uint64_t sets, int count, test::Rng& rng, Draw draw) {
  ca::TwoLevelMemory m(sets * line_size);
  NaiveCache naive(sets, line_size);
  for (int i = 0; i < count; ++i) {
    const RandomAccess a = draw(rng);
    m.access(a.address, a.bytes, a.write);
    naive.access(a.address, a.bytes, a.write);
    CAPTURE(i);
    REQUIRE(m.counters().hits == naive.c.hits);
    REQUIRE(m.counters().clean_misses == naive.c.clean_misses);
    REQUIRE(m.counters().dirty_misses == naive.c.dirty_misses);
    REQUIRE(m.intervals() <= sets);
  }
  check_equal(m.counters(), naive.c);
}

}  // namespace

TEST_CASE("2lm: the interval map agrees with a per-line model on thousands of random accesses") {
  const std::uint64_t seed = test::test_seed(2024);
  CAPTURE(seed);
  for (const std::uint64_t sets : {1ull, 4ull, 12ull, 64ull}) {
    CAPTURE(sets);
    test::Rng rng(seed + sets);
    agree_with_per_line_model(sets, 4000, rng, [sets](test::Rng& r) {
      const std::uint64_t address = r() % (sets * line_size * 6);
      // Mostly short ranges, some longer than the whole cache.
      const std::uint64_t bytes = r() % 8 == 0 ? r() % (3 * sets * line_size + 1) : r() % (2 * line_size + 1);
      return RandomAccess{address, bytes, r() % 3 == 0};
    });
  }
}

TEST_CASE("2lm: ranges of many whole passes over a small cache agree with the per-line model") {
  // Whole passes after the second are counted in one step; this checks
  // that shortcut against every line, from any state the cache can be in.
  const std::uint64_t seed = test::test_seed(77);
  CAPTURE(seed);
  for (const std::uint64_t sets : {1ull, 3ull, 16ull}) {
    CAPTURE(sets);
    test::Rng rng(seed + sets);
    agree_with_per_line_model(sets, 600, rng, [sets](test::Rng& r) {
      const std::uint64_t address = r() % (sets * line_size * 50);
      const std::uint64_t bytes = r() % 2 == 0 ? r() % (40 * sets * line_size + 1) : r() % (sets * line_size + 1);
      return RandomAccess{address, bytes, r() % 2 == 0};
    });
  }
}

TEST_CASE("2lm: the paper's sizes (180 GB cache, 520 GB streamed) take few intervals, not billions of lines") {
  const std::uint64_t gb = 1'000'000'000ull;
  ca::TwoLevelMemory m(180 * gb);
  m.access(0, 520 * gb, true);
  m.access(0, 520 * gb, false);
  const std::uint64_t lines = 520 * gb / 64;
  const std::uint64_t sets = 180 * gb / 64;
  CHECK(m.counters().lines() == 2 * lines);
  // Write stream: the first pass fills empty sets (clean misses), every
  // later line evicts a dirty one. Read stream: the first `sets` lines evict
  // the write stream's dirty lines, later ones the read stream's own clean
  // lines; nothing survives long enough to hit.
  CHECK(m.counters().hits == 0);
  CHECK(m.counters().clean_misses == sets + (lines - sets));
  CHECK(m.counters().dirty_misses == (lines - sets) + sets);
  CHECK(m.intervals() <= 3);
}

TEST_CASE("2lm: bad cache geometries are rejected") {
  CHECK_THROWS_AS(ca::TwoLevelMemory(0), ca::invalid_argument);
  CHECK_THROWS_AS(ca::TwoLevelMemory(100, 64), ca::invalid_argument);
  CHECK_THROWS_AS(ca::TwoLevelMemory(256, 0), ca::invalid_argument);
  ca::TwoLevelMemory m(256);
  CHECK_THROWS_AS(m.access(~0ull, 2, false), ca::invalid_argument);
}

namespace {

using test::create, test::retire;

void kernel(ca::Trace& t, std::vector<ca::TraceArg> args) { t.record_kernel("k", args); }

const ca::DeviceModel dram_model{"dram", 10, 5};
const ca::DeviceModel nvram_model{"nvram", 2, 1};

}  // namespace

TEST_CASE("2lm: simulate_2lm streams kernel arguments through the cache and models their time") {
  ca::Trace t;
  create(t, 1, 128);  // address 0: sets 0, 1
  create(t, 2, 128);  // address 128: sets 2, 3
  kernel(t, {{1, 128, false, 0}, {2, 128, true, 0}});
  kernel(t, {{2, 128, true, 0}, {1, 128, false, 0}});  // reads first: 1 then 2
  const ca::TwoLmResult r = ca::simulate_2lm(t, 256, 4096, true, dram_model, nvram_model);
  CHECK(r.kernels == 2);
  CHECK(r.counters.clean_misses == 4);
  CHECK(r.counters.hits == 4);
  CHECK(r.counters.dirty_misses == 0);
  CHECK(r.hit_rate == doctest::Approx(0.5));
  CHECK(r.clean_miss_rate == doctest::Approx(0.5));
  // Lines: 4 read, 4 written at DRAM speed; 4 misses read from NVRAM.
  const double expected = (4 * 64 / 10.0 + 4 * 64 / 5.0 + 4 * 64 / 2.0) * 1e-9;
  CHECK(r.modeled_seconds == doctest::Approx(expected));
}

TEST_CASE("2lm: of several iterations, the steady state's: a warm cache hits where the cold first iteration missed") {
  // Each of 5 iterations reads the same 128-byte object, which the cache
  // (256 bytes) keeps: iteration 1 misses its 2 lines, the others hit.
  ca::Trace t;
  create(t, 1, 128);
  for (std::uint64_t i = 1; i <= 5; ++i) {
    t.record({.kind = ca::TraceKind::iteration, .object = i});
    kernel(t, {{1, 128, false, 0}});
  }
  const ca::TwoLmResult r = ca::simulate_2lm(t, 256, 4096, true, dram_model, nvram_model);
  CHECK(r.iterations == 5);
  CHECK(r.counters_iterations == 2);  // the third and the fourth (sim/replay.hpp steady_window)
  CHECK(r.counters.clean_misses == 0);
  CHECK(r.counters.hits == 4);
  CHECK(r.hit_rate == 1.0);
  CHECK(r.modeled_seconds == doctest::Approx(2 * 64 / 10.0 * 1e-9));  // one iteration: 2 lines at DRAM speed
  // Without iteration events: the whole trace, its cold misses included.
  ca::Trace whole;
  create(whole, 1, 128);
  for (int i = 0; i < 5; ++i) kernel(whole, {{1, 128, false, 0}});
  const ca::TwoLmResult w = ca::simulate_2lm(whole, 256, 4096, true, dram_model, nvram_model);
  CHECK(w.counters.clean_misses == 2);
  CHECK(w.counters_iterations == 1);
  CHECK(w.modeled_seconds == doctest::Approx((10 * 64 / 10.0 + 2 * 64 / 2.0) * 1e-9));
}

TEST_CASE("2lm: memory optimisations reuse a retired object's addresses at once (2LM:M vs 2LM:0)") {
  ca::Trace t;
  create(t, 1, 256);
  kernel(t, {{1, 256, true, 0}});  // the whole cache dirty with tag 0
  retire(t, 1);
  create(t, 2, 256);
  kernel(t, {{2, 256, true, 0}});
  t.record({.kind = ca::TraceKind::collect});
  const ca::TwoLmResult m = ca::simulate_2lm(t, 256, 4096, true, dram_model, nvram_model);
  CHECK(m.counters.hits == 4);  // object 2 took object 1's addresses
  CHECK(m.counters.dirty_misses == 0);
  CHECK(m.peak_bytes == 256);
  const ca::TwoLmResult none = ca::simulate_2lm(t, 256, 4096, false, dram_model, nvram_model);
  CHECK(none.counters.hits == 0);
  CHECK(none.counters.dirty_misses == 4);  // object 2 at address 256 evicts object 1's dirty lines
  CHECK(none.counters.nvram_bytes_written == 256);
  CHECK(none.peak_bytes == 512);
  CHECK(none.modeled_seconds > m.modeled_seconds);
}

TEST_CASE("2lm: without memory optimisations a full NVRAM triggers a garbage collection, not a failure") {
  ca::Trace t;
  create(t, 1, 256);
  kernel(t, {{1, 256, true, 0}});
  retire(t, 1);
  create(t, 2, 256);  // NVRAM of 384 bytes: object 1's garbage is in the way
  kernel(t, {{2, 256, true, 0}});
  const ca::TwoLmResult none = ca::simulate_2lm(t, 256, 384, false, dram_model, nvram_model);
  CHECK(none.collections == 1);
  CHECK(none.peak_bytes == 256);
  CHECK(none.counters.hits == 4);  // after the collection, object 2 reuses object 1's addresses
  // A live object in the way is not garbage: out of memory as before.
  ca::Trace full;
  create(full, 1, 256);
  create(full, 2, 256);
  CHECK_THROWS_AS((void)ca::simulate_2lm(full, 256, 384, false, dram_model, nvram_model), ca::out_of_memory);
}

TEST_CASE("2lm: simulate_2lm names the event of a bad trace") {
  ca::Trace t;
  create(t, 1, 64);
  kernel(t, {{7, 64, false, 0}});
  try {
    (void)ca::simulate_2lm(t, 256, 4096, true, dram_model, nvram_model);
    FAIL("expected invalid_argument");
  } catch (const ca::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("event 1") != std::string::npos);
    CHECK(what.find("#7") != std::string::npos);
  }
  CHECK_THROWS_AS((void)ca::simulate_2lm(t, 256, 4096, true, {"dram", 0, 1}, nvram_model), ca::invalid_argument);
}
