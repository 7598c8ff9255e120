// Recency order of fast-resident objects for victim choice: true LRU
// (CachedArrays.jl only had FIFO), with archived objects in a list of their
// own that is drained first. Intrusive, O(1) per touch.
#pragma once

#include <cstdint>
#include <memory>

#include "cachedarrays/manager/object.hpp"
#include "cachedarrays/policy/detail/reuse_distance.hpp"

namespace cachedarrays::policy::detail {

class LruList {
 public:
  // The policy's state of one object, owned by the object.
  struct Entry : PolicyState {
    explicit Entry(Object& o) : object(&o) {}
    // Its bytes stop counting in other objects' reuse distances with it;
    // the objects may outlive the policy, so the clock is shared.
    ~Entry() override {
      if (reuse_clock != nullptr) reuse_clock->forget(reuse);
    }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    Object* object = nullptr;
    Entry* prev = nullptr;
    Entry* next = nullptr;
    bool listed = false;
    bool archived = false;
    bool retired = false;  // retired, waiting for collect() (no-M modes)
    // The program object it is in the current iteration (A modes), or none.
    static constexpr std::uint32_t unbound = 0xffffffffu;
    std::uint32_t program_object = unbound;
    // Its next use in the program as last looked up (A modes): kernel
    // `next_use`, first after kernel `looked_up_at` (-1: from the start),
    // in the iteration numbered `epoch` (0: nothing cached). Still the next
    // use at any kernel from looked_up_at up to next_use, so the victim
    // searches, which ask at each kernel, look most of them up once.
    std::uint64_t epoch = 0;
    std::int64_t looked_up_at = 0;
    std::uint32_t next_use = 0;
    // Reuse distances (modes that serve streams in place): its last touch
    // and whether it wrote, and by the kind of a touch (0 read, 1 write) the
    // distinct bytes touched until the next touch, the last two times, the
    // latest first (ReuseDistance::never: not seen yet).
    std::shared_ptr<ReuseDistance> reuse_clock;
    ReuseDistance::Stamp reuse;
    int last_kind = -1;  // -1: never touched
    std::uint64_t gaps_after[2][2] = {{ReuseDistance::never, ReuseDistance::never},
                                      {ReuseDistance::never, ReuseDistance::never}};
  };

  // Most recently used: moves to the end of the ordinary list.
  void touch(Entry& e) {
    remove(e);
    push_back(ordinary_, e);
    e.archived = false;
  }
  // Not needed for a while: first in line for eviction.
  void archive(Entry& e) {
    remove(e);
    push_back(archived_, e);
    e.archived = true;
  }
  void remove(Entry& e) {
    if (!e.listed) return;
    List& list = e.archived ? archived_ : ordinary_;
    (e.prev != nullptr ? e.prev->next : list.head) = e.next;
    (e.next != nullptr ? e.next->prev : list.tail) = e.prev;
    e.prev = e.next = nullptr;
    e.listed = false;
    bytes_ -= e.object->bytes();
  }
  // Bytes of the objects listed: those whose primary is in fast memory.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  // The first object, archived ones first, then least recently used first,
  // that `accept` takes; null if none.
  template <typename Accept>
  Object* find(Accept&& accept) const {
    for (const List* list : {&archived_, &ordinary_}) {
      for (Entry* e = list->head; e != nullptr; e = e->next) {
        if (accept(*e->object)) return e->object;
      }
    }
    return nullptr;
  }

 private:
  struct List {
    Entry* head = nullptr;
    Entry* tail = nullptr;
  };
  void push_back(List& list, Entry& e) {
    bytes_ += e.object->bytes();
    e.prev = list.tail;
    e.next = nullptr;
    (list.tail != nullptr ? list.tail->next : list.head) = &e;
    list.tail = &e;
    e.listed = true;
  }

  List ordinary_;
  List archived_;
  std::uint64_t bytes_ = 0;
};

}  // namespace cachedarrays::policy::detail
