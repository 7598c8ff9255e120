// The offset allocator behind every heap: best fit, coalescing, address
// order, evict_range with decline roll-back, and sliding defrag.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/block_allocator.hpp"
#include "test_support.hpp"

namespace {

// What the tests' blocks belong to: a number, so that callbacks can say
// which block they were handed.
struct Tag {
  std::uintptr_t index;
};

// Owners with stable addresses, one per index.
Tag& tag(std::uintptr_t i) {
  static std::map<std::uintptr_t, Tag> tags;
  return tags.try_emplace(i, Tag{i}).first->second;
}

using BlockAllocator = cachedarrays::detail::BlockAllocator<Tag>;
using Block = BlockAllocator::Block;

}  // namespace

TEST_CASE("allocator: best fit picks the smallest hole that fits, lowest address on ties") {
  BlockAllocator a(1 << 20, 64);
  Block* b0 = a.try_allocate(1000, tag(0));  // rounded to 1024
  Block* b1 = a.try_allocate(64, tag(1));
  Block* b2 = a.try_allocate(4096, tag(2));
  Block* b3 = a.try_allocate(64, tag(3));
  Block* b4 = a.try_allocate(512, tag(4));
  Block* b5 = a.try_allocate(64, tag(5));
  REQUIRE(b5 != nullptr);
  CHECK(b0->size == 1024);
  CHECK(b1->offset == 1024);
  a.release(b0);  // hole of 1024 at 0
  a.release(b2);  // hole of 4096
  a.release(b4);  // hole of 512
  a.check();
  Block* fit = a.try_allocate(500, tag(6));
  CHECK(fit->offset == b4->offset);  // the 512 hole, not the 1024 one
  Block* fit2 = a.try_allocate(1024, tag(7));
  CHECK(fit2->offset == 0);
  CHECK(a.bytes_in_use() == 64 * 3 + 512 + 1024);
  a.check();
  (void)b3;
}

TEST_CASE("allocator: the end of the heap is used only when no hole fits") {
  BlockAllocator a(8192, 64);
  Block* b0 = a.try_allocate(4096, tag(0));
  Block* b1 = a.try_allocate(64, tag(1));
  REQUIRE(b1 != nullptr);
  a.release(b0);  // a hole of 4096 at 0; the end of the heap is 4032 bytes
  // 1024 bytes fit both, and the end is the tighter fit: the hole is taken.
  CHECK(a.try_allocate(1024, tag(2))->offset == 0);
  CHECK(a.try_allocate(3072, tag(3))->offset == 1024);
  // No hole is left: the next block goes to the end.
  CHECK(a.try_allocate(64, tag(4))->offset == 4096 + 64);
  CHECK(a.largest_free_block() == 8192 - 4096 - 128);
  a.check();
}

TEST_CASE("allocator: a heap as large as a run's peak extent places every block where a larger heap did") {
  // On a large heap: A at 0, B after it, C after B; C and A freed, then D.
  // Best fit alone would put D in whichever free block is smaller; on a heap
  // that ends where C ended, that is C's old place, not A's.
  std::vector<std::uint64_t> placed;
  std::uint64_t extent = 0;
  for (const std::uint64_t capacity : {std::uint64_t{1} << 20, std::uint64_t{5184}}) {
    BlockAllocator a(capacity, 64);
    Block* A = a.try_allocate(4096, tag(0));
    Block* B = a.try_allocate(64, tag(1));
    Block* C = a.try_allocate(1024, tag(2));
    REQUIRE(B != nullptr);
    extent = C->offset + C->size;
    a.release(C);
    a.release(A);
    Block* D = a.try_allocate(1024, tag(3));
    REQUIRE(D != nullptr);
    placed.push_back(D->offset);
    a.check();
  }
  CHECK(extent == 5184);
  CHECK(placed[0] == 0);
  CHECK(placed[1] == placed[0]);
}

