// The offset allocator shared by every heap kind, as the layers above use it:
// the manager's heaps (heap.hpp) hand out regions with it, and planners replay
// a program's allocations on one to learn the extents a heap would reach.
// Programs never hold one (the DataManager does), so it lives in namespace
// detail and makes no stability promise; its algorithms are in
// detail/block_allocator_impl.hpp, its indexes in detail/treap.hpp and
// detail/segregated_free_index.hpp.
//
// The bookkeeping lives in ordinary process memory, never inside the heap
// (docs/design.md: never write metadata into slow memory). Blocks are kept in
// address order (a doubly linked list) so that evictfrom can clear a
// contiguous range and defrag can slide live blocks down. Two indexes live in
// the blocks themselves, so that allocate and free make no allocation of
// their own (bench/hint_overhead times them):
//   - every block in a treap by offset: the block at an address in
//     O(log n) (a policy looking for an eviction window asks this once per
//     candidate), kept in step with each split and merge in O(1) expected,
//     without a search. A block a split makes waits in a short pending list
//     until the treap is next read (or the list fills), so the tail an
//     allocation cuts off and its free merges back never reaches the treap;
//   - free blocks in size classes under a bitmap for exact best fit, except
//     the one at the end of the heap (the wilderness), used last.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "cachedarrays/heap/detail/segregated_free_index.hpp"
#include "cachedarrays/heap/detail/treap.hpp"

namespace cachedarrays::detail {

/// One block of a heap, free or live: [offset, offset + size). `Owner` is
/// what a live block belongs to (the manager's Region); the allocator only
/// hands it back, typed, to the callbacks of evict_range and defrag and to
/// walks. Readers use offset, size, owner and free; the links are the
/// allocator's. The fields a best-fit search reads and rotates (the key, the
/// size-class links, the priority) share the block's first cache line, so
/// that each block a search passes costs one line, not two.
template <typename Owner>
struct alignas(64) Block {
  std::uint64_t offset = 0;      ///< From the start of the heap.
  std::uint64_t size = 0;        ///< A multiple of the alignment.
  TreapLinks<Block> by_size;     ///< A free block in its size class (not the wilderness).
  std::uint32_t priority = 0;    ///< The treaps' random heap order.
  std::uint32_t pending = 0;     ///< 1 + its place among the blocks not yet in the address treap; 0: in it.
  bool free = true;              ///< Not handed out.
  bool reserved = false;         ///< Freed inside an evictfrom window: not reusable yet.
  Block* prev = nullptr;         ///< The block before it in address order.
  Block* next = nullptr;         ///< The block after it in address order.
  Owner* owner = nullptr;        ///< Of a live block; null when free.
  TreapLinks<Block> by_address;  ///< Every block, in the address index.
};

/// Hands out aligned blocks of a heap of `capacity` bytes by offset, best
/// fit, and keeps its bookkeeping outside the heap (see the file comment).
/// Not synchronised: its owner serialises calls.
template <typename Owner>
class BlockAllocator {
 public:
  /// The blocks this allocator hands out.
  using Block = detail::Block<Owner>;

  /// An empty heap of `capacity` bytes (rounded down to the alignment);
  /// `alignment` is a power of two >= 8 (callers validate it: DeviceSpec).
  BlockAllocator(std::uint64_t capacity, std::uint64_t alignment);
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  /// Best fit: the smallest free block that holds `bytes` (lowest address on
  /// ties), taking the free block at the end of the heap only when no other
  /// fits. Returns null when no free block is large enough. `bytes` > 0.
  /// A bitmap search and walks down small per-size-class treaps; nothing is
  /// allocated once the heap has held as many blocks before.
  [[nodiscard]] Block* try_allocate(std::uint64_t bytes, Owner& owner);
  /// The block [offset, offset + round_up(bytes)) exactly, for offset
  /// planners that place objects at planned addresses. Returns null, and
  /// changes nothing, when any byte of it is live, held back by a running
  /// evict_range, or outside the heap, and for an `offset` that is not a
  /// multiple of the alignment or 0 bytes (callers that take user input say
  /// which: DataManager::allocate_at). Placed blocks are ordinary blocks:
  /// release coalesces them, evict_range clears them, and defrag slides them
  /// down like any other, so a planned address holds only until a defrag.
  [[nodiscard]] Block* try_allocate_at(std::uint64_t offset, std::uint64_t bytes, Owner& owner);
  /// Returns a live block to the free pool, coalescing with free neighbours.
  void release(Block* block);

