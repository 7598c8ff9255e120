// The free blocks of a heap by size, for best fit in (near) constant time:
// segregated fits with bitmaps, as in TLSF (Masmano et al., "TLSF: a new
// dynamic memory allocator for real-time systems", ECRTS 2004), but exact.
//
// Sizes, in units of the alignment, fall into classes: one class per size
// below 2^(sub_bits + 1) units, above that 2^sub_bits classes per power of
// two (each spanning 1/64 of it). A bitmap of the classes that hold a
// block, summarised by one word, finds the first non-empty class at or
// above a request's in a few instructions. TLSF would take any block of the
// next class up (a good fit); here each class keeps its blocks in a treap
// by (size, offset), so the result is exactly the best fit of an index
// ordered by (size, offset) — the smallest block that holds the request,
// the lowest address among equals — and placement is what it always was.
// Classes hold few blocks, so the searches inside them are short; a class
// holding many blocks of one size still costs only a logarithm.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cachedarrays/heap/detail/treap.hpp"

namespace cachedarrays::detail {

// `Node` has `offset` and `size` (std::uint64_t, a multiple of the
// alignment while indexed) and a `priority` for the treaps; `Links` names
// its links for this index.
template <typename Node, TreapLinks<Node> Node::*Links>
class SegregatedFreeIndex {
 public:
  explicit SegregatedFreeIndex(std::uint64_t alignment) : unit_shift_(std::countr_zero(alignment)) {}

  void insert(Node* node) {
    const std::size_t c = class_of(node->size);
    bins_[c].insert(node);
    words_[c / 64] |= std::uint64_t{1} << (c % 64);
    summary_ |= std::uint64_t{1} << (c / 64);
    ++count_;
  }

  void erase(Node* node) {
    const std::size_t c = class_of(node->size);
    bins_[c].erase(node);
    if (bins_[c].empty()) {
      words_[c / 64] &= ~(std::uint64_t{1} << (c % 64));
      if (words_[c / 64] == 0) summary_ &= ~(std::uint64_t{1} << (c / 64));
    }
    --count_;
  }

  // The smallest block of at least `bytes` (a multiple of the alignment),
  // the lowest address among equals; null when none is that large.
  [[nodiscard]] Node* best_fit(std::uint64_t bytes) const {
    const std::size_t c = class_of(bytes);
    // The request's own class may hold smaller blocks too: search it...
    if (!bins_[c].empty()) {
      if (Node* fit = bins_[c].first_where([bytes](const Node& n) { return n.size >= bytes; })) return fit;
    }
    // ...while every block of a higher class fits: take the smallest of
    // the first non-empty one.
    const std::size_t above = first_class_from(c + 1);
    return above == no_class ? nullptr : bins_[above].first();
  }

  [[nodiscard]] Node* largest() const {
    if (summary_ == 0) return nullptr;
    const std::size_t word = 63 - static_cast<std::size_t>(std::countl_zero(summary_));
    const std::size_t c = word * 64 + 63 - static_cast<std::size_t>(std::countl_zero(words_[word]));
    return bins_[c].last();
  }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] bool holds(const Node* node) const { return bins_[class_of(node->size)].holds(node); }

  // Checks every class's treap, that each block sits in its size's class,
  // the bitmaps and the count; calls `fail(what)` (which must not return)
  // at the first inconsistency.
  template <typename Fail>
  void check(Fail&& fail) const {
    std::size_t total = 0;
    for (std::size_t c = 0; c < classes; ++c) {
      total += bins_[c].check(fail);
      for (const Node* n = bins_[c].first(); n != nullptr; n = Bin::next(n)) {
        if (class_of(n->size) != c) fail("a free block is filed under another size class");
      }
      const bool marked = (words_[c / 64] >> (c % 64) & 1) != 0;
      if (marked == bins_[c].empty()) fail("the size-class bitmap disagrees with its classes");
    }
    for (std::size_t w = 0; w < words; ++w) {
      if (((summary_ >> w & 1) != 0) != (words_[w] != 0)) fail("the bitmap summary disagrees with the bitmap");
    }
    if (total != count_) fail("the free-block count disagrees with the size classes");
  }

 private:
  struct BySizeThenOffset {
    bool operator()(const Node& a, const Node& b) const noexcept {
      return a.size != b.size ? a.size < b.size : a.offset < b.offset;
    }
  };
  using Bin = Treap<Node, Links, BySizeThenOffset>;

  // 64 classes per power of two: a class spans at most 1/64 of its sizes.
  static constexpr unsigned sub_bits = 6;
  // Sizes are below 2^64 bytes and units at least 8 bytes: below 2^61 units.
  static constexpr std::size_t classes = ((61 - sub_bits) << sub_bits) + (std::size_t{1} << (sub_bits + 1));
  static constexpr std::size_t words = (classes + 63) / 64;
  static_assert(words <= 64, "the summary is one word");
  static constexpr std::size_t no_class = classes;

  // Monotonic in size, so every block of a higher class than a request's is
  // larger than the request.
  [[nodiscard]] std::size_t class_of(std::uint64_t bytes) const noexcept {
    const std::uint64_t units = bytes >> unit_shift_;
    const unsigned top = 63 - static_cast<unsigned>(std::countl_zero(units | 1));
    if (top <= sub_bits) return static_cast<std::size_t>(units);  // one class per size
    const unsigned shift = top - sub_bits;
    return (static_cast<std::size_t>(shift) << sub_bits) + static_cast<std::size_t>(units >> shift);
  }

  [[nodiscard]] std::size_t first_class_from(std::size_t c) const noexcept {
    if (c >= classes) return no_class;
    std::size_t word = c / 64;
    const std::uint64_t here = words_[word] & (~std::uint64_t{0} << (c % 64));
    if (here != 0) return word * 64 + static_cast<std::size_t>(std::countr_zero(here));
    const std::uint64_t later = word + 1 < 64 ? summary_ & (~std::uint64_t{0} << (word + 1)) : 0;
    if (later == 0) return no_class;
    word = static_cast<std::size_t>(std::countr_zero(later));
    return word * 64 + static_cast<std::size_t>(std::countr_zero(words_[word]));
  }

  unsigned unit_shift_;
  std::vector<Bin> bins_ = std::vector<Bin>(classes);
  std::array<std::uint64_t, words> words_{};
  std::uint64_t summary_ = 0;  // bit w: words_[w] != 0
  std::size_t count_ = 0;
};

}  // namespace cachedarrays::detail