TEST_CASE("allocator: placement does not depend on capacity, so a run fits in its own peak extent") {
  // Record a random allocate/free sequence on a large heap, then replay it
  // on a heap exactly as large as the highest block end it reached: every
  // block lands at the same offset and nothing fails.
  test::Rng rng(7);
  struct Step {
    bool allocate;
    std::uint64_t bytes_or_index;
  };
  std::vector<Step> steps;
  std::vector<std::uint64_t> offsets;
  std::uint64_t extent = 0;
  {
    BlockAllocator big(std::uint64_t{1} << 30, 64);
    std::vector<Block*> live;
    for (int i = 0; i < 20000; ++i) {
      if (live.empty() || rng() % 5 < 3) {
        const std::uint64_t bytes = 64 + rng() % (rng() % 8 == 0 ? 1 << 20 : 1 << 12);
        Block* b = big.try_allocate(bytes, tag(live.size()));
        REQUIRE(b != nullptr);
        steps.push_back({true, bytes});
        offsets.push_back(b->offset);
        extent = std::max(extent, b->offset + b->size);
        live.push_back(b);
      } else {
        const std::size_t victim = rng() % live.size();
        big.release(live[victim]);
        live[victim] = live.back();
        live.pop_back();
        steps.push_back({false, victim});
      }
    }
  }
  BlockAllocator exact(extent, 64);
  std::vector<Block*> live;
  std::size_t next_offset = 0;
  for (const Step& step : steps) {
    if (step.allocate) {
      Block* b = exact.try_allocate(step.bytes_or_index, tag(live.size()));
      REQUIRE(b != nullptr);
      REQUIRE(b->offset == offsets[next_offset++]);
      live.push_back(b);
    } else {
      exact.release(live[step.bytes_or_index]);
      live[step.bytes_or_index] = live.back();
      live.pop_back();
    }
  }
  exact.check();
}

TEST_CASE("allocator: freeing coalesces neighbours back into one block") {
  BlockAllocator a(64 * 100, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  CHECK(a.try_allocate(1, tag(200)) == nullptr);
  CHECK(a.largest_free_block() == 0);
  // Free in an interleaved order; every merge path is taken.
  for (int i = 0; i < 100; i += 2) a.release(blocks[i]);
  a.check();
  CHECK(a.largest_free_block() == 64);
  for (int i = 1; i < 100; i += 2) a.release(blocks[i]);
  a.check();
  CHECK(a.largest_free_block() == 64 * 100);
  CHECK(a.live_blocks() == 0);
  int count = 0;
  a.walk([&](const Block&) { ++count; });
  CHECK(count == 1);
}

TEST_CASE("allocator: random allocate/free keeps address order and byte counts exact") {
  BlockAllocator a(8 << 20, 64);
  test::Rng rng(12345);
  std::map<std::uintptr_t, Block*> live;
  std::uintptr_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const std::uint64_t bytes = 1 + rng() % 65536;
      if (Block* b = a.try_allocate(bytes, tag(next))) {
        CHECK(b->size >= bytes);
        CHECK(b->offset % 64 == 0);
        live[next++] = b;
      }
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      a.release(it->second);
      live.erase(it);
    }
    if (step % 500 == 0) a.check();
  }
  a.check();
  std::uint64_t sum = 0;
  for (auto& [id, b] : live) sum += b->size;
  CHECK(sum == a.bytes_in_use());
}

