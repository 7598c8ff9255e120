// Implementation of cachedarrays_policy.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "cachedarrays/policy/detail/lru_list.hpp"
#include "cachedarrays/policy/moves.hpp"

namespace cachedarrays::policy {

using detail::LruList;

namespace detail {

CACHEDARRAYS_INLINE LruList::Entry& entry_of(const Object& object) { return *object.policy_state<LruList::Entry>(); }

// How many victim windows make_room tries before giving up (a window may
// hold a pinned object, or the slow tier may be full).
inline constexpr int max_victim_windows = 16;

// Farthest next use first: Belady's order of victims.
CACHEDARRAYS_INLINE void farthest_first(std::vector<std::pair<std::uint64_t, Object*>>& objects) {
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
}

}  // namespace detail

// ---- Mode -------------------------------------------------------------------

namespace detail {

// The letters of a mode name ("ca", "ca-lm", "hw-cache"), or nullopt.
CACHEDARRAYS_INLINE std::optional<Mode> parse_mode_letters(std::string_view name) {
  Mode mode;
  if (name == "ca") return mode;
  if (name == "hw-cache") return mode::hw_cache;
  if (name.size() < 4 || name.substr(0, 3) != "ca-") return std::nullopt;
  for (char c : name.substr(3)) {
    bool* flag = nullptr;
    switch (c) {
      case 'l':
      case 'L': flag = &mode.local_allocation; break;
      case 'm':
      case 'M': flag = &mode.memory_optimisations; break;
      case 'p':
      case 'P': flag = &mode.prefetch; break;
      case 'a':
      case 'A': flag = &mode.async_lookahead; break;
      default: return std::nullopt;
    }
    if (*flag) return std::nullopt;
    *flag = true;
  }
  return mode;
}

}  // namespace detail

CACHEDARRAYS_INLINE Mode Mode::parse(std::string_view full_name) {
  // "<mode>+<planner>".
  const std::size_t plus = full_name.find('+');
  const std::string_view name = full_name.substr(0, plus);
  std::optional<Mode> mode = detail::parse_mode_letters(name);
  if (!mode) {
    throw invalid_argument("cachedarrays: '" + std::string(name) +
                           "' is not a CachedArrays policy mode; use 'ca' (CA:∅) or 'ca-' followed by "
                           "the letters L, M, P, A, each at most once: ca-l, ca-lm, ca-lmp, ca-lma, ...; or "
                           "'hw-cache'; a mode with L and M may end in +best-fit, +smartpool or +mip");
  }
  if (plus == std::string_view::npos) return *mode;
  const std::string_view planner = full_name.substr(plus + 1);
  mode->offsets = plan::parse_offset_planner(planner);
  if (mode->offsets != plan::OffsetPlanner::online &&
      (!mode->local_allocation || !mode->memory_optimisations || mode->hardware_cache)) {
    throw invalid_argument("cachedarrays: '" + std::string(full_name) +
                           "': an offset plan places new objects in fast memory and reuses the bytes of retired "
                           "ones at once, so it needs local allocation (L) and at-once retires (M): ca-lm+" +
                           std::string(planner) + ", ca-lma+" + std::string(planner) + ", ...");
  }
  return *mode;
}

CACHEDARRAYS_INLINE std::string Mode::name() const {
  if (hardware_cache) return "hw-cache";
  std::string letters = std::string(local_allocation ? "l" : "") + (memory_optimisations ? "m" : "") +
                        (prefetch ? "p" : "") + (async_lookahead ? "a" : "");
  const std::string plan = offsets == plan::OffsetPlanner::online ? "" : std::string("+") + plan::to_string(offsets);
  return (letters.empty() ? "ca" : "ca-" + letters) + plan;
}

// ---- CachedArraysPolicy -------------------------------------------------------

CACHEDARRAYS_INLINE CachedArraysPolicy::CachedArraysPolicy(Mode mode, Lookahead lookahead, StreamBypass bypass)
    : mode_(mode.hardware_cache ? mode::hw_cache : mode),
      bypass_(bypass),
      lru_(std::make_unique<LruList>()),
      lookahead_(lookahead) {
  if (mode_.offsets != plan::OffsetPlanner::online) {
    if (!mode_.local_allocation || !mode_.memory_optimisations) {
      throw invalid_argument("cachedarrays: mode '" + mode_.name() +
                             "' has an offset plan but not both L and M; a plan needs local allocation and "
                             "at-once retires");
    }
    planned_ = std::make_unique<PlannedPlacement>(mode_.offsets);
  }
  if (!(lookahead.fast_fraction > 0 && lookahead.fast_fraction <= 1)) {
    throw invalid_argument("cachedarrays: Lookahead::fast_fraction is " + std::to_string(lookahead.fast_fraction) +
                           "; it is the share of the fast device copies ahead may fill, in (0, 1]");
  }
}

CACHEDARRAYS_INLINE CachedArraysPolicy::~CachedArraysPolicy() = default;

CACHEDARRAYS_INLINE void CachedArraysPolicy::attach(DataManager& manager) {
  if (manager.device_count() < 2) {
    throw invalid_argument("cachedarrays: policy '" + name() +
                           "' moves data between a fast and a slow device, but the runtime has " +
                           std::to_string(manager.device_count()) + "; give it at least two");
  }
  Policy::attach(manager);
  fast_ = 0;
  slow_ = manager.device_count() - 1;
}

CACHEDARRAYS_INLINE Region* CachedArraysPolicy::allocate_slow(std::uint64_t bytes) {
  DataManager& dm = manager();
  return retired_.allocate_or_collect(
      dm, [&] { return dm.allocate(slow_, bytes); }, [this](Object& dead) { forget(dead); });
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::place(Object& object) {
  DataManager& dm = manager();
  const std::uint64_t bytes = object.bytes();

  Region* region = planned_ ? planned_->place(dm, fast_, object) : nullptr;
  if (region == nullptr && mode_.local_allocation && bytes <= dm.capacity(fast_)) {
    region = dm.allocate(fast_, bytes);
    if (region == nullptr && make_room(bytes)) region = dm.allocate(fast_, bytes);
  }
  if (region == nullptr) region = allocate_slow(bytes);
  // CA:∅ starts in slow memory; if even that is full, fast memory is the
  // last resort rather than an out-of-memory error.
  if (region == nullptr && !mode_.local_allocation) region = dm.allocate(fast_, bytes);
  if (region == nullptr) return false;

  dm.setprimary(object, *region);
  adopt(object);
  return true;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::place_in_slow(Object& object) {
  DataManager& dm = manager();
  Region* region = allocate_slow(object.bytes());
  if (region == nullptr) region = dm.allocate(fast_, object.bytes());
  if (region == nullptr) return false;
  dm.setprimary(object, *region);
  adopt(object);
  return true;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::adopt(Object& object) {
  auto entry = std::make_unique<LruList::Entry>(object);
  if (serves_streams_in_place()) {
    if (reuse_ == nullptr) reuse_ = std::make_shared<detail::ReuseDistance>();
    entry->reuse_clock = reuse_;
  }
  object.set_policy_state(std::move(entry));
  placed_bytes_ += object.bytes();
  touch_if_fast(object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::note_access(Object& object, Access access) {
  LruList::Entry& e = detail::entry_of(object);
  if (e.reuse_clock == nullptr) return;
  const std::uint64_t gap = e.reuse_clock->touch(e.reuse, object.bytes());
  if (e.last_kind >= 0) {
    std::uint64_t* after = e.gaps_after[e.last_kind];
    after[1] = after[0];
    after[0] = gap;
  }
  e.last_kind = access == Access::write ? 1 : 0;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::streams_past_fast(const Object& object) const {
  // The last two times the object was touched as it is now (read, or
  // written), more distinct bytes than the fast tier holds were touched
  // before its next touch: an LRU fast tier would have evicted it before
  // then, so a copy in now is predicted to buy nothing but the copy and a
  // write-back. Told apart by kind because a block written by one sweep and
  // read three times by the next has long reuses after its write and short
  // ones after its reads. One short reuse is enough to be moved as before.
  const LruList::Entry& e = detail::entry_of(object);
  if (e.last_kind < 0) return false;
  const std::uint64_t* after = e.gaps_after[e.last_kind];
  if (after[0] == detail::ReuseDistance::never || after[1] == detail::ReuseDistance::never) return false;
  const std::uint64_t room = manager().capacity(fast_);
  return after[0] + object.bytes() > room && after[1] + object.bytes() > room;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::move_to_slow(Object& object) {
  if (!policy::evict(manager(), object, fast_, slow_).moved) return false;
  lru_->remove(detail::entry_of(object));
  return true;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::copy_to_fast_async(Object& object) {
  DataManager& dm = manager();
  Region& x = *dm.getprimary(object);
  if (dm.device(x) == fast_ || dm.getlinked(x, fast_) != nullptr) return false;
  Region* y = dm.allocate(fast_, object.bytes());
  if (y == nullptr) return false;
  dm.link(x, *y);
  (void)dm.copyto_async(*y, x);  // its outcome is seen where it is used (prefetch waits on it)
  PolicyCounters& counters = dm.policy_counters();
  ++counters.prefetches;
  counters.prefetch_bytes += object.bytes();
  counters.bytes_written[fast_] += object.bytes();
  return true;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::touch_if_fast(Object& object) {
  LruList::Entry& e = detail::entry_of(object);
  if (manager().device(*manager().getprimary(object)) == fast_)
    lru_->touch(e);
  else
    lru_->remove(e);
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::bring_to_fast(Object& object) {
  DataManager& dm = manager();
  const Region* primary = dm.getprimary(object);
  if (dm.device(*primary) == fast_) {
    lru_->touch(detail::entry_of(object));
    return true;
  }
  if (object.bytes() > dm.capacity(fast_)) return false;
  if (streams_past_fast(object) && dm.getlinked(*primary, fast_) == nullptr) {
    ++dm.policy_counters().served_in_place;
    return false;
  }
  const bool moved = policy::prefetch(dm, object, fast_, dm.device(*primary),
                                      [this](std::uint64_t bytes) { return make_room(bytes); });
  if (moved) lru_->touch(detail::entry_of(object));
  return moved;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::evict_for_room(Region& region) {
  DataManager& dm = manager();
  Object* object = dm.parent(region);
  if (object == nullptr || dm.getprimary(*object) != &region) {
    // A free-standing region or a stray secondary: nothing to preserve.
    dm.free(region);
    return true;
  }
  EvictOutcome outcome = policy::evict(dm, *object, fast_, slow_);
  if (!outcome.moved && !retired_.empty() && !detail::entry_of(*object).retired) {
    collect();  // the slow tier is full: free what is retired, then retry
    outcome = policy::evict(dm, *object, fast_, slow_);
  } else if (!outcome.moved && detail::entry_of(*object).retired) {
    // A retired object nobody will read again: dropping it is collect()'s
    // job, and the slow tier has no room to keep it anyway.
    collect();
    return true;
  }
  if (outcome.moved) lru_->remove(detail::entry_of(*object));
  return outcome.moved;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::make_room(std::uint64_t bytes) {
  DataManager& dm = manager();
  const DeviceUsage usage = dm.usage(fast_);
  if (usage.largest_free_block >= bytes) return true;
  // A: what the program says is used last, and is clean, goes first; it
  // costs no copy now (defrag below copies on this thread), and the
  // lookahead brings it back beside the kernels before it is used.
  if (following_ && make_room_clean(bytes, last_kernel_, last_kernel_ + 1)) return true;
  if (dm.usage(fast_).bytes_free() >= bytes) {
    // Enough free bytes, no hole: move the regions of the window that
    // holds the fewest live bytes into holes outside it (a copy within
    // DRAM, cheaper than a write-back); failing that, slide live regions
    // down until one hole is large enough, and no further. (Sliding alone,
    // an unfitted plan slid a great many bytes every iteration, all of them
    // copies on the compute thread.)
    if (!dm.make_hole(fast_, bytes)) dm.defrag(fast_, bytes);
    ++dm.policy_counters().defrags;
    if (dm.usage(fast_).largest_free_block >= bytes) return true;
  }
  const std::uint64_t span = (bytes + 63) & ~std::uint64_t{63};
  if (span > usage.capacity) return false;
  std::vector<Object*> tried;
  for (int attempt = 0; attempt < detail::max_victim_windows; ++attempt) {
    // The window starts at the least recently used unpinned victim (paper
    // Listing 2, line 8) and covers `bytes`; it must hold no pinned object.
    std::uint64_t start = 0;
    Object* victim = lru_->find([&](Object& candidate) {
      if (candidate.pinned() || std::find(tried.begin(), tried.end(), &candidate) != tried.end()) return false;
      const Region* r = dm.getprimary(candidate);
      if (dm.device(*r) != fast_) return false;
      start = std::min(dm.offset(*r), usage.capacity - span);
      return !dm.pinned_in_range(fast_, start, span);
    });
    if (victim == nullptr) return false;
    tried.push_back(victim);
    if (dm.evictfrom(fast_, start, span, [this](Region& region) { return evict_for_room(region); })) {
      return true;
    }
  }
  return false;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_use(Object& object) {
  note_access(object, Access::write);
  bring_to_fast(object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_read(Object& object) {
  note_access(object, Access::read);
  // A copy made ahead (A) is taken even without P: it has been paid for.
  const bool copied_ahead = mode_.async_lookahead && manager().getlinked(*manager().getprimary(object), fast_);
  if (mode_.prefetch || copied_ahead)
    bring_to_fast(object);
  else
    touch_if_fast(object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_write(Object& object) {
  note_access(object, Access::write);
  bring_to_fast(object);
}

CACHEDARRAYS_INLINE HintDelivery CachedArraysPolicy::read_hint_delivery(const Object& object) const {
  // Lookahead modes are never asked (they follow kernels); a copy made ahead
  // is theirs alone, so here will_read is touch_if_fast or bring_to_fast.
  if (manager().device(*manager().getprimary(object)) == fast_) return HintDelivery::deferred;
  return mode_.prefetch ? HintDelivery::under_lock : HintDelivery::unneeded;
}

CACHEDARRAYS_INLINE HintDelivery CachedArraysPolicy::write_hint_delivery(const Object& object) const {
  return manager().device(*manager().getprimary(object)) == fast_ ? HintDelivery::deferred : HintDelivery::under_lock;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::archive(Object& object) {
  if (mode_.hardware_cache) return;  // a hardware cache sees no hints
  if (manager().device(*manager().getprimary(object)) != fast_) return;
  lru_->archive(detail::entry_of(object));
  // Written back ahead only when fast memory is under pressure: less free
  // than the lookahead may fill, and, along the program, less than the room
  // the rest of the iteration asks for. With room to spare it will not be
  // evicted, and the write-back would be a copy for nothing.
  if (mode_.async_lookahead) {
    const DeviceUsage usage = manager().usage(fast_);
    auto pressure = static_cast<std::uint64_t>(lookahead_.fast_fraction * static_cast<double>(usage.capacity));
    if (following_) pressure = std::min(pressure, room_needed(last_kernel_));
    if (usage.bytes_free() < pressure) write_back_ahead(object);
  }
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::forget(Object& object) {
  unbind(object);
  lru_->remove(detail::entry_of(object));
  placed_bytes_ -= object.bytes();
  manager().destroy(object);  // frees the entry with the object
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::retire(Object& object) {
  unbind(object);
  if (planned_) planned_->retired(object);
  if (mode_.memory_optimisations) {
    forget(object);
    return;
  }
  // Without M nothing learns that the object is dead until collect(): it
  // keeps its place (and its recency), and may be written back if evicted.
  detail::entry_of(object).retired = true;
  retired_.defer(manager(), object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::collect() {
  retired_.collect(manager(), [this](Object& dead) { forget(dead); });
}

// ---- A: asynchronous lookahead -------------------------------------------------

CACHEDARRAYS_INLINE void CachedArraysPolicy::on_program(std::shared_ptr<const plan::Program> program) {
  for (Object* o : bound_) {
    if (o != nullptr) detail::entry_of(*o).program_object = LruList::Entry::unbound;
  }
  if (planned_ && program != nullptr) planned_->set_program(*program);
  program_ = std::move(program);
  ++epoch_;
  bound_.assign(program_ != nullptr ? program_->objects().size() : 0, nullptr);
  following_ = false;  // from the next iteration on
  live_at_.clear();
  peak_from_.clear();
  arg_bytes_before_.clear();
  if (program_ == nullptr) return;
  arg_bytes_before_.reserve(program_->kernels().size() + 1);
  arg_bytes_before_.push_back(0);
  for (const plan::ProgramKernel& k : program_->kernels()) {
    std::uint64_t bytes = 0;
    for (const plan::ProgramArg& arg : k.args) bytes += program_->objects()[arg.object].bytes;
    arg_bytes_before_.push_back(arg_bytes_before_.back() + bytes);
  }
  // Rounded up as the fast heap rounds a block, so that the live bytes
  // compare with its free bytes.
  const std::uint64_t alignment = attached() ? manager().spec(fast_).alignment : 64;
  const auto block = [alignment](std::uint64_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };
  const std::vector<plan::ProgramObject>& objects = program_->objects();
  std::uint64_t live = 0;
  for (const plan::ProgramObject& o : objects) {
    if (o.persistent) live += block(o.bytes);
  }
  live_at_.reserve(program_->kernels().size() + 1);
  live_at_.push_back(live);
  for (const plan::ProgramStep& step : program_->steps()) {
    switch (step.kind) {
      case plan::StepKind::create: live += block(objects[step.index].bytes); break;
      case plan::StepKind::retire: live -= block(objects[step.index].bytes); break;
      case plan::StepKind::kernel: live_at_.push_back(live); break;
      case plan::StepKind::hint:
      case plan::StepKind::collect: break;
    }
  }
  peak_from_ = live_at_;
  for (std::size_t i = peak_from_.size() - 1; i-- > 0;) peak_from_[i] = std::max(peak_from_[i], peak_from_[i + 1]);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::on_unplanned_iteration_begin(std::uint64_t iteration) {
  if (planned_) planned_->begin_unplanned_iteration(manager(), fast_, iteration);
  following_ = false;  // not the program's kernels
  last_kernel_ = -1;
  ++epoch_;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::on_iteration_begin(std::uint64_t iteration) {
  if (planned_) planned_->begin_iteration(manager(), fast_, iteration);
  following_ = mode_.async_lookahead && program_ != nullptr;
  last_kernel_ = -1;
  ++epoch_;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::bind(std::uint32_t program_object, Object& object) {
  LruList::Entry& e = detail::entry_of(object);
  if (bound_[program_object] == &object) return;
  if (bound_[program_object] != nullptr) {
    detail::entry_of(*bound_[program_object]).program_object = LruList::Entry::unbound;
  }
  if (e.program_object != LruList::Entry::unbound) bound_[e.program_object] = nullptr;
  e.program_object = program_object;
  e.epoch = 0;  // its next use was another program object's
  bound_[program_object] = &object;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::unbind(Object& object) {
  LruList::Entry& e = detail::entry_of(object);
  if (e.program_object == LruList::Entry::unbound) return;
  bound_[e.program_object] = nullptr;
  e.program_object = LruList::Entry::unbound;
  e.epoch = 0;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::on_kernel_begin(const KernelPoint& kernel) {
  if (!following_) return;
  // The program's objects are the runtime's by position: the kernel's
  // arguments say which object each program object is in this iteration.
  // Anything that does not match stops the lookahead until the next
  // iteration: a wrong guess would only cost copies, but it is a guess.
  const std::vector<plan::ProgramKernel>& kernels = program_->kernels();
  if (kernel.index >= kernels.size() || kernels[kernel.index].name != kernel.name ||
      kernels[kernel.index].args.size() != kernel.objects.size()) {
    following_ = false;
    return;
  }
  const plan::ProgramKernel& k = kernels[kernel.index];
  for (std::size_t j = 0; j < k.args.size(); ++j) {
    if (program_->objects()[k.args[j].object].bytes != kernel.objects[j]->bytes()) {
      following_ = false;
      return;
    }
  }
  for (std::size_t j = 0; j < k.args.size(); ++j) bind(k.args[j].object, *kernel.objects[j]);
  last_kernel_ = static_cast<std::int64_t>(kernel.index);
  look_ahead(last_kernel_);
  keep_clean_reserve(last_kernel_);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::keep_clean_reserve(std::int64_t current) {
  // Room the next kernels will ask for (new objects, copies ahead) is made
  // from free bytes and from clean objects used after the window, which
  // leave without a copy. When those fall short of the lookahead's budget,
  // the farthest-used dirty objects start their write-backs now, behind the
  // prefetches, so that making room later copies nothing on this thread.
  // The reserve is no larger than the room the program will still ask
  // for: with free bytes to cover that, a write-back would be a copy for
  // nothing, and looking for candidates is work for nothing (every fast
  // object is examined).
  const DeviceUsage usage = manager().usage(fast_);
  const auto budget = static_cast<std::uint64_t>(lookahead_.fast_fraction * static_cast<double>(usage.capacity));
  std::uint64_t ready = usage.bytes_free();
  if (ready >= budget) return;
  const std::uint64_t reserve = std::min(budget, room_needed(current));
  if (ready >= reserve) return;
  // The walk would find at least this much and start nothing.
  if (lookahead_.bound_reserve_walks && ready + far_ready_at_least(current) >= reserve) {
    ++reserve_walks_skipped_;
    return;
  }
  ++reserve_walks_;
  FarObjects far = far_fast_objects(current, lookahead_.kernels);
  std::uint64_t far_ready = far.writing_bytes;  // clean once their write-backs land
  for (const auto& [distance, object] : far.clean) far_ready += object->bytes();
  if (ready + far_ready < reserve) {
    detail::farthest_first(far.dirty);
    for (const auto& [distance, object] : far.dirty) {
      if (ready + far_ready >= reserve) break;
      if (write_back_ahead(*object)) far_ready += object->bytes();
    }
  }
  last_reserve_walk_ = {.epoch = epoch_, .kernel = current, .far_ready = far_ready};
}

CACHEDARRAYS_INLINE std::uint64_t CachedArraysPolicy::far_ready_at_least(std::int64_t current) const {
  // An object far at the walk (next used after the window) is still far,
  // unpinned and clean (or on its way) at `current` unless a kernel since
  // the walk used it, or its next use entered the window: the bytes of
  // those kernels' arguments bound what the walk's count lost. Objects
  // leaving fast memory free their bytes; objects arriving only add. A
  // write or a pin outside the program's kernels is not bounded, so the
  // bound lasts one window at most. Near the iteration's end the next
  // iteration's first uses enter the window, which this bound does not
  // follow: every kernel walks there.
  const ReserveWalk& walk = last_reserve_walk_;
  const std::uint64_t window = lookahead_.kernels;
  if (walk.epoch != epoch_ || walk.kernel < 0 || current < walk.kernel) return 0;
  const auto from = static_cast<std::uint64_t>(walk.kernel);
  const auto to = static_cast<std::uint64_t>(current);
  if (to - from > window || to + window + 1 >= arg_bytes_before_.size()) return 0;
  const std::vector<std::uint64_t>& before = arg_bytes_before_;
  const std::uint64_t lost =
      (before[to + 1] - before[from + 1]) + (before[to + window + 1] - before[from + window + 1]);
  return walk.far_ready > lost ? walk.far_ready - lost : 0;
}

CACHEDARRAYS_INLINE std::uint64_t CachedArraysPolicy::room_needed(std::int64_t current) const {
  // live_at_ and peak_from_ are indexed by kernel + 1; current is -1 before
  // the first kernel.
  const auto at = static_cast<std::size_t>(current + 1);
  std::uint64_t growth = 0;
  if (at + 1 < peak_from_.size() && peak_from_[at + 1] > live_at_[at]) growth = peak_from_[at + 1] - live_at_[at];
  const std::uint64_t in_fast = lru_->bytes();
  const std::uint64_t outside = placed_bytes_ > in_fast ? placed_bytes_ - in_fast : 0;
  return growth + outside;
}

CACHEDARRAYS_INLINE CachedArraysPolicy::FarObjects CachedArraysPolicy::far_fast_objects(std::int64_t current,
                                                                                        std::uint64_t beyond) {
  DataManager& dm = manager();
  FarObjects far;
  (void)lru_->find([&](Object& candidate) {
    if (candidate.pinned()) return false;
    const Region* x = dm.getprimary(candidate);
    if (dm.device(*x) != fast_) return false;
    ++examined_;
    const std::uint64_t distance = distance_to_use(candidate, current);
    if (distance <= beyond) return false;
    const Region* y = dm.getlinked(*x, slow_);
    if (y != nullptr && dm.in_flight(*y)) {
      far.writing_bytes += candidate.bytes();
    } else {
      (y != nullptr && dm.isvalid(*y) ? far.clean : far.dirty).emplace_back(distance, &candidate);
    }
    return false;
  });
  return far;
}

CACHEDARRAYS_INLINE std::uint64_t CachedArraysPolicy::distance_to_use(const Object& object,
                                                                      std::int64_t current) const {
  constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
  LruList::Entry& e = detail::entry_of(object);
  const std::uint32_t id = e.program_object;
  if (id == LruList::Entry::unbound) return never - 1;  // unknown: after every known use
  if (e.epoch == epoch_ && e.looked_up_at <= current && current < static_cast<std::int64_t>(e.next_use)) {
    return static_cast<std::uint64_t>(e.next_use - current);
  }
  const auto next = current < 0 ? program_->first_use(id) : program_->next_use(id, static_cast<std::uint32_t>(current));
  if (next) {
    e.epoch = epoch_;
    e.looked_up_at = current;
    e.next_use = *next;
    return static_cast<std::uint64_t>(*next - current);
  }
  if (!program_->objects()[id].persistent) return never;  // the iteration is done with it
  const auto first = program_->first_use(id);
  return first ? static_cast<std::uint64_t>(static_cast<std::int64_t>(program_->kernels().size()) - current + *first)
               : never;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::look_ahead(std::int64_t current) {
  // Every object of this policy in fast memory: the window has nothing to
  // copy ahead, and looking through its arguments would find that out at
  // the cost of a walk per kernel.
  if (placed_bytes_ == lru_->bytes()) return;
  DataManager& dm = manager();
  const std::vector<plan::ProgramKernel>& kernels = program_->kernels();
  const auto budget = static_cast<std::uint64_t>(lookahead_.fast_fraction * static_cast<double>(dm.capacity(fast_)));
  const auto first = static_cast<std::size_t>(current + 1);
  const std::size_t end = std::min<std::size_t>(kernels.size(), first + lookahead_.kernels);
  std::uint64_t ahead = 0;  // bytes on their way to, or waiting in, fast memory for the window
  for (std::size_t n = first; n < end; ++n) {
    for (const plan::ProgramArg& arg : kernels[n].args) {
      Object* object = bound_[arg.object];
      if (object == nullptr || object->pinned()) continue;  // not made yet, or in use now
      Region* primary = dm.getprimary(*object);
      if (dm.device(*primary) == fast_) continue;
      if (dm.getlinked(*primary, fast_) != nullptr) {  // copied ahead already
        ahead += object->bytes();
        continue;
      }
      // An object larger than the whole budget still goes alone: else it
      // would never be copied ahead, and every use of it would wait.
      if (ahead > 0 && ahead + object->bytes() > budget) return;
      if (!prefetch_ahead(*object, current, static_cast<std::int64_t>(n))) return;
      ahead += object->bytes();
    }
  }
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::prefetch_ahead(Object& object, std::int64_t current, std::int64_t target) {
  if (copy_to_fast_async(object)) return true;
  return make_room_clean(object.bytes(), current, target) && copy_to_fast_async(object);
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::make_room_clean(std::uint64_t bytes, std::int64_t current,
                                                             std::int64_t target) {
  // Belady's choice among what can go for free: unpinned fast objects used
  // later than the target kernel, whose slow copy is valid (evicting them
  // copies nothing), farthest next use first.
  DataManager& dm = manager();
  FarObjects far = far_fast_objects(current, static_cast<std::uint64_t>(target - current));
  detail::farthest_first(far.dirty);
  detail::farthest_first(far.clean);
  // The farthest dirty ones start their write-back now, so that a later
  // call finds them clean.
  std::uint64_t started = 0;
  for (const auto& [distance, object] : far.dirty) {
    if (started >= bytes) break;
    write_back_ahead(*object);
    started += object->bytes();
  }
  std::uint64_t freed = 0;
  for (const auto& [distance, victim] : far.clean) {
    // Free bytes may not make a hole: stop once a few times the bytes
    // needed have been freed without one.
    if (freed >= 4 * bytes) return false;
    if (!policy::evict(dm, *victim, fast_, slow_).moved) continue;
    lru_->remove(detail::entry_of(*victim));
    freed += victim->bytes();
    if (dm.usage(fast_).largest_free_block >= bytes) return true;
  }
  return false;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::write_back_ahead(Object& object) {
  DataManager& dm = manager();
  Region& x = *dm.getprimary(object);
  Region* y = dm.getlinked(x, slow_);
  if (y != nullptr && (dm.in_flight(*y) || dm.isvalid(*y))) return true;  // clean, or on its way
  if (y == nullptr) {
    y = dm.allocate(slow_, object.bytes());
    if (y == nullptr) return false;  // no room: the eviction, if any, will write it back
    dm.link(x, *y);
  }
  // Behind the prefetches: nothing waits for it until its object is evicted.
  (void)dm.copyto_async(*y, x, CopyPriority::background);
  PolicyCounters& counters = dm.policy_counters();
  ++counters.writebacks;
  counters.writeback_bytes += object.bytes();
  counters.bytes_written[slow_] += object.bytes();
  return true;
}

}  // namespace cachedarrays::policy
