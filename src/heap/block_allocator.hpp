// Offset allocator shared by every heap kind. Its bookkeeping lives here, in
// ordinary process memory, never inside the heap (DESIGN.md: never write
// metadata into slow memory).
//
// Blocks are kept in address order (a doubly linked list) so that evictfrom
// can clear a contiguous range and defrag can slide live blocks down; every
// block is also indexed by its offset, so the block at an address is found in
// O(log n) (a policy looking for an eviction window asks this once per
// candidate); free blocks are indexed by (size, offset) for O(log n) best
// fit, except the one at the end of the heap (the wilderness), used last.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <set>

namespace cachedarrays::detail {

struct Block {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;  // a multiple of the alignment
  Block* prev = nullptr;   // address order
  Block* next = nullptr;
  void* owner = nullptr;   // the Region of a live block; null when free
  bool free = true;
  bool reserved = false;   // freed inside an evictfrom window: not reusable yet
};

class BlockAllocator {
 public:
  BlockAllocator(std::uint64_t capacity, std::uint64_t alignment);
  ~BlockAllocator();
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  // Best fit: the smallest free block that holds `bytes` (lowest address on
  // ties), taking the free block at the end of the heap only when no other
  // fits. Returns null when no free block is large enough. `bytes` > 0.
  [[nodiscard]] Block* try_allocate(std::uint64_t bytes, void* owner);
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
                          const std::function<bool(void* owner)>& evict);

  // Slides live blocks towards offset 0. `movable(owner)` says whether a
  // block may move (pinned ones may not: they stay, and later blocks slide
  // only into the gap after them). `relocate(owner, new_offset)` must copy
  // the data down (source and destination may overlap: use memmove) before
  // returning. With until_hole > 0 the walk stops once a free block of that
  // many bytes exists. Returns the number of blocks moved.
  std::uint64_t defrag(const std::function<bool(void* owner)>& movable,
                       const std::function<void(void* owner, std::uint64_t new_offset)>& relocate,
                       std::uint64_t until_hole = 0);

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
  [[nodiscard]] std::uint64_t round_up(std::uint64_t bytes) const noexcept {
    return (bytes + alignment_ - 1) & ~(alignment_ - 1);
  }
  // Checks list order, coalescing, index contents and the byte count;
  // throws invariant_violation with the first inconsistency found.
  void check() const;

 private:
  struct BySizeThenOffset {
    bool operator()(const Block* a, const Block* b) const noexcept {
      return a->size != b->size ? a->size < b->size : a->offset < b->offset;
    }
  };

  Block* new_block();
  void delete_block(Block* block);
  void index(Block* block);
  void unindex(Block* block);
  Block* coalesce(Block* block);  // with free, unreserved neighbours
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
  // Node memory for the index and the blocks: allocation and free stay in
  // the hundred-nanosecond range with tens of thousands of live regions.
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::set<Block*, BySizeThenOffset> free_index_{&pool_};
  // Every block by its offset: kept in step with the list on each split,
  // merge and defrag slide.
  std::pmr::map<std::uint64_t, Block*> by_offset_{&pool_};
  // The free block at the end of the heap, if any: not in free_index_.
  Block* wilderness_ = nullptr;
  Block* spare_ = nullptr;  // free list of Block nodes
};

}  // namespace cachedarrays::detail