  /// How evict_range ended.
  enum class EvictResult {
    cleared,       ///< The whole range is one free block.
    declined,      ///< A callback declined; every block freed so far is back in the pool.
    out_of_range,  ///< 0 bytes, or a range not inside the heap; nothing changed.
  };
  /// Visits each live block overlapping [start, start + bytes) in address
  /// order and hands its owner to `evict`, which must release the block (and
  /// return true) or decline (return false). Space freed meanwhile is held
  /// back from allocation so the range cannot be refilled by the callbacks.
  /// On success the whole range is one free block; on a decline the walk
  /// stops and every block freed so far is returned to the pool, leaving a
  /// consistent heap. `start` is rounded down, the end up, to the alignment.
  /// Throws invariant_violation when a callback returns true without freeing
  /// its block.
  EvictResult evict_range(std::uint64_t start, std::uint64_t bytes, const std::function<bool(Owner& owner)>& evict);

  /// Slides live blocks towards offset 0. `movable(owner)` says whether a
  /// block may move (pinned ones may not: they stay, and later blocks slide
  /// only into the gap after them). `relocate(owner, new_offset)` must copy
  /// the data down (source and destination may overlap: use memmove) before
  /// returning. With until_hole > 0 the walk stops once a free block of that
  /// many bytes exists. Returns the number of blocks moved.
  std::uint64_t defrag(const std::function<bool(Owner& owner)>& movable,
                       const std::function<void(Owner& owner, std::uint64_t new_offset)>& relocate,
                       std::uint64_t until_hole = 0);

  /// A window cheapest_window found.
  struct Window {
    std::uint64_t start = 0;       ///< Its first byte's offset.
    std::uint64_t live_bytes = 0;  ///< The bytes of the live blocks inside it.
  };
  /// The start of the window of round_up(bytes) bytes, inside the heap, whose
  /// live blocks are all `movable` and hold the fewest bytes between them
  /// (the lowest such window on ties), and those bytes; nullopt when every
  /// window holds an immovable block, or the free bytes outside the window
  /// could not take its live ones. Windows start where a block starts: one
  /// starting inside a block holds that block anyway. O(blocks).
  [[nodiscard]] std::optional<Window> cheapest_window(std::uint64_t bytes,
                                                      const std::function<bool(const Owner& owner)>& movable) const;

  /// Calls `visit(const Block&)` on every block, free and live, in address
  /// order.
  template <typename F>
  void walk(F&& visit) const {
    for (const Block* b = head_; b != nullptr; b = b->next) visit(*b);
  }
  /// Calls `visit(const Block&)` on the blocks overlapping
  /// [start, start + bytes), in address order: O(log n) to find the first,
  /// then one step per block in the range.
  template <typename F>
  void walk_range(std::uint64_t start, std::uint64_t bytes, F&& visit) const {
    const std::uint64_t end = start + bytes;
    for (const Block* b = block_containing(start); b != nullptr && b->offset < end; b = b->next) visit(*b);
  }

  /// The heap's size in bytes, a multiple of the alignment.
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  /// Every block's offset and size are multiples of it.
  [[nodiscard]] std::uint64_t alignment() const noexcept { return alignment_; }
  /// The bytes of the live blocks (each rounded up to the alignment).
  [[nodiscard]] std::uint64_t bytes_in_use() const noexcept { return in_use_; }
  /// How many blocks are live.
  [[nodiscard]] std::uint64_t live_blocks() const noexcept { return live_; }
  /// The size of the largest free block: the largest allocation that fits.
  [[nodiscard]] std::uint64_t largest_free_block() const noexcept;
  /// One past the highest byte taken (live, or held back by a running
  /// evict_range): where an offset plan placed above everything here can
  /// start. 0 for an empty heap.
  [[nodiscard]] std::uint64_t extent() const noexcept {
    return wilderness_ != nullptr ? wilderness_->offset : capacity_;
  }
  /// `bytes` rounded up to the alignment: the size of the block holding it.
  [[nodiscard]] std::uint64_t round_up(std::uint64_t bytes) const noexcept {
    return (bytes + alignment_ - 1) & ~(alignment_ - 1);
  }
  /// Checks list order, coalescing, index contents and the byte count;
  /// throws invariant_violation with the first inconsistency found.
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
  // Put a new block in the address index, and take one out (see pending_).
  void address_insert(Block* block);
  void address_erase(Block* block);
  // Puts the pending blocks in the address treap; every reader of the
  // treap calls it first.
  void flush_addresses() const;
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
  // Every block by its offset, except the pending ones: kept in step with
  // the list on each split, merge and defrag slide. (Mutable: readers flush
  // the pending blocks into it first.)
  mutable AddressIndex by_address_;
  // The blocks made since the treap was last brought up to date, not in it
  // yet. A block split off on allocation and merged back on free (the tail
  // of a hole, or the wilderness, between an allocate and its free) then
  // never touches the treap: its erase only undoes its pending insert.
  // Flushed when full, and before any reader of the treap.
  mutable std::array<Block*, 32> pending_{};
  mutable std::size_t pending_count_ = 0;
  SegregatedFreeIndex<Block, &Block::by_size> free_index_;
  // The free block at the end of the heap, if any: not in free_index_.
  Block* wilderness_ = nullptr;
};

}  // namespace cachedarrays::detail

#include "cachedarrays/heap/detail/block_allocator_impl.hpp"
