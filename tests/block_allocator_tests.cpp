// The offset allocator behind every heap: best fit, coalescing, address
// order, evict_range with decline roll-back, and sliding defrag.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/block_allocator.hpp"

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
  std::mt19937_64 rng(7);
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
  std::mt19937_64 rng(12345);
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

TEST_CASE("allocator: walk_range visits exactly the blocks overlapping a range, through splits, merges and defrag") {
  BlockAllocator a(1 << 20, 64);
  std::mt19937_64 rng(777);
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
