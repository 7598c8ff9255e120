// Offset allocator shared by every heap kind. Its bookkeeping lives here, in
// ordinary process memory, never inside the heap (docs/design.md: never write
// metadata into slow memory).
//
// Blocks are kept in address order (a doubly linked list) so that evictfrom
// can clear a contiguous range and defrag can slide live blocks down. Two
// indexes live in the blocks themselves, so that allocate and free make no
// allocation of their own (bench/hint_overhead times them):
//   - every block in a treap by offset (treap.hpp): the block at an address
//     in O(log n) (a policy looking for an eviction window asks this once
//     per candidate), kept in step with each split and merge in O(1)
//     expected, without a search;
//   - free blocks in size classes under a bitmap (segregated_free_index.hpp)
//     for exact best fit, except the one at the end of the heap (the
//     wilderness), used last.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/segregated_free_index.hpp"
#include "cachedarrays/heap/detail/treap.hpp"

namespace cachedarrays::detail {

// `Owner` is what a live block belongs to (the manager's Region); the
// allocator only hands it back, typed, to the callbacks of evict_range and
// defrag and to walks.
template <typename Owner>
struct Block {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;  // a multiple of the alignment
  Block* prev = nullptr;   // address order
  Block* next = nullptr;
  Owner* owner = nullptr;  // of a live block; null when free
  TreapLinks<Block> by_address;  // every block
  TreapLinks<Block> by_size;     // a free block in its size class (not the wilderness)
  std::uint32_t priority = 0;    // the treaps' random heap order
  bool free = true;
  bool reserved = false;   // freed inside an evictfrom window: not reusable yet
};

template <typename Owner>
class BlockAllocator {
 public:
  using Block = detail::Block<Owner>;

  BlockAllocator(std::uint64_t capacity, std::uint64_t alignment);
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  // Best fit: the smallest free block that holds `bytes` (lowest address on
  // ties), taking the free block at the end of the heap only when no other
  // fits. Returns null when no free block is large enough. `bytes` > 0.
  // A bitmap search and walks down small per-size-class treaps
  // (segregated_free_index.hpp); nothing is allocated once the heap has
  // held as many blocks before.
  [[nodiscard]] Block* try_allocate(std::uint64_t bytes, Owner& owner);
  // The block [offset, offset + round_up(bytes)) exactly, for offset
  // planners that place objects at planned addresses. Returns null, and
  // changes nothing, when any byte of it is live, held back by a running
  // evict_range, or outside the heap, and for an `offset` that is not a
  // multiple of the alignment or 0 bytes (callers that take user input say
  // which: DataManager::allocate_at). Placed blocks are ordinary blocks:
  // release coalesces them, evict_range clears them, and defrag slides them
  // down like any other, so a planned address holds only until a defrag.
  [[nodiscard]] Block* try_allocate_at(std::uint64_t offset, std::uint64_t bytes, Owner& owner);
  // Returns the block to the free pool, coalescing with free neighbours.
  void release(Block* block);

  // Visits each live block overlapping [start, start + bytes) in address
  // order and hands its owner to `evict`, which must release the block (and
  // return true) or decline (return false). Space freed meanwhile is held
  // back from allocation so the range cannot be refilled by the callbacks.
  // On success the whole range is one free block; on a decline the walk
  // stops and every block freed so far is returned to the pool, leaving a
  // consistent heap. `start` is rounded down, the end up, to the alignment.
  enum class EvictResult { cleared, declined, out_of_range };
  EvictResult evict_range(std::uint64_t start, std::uint64_t bytes,
                          const std::function<bool(Owner& owner)>& evict);

  // Slides live blocks towards offset 0. `movable(owner)` says whether a
  // block may move (pinned ones may not: they stay, and later blocks slide
  // only into the gap after them). `relocate(owner, new_offset)` must copy
  // the data down (source and destination may overlap: use memmove) before
  // returning. With until_hole > 0 the walk stops once a free block of that
  // many bytes exists. Returns the number of blocks moved.
  std::uint64_t defrag(const std::function<bool(Owner& owner)>& movable,
                       const std::function<void(Owner& owner, std::uint64_t new_offset)>& relocate,
                       std::uint64_t until_hole = 0);

