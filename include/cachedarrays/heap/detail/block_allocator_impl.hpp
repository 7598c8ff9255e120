// The block allocator's member definitions (the interface, and why it is
// shaped so, is in cachedarrays/heap/block_allocator.hpp, which includes
// this file): best fit over the segregated free index, placement at a
// planned offset, splits and merges that keep the address treap in step,
// the evictfrom window, the cheapest window, defragmentation and the
// consistency check.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/block_allocator.hpp"

namespace cachedarrays::detail {

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
    // Field by field: `*block = Block{}` builds a temporary with a string
    // store whose start-up cost is a fair part of a whole allocation.
    block->offset = 0;
    block->size = 0;
    block->prev = nullptr;
    block->next = nullptr;
    block->owner = nullptr;
    block->by_address = {};
    block->by_size = {};
    block->pending = 0;
    block->free = true;
    block->reserved = false;
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
  if (block->next == nullptr)
    wilderness_ = block;
  else
    free_index_.insert(block);
}

template <typename Owner>
void BlockAllocator<Owner>::unindex(Block* block) {
  if (block == wilderness_)
    wilderness_ = nullptr;
  else
    free_index_.erase(block);
}

template <typename Owner>
void BlockAllocator<Owner>::address_insert(Block* block) {
  // Listed first, flushed after: the block is already linked in the list,
  // where it may be the predecessor of a pending block.
  pending_[pending_count_++] = block;
  block->pending = static_cast<std::uint32_t>(pending_count_);
  if (pending_count_ == pending_.size()) flush_addresses();
}

template <typename Owner>
void BlockAllocator<Owner>::address_erase(Block* block) {
  if (block->pending == 0) {
    by_address_.erase(block);
    return;
  }
  // Never in the treap: dropping it from the pending list undoes its insert.
  Block* last = pending_[--pending_count_];
  pending_[block->pending - 1] = last;
  last->pending = block->pending;
  block->pending = 0;
}

template <typename Owner>
void BlockAllocator<Owner>::flush_addresses() const {
  if (pending_count_ == 0) return;
  // In address order, each block's predecessor in the list is in the treap
  // by the time its turn comes (it either was, or is pending and lower), so
  // each goes in right after it without a search.
  std::sort(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pending_count_),
            [](const Block* a, const Block* b) { return a->offset < b->offset; });
  for (std::size_t i = 0; i < pending_count_; ++i) {
    Block* block = pending_[i];
    block->pending = 0;
    by_address_.insert_after(block->prev, block);
  }
  pending_count_ = 0;
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
typename BlockAllocator<Owner>::Block* BlockAllocator<Owner>::try_allocate_at(std::uint64_t offset, std::uint64_t bytes,
                                                                              Owner& owner) {
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
    address_insert(block);
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
  address_insert(tail);
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
    address_erase(block);
    delete_block(block);
    block = prev;
  }
  if (mergeable(block->next)) {
    Block* next = block->next;
    if (!next->reserved) unindex(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    address_erase(next);
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
  flush_addresses();
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
            "offset " +
            std::to_string(offset) + "; a callback must free the region or return false");
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
std::uint64_t BlockAllocator<Owner>::defrag(const std::function<bool(Owner& owner)>& movable,
                                            const std::function<void(Owner& owner, std::uint64_t new_offset)>& relocate,
                                            std::uint64_t until_hole) {
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
    address_erase(hole);  // back in after b, below
    // Swap positions in the list: hole goes after b.
    Block* before = hole->prev;
    Block* after = b->next;
    b->prev = before;
    if (before != nullptr)
      before->next = b;
    else
      head_ = b;
    b->next = hole;
    hole->prev = b;
    hole->next = after;
    if (after != nullptr) after->prev = hole;
    b->offset = new_offset;  // b keeps its place in the address order
    hole->offset = new_offset + b->size;
    address_insert(hole);
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
  const auto fail = [](const std::string& what) { throw invariant_violation("heap allocator inconsistent: " + what); };
  for (std::size_t i = 0; i < pending_count_; ++i) {
    if (pending_[i]->pending != i + 1) fail("the address index's pending list is out of step");
  }
  flush_addresses();
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
  if (used != in_use_)
    fail("bytes in use counter is " + std::to_string(in_use_) + " but live blocks hold " + std::to_string(used));
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