TEST_CASE("allocator: evict_range clears a contiguous range through the callback") {
  BlockAllocator a(64 * 16, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  std::vector<std::uintptr_t> visited;
  const auto result = a.evict_range(64 * 4, 64 * 4, [&](Tag& owner) {
    visited.push_back(owner.index);
    const auto i = owner.index;
    a.release(blocks[i]);
    return true;
  });
  CHECK(result == BlockAllocator::EvictResult::cleared);
  CHECK(visited == std::vector<std::uintptr_t>{4, 5, 6, 7});
  CHECK(a.largest_free_block() == 64 * 4);
  a.check();
  Block* again = a.try_allocate(64 * 4, tag(99));
  REQUIRE(again != nullptr);
  CHECK(again->offset == 64 * 4);
}

TEST_CASE("allocator: a declined eviction rolls back to a consistent heap") {
  BlockAllocator a(64 * 16, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  a.release(blocks[3]);  // a free block just before the window merges back afterwards
  blocks[3] = nullptr;
  int calls = 0;
  const auto result = a.evict_range(64 * 4, 64 * 4, [&](Tag& owner) {
    const auto i = owner.index;
    if (++calls == 3) return false;  // decline the third block
    a.release(blocks[i]);
    blocks[i] = nullptr;
    return true;
  });
  CHECK(result == BlockAllocator::EvictResult::declined);
  a.check();
  // Blocks 4 and 5 were freed and merged with block 3's hole; 6 stays live.
  CHECK(a.largest_free_block() == 64 * 3);
  CHECK(blocks[6] != nullptr);
  CHECK(a.live_blocks() == 13);
}

TEST_CASE("allocator: space freed inside the window is not handed out by callbacks") {
  BlockAllocator a(64 * 8, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  a.release(blocks[7]);  // one free block outside the window
  Block* during = nullptr;
  a.evict_range(0, 64 * 2, [&](Tag& owner) {
    const auto i = owner.index;
    a.release(blocks[i]);
    // An allocation made by the callback must not land in the window.
    if (during == nullptr) during = a.try_allocate(64, tag(50));
    return true;
  });
  REQUIRE(during != nullptr);
  CHECK(during->offset == 64 * 7);
  a.check();
  CHECK(a.largest_free_block() == 64 * 2);
}

TEST_CASE("allocator: a callback that claims success without freeing is reported") {
  BlockAllocator a(64 * 4, 64);
  for (int i = 0; i < 4; ++i) (void)a.try_allocate(64, tag(i));
  CHECK_THROWS_AS(a.evict_range(0, 64, [](Tag&) { return true; }), cachedarrays::invariant_violation);
  a.check();  // the reservation was undone
  CHECK(a.live_blocks() == 4);
}

TEST_CASE("allocator: defrag slides blocks down and keeps pinned ones in place") {
  BlockAllocator a(64 * 10, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  for (int i : {0, 2, 3, 6, 8}) a.release(blocks[i]);
  // Live: 1, 4, 5, 7, 9. Pin 5.
  std::map<std::uintptr_t, std::uint64_t> moved_to;
  const auto moved = a.defrag([&](Tag& owner) { return owner.index != 5; },
                              [&](Tag& owner, std::uint64_t offset) { moved_to[owner.index] = offset; });
  a.check();
  CHECK(moved == 4);
  CHECK(moved_to[1] == 0);
  CHECK(moved_to[4] == 64);
  CHECK(moved_to.count(5) == 0);  // pinned: stays at 320
  CHECK(blocks[5]->offset == 64 * 5);
  CHECK(moved_to[7] == 64 * 6);  // slides only into the gap after the pinned block
  CHECK(moved_to[9] == 64 * 7);
  // Holes left: [128, 320) before the pinned block and [512, 640) at the end.
  CHECK(a.largest_free_block() == 64 * 3);
  CHECK(a.bytes_in_use() == 64 * 5);
}

TEST_CASE("allocator: defrag until a hole is large enough moves no more than it must") {
  BlockAllocator a(64 * 10, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  for (int i : {0, 2, 4, 6, 8}) a.release(blocks[i]);
  // Live: 1, 3, 5, 7, 9; five holes of 64 bytes.
  std::vector<std::uintptr_t> moved;
  const auto relocate = [&](Tag& owner, std::uint64_t) { moved.push_back(owner.index); };
  const auto movable = [](Tag&) { return true; };
  CHECK(a.defrag(movable, relocate, 64) == 0);  // a hole of 64 exists already
  // Sliding 1 down merges holes 0 and 2 (128 bytes); sliding 3 adds hole 4.
  CHECK(a.defrag(movable, relocate, 192) == 2);
  CHECK(moved == std::vector<std::uintptr_t>{1, 3});
  CHECK(a.largest_free_block() == 192);
  CHECK(blocks[5]->offset == 64 * 5);  // the rest of the heap did not move
  a.check();
}

TEST_CASE("allocator: the cheapest window holds the fewest live bytes, no immovable block, and fits outside") {
  BlockAllocator a(64 * 10, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  for (int i : {1, 5, 6, 9}) a.release(blocks[i]);
  // Live: 0, 2, 3, 4, 7, 8; holes [64, 128), [320, 448), [576, 640).
  const auto any = [](const Tag&) { return true; };
  // 192 bytes: [256, 448) holds only block 4.
  std::optional<BlockAllocator::Window> w = a.cheapest_window(192, any);
  REQUIRE(w);
  CHECK(w->start == 64 * 4);
  CHECK(w->live_bytes == 64);
  // Block 4 immovable: [320, 512) holds block 7 alone.
  w = a.cheapest_window(192, [](const Tag& t) { return t.index != 4; });
  REQUIRE(w);
  CHECK(w->start == 64 * 5);
  CHECK(w->live_bytes == 64);
  // A hole already large enough is a window of no live bytes.
  w = a.cheapest_window(128, any);
  REQUIRE(w);
  CHECK(w->live_bytes == 0);
  // 256 bytes, every free byte: [192, 448) holds blocks 3 and 4, which the
  // holes outside it (1 and 9) take. [0, 256) and [64, 320) hold more live
  // bytes, and [128, 384) more than the 128 free bytes outside it.
  w = a.cheapest_window(256, any);
  REQUIRE(w);
  CHECK(w->start == 64 * 3);
  CHECK(w->live_bytes == 128);
  // Nothing movable, more than the heap, or more than its free bytes: no
  // window (its live blocks would need more room outside than there is).
  CHECK(!a.cheapest_window(192, [](const Tag&) { return false; }));
  CHECK(!a.cheapest_window(64 * 11, any));
  CHECK(!a.cheapest_window(320, any));
  a.check();
}

TEST_CASE("allocator: walk_range visits exactly the blocks overlapping a range, through splits, merges and defrag") {
  BlockAllocator a(1 << 20, 64);
  test::Rng rng(777);
  std::map<std::uintptr_t, Block*> live;
  std::uintptr_t next = 0;
  // What the address index must agree with: the full address-order walk.
  const auto overlapping_by_full_walk = [&](std::uint64_t start, std::uint64_t bytes) {
    std::vector<const Block*> out;
    a.walk([&](const Block& b) {
      if (b.offset < start + bytes && b.offset + b.size > start) out.push_back(&b);
    });
    return out;
  };
  for (int step = 0; step < 4000; ++step) {
    const auto choice = rng() % 10;
    if (live.empty() || choice < 6) {
      if (Block* b = a.try_allocate(1 + rng() % 8192, tag(next))) live[next++] = b;
    } else if (choice < 9) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      a.release(it->second);
      live.erase(it);
    } else {
      // Slides change block offsets: the index must follow them.
      a.defrag([](Tag&) { return true; }, [](Tag&, std::uint64_t) {}, 1 + rng() % 65536);
    }
    const std::uint64_t start = rng() % a.capacity();
    const std::uint64_t bytes = 1 + rng() % std::min<std::uint64_t>(a.capacity() - start, 32768);
    std::vector<const Block*> seen;
    a.walk_range(start, bytes, [&](const Block& b) { seen.push_back(&b); });
    REQUIRE(seen == overlapping_by_full_walk(start, bytes));
    if (step % 250 == 0) a.check();
  }
  a.check();
}

// ---- allocate_at: blocks at planned offsets -------------------------------------

namespace {

// Everything a failed allocate_at must leave as it was.
struct Layout {
  struct Entry {
    std::uint64_t offset, size;
    bool free;
    const Tag* owner;
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> blocks;
  std::uint64_t in_use, live, largest_free;
  bool operator==(const Layout&) const = default;
};

Layout layout_of(const BlockAllocator& a) {
  Layout l{{}, a.bytes_in_use(), a.live_blocks(), a.largest_free_block()};
  a.walk([&](const Block& b) { l.blocks.push_back({b.offset, b.size, b.free, b.owner}); });
  return l;
}

// True when every byte of [offset, offset + bytes rounded up) lies in the
// heap and in free blocks, by the full address-order walk.
bool range_free(const BlockAllocator& a, std::uint64_t offset, std::uint64_t bytes) {
  if (bytes == 0 || offset % a.alignment() != 0 || offset >= a.capacity() || bytes > a.capacity() - offset) {
    return false;
  }
  const std::uint64_t end = offset + a.round_up(bytes);
  bool free = true;
  a.walk([&](const Block& b) {
    if (b.offset < end && b.offset + b.size > offset && !b.free) free = false;
  });
  return free;
}

}  // namespace

TEST_CASE("allocator: allocate_at takes exactly the range asked, splitting the free block around it") {
  BlockAllocator a(64 * 64, 64);
  Block* placed = a.try_allocate_at(64 * 10, 100, tag(0));
  REQUIRE(placed != nullptr);
  CHECK(placed->offset == 64 * 10);
  CHECK(placed->size == 128);  // rounded up to the alignment, as allocate does
  CHECK(placed->owner == &tag(0));
  a.check();
  // The free space before it is an interior hole now: best fit fills it
  // before the end of the heap.
  Block* online = a.try_allocate(64, tag(1));
  REQUIRE(online != nullptr);
  CHECK(online->offset == 0);
  // Inside a hole, the hole splits on both sides.
  Block* inner = a.try_allocate_at(64 * 4, 64 * 2, tag(2));
  REQUIRE(inner != nullptr);
  CHECK(inner->offset == 64 * 4);
  a.check();
  // Up to the last byte of the heap: no free block is left at its end.
  Block* last = a.try_allocate_at(64 * 63, 64, tag(3));
  REQUIRE(last != nullptr);
  CHECK(last->offset == 64 * 63);
  a.check();
  using E = Layout::Entry;
  CHECK(layout_of(a).blocks == std::vector<E>{{0, 64, false, &tag(1)},
                                              {64, 192, true, nullptr},
                                              {256, 128, false, &tag(2)},
                                              {384, 256, true, nullptr},
                                              {640, 128, false, &tag(0)},
                                              {768, 64 * 63 - 768, true, nullptr},
                                              {64 * 63, 64, false, &tag(3)}});
  CHECK(a.bytes_in_use() == 64 + 128 + 128 + 64);
  CHECK(a.live_blocks() == 4);
  CHECK(a.largest_free_block() == 64 * 63 - 768);
  // Best fit still takes the smallest hole that fits.
  CHECK(a.try_allocate(200, tag(4))->offset == 384);
  a.check();
}

TEST_CASE("allocator: allocate_at on a taken, partly taken or outside range returns null and changes nothing") {
  BlockAllocator a(64 * 32, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(a.try_allocate(256, tag(i)));  // 0, 256, 512, 768
  a.release(blocks[1]);  // a hole [256, 512); the end of the heap [1024, 2048) is free
  const Layout before = layout_of(a);
  struct Ask {
    std::uint64_t offset, bytes;
    const char* what;
  };
  const std::uint64_t max = ~std::uint64_t{0};
  for (const Ask& ask : std::vector<Ask>{{0, 64, "inside a live block"},
                                         {512, 256, "exactly a live block"},
                                         {192, 128, "a live block's end and the hole's start"},
                                         {448, 128, "the hole's end and a live block's start"},
                                         {256, 320, "the whole hole and more"},
                                         {256, 257, "one byte more than the hole, once rounded up"},
                                         {960, 128, "a live block's end and the free end of the heap"},
                                         {64 * 32, 64, "starting at the end of the heap"},
                                         {64 * 31, 128, "running past the end of the heap"},
                                         {64 * 31, max, "a size that overflows"},
                                         {max - 63, 64, "an offset past the heap whose end overflows"},
                                         {1024 + 32, 64, "an unaligned offset in a free block"},
                                         {1024, 0, "zero bytes"}}) {
    INFO(ask.what << ": [" << ask.offset << ", +" << ask.bytes << ")");
    CHECK(a.try_allocate_at(ask.offset, ask.bytes, tag(9)) == nullptr);
    CHECK(layout_of(a) == before);
    a.check();
  }
  // The ranges that are free are taken exactly: the whole hole, and the
  // heap's last byte.
  Block* hole = a.try_allocate_at(256, 256, tag(10));
  REQUIRE(hole != nullptr);
  CHECK(hole->offset == 256);
  Block* last = a.try_allocate_at(64 * 31, 1, tag(11));
  REQUIRE(last != nullptr);
  CHECK(last->offset == 64 * 31);
  CHECK(a.bytes_in_use() == 4 * 256 + 64);
  a.check();
}

TEST_CASE("allocator: blocks placed by allocate_at free and coalesce like any other") {
  BlockAllocator a(64 * 16, 64);
  Block* p0 = a.try_allocate_at(128, 64, tag(0));
  Block* p1 = a.try_allocate_at(256, 128, tag(1));
  Block* p2 = a.try_allocate_at(384, 64, tag(2));
  REQUIRE((p0 != nullptr && p1 != nullptr && p2 != nullptr));
  // Free: [0, 128), [192, 256), [448, 1024).
  a.check();
  a.release(p1);  // merges with [192, 256) before it
  a.check();
  CHECK(layout_of(a).blocks[2].offset == 192);
  CHECK(layout_of(a).blocks[2].size == 192);
  a.release(p0);  // merges both sides: [0, 384)
  a.check();
  CHECK(a.largest_free_block() == 1024 - 448);
  CHECK(layout_of(a).blocks.front().size == 384);
  a.release(p2);  // one free block again
  a.check();
  CHECK(layout_of(a).blocks.size() == 1);
  CHECK(a.largest_free_block() == 1024);
  CHECK(a.bytes_in_use() == 0);
  // And the whole heap can be placed at 0 again.
  CHECK(a.try_allocate_at(0, 1024, tag(3)) != nullptr);
  a.check();
}

TEST_CASE("allocator: allocate_at does not take space an evict_range holds back") {
  BlockAllocator a(64 * 8, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(a.try_allocate(64, tag(i)));
  a.release(blocks[6]);  // free, outside the window
  int refused = 0;
  const auto result = a.evict_range(0, 64 * 2, [&](Tag& owner) {
    a.release(blocks[owner.index]);
    // Freed, but reserved for the eviction: a callback cannot place a block there.
    if (a.try_allocate_at(64 * owner.index, 64, tag(50)) == nullptr) ++refused;
    return true;
  });
  CHECK(result == BlockAllocator::EvictResult::cleared);
  CHECK(refused == 2);
  a.check();
  Block* after = a.try_allocate_at(0, 128, tag(51));
  REQUIRE(after != nullptr);
  CHECK(after->offset == 0);
  CHECK(a.try_allocate_at(64 * 6, 64, tag(52)) != nullptr);  // the free block outside
  a.check();
}

TEST_CASE("allocator: allocate_at among random allocate, release, evict_range and defrag agrees with the layout") {
  BlockAllocator a(1 << 20, 64);
  test::Rng rng(test::test_seed(2024));
  INFO("seed " << rng.seed());
  std::map<std::uintptr_t, Block*> live;
  std::uintptr_t next = 0;
  std::uint64_t placed = 0;
  std::uint64_t refused = 0;
  const auto release_random = [&] {
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng.below(live.size())));
    a.release(it->second);
    live.erase(it);
  };
  for (int step = 0; step < 6000; ++step) {
    const auto choice = rng.below(20);
    if (choice < 5) {
      if (Block* b = a.try_allocate(rng.between(1, 16384), tag(next))) live[next++] = b;
    } else if (choice < 12) {
      // Half the asks start inside a free block and fit it; the others are
      // anywhere, mostly over live blocks.
      std::uint64_t offset = rng.below(a.capacity() / 64) * 64;
      std::uint64_t bytes = rng.between(1, 16384);
      if (rng.percent(50)) {
        std::vector<const Block*> holes;
        a.walk([&](const Block& b) {
          if (b.free) holes.push_back(&b);
        });
        if (!holes.empty()) {
          const Block& hole = *holes[rng.below(holes.size())];
          offset = hole.offset + rng.below(hole.size / 64) * 64;
          bytes = rng.between(1, hole.offset + hole.size - offset);
        }
      }
      const bool expected = range_free(a, offset, bytes);
      const Layout before = layout_of(a);
      Block* b = a.try_allocate_at(offset, bytes, tag(next));
      INFO("step " << step << ": allocate_at [" << offset << ", +" << bytes << ")");
      REQUIRE((b != nullptr) == expected);
      if (b != nullptr) {
        CHECK(b->offset == offset);
        CHECK(b->size == a.round_up(bytes));
        live[next++] = b;
        ++placed;
      } else {
        REQUIRE(layout_of(a) == before);
        ++refused;
      }
    } else if (choice < 17) {
      if (!live.empty()) release_random();
    } else if (choice < 19) {
      const std::uint64_t start = rng.below(a.capacity());
      const std::uint64_t bytes = rng.between(1, std::min<std::uint64_t>(a.capacity() - start, 65536));
      a.evict_range(start, bytes, [&](Tag& owner) {
        if (rng.percent(10)) return false;
        a.release(live.at(owner.index));
        live.erase(owner.index);
        return true;
      });
    } else {
      a.defrag([&](Tag& owner) { return owner.index % 7 != 0; }, [](Tag&, std::uint64_t) {}, rng.below(131072));
    }
    if (step % 100 == 0) a.check();
  }
  a.check();
  CHECK(placed > 100);
  CHECK(refused > 100);
  std::uint64_t sum = 0;
  for (const auto& [index, b] : live) sum += b->size;
  CHECK(sum == a.bytes_in_use());
}

// ---- the free-block index: exact best fit in size classes --------------------------

namespace {

// Where best fit must put `bytes`, by the full address-order walk: the
// smallest free block that holds it, the lowest address among equals, and
// the free block at the end of the heap only when nothing else fits.
std::optional<std::uint64_t> best_fit_by_walk(const BlockAllocator& a, std::uint64_t bytes) {
  const std::uint64_t need = a.round_up(bytes);
  const Block* best = nullptr;
  const Block* end = nullptr;
  a.walk([&](const Block& b) {
    if (!b.free || b.size < need) return;
    if (b.next == nullptr) {
      end = &b;
    } else if (best == nullptr || b.size < best->size) {
      best = &b;  // the walk is in address order: the first of a size is the lowest
    }
  });
  if (best == nullptr) best = end;
  return best == nullptr ? std::nullopt : std::optional<std::uint64_t>(best->offset);
}

}  // namespace

TEST_CASE("allocator: best fit is exact across size classes, for every alignment and heap size") {
  // Sizes from one unit to a quarter of the heap, spread evenly over the
  // powers of two, so that every level of the size classes is used, from
  // the one-size classes of small blocks to the wide ones of large blocks.
  struct Heap {
    std::uint64_t capacity, alignment;
  };
  for (const Heap heap : {Heap{1 << 22, 8}, Heap{std::uint64_t{1} << 30, 64}, Heap{std::uint64_t{1} << 40, 4096},
                          Heap{std::uint64_t{1} << 58, std::uint64_t{1} << 21}}) {
    INFO("capacity " << heap.capacity << ", alignment " << heap.alignment);
    BlockAllocator a(heap.capacity, heap.alignment);
    test::Rng rng(test::test_seed(99));
    INFO("seed " << rng.seed());
    const int top = std::countr_zero(heap.capacity) - 2;
    const auto random_size = [&] {
      const std::uint64_t scale = std::uint64_t{1} << rng.below(static_cast<std::uint64_t>(top));
      return rng.between(1, scale);
    };
    std::vector<Block*> live;
    for (int step = 0; step < 3000; ++step) {
      if (live.empty() || rng.percent(60)) {
        const std::uint64_t bytes = random_size();
        const std::optional<std::uint64_t> expected = best_fit_by_walk(a, bytes);
        Block* b = a.try_allocate(bytes, tag(live.size()));
        INFO("step " << step << ": " << bytes << " bytes");
        REQUIRE((b != nullptr) == expected.has_value());
        if (b == nullptr) continue;
        REQUIRE(b->offset == *expected);
        live.push_back(b);
      } else {
        const std::size_t victim = rng.below(live.size());
        a.release(live[victim]);
        live[victim] = live.back();
        live.pop_back();
      }
      if (step % 200 == 0) a.check();
    }
    a.check();
    // The largest free block agrees with the walk too.
    std::uint64_t largest = 0;
    a.walk([&](const Block& b) {
      if (b.free) largest = std::max(largest, b.size);
    });
    CHECK(a.largest_free_block() == largest);
  }
}

TEST_CASE("allocator: many free blocks of one size are taken lowest address first") {
  // The case a size class holding one size meets most: a layer's
  // activations, all alike, freed in any order.
  BlockAllocator a(64 * 4096, 64);
  std::vector<Block*> blocks;
  for (int i = 0; i < 2000; ++i) blocks.push_back(a.try_allocate(64 * (1 + i % 2), tag(i)));
  test::Rng rng(test::test_seed(5));
  std::vector<std::size_t> order(blocks.size() / 2);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = 2 * i;  // every 64-byte block
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i : order) a.release(blocks[i]);
  a.check();
  // 1000 holes of 64 bytes between live 128-byte blocks: refilled in
  // address order whatever order they were freed in.
  std::uint64_t previous = 0;
  for (int i = 0; i < 1000; ++i) {
    Block* b = a.try_allocate(64, tag(5000 + i));
    REQUIRE(b != nullptr);
    CHECK(b->offset == static_cast<std::uint64_t>(i) * 192);
    CHECK((i == 0 || b->offset > previous));
    previous = b->offset;
  }
  a.check();
  CHECK(a.largest_free_block() == a.capacity() - 1000 * 192);
}

TEST_CASE("allocator: blocks split off and merged back between readers of the address index stay consistent") {
  // Allocate and free leave new blocks out of the address treap until a
  // reader needs it, and a free that merges such a block back only undoes
  // its insert. Bursts of every length (past the point where the pending
  // blocks are put in the treap on their own), with readers of the index
  // in between, against a model of the live blocks.
  BlockAllocator a(4 << 20, 64);
  test::Rng rng(test::test_seed(2024));
  INFO("seed " << rng.seed());
  std::map<std::uint64_t, std::pair<std::uint64_t, Block*>> model;  // offset -> (size, block)
  std::uintptr_t next = 0;
  const auto agree = [&] {
    // Every live block disjoint from the others and inside the heap; free
    // and live bytes cover the heap; no two free blocks side by side.
    std::uint64_t end = 0;
    std::uint64_t live_bytes = 0;
    for (const auto& [offset, entry] : model) {
      REQUIRE(offset >= end);
      REQUIRE(offset + entry.first <= a.capacity());
      REQUIRE(entry.second->offset == offset);
      REQUIRE(!entry.second->free);
      end = offset + entry.first;
      live_bytes += entry.first;
    }
    REQUIRE(live_bytes == a.bytes_in_use());
    REQUIRE(model.size() == a.live_blocks());
    std::uint64_t free_bytes = 0;
    bool previous_free = false;
    a.walk([&](const Block& b) {
      if (b.free) {
        free_bytes += b.size;
        CHECK(!previous_free);
      }
      previous_free = b.free;
    });
    REQUIRE(free_bytes + live_bytes == a.capacity());
  };
  for (int round = 0; round < 300; ++round) {
    const std::uint64_t burst = rng.below(80);
    for (std::uint64_t i = 0; i < burst; ++i) {
      if (model.empty() || rng.percent(55)) {
        const std::uint64_t bytes = rng.between(1, 16384);
        if (Block* b = a.try_allocate(bytes, tag(next++))) model[b->offset] = {b->size, b};
        // An allocation freed at once, the pattern whose split and merge
        // never reach the treap.
        if (rng.percent(30)) {
          if (Block* t = a.try_allocate(rng.between(1, 16384), tag(next++))) a.release(t);
        }
      } else {
        auto it = model.begin();
        std::advance(it, static_cast<long>(rng.below(model.size())));
        a.release(it->second.second);
        model.erase(it);
      }
    }
    // A reader of the index: the blocks around a random offset, or a
    // placement at one, must see every block made during the burst.
    const std::uint64_t start = rng.below(a.capacity() / 64) * 64;
    if (rng.percent(50)) {
      std::vector<const Block*> seen, walked;
      const std::uint64_t bytes = rng.between(1, 65536);
      a.walk_range(start, bytes, [&](const Block& b) { seen.push_back(&b); });
      a.walk([&](const Block& b) {
        if (b.offset < start + bytes && b.offset + b.size > start) walked.push_back(&b);
      });
      REQUIRE(seen == walked);
    } else {
      const std::uint64_t bytes = rng.between(1, 4096);
      const bool free = range_free(a, start, bytes);
      Block* b = a.try_allocate_at(start, bytes, tag(next++));
      REQUIRE((b != nullptr) == free);
      if (b != nullptr) model[b->offset] = {b->size, b};
    }
    agree();
    if (round % 20 == 0) a.check();
  }
  a.check();
  for (auto& [offset, entry] : model) a.release(entry.second);
  a.check();
  CHECK(a.bytes_in_use() == 0);
  CHECK(a.largest_free_block() == a.capacity());
}