  // The start of the window of round_up(bytes) bytes, inside the heap, whose
  // live blocks are all `movable` and hold the fewest bytes between them
  // (the lowest such window on ties), and those bytes; nullopt when every
  // window holds an immovable block, or the free bytes outside the window
  // could not take its live ones. Windows start where a block starts: one
  // starting inside a block holds that block anyway. O(blocks).
  struct Window {
    std::uint64_t start = 0;
    std::uint64_t live_bytes = 0;
  };
  [[nodiscard]] std::optional<Window> cheapest_window(std::uint64_t bytes,
                                                      const std::function<bool(const Owner& owner)>& movable) const;

  // Address-order walk over every block, free and live.
  template <typename F>
  void walk(F&& visit) const {
    for (const Block* b = head_; b != nullptr; b = b->next) visit(*b);
  }
  // Address-order walk over the blocks overlapping [start, start + bytes):
  // O(log n) to find the first, then one step per block in the range.
  template <typename F>
  void walk_range(std::uint64_t start, std::uint64_t bytes, F&& visit) const {
    const std::uint64_t end = start + bytes;
    for (const Block* b = block_containing(start); b != nullptr && b->offset < end; b = b->next) visit(*b);
  }

  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t alignment() const noexcept { return alignment_; }
  [[nodiscard]] std::uint64_t bytes_in_use() const noexcept { return in_use_; }
  [[nodiscard]] std::uint64_t live_blocks() const noexcept { return live_; }
  [[nodiscard]] std::uint64_t largest_free_block() const noexcept;
  // One past the highest byte taken (live, or held back by a running
  // evict_range): where an offset plan placed above everything here can
  // start. 0 for an empty heap.
  [[nodiscard]] std::uint64_t extent() const noexcept {
    return wilderness_ != nullptr ? wilderness_->offset : capacity_;
  }
  [[nodiscard]] std::uint64_t round_up(std::uint64_t bytes) const noexcept {
    return (bytes + alignment_ - 1) & ~(alignment_ - 1);
  }
  // Checks list order, coalescing, index contents and the byte count;
  // throws invariant_violation with the first inconsistency found.
  void check() const;

 private:
  struct ByOffset {
    bool operator()(const Block& a, const Block& b) const noexcept { return a.offset < b.offset; }
  };
  using AddressIndex = Treap<Block, &Block::by_address, ByOffset>;

  Block* new_block();
  void delete_block(Block* block);
  void index(Block* block);
  void unindex(Block* block);
  Block* coalesce(Block* block);  // with free, unreserved neighbours
  // Cuts [block->offset + need, end) off a free, unindexed block as a new
  // free block, indexed.
  void split_tail(Block* block, std::uint64_t need);
  Block* take(Block* block, Owner& owner);  // marks an unindexed block live
  Block* block_containing(std::uint64_t offset) const;
  void unreserve_window();

