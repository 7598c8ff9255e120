// Reuse distances in bytes, exactly: how many distinct bytes of other
// objects were touched since an object's last touch — its LRU stack
// distance (Mattson et al., 1970), the fast tier an LRU cache would need to
// have kept it. Computed as Olken (1981) does, with a Fenwick tree over
// access times: each object holds its bytes at the time of its last touch,
// so the distinct bytes touched since time t are the tree's sum after t.
//
// A policy asks it at every access it hears of; O(log n) per touch. Times
// are renumbered when they run out (compact), so the tree stays within
// twice the objects alive, however long the program runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cachedarrays::policy::detail {

class ReuseDistance {
 public:
  // An object's place in the order of last touches; 0: never touched.
  struct Stamp {
    std::uint32_t time = 0;
  };
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  // Touches an object of `bytes` whose last touch is `stamp`: returns the
  // distinct bytes of other objects touched since (never on a first touch)
  // and makes this its last touch.
  std::uint64_t touch(Stamp& stamp, std::uint64_t bytes) {
    if (next_ == slots_.size()) make_room();
    std::uint64_t distance = never;
    if (stamp.time != 0) {
      distance = static_cast<std::uint64_t>(sum_through(next_ - 1) - sum_through(stamp.time));
      add(stamp.time, -static_cast<std::int64_t>(bytes));
      slots_[stamp.time] = {};
    }
    stamp.time = next_++;
    slots_[stamp.time] = {&stamp, bytes};
    add(stamp.time, static_cast<std::int64_t>(bytes));
    return distance;
  }
  // The object of `stamp` is gone: its bytes no longer count.
  void forget(Stamp& stamp) {
    if (stamp.time == 0) return;
    add(stamp.time, -static_cast<std::int64_t>(slots_[stamp.time].bytes));
    slots_[stamp.time] = {};
    stamp.time = 0;
  }

 private:
  struct Slot {
    Stamp* owner = nullptr;
    std::uint64_t bytes = 0;
  };

  // Fenwick tree over times 1 .. slots_.size() - 1 (slot 0 unused).
  void add(std::uint32_t time, std::int64_t delta) {
    for (std::size_t i = time; i < tree_.size(); i += i & (~i + 1)) tree_[i] += delta;
  }
  [[nodiscard]] std::int64_t sum_through(std::uint32_t time) const {
    std::int64_t s = 0;
    for (std::size_t i = time; i > 0; i -= i & (~i + 1)) s += tree_[i];
    return s;
  }
  // Every time is used: renumber the live objects 1, 2, ... in their order,
  // and give the tree twice their number of times (at least 1024).
  void make_room() {
    std::vector<Slot> live;
    for (std::size_t t = 1; t < slots_.size(); ++t) {
      if (slots_[t].owner != nullptr) live.push_back(slots_[t]);
    }
    const std::size_t size = std::max<std::size_t>(1024, 2 * live.size() + 2);
    slots_.assign(size, {});
    tree_.assign(size, 0);
    next_ = 1;
    for (const Slot& s : live) {
      s.owner->time = next_;
      slots_[next_] = s;
      add(next_, static_cast<std::int64_t>(s.bytes));
      ++next_;
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::int64_t> tree_;
  std::uint32_t next_ = 0;
};

}  // namespace cachedarrays::policy::detail