  std::uint64_t capacity_;
  std::uint64_t alignment_;
  std::uint64_t in_use_ = 0;
  std::uint64_t live_ = 0;
  Block* head_ = nullptr;
  // The evictfrom window being cleared, [lo, hi); empty outside evict_range.
  std::uint64_t window_lo_ = 0;
  std::uint64_t window_hi_ = 0;
  // Every Block node made (a deque keeps their addresses), and the ones
  // not in use, linked through `next`: splitting and merging happen on
  // every allocation and free, and recycled nodes keep them off the
  // system allocator.
  std::deque<Block> nodes_;
  Block* spare_ = nullptr;
  std::uint32_t random_ = 0x9E3779B9u;  // xorshift32 state: treap priorities
  // Every block by its offset: kept in step with the list on each split,
  // merge and defrag slide.
  AddressIndex by_address_;
  SegregatedFreeIndex<Block, &Block::by_size> free_index_;
  // The free block at the end of the heap, if any: not in free_index_.
  Block* wilderness_ = nullptr;
};

// ---- definitions ---------------------------------------------------------
template <typename Owner>
BlockAllocator<Owner>::BlockAllocator(std::uint64_t capacity, std::uint64_t alignment)
    : capacity_(capacity & ~(alignment - 1)), alignment_(alignment), free_index_(alignment) {
  // Callers validate the spec; these are programming errors, not user input.
  assert(alignment >= 8 && (alignment & (alignment - 1)) == 0);
  head_ = new_block();
  head_->offset = 0;
  head_->size = capacity_;
  by_address_.insert_after(nullptr, head_);
  if (capacity_ > 0) index(head_);
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::new_block() {
  Block* block = spare_;
  if (block == nullptr) {
    block = &nodes_.emplace_back();
  } else {
    spare_ = spare_->next;
    *block = Block{};
  }
  random_ ^= random_ << 13;
  random_ ^= random_ >> 17;
  random_ ^= random_ << 5;
  block->priority = random_;
  return block;
}

template <typename Owner>
void BlockAllocator<Owner>::delete_block(Block* block) {
  block->next = spare_;
  spare_ = block;
}

template <typename Owner>
void BlockAllocator<Owner>::index(Block* block) {
  // The free block at the end of the heap is the wilderness, kept apart.
  if (block->next == nullptr) wilderness_ = block; else free_index_.insert(block);
}

template <typename Owner>
void BlockAllocator<Owner>::unindex(Block* block) {
  if (block == wilderness_) wilderness_ = nullptr; else free_index_.erase(block);
}

template <typename Owner>
std::uint64_t BlockAllocator<Owner>::largest_free_block() const noexcept {
  const Block* largest = free_index_.largest();
  const std::uint64_t interior = largest == nullptr ? 0 : largest->size;
  return std::max(interior, wilderness_ == nullptr ? 0 : wilderness_->size);
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::try_allocate(std::uint64_t bytes, Owner& owner) {
  assert(bytes > 0);
  if (bytes > capacity_) return nullptr;
  const std::uint64_t need = round_up(bytes);
  // Best fit: the smallest free block not smaller than `need`, the lowest
  // address among equals. The wilderness serves only requests no interior
  // hole can (wilderness preservation, Wilson et al. 1995): holes get
  // reused first, and where a block lands never depends on how far the heap
  // extends past its highest block, so a run fits in exactly its peak
  // extent (Stats::peak_extent).
  Block* block = free_index_.best_fit(need);
  if (block != nullptr) {
    free_index_.erase(block);
  } else if (wilderness_ != nullptr && wilderness_->size >= need) {
    block = wilderness_;
    wilderness_ = nullptr;
  } else {
    return nullptr;
  }

  split_tail(block, need);
  return take(block, owner);
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::try_allocate_at(std::uint64_t offset,
                                                                              std::uint64_t bytes, Owner& owner) {
  if (bytes == 0 || offset % alignment_ != 0 || offset >= capacity_ || bytes > capacity_ - offset) return nullptr;
  const std::uint64_t need = round_up(bytes);  // still inside: capacity_ is aligned
  Block* block = block_containing(offset);
  // One free block must hold the whole range: free neighbours are always
  // coalesced, so a range over two blocks crosses a live (or reserved) one.
  if (block == nullptr || !block->free || block->reserved || block->offset + block->size < offset + need) {
    return nullptr;
  }
  unindex(block);
  if (block->offset < offset) {
    // The free head before the range stays where it is, as its own block.
    Block* head = block;
    block = new_block();
    block->offset = offset;
    block->size = head->offset + head->size - offset;
    block->prev = head;
    block->next = head->next;
    if (head->next != nullptr) head->next->prev = block;
    head->next = block;
    head->size = offset - head->offset;
    by_address_.insert_after(head, block);
    index(head);
  }
  split_tail(block, need);
  return take(block, owner);
}

template <typename Owner>
void BlockAllocator<Owner>::split_tail(Block* block, std::uint64_t need) {
  if (block->size == need) return;
  Block* tail = new_block();
  tail->offset = block->offset + need;
  tail->size = block->size - need;
  tail->prev = block;
  tail->next = block->next;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->size = need;
  by_address_.insert_after(block, tail);
  index(tail);
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::take(Block* block, Owner& owner) {
  block->free = false;
  block->owner = &owner;
  in_use_ += block->size;
  ++live_;
  return block;
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::coalesce(Block* block) {
  // Reserved blocks (inside an evictfrom window) never merge with outside
  // ones, so that the window can be restored precisely on a decline.
  const auto mergeable = [block](const Block* other) {
    return other != nullptr && other->free && other->reserved == block->reserved;
  };
  if (mergeable(block->prev)) {
    Block* prev = block->prev;
    if (!prev->reserved) unindex(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    by_address_.erase(block);
    delete_block(block);
    block = prev;
  }
  if (mergeable(block->next)) {
    Block* next = block->next;
    if (!next->reserved) unindex(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    by_address_.erase(next);
    delete_block(next);
  }
  return block;
}

template <typename Owner>
void BlockAllocator<Owner>::release(Block* block) {
  assert(block != nullptr && !block->free);
  in_use_ -= block->size;
  --live_;
  block->free = true;
  block->owner = nullptr;
  // Inside an evictfrom window the space stays reserved until the walk ends.
  block->reserved = block->offset < window_hi_ && block->offset + block->size > window_lo_;
  block = coalesce(block);
  if (!block->reserved) index(block);
}

template <typename Owner>
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::block_containing(std::uint64_t offset) const {
  // The last block starting at or before `offset`.
  Block* b = by_address_.last_where([offset](const Block& n) { return n.offset <= offset; });
  return b != nullptr && offset < b->offset + b->size ? b : nullptr;
}

template <typename Owner>
typename BlockAllocator<Owner>::EvictResult BlockAllocator<Owner>::evict_range(
    std::uint64_t start, std::uint64_t bytes, const std::function<bool(Owner& owner)>& evict) {
  if (bytes == 0 || start >= capacity_ || bytes > capacity_ - start) return EvictResult::out_of_range;
  window_lo_ = start & ~(alignment_ - 1);
  window_hi_ = round_up(start + bytes);

  // Reserve the free blocks already inside the window, and (in release)
  // every block freed inside it while the callbacks run: nothing the
  // callbacks allocate may land there. Reserved blocks merge only with each
  // other, so the window can be handed back exactly.
  Block* first = block_containing(window_lo_);
  for (Block* b = first; b != nullptr && b->offset < window_hi_; b = b->next) {
    if (b->free) {
      unindex(b);
      b->reserved = true;
    }
  }

  bool declined = false;
  try {
    for (Block* b = first; b != nullptr && b->offset < window_hi_;) {
      if (b->free) {
        b = b->next;
        continue;
      }
      const std::uint64_t offset = b->offset;
      if (!evict(*b->owner)) {
        declined = true;
        break;
      }
      // The callback must have released the block; it may have merged with
      // reserved neighbours, so continue from whatever now covers `offset`.
      Block* now = block_containing(offset);
      if (now == nullptr || !now->free) {
        throw invariant_violation(
            "evictfrom: the eviction callback returned true but did not free the region at heap "
            "offset " + std::to_string(offset) + "; a callback must free the region or return false");
      }
      b = now->next;
    }
  } catch (...) {
    unreserve_window();
    throw;
  }
  // Hand every reserved block back to the pool, merging with free
  // neighbours outside the window: the roll-back after a decline, and the
  // cleared hole after success.
  unreserve_window();
  return declined ? EvictResult::declined : EvictResult::cleared;
}

template <typename Owner>
void BlockAllocator<Owner>::unreserve_window() {
  Block* b = block_containing(window_lo_);
  while (b != nullptr && b->prev != nullptr && b->prev->reserved) b = b->prev;
  while (b != nullptr && b->offset < window_hi_) {
    Block* next = b->next;
    if (b->reserved) {
      b->reserved = false;
      Block* merged = coalesce(b);
      index(merged);
      next = merged->next;
    }
    b = next;
  }
  window_lo_ = window_hi_ = 0;
}

template <typename Owner>
std::optional<typename BlockAllocator<Owner>::Window> BlockAllocator<Owner>::cheapest_window(
    std::uint64_t bytes, const std::function<bool(const Owner& owner)>& movable) const {
  if (bytes == 0 || bytes > capacity_) return std::nullopt;
  const std::uint64_t span = round_up(bytes);
  // Two pointers over the blocks in address order: [first, last) overlap
  // the window [start, start + span); `live` and `stuck` (immovable blocks)
  // count over them.
  std::optional<Window> best;
  std::uint64_t live = 0, free_inside = 0, stuck = 0;
  const Block* first = head_;
  const Block* last = head_;
  const auto add = [&](const Block* b, int sign) {
    const auto delta = [&](std::uint64_t& sum, std::uint64_t v) { sum = sign > 0 ? sum + v : sum - v; };
    if (b->free) {
      delta(free_inside, b->size);
    } else if (movable(*b->owner)) {
      delta(live, b->size);
    } else {
      delta(stuck, 1);
    }
  };
  for (const Block* c = head_; c != nullptr && c->offset + span <= capacity_; c = c->next) {
    for (; first != c; first = first->next) add(first, -1);
    for (; last != nullptr && last->offset < c->offset + span; last = last->next) add(last, +1);
    if (stuck > 0) continue;
    // The window's live blocks go into the free blocks outside it.
    const std::uint64_t free_outside = (capacity_ - in_use_) - free_inside;
    if (live > free_outside) continue;
    if (!best || live < best->live_bytes) best = Window{c->offset, live};
  }
  return best;
}

template <typename Owner>
std::uint64_t BlockAllocator<Owner>::defrag(
    const std::function<bool(Owner& owner)>& movable,
    const std::function<void(Owner& owner, std::uint64_t new_offset)>& relocate, std::uint64_t until_hole) {
  std::uint64_t moved = 0;
  if (until_hole > 0 && largest_free_block() >= until_hole) return 0;
  for (Block* b = head_; b != nullptr; b = b->next) {
    if (b->free || b->prev == nullptr || !b->prev->free || !movable(*b->owner)) continue;
    // Slide b into the start of the free block before it; the hole moves up
    // past b and merges with whatever free block follows.
    Block* hole = b->prev;
    const std::uint64_t new_offset = hole->offset;
    relocate(*b->owner, new_offset);
    unindex(hole);
    by_address_.erase(hole);  // back in after b, below
    // Swap positions in the list: hole goes after b.
    Block* before = hole->prev;
    Block* after = b->next;
    b->prev = before;
    if (before != nullptr) before->next = b; else head_ = b;
    b->next = hole;
    hole->prev = b;
    hole->next = after;
    if (after != nullptr) after->prev = hole;
    b->offset = new_offset;  // b keeps its place in the address order
    hole->offset = new_offset + b->size;
    by_address_.insert_after(b, hole);
    Block* merged = coalesce(hole);
    index(merged);
    ++moved;
    if (until_hole > 0 && merged->size >= until_hole) break;
    b = merged->prev;  // == b; the loop continues after the merged hole
  }
  return moved;
}

template <typename Owner>
void BlockAllocator<Owner>::check() const {
  const auto fail = [](const std::string& what) {
    throw invariant_violation("heap allocator inconsistent: " + what);
  };
  std::uint64_t expected_offset = 0;
  std::uint64_t used = 0;
  std::uint64_t live = 0;
  std::uint64_t free_blocks = 0;
  std::uint64_t blocks = 0;
  const Block* prev = nullptr;
  const Block* indexed = by_address_.first();
  for (const Block* b = head_; b != nullptr; b = b->next) {
    if (b->prev != prev) fail("broken back link at offset " + std::to_string(b->offset));
    if (indexed != b) fail("block at offset " + std::to_string(b->offset) + " missing from the address index");
    indexed = AddressIndex::next(indexed);
    ++blocks;
    if (b->offset != expected_offset) fail("gap or overlap at offset " + std::to_string(b->offset));
    if (b->size == 0 && capacity_ != 0) fail("empty block at offset " + std::to_string(b->offset));
    if (b->offset % alignment_ != 0 || b->size % alignment_ != 0) {
      fail("misaligned block at offset " + std::to_string(b->offset));
    }
    if (b->reserved) fail("block still reserved after evictfrom");
    if (b->free) {
      if (prev != nullptr && prev->free) fail("adjacent free blocks not coalesced");
      if (b->next == nullptr ? b != wilderness_ : !free_index_.holds(b)) {
        fail("free block at offset " + std::to_string(b->offset) + " missing from the index");
      }
      if (b->owner != nullptr) fail("free block with an owner");
      ++free_blocks;
    } else {
      if (b->owner == nullptr) fail("live block without an owner");
      used += b->size;
      ++live;
    }
    expected_offset += b->size;
    prev = b;
  }
  if (expected_offset != capacity_) fail("blocks do not cover the heap");
  if (used != in_use_) fail("bytes in use counter is " + std::to_string(in_use_) +
                            " but live blocks hold " + std::to_string(used));
  if (live != live_) fail("live block counter mismatch");
  if (wilderness_ != nullptr && (wilderness_->next != nullptr || !wilderness_->free)) {
    fail("the wilderness is not the free block at the end of the heap");
  }
  if (blocks != by_address_.check(fail)) fail("the address index holds blocks that no longer exist");
  free_index_.check(fail);
  if (free_blocks != free_index_.size() + (wilderness_ != nullptr ? 1 : 0)) {
    fail("index holds blocks that are not free");
  }
}

}  // namespace cachedarrays::detail
