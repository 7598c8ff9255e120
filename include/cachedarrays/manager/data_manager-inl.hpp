// Implementation of data_manager.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
// The data manager (paper III-C): regions, objects and the operations of
// the data management API. Every check that guards an invariant of
// docs/design.md happens before any state changes, so a rejected call leaves
// everything as it was.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/data_manager.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "cachedarrays/heap/heap.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/manager/fault_injection.hpp"

namespace cachedarrays {

namespace detail {

CACHEDARRAYS_INLINE std::string object_name(const Object& object) { return "object #" + std::to_string(object.id()); }

}  // namespace detail

CACHEDARRAYS_INLINE DataManager::DataManager(std::vector<DeviceSpec> devices, MoverOptions mover)
    : mover_(std::move(mover)) {
  if (devices.empty()) {
    throw invalid_argument(
        "cachedarrays: a data manager needs at least one device; give e.g. "
        "{cachedarrays::dram(1 << 30)}");
  }
  if (devices.size() > max_devices) {
    throw invalid_argument("cachedarrays: " + std::to_string(devices.size()) + " devices given; at most " +
                           std::to_string(max_devices) + " are supported");
  }
  heaps_.reserve(devices.size());
  for (DeviceSpec& spec : devices) {
    heaps_.push_back(std::make_unique<detail::Heap<Region>>(std::move(spec)));
    const detail::Heap<Region>& heap = *heaps_.back();
    DeviceCounters counters;
    counters.name = heap.spec().display_name();
    counters.capacity = heap.allocator().capacity();
    stats_.devices.push_back(std::move(counters));
    const std::uint64_t cache = heap.spec().emulation ? heap.spec().emulation->memory_mode_cache_bytes : 0;
    if (cache % 64 != 0) {
      throw invalid_argument("cachedarrays: device '" + heap.spec().display_name() +
                             "': the emulated memory-mode DRAM cache of " + std::to_string(cache) +
                             " bytes is not a whole number of 64-byte lines; use a multiple of 64");
    }
    memory_mode_.push_back(cache > 0 ? std::make_unique<TwoLevelMemory>(cache) : nullptr);
  }
}

// The mover goes first (it finishes its queued copies), then objects and
// regions go with their lists, before the heaps they point into.
CACHEDARRAYS_INLINE DataManager::~DataManager() = default;

// ---- devices ----------------------------------------------------------------

CACHEDARRAYS_INLINE DeviceId DataManager::device_count() const noexcept { return static_cast<DeviceId>(heaps_.size()); }

CACHEDARRAYS_INLINE void DataManager::check_device(DeviceId device, const char* operation) const {
  if (device < heaps_.size()) return;
  std::string known;
  for (DeviceId d = 0; d < heaps_.size(); ++d) {
    known += (d == 0 ? "" : ", ") + std::to_string(d) + " '" + heaps_[d]->spec().display_name() + "'";
  }
  throw unknown_device("cachedarrays: " + std::string(operation) + ": device " + std::to_string(device) +
                       " does not exist; this manager has devices " + known);
}

CACHEDARRAYS_INLINE detail::Heap<Region>& DataManager::heap(DeviceId device) const { return *heaps_[device]; }

CACHEDARRAYS_INLINE const DeviceSpec& DataManager::spec(DeviceId device) const {
  check_device(device, "spec");
  return heap(device).spec();
}

CACHEDARRAYS_INLINE DeviceUsage DataManager::usage(DeviceId device) const {
  check_device(device, "usage");
  const auto& a = heap(device).allocator();
  DeviceUsage u;
  u.device = device;
  u.name = heap(device).spec().display_name();
  u.capacity = a.capacity();
  u.bytes_used = a.bytes_in_use();
  u.largest_free_block = a.largest_free_block();
  u.live_regions = a.live_blocks();
  u.extent = a.extent();
  return u;
}

CACHEDARRAYS_INLINE std::uint64_t DataManager::capacity(DeviceId device) const {
  check_device(device, "capacity");
  return heap(device).allocator().capacity();
}

CACHEDARRAYS_INLINE std::vector<DeviceUsage> DataManager::usage() const {
  std::vector<DeviceUsage> all;
  for (DeviceId d = 0; d < device_count(); ++d) all.push_back(usage(d));
  return all;
}

CACHEDARRAYS_INLINE bool DataManager::is_virtual(DeviceId device) const {
  check_device(device, "is_virtual");
  return heap(device).is_virtual();
}

CACHEDARRAYS_INLINE bool DataManager::is_pmem(DeviceId device) const {
  check_device(device, "is_pmem");
  return heap(device).is_pmem();
}

CACHEDARRAYS_INLINE std::string DataManager::describe(DeviceId device) const {
  check_device(device, "describe");
  const auto& h = heap(device);
  std::string text = "device " + std::to_string(device) + " '" + h.spec().display_name() + "' (" +
                     to_string(h.spec().kind) + ", " + format_bytes(h.allocator().capacity()) + "): " + h.description();
  if (h.spec().emulation) text += "; speed of " + emulation::describe(*h.spec().emulation);
  return text;
}

// ---- regions ----------------------------------------------------------------

CACHEDARRAYS_INLINE Region* DataManager::new_region() {
  Region* region = spare_regions_;
  if (region == nullptr) return &regions_.emplace_back(Region::Key{});
  spare_regions_ = region->next_spare_;
  region->next_spare_ = nullptr;
  return region;
}

CACHEDARRAYS_INLINE void DataManager::recycle(Region& region) noexcept {
  region.data_ = nullptr;
  region.offset_ = 0;
  region.bytes_ = 0;
  region.device_ = 0;
  region.dirty_ = false;
  region.version_ = 0;
  region.parent_ = nullptr;
  region.last_owner_ = 0;
  region.block_ = nullptr;
  region.copy_.reset();
  region.has_copy_ = false;
  region.next_spare_ = spare_regions_;
  spare_regions_ = &region;
}

CACHEDARRAYS_INLINE std::string DataManager::region_name(const Region& region) const {
  std::string name = "region of " + format_bytes(region.bytes_) + " at offset " + std::to_string(region.offset_) +
                     " on device " + std::to_string(region.device_) + " '" +
                     heap(region.device_).spec().display_name() + "'";
  if (region.parent_ != nullptr) {
    name += region.parent_->primary_ == &region ? " (primary of " : " (secondary of ";
    name += detail::object_name(*region.parent_) + ")";
  }
  return name;
}

CACHEDARRAYS_INLINE void DataManager::check_region(const Region& region, const char* operation) const {
  if (region.block_ == nullptr || region.device_ >= heaps_.size() || region.block_->owner != &region) {
    throw invalid_operation("cachedarrays: " + std::string(operation) +
                            ": the region is not live (already freed?); use only regions returned "
                            "by allocate() or getprimary()/getlinked() and not freed since");
  }
}

CACHEDARRAYS_INLINE Region* DataManager::allocate(DeviceId device, std::uint64_t bytes) {
  if (device >= heaps_.size()) check_device(device, "allocate");  // throws
  if (bytes == 0) {
    throw invalid_argument("cachedarrays: allocate: 0 bytes asked on device " + std::to_string(device) +
                           "; a region holds at least 1 byte");
  }
  auto& h = heap(device);
  DeviceCounters& counters = stats_.devices[device];
  if (CACHEDARRAYS_FAULT(allocation)) {  // tests only: as if the heap were full
    ++counters.failed_allocations;
    return nullptr;
  }
  Region* region = new_region();
  auto* block = h.allocator().try_allocate(bytes, *region);
  if (block == nullptr) {
    recycle(*region);
    ++counters.failed_allocations;
    return nullptr;
  }
  return adopt(device, *region, *block, bytes);
}

CACHEDARRAYS_INLINE Region* DataManager::adopt(DeviceId device, Region& region, detail::Block<Region>& block,
                                               std::uint64_t bytes) {
  DeviceCounters& counters = stats_.devices[device];
  region.block_ = &block;
  region.offset_ = block.offset;
  region.data_ = heap(device).at(block.offset);
  region.bytes_ = bytes;
  region.device_ = device;
  ++counters.allocations;
  ++counters.live_regions;
  counters.bytes_in_use += block.size;
  counters.peak_bytes_in_use = std::max(counters.peak_bytes_in_use, counters.bytes_in_use);
  counters.peak_extent = std::max(counters.peak_extent, block.offset + block.size);
  if (trace_ != nullptr) trace(TraceKind::allocate, device, block.size, nullptr);
  return &region;
}

CACHEDARRAYS_INLINE Region* DataManager::try_allocate_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes) {
  // Tests only: as if the range were taken (the planner falls back to allocate).
  if (CACHEDARRAYS_FAULT(allocation)) {
    check_device(device, "allocate_at");
    return nullptr;
  }
  return place_at(device, offset, bytes);
}

CACHEDARRAYS_INLINE Region* DataManager::place_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes) {
  check_device(device, "allocate_at");
  auto& h = heap(device);
  auto& a = h.allocator();
  const std::string where = "device " + std::to_string(device) + " '" + h.spec().display_name() + "'";
  if (bytes == 0) {
    throw invalid_argument("cachedarrays: allocate_at: 0 bytes asked at offset " + std::to_string(offset) + " on " +
                           where + "; a region holds at least 1 byte");
  }
  if (offset % a.alignment() != 0) {
    throw invalid_argument("cachedarrays: allocate_at: offset " + std::to_string(offset) + " on " + where +
                           " is not a multiple of its alignment of " + std::to_string(a.alignment()) +
                           " bytes; regions start at aligned offsets, so plan with that alignment (the "
                           "nearest ones are " +
                           std::to_string(offset / a.alignment() * a.alignment()) + " and " +
                           std::to_string(a.round_up(offset)) + ")");
  }
  if (offset >= a.capacity() || bytes > a.capacity() - offset) {
    throw invalid_argument("cachedarrays: allocate_at: the range [" + std::to_string(offset) + ", +" +
                           std::to_string(bytes) + ") is outside " + where + ", whose heap holds " +
                           std::to_string(a.capacity()) + " bytes; place it below that");
  }
  Region* region = new_region();
  auto* block = a.try_allocate_at(offset, bytes, *region);
  if (block == nullptr) {
    recycle(*region);
    return nullptr;
  }
  return adopt(device, *region, *block, bytes);
}

CACHEDARRAYS_INLINE Region& DataManager::allocate_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes) {
  if (Region* region = place_at(device, offset, bytes)) return *region;
  throw invalid_operation("cachedarrays: allocate_at: the range [" + std::to_string(offset) + ", +" +
                          std::to_string(bytes) + ") of device " + std::to_string(device) + " '" +
                          heap(device).spec().display_name() + "' is not free: " + occupants(device, offset, bytes) +
                          "; free or evict what is there (evictfrom), or place the region elsewhere");
}

CACHEDARRAYS_INLINE std::string DataManager::occupants(DeviceId device, std::uint64_t offset,
                                                       std::uint64_t bytes) const {
  constexpr int named = 3;  // enough to act on, short enough to read
  std::string text;
  int live = 0;
  const auto& a = heap(device).allocator();
  a.walk_range(offset, a.round_up(bytes), [&](const detail::Block<Region>& block) {
    if (block.free) return;
    if (live < named) text += (live == 0 ? "it overlaps the " : "; the ") + region_name(*block.owner);
    ++live;
  });
  if (live > named) text += "; and " + std::to_string(live - named) + " more live regions";
  return live > 0 ? text : "an evictfrom in progress is clearing it";
}

CACHEDARRAYS_INLINE void DataManager::release_region(Region& region) {
  DeviceCounters& counters = stats_.devices[region.device_];
  ++counters.frees;
  --counters.live_regions;
  counters.bytes_in_use -= region.block_->size;
  if (trace_ != nullptr) {  // named by the object it belongs or last belonged to
    trace(TraceKind::free, region.device_, region.block_->size,
          region.parent_ != nullptr ? region.parent_->id() : region.last_owner_);
  }
  heap(region.device_).allocator().release(region.block_);
  recycle(region);
}

CACHEDARRAYS_INLINE void DataManager::detach(Region& region) {
  Object* object = region.parent_;
  object->on_device_[region.device_] = nullptr;
  region.last_owner_ = object->id();
  region.parent_ = nullptr;
}

CACHEDARRAYS_INLINE void DataManager::free(Region& region) {
  check_region(region, "free");
  if (Object* object = region.parent_) {
    if (object->primary_ == &region) {
      throw invalid_operation("cachedarrays: free: the " + region_name(region) +
                              " is its object's primary; an object always keeps one primary — "
                              "setprimary another region first, or destroy the object");
    }
    detach(region);
  }
  if (region.copy_ != nullptr) settle(region, /*rethrow=*/false, /*drop_background=*/true);
  release_region(region);
}

CACHEDARRAYS_INLINE bool DataManager::check_copy(const Region& dst, const Region& src, const char* operation) const {
  check_region(dst, operation);
  check_region(src, operation);
  if (&dst == &src) {
    throw invalid_operation("cachedarrays: " + std::string(operation) + ": source and destination are the same " +
                            region_name(dst) + "; copy between two different regions");
  }
  if (dst.bytes_ != src.bytes_) {
    throw invalid_operation("cachedarrays: " + std::string(operation) +
                            " between regions of different sizes: destination " + region_name(dst) + " holds " +
                            std::to_string(dst.bytes_) + " bytes, source " + region_name(src) + " holds " +
                            std::to_string(src.bytes_) + "; regions must have the same size");
  }
  const Object* dst_object = dst.parent_;
  const bool into_primary = dst_object != nullptr && dst_object->primary_ == &dst;
  if (into_primary && dst_object->pinned()) {
    throw pinned_error("cachedarrays: " + std::string(operation) + " would overwrite the primary of pinned " +
                       detail::object_name(*dst_object) + " while an access to it is open");
  }
  return into_primary;
}

CACHEDARRAYS_INLINE detail::CopyDestination DataManager::destination_kind(const Region& dst) const {
  return heap(dst.device_).is_pmem() ? detail::CopyDestination::persistent
         : dst.device_ == 0          ? detail::CopyDestination::fast
                                     : detail::CopyDestination::slow;
}

CACHEDARRAYS_INLINE void DataManager::copyto(Region& dst, const Region& src) {
  const bool into_primary = check_copy(dst, src, "copyto");
  settle(src, /*rethrow=*/true);
  settle(dst);
  Object* dst_object = dst.parent_;

  const auto& to = heap(dst.device_);
  const detail::CopyDestination where = destination_kind(dst);
  const auto& from = heap(src.device_);
  // Virtual heaps store nothing: the copy is counted, not made.
  if (!to.is_virtual() && !from.is_virtual()) {
    // A memory-mode device pays its cache's misses after the copy.
    const double after = memory_mode_ns(src.device_, src.offset_, src.bytes_, Access::read) +
                         memory_mode_ns(dst.device_, dst.offset_, dst.bytes_, Access::write);
    // Any other emulated device holds the copy to its bandwidth; real tiers
    // skip the clock (reading it costs a sizeable part of a small copy).
    const double least = emulation::copy_ns(memory_mode_[src.device_] ? std::nullopt : from.spec().emulation,
                                            memory_mode_[dst.device_] ? std::nullopt : to.spec().emulation, src.bytes_);
    if (CACHEDARRAYS_FAULT(copy)) fail_copy(dst, src, into_primary, where);  // tests only
    // The process's choice of stores is made at its first copy, and takes
    // longer than many copies: it is no part of this copy's emulated time.
    if (least > 0) static_cast<void>(detail::process_copy_decision());
    const auto t0 = least > 0 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    detail::copy_bytes(dst.data_, src.data_, src.bytes_, where);
    if (least > 0) {
      const double spent = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      if (least > spent) {
        emulation::wait_ns(least - spent);
        stats_.emulated_copy_wait_ns += static_cast<std::uint64_t>(least - spent);
      }
      stats_.emulated_sync_copy_ns += static_cast<std::uint64_t>(std::max(least, spent));
    }
    if (after > 0) {
      emulation::wait_ns(after);
      stats_.emulated_copy_wait_ns += static_cast<std::uint64_t>(after);
    }
  }
  stats_.bytes_copied[src.device_][dst.device_] += src.bytes_;
  ++stats_.copies[src.device_][dst.device_];
  if (trace_ != nullptr) {
    trace(TraceKind::copy, src.device_, src.bytes_, dst_object != nullptr ? dst_object : src.parent_, dst.device_);
  }

  if (into_primary) {
    // New contents for the object: like a write, every secondary is stale.
    dst_object->version_ = next_version_++;
    dst.version_ = dst_object->version_;
    dst.dirty_ = true;
    return;
  }
  // A copy taken while the source object is being written may be torn: it
  // never counts as valid (invariant 4).
  const bool torn = src.parent_ != nullptr && src.parent_->being_written();
  dst.version_ = torn ? std::uint64_t{0} : src.version_.load();
  dst.dirty_ = false;
}

CACHEDARRAYS_INLINE void DataManager::fail_copy(Region& dst, const Region& src, bool into_primary,
                                                detail::CopyDestination where) {
  // A media error stops a copy part way: half of the bytes have landed.
  detail::copy_bytes(dst.data_, src.data_, src.bytes_ / 2, where);
  ++stats_.failed_copies;
  if (into_primary) {
    // The object's contents are now the torn bytes: its other copies no
    // longer count (invariant 4), and the caller learns it must rewrite.
    Object& object = *dst.parent_;
    object.version_ = next_version_++;
    dst.version_ = object.version_;
    dst.dirty_ = true;
  } else {
    dst.version_ = 0;
    dst.dirty_ = false;
  }
  throw copy_error("cachedarrays: copyto: copying " + format_bytes(src.bytes_) + " from the " + region_name(src) +
                   " into the " + region_name(dst) + " failed half way (injected media error); " +
                   (into_primary ? "the object's contents are torn: write them again"
                                 : "the destination holds no valid copy, the source is untouched"));
}

CACHEDARRAYS_INLINE void DataManager::link(Region& a, Region& b) {
  check_region(a, "link");
  check_region(b, "link");
  if (&a == &b || a.device_ == b.device_) {
    throw invalid_operation("cachedarrays: cannot link two regions on the same device (" + region_name(a) + "; " +
                            region_name(b) + "); an object has at most one region per device");
  }
  if (a.bytes_ != b.bytes_) {
    throw invalid_operation("cachedarrays: cannot link regions of different sizes (" + region_name(a) + "; " +
                            region_name(b) + "); linked regions are copies");
  }
  if (a.parent_ != nullptr && b.parent_ != nullptr) {
    if (a.parent_ == b.parent_) return;  // already linked
    throw invalid_operation("cachedarrays: cannot link regions of different objects (" + region_name(a) + "; " +
                            region_name(b) + ")");
  }
  if (a.parent_ == nullptr && b.parent_ == nullptr) {
    throw invalid_operation(
        "cachedarrays: link: neither region belongs to an object; make one "
        "the primary of an object first (setprimary)");
  }
  Object& object = a.parent_ != nullptr ? *a.parent_ : *b.parent_;
  Region& joining = a.parent_ != nullptr ? b : a;
  if (Region* present = object.on_device_[joining.device_]) {
    throw invalid_operation("cachedarrays: cannot link: " + detail::object_name(object) +
                            " already has a region on device " + std::to_string(joining.device_) + " (" +
                            region_name(*present) + "); free or unlink it first");
  }
  joining.parent_ = &object;
  object.on_device_[joining.device_] = &joining;
}

CACHEDARRAYS_INLINE void DataManager::unlink(Region& a, Region& b) {
  check_region(a, "unlink");
  check_region(b, "unlink");
  if (&a == &b || a.parent_ == nullptr || a.parent_ != b.parent_) {
    throw invalid_operation("cachedarrays: unlink needs two different regions of the same object (" + region_name(a) +
                            "; " + region_name(b) + ")");
  }
  detach(a.parent_->primary_ == &b ? a : b);
}

CACHEDARRAYS_INLINE Region* DataManager::getlinked(const Region& region, DeviceId device) const {
  check_device(device, "getlinked");
  return region.parent_ != nullptr ? region.parent_->on_device_[device] : nullptr;
}

CACHEDARRAYS_INLINE void DataManager::setdirty(Region& region, bool dirty) {
  check_region(region, "setdirty");
  if (dirty) settle(region);  // its bytes are about to change
  region.dirty_ = dirty;
  if (!dirty) return;
  if (region.parent_ != nullptr && region.parent_->primary_ == &region) {
    // New contents for the object: every secondary becomes stale.
    region.parent_->version_ = next_version_++;
    region.version_ = region.parent_->version_;
  } else {
    // Any other region written on its own (a secondary, or a free-standing
    // region that may be linked back later) no longer holds a valid copy.
    region.version_ = 0;
  }
}

CACHEDARRAYS_INLINE bool DataManager::isvalid(const Region& region) const noexcept {
  const Object* object = region.parent_;
  if (object == nullptr) return false;
  if (object->primary_ == &region) return true;
  // Invariant 7: a copy into the region counts once it has landed whole.
  if (const detail::CopyState* copy = region.copy_.get();
      copy != nullptr && copy->dst_region == &region &&
      (!copy->done.load(std::memory_order_acquire) || copy->error != nullptr)) {
    return false;
  }
  return region.version_ != 0 && region.version_ == object->version_ && !object->being_written();
}

// ---- objects ----------------------------------------------------------------

CACHEDARRAYS_INLINE Object& DataManager::create_object(std::uint64_t bytes) {
  if (bytes == 0) {
    throw invalid_argument("cachedarrays: cannot create an object of 0 bytes; ask for at least 1");
  }
  Object& object = objects_.emplace_back(Object::Key{});
  object.self_ = std::prev(objects_.end());
  object.id_ = next_object_id_++;
  object.bytes_ = bytes;
  object.version_ = next_version_++;
  ++stats_.objects_created;
  return object;
}

CACHEDARRAYS_INLINE void DataManager::destroy(Object& object) {
  if (object.pinned()) {
    throw pinned_error("cachedarrays: cannot free " + detail::object_name(object) +
                       " while an access to it is open; end the read()/write() scope first");
  }
  for (Region* r : object.on_device_) {
    if (r != nullptr) settle(*r, /*rethrow=*/false, /*drop_background=*/true);
  }
  for (detail::RelaxedAtomic<Region*>& r : object.on_device_) {
    Region* region = r;
    if (region == nullptr) continue;
    r = nullptr;
    region->last_owner_ = object.id();
    region->parent_ = nullptr;
    release_region(*region);
  }
  object.primary_ = nullptr;
  ++stats_.objects_destroyed;
  objects_.erase(object.self_);  // frees the policy's state with it
}

CACHEDARRAYS_INLINE void DataManager::setprimary(Object& object, Region& region) {
  check_region(region, "setprimary");
  if (object.primary_ == &region) return;
  if (region.bytes_ != object.bytes_) {
    throw invalid_operation("cachedarrays: setprimary: " + detail::object_name(object) + " holds " +
                            std::to_string(object.bytes_) + " bytes but the " + region_name(region) + " holds " +
                            std::to_string(region.bytes_) + "; a primary has exactly the object's size");
  }
  if (region.parent_ != nullptr && region.parent_ != &object) {
    throw invalid_operation("cachedarrays: setprimary: the " + region_name(region) +
                            " belongs to another object than " + detail::object_name(object));
  }
  if (object.pinned() && object.primary_ != nullptr) {
    throw pinned_error("cachedarrays: cannot move the primary of " + detail::object_name(object) +
                       " while an access to it is open (pinned objects never move)");
  }
  if (region.parent_ == nullptr && object.on_device_[region.device_] != nullptr) {
    throw invalid_operation("cachedarrays: setprimary: " + detail::object_name(object) +
                            " already has a region on device " + std::to_string(region.device_) +
                            "; free or unlink it before giving the object another one there");
  }
  // A copy in flight into the region must land first (invariant 7).
  settle(region, /*rethrow=*/true);
  if (object.primary_ != nullptr && region.version_ != object.version_) {
    throw invalid_operation("cachedarrays: setprimary: the " + region_name(region) + " is not a valid copy of " +
                            detail::object_name(object) +
                            " (the primary changed since it was copied); copyto from the current "
                            "primary first");
  }
  region.parent_ = &object;
  object.on_device_[region.device_] = &region;
  object.primary_ = &region;
  region.version_ = object.version_;
  // The policy answered for the old place; it is asked anew.
  object.read_delivery_.store(static_cast<std::uint8_t>(HintDelivery::under_lock), std::memory_order_relaxed);
  object.write_delivery_.store(static_cast<std::uint8_t>(HintDelivery::under_lock), std::memory_order_relaxed);
}

// ---- pins -------------------------------------------------------------------

CACHEDARRAYS_INLINE detail::PinToken DataManager::pin(Object& object, Access access, std::size_t thread) {
  Region* primary = object.primary_;
  if (primary == nullptr) {
    throw invalid_operation("cachedarrays: cannot access " + detail::object_name(object) +
                            ": it has no primary region yet (the policy did not place it)");
  }
  // A write must not tear a copy reading the primary (invariant 7); a read
  // may run beside it.
  if (access == Access::write) settle(*primary, /*rethrow=*/false, /*drop_background=*/true);
  // The same pin as an unlocked access's; under the lock it needs no fence.
  const detail::PinToken token = pin_unlocked(object, access, thread);
  if (access == Access::write) setdirty(*primary, true);
  return token;
}

CACHEDARRAYS_INLINE double DataManager::note_access(const Object& object, Access access) {
  const Region& primary = *object.primary_;
  const DeviceId d = primary.device_;
  ++stats_.accesses;
  (access == Access::read ? stats_.kernel_bytes_read : stats_.kernel_bytes_written)[d] += primary.bytes_;
  const auto& profile = heap(d).spec().emulation;
  if (!profile) return 0.0;
  const double extra = memory_mode_[d] ? memory_mode_ns(d, primary.offset_, primary.bytes_, access)
                                       : emulation::kernel_extra_ns(*profile, primary.bytes_, access);
  stats_.emulated_kernel_ns += static_cast<std::uint64_t>(extra);
  return extra;
}

CACHEDARRAYS_INLINE double DataManager::note_accesses_unlocked(Object* const* objects, const Access* accesses,
                                                               std::size_t n) {
  // One look-up of the thread's stripe for all of them.
  auto add = unlocked_accesses_.adder();
  double extra_ns = 0;
  std::uint64_t counted_ns = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Region& primary = *objects[i]->primary_;  // pinned: it stays
    const DeviceId d = primary.device_;
    const auto& profile = heap(d).spec().emulation;
    const double extra = profile ? emulation::kernel_extra_ns(*profile, primary.bytes_, accesses[i]) : 0.0;
    add((accesses[i] == Access::read ? unlocked_bytes_read : unlocked_bytes_written) + d, primary.bytes_);
    extra_ns += extra;
    counted_ns += static_cast<std::uint64_t>(extra);
  }
  add(unlocked_accesses, n);
  if (counted_ns != 0) add(unlocked_emulated_ns, counted_ns);
  return extra_ns;
}

CACHEDARRAYS_INLINE Stats DataManager::stats() const {
  Stats s = stats_;
  s.accesses += unlocked_accesses_.sum(unlocked_accesses);
  s.emulated_kernel_ns += unlocked_accesses_.sum(unlocked_emulated_ns);
  for (DeviceId d = 0; d < max_devices; ++d) {
    s.kernel_bytes_read[d] += unlocked_accesses_.sum(unlocked_bytes_read + d);
    s.kernel_bytes_written[d] += unlocked_accesses_.sum(unlocked_bytes_written + d);
  }
  return s;
}

CACHEDARRAYS_INLINE double DataManager::memory_mode_ns(DeviceId device, std::uint64_t offset, std::uint64_t bytes,
                                                       Access access) {
  TwoLevelMemory* cache = memory_mode_[device].get();
  if (cache == nullptr) return 0.0;
  const TwoLmCounters before = cache->counters();
  // The device's offsets stand for its physical addresses: the cache's set
  // of a line is its offset modulo the cache's size, as in the hardware.
  cache->access(offset, bytes, access == Access::write);
  const TwoLmCounters delta = cache->counters() - before;
  stats_.memory_mode += delta;
  return emulation::memory_mode_extra_ns(*heap(device).spec().emulation, delta, cache->line_bytes());
}

// ---- device-wide operations -------------------------------------------------

CACHEDARRAYS_INLINE bool DataManager::evictfrom(DeviceId device, std::uint64_t start, std::uint64_t bytes,
                                                const std::function<bool(Region&)>& evict) {
  check_device(device, "evictfrom");
  auto& a = heap(device).allocator();
  if (bytes == 0 || start >= a.capacity() || bytes > a.capacity() - start) {
    throw invalid_argument("cachedarrays: evictfrom: range [" + std::to_string(start) + ", +" + std::to_string(bytes) +
                           ") is outside device " + std::to_string(device) + ", whose heap holds " +
                           std::to_string(a.capacity()) + " bytes; give a non-empty range inside it");
  }
  // Refuse before touching anything if a pinned primary lies in the range.
  if (const Region* pinned = pinned_primary_in(device, start, bytes)) {
    throw pinned_error("cachedarrays: evictfrom: the range holds the " + region_name(*pinned) +
                       ", which is pinned by an open access; pinned objects are never evicted");
  }
  const auto result = a.evict_range(start, bytes, [&](Region& region) {
    const DeviceId d = region.device_;
    const std::uint64_t region_bytes = region.bytes_;
    const Object* object = region.parent_;
    if (!evict(region)) return false;
    ++stats_.devices[d].evictions;
    if (trace_ != nullptr) trace(TraceKind::evict, d, region_bytes, object);
    return true;
  });
  return result == detail::BlockAllocator<Region>::EvictResult::cleared;
}

CACHEDARRAYS_INLINE const Region* DataManager::pinned_primary_in(DeviceId device, std::uint64_t start,
                                                                 std::uint64_t bytes) const {
  const Region* found = nullptr;
  heap(device).allocator().walk_range(start, bytes, [&](const detail::Block<Region>& block) {
    if (found != nullptr || block.free) return;
    const Region& region = *block.owner;
    if (region.parent_ != nullptr && region.parent_->primary_ == &region && region.parent_->pinned()) {
      found = &region;
    }
  });
  return found;
}

CACHEDARRAYS_INLINE bool DataManager::pinned_in_range(DeviceId device, std::uint64_t start, std::uint64_t bytes) const {
  check_device(device, "pinned_in_range");
  return pinned_primary_in(device, start, bytes) != nullptr;
}

CACHEDARRAYS_INLINE std::uint64_t DataManager::defrag(DeviceId device, std::uint64_t until_hole) {
  check_device(device, "defrag");
  auto& h = heap(device);
  DeviceCounters& counters = stats_.devices[device];
  return h.allocator().defrag([](const Region& region) { return movable_in_heap(region); },
                              [&](Region& region, std::uint64_t new_offset) {
                                // A copy in flight reads or writes the old place; a write-back made
                                // ahead is dropped rather than waited for (the policy makes it again).
                                settle(region, /*rethrow=*/false, /*drop_background=*/true);
                                std::byte* to = h.at(new_offset);
                                // Sliding down within one heap: source and destination may overlap.
                                if (!h.is_virtual()) std::memmove(to, region.data_, region.bytes_);
                                region.data_ = to;
                                region.offset_ = new_offset;
                                ++counters.defrag_moves;
                                counters.defrag_bytes += region.bytes_;
                                if (trace_ != nullptr)
                                  trace(TraceKind::defrag_move, device, region.bytes_, region.parent_);
                              },
                              until_hole);
}

CACHEDARRAYS_INLINE bool DataManager::movable_in_heap(const Region& region) noexcept {
  const Object* object = region.parent_;
  return object == nullptr || object->primary_ != &region || !object->pinned();
}

CACHEDARRAYS_INLINE bool DataManager::make_hole(DeviceId device, std::uint64_t bytes) {
  check_device(device, "make_hole");
  auto& h = heap(device);
  auto& a = h.allocator();
  if (bytes == 0 || a.largest_free_block() >= bytes) return true;
  const std::optional<detail::BlockAllocator<Region>::Window> window =
      a.cheapest_window(bytes, [](const Region& region) { return movable_in_heap(region); });
  if (!window) return false;
  DeviceCounters& counters = stats_.devices[device];
  // The window's free space is held back while its regions leave, so each
  // goes into a hole outside it.
  const auto result = a.evict_range(window->start, bytes, [&](Region& region) {
    // A copy in flight reads or writes the old place; a write-back made
    // ahead is dropped rather than waited for (the policy makes it again).
    settle(region, /*rethrow=*/false, /*drop_background=*/true);
    detail::Block<Region>* from = region.block_;
    detail::Block<Region>* to = a.try_allocate(region.bytes_, region);
    if (to == nullptr) return false;
    std::byte* data = h.at(to->offset);
    // The hole lies outside the region's block, which is still held: the two
    // do not overlap, so the move is an ordinary copy with the process's
    // chosen stores (a slide within the heap, above, may overlap: memmove).
    if (!h.is_virtual()) detail::copy_bytes(data, region.data_, region.bytes_, destination_kind(region));
    region.block_ = to;
    region.offset_ = to->offset;
    region.data_ = data;
    a.release(from);
    ++counters.defrag_moves;
    counters.defrag_bytes += region.bytes_;
    counters.peak_extent = std::max(counters.peak_extent, to->offset + to->size);
    if (trace_ != nullptr) trace(TraceKind::defrag_move, device, region.bytes_, region.parent_);
    return true;
  });
  return result == detail::BlockAllocator<Region>::EvictResult::cleared && a.largest_free_block() >= bytes;
}

CACHEDARRAYS_INLINE void DataManager::trace(TraceKind kind, DeviceId device, std::uint64_t bytes, const Object* object,
                                            DeviceId device2, std::uint8_t detail) {
  trace(kind, device, bytes, object != nullptr ? object->id() : 0, device2, detail);
}

CACHEDARRAYS_INLINE void DataManager::trace(TraceKind kind, DeviceId device, std::uint64_t bytes,
                                            std::uint64_t object_id, DeviceId device2, std::uint8_t detail) {
  TraceEvent e;
  e.kind = kind;
  e.detail = detail;
  e.device = device;
  e.device2 = device2;
  e.bytes = bytes;
  e.object = object_id;
  trace_->record(e);
}

// ---- walks and checks -------------------------------------------------------

CACHEDARRAYS_INLINE void DataManager::for_each_region(DeviceId device,
                                                      const std::function<void(Region&)>& visit) const {
  check_device(device, "for_each_region");
  heap(device).allocator().walk([&](const detail::Block<Region>& block) {
    if (!block.free) visit(*block.owner);
  });
}

CACHEDARRAYS_INLINE void DataManager::check_invariants(bool verify_contents) const {
  const auto fail = [](const std::string& what) { throw invariant_violation("cachedarrays: " + what); };
  for (const Object& object : objects_) {
    const Object* o = &object;
    const Region* primary = o->primary_;
    if (primary == nullptr) fail("invariant 1: " + detail::object_name(*o) + " has no primary");
    if (primary->parent_ != o || o->on_device_[primary->device_] != primary) {
      fail("invariant 1: the primary of " + detail::object_name(*o) + " is not among its regions");
    }
    for (DeviceId d = 0; d < max_devices; ++d) {
      const Region* r = o->on_device_[d];
      if (r == nullptr) continue;
      if (d >= heaps_.size() || r->device_ != d) fail("invariant 2: region filed under the wrong device");
      if (r->parent_ != o) fail("invariant 2: linked region of " + detail::object_name(*o) + " names another parent");
      if (r->bytes_ != o->bytes_) fail("invariant 2: linked regions of " + detail::object_name(*o) + " differ in size");
      if (r->block_ == nullptr || r->block_->owner != r)
        fail("a region of " + detail::object_name(*o) + " is not live");
      if (r->copy_ != nullptr && r->copy_->dst_region == r && !r->copy_->settled && r == primary) {
        fail("invariant 7: a region of " + detail::object_name(*o) +
             " that an asynchronous copy has not finished writing counts as the object's contents");
      }
      if (verify_contents && r != primary && isvalid(*r) && !heap(r->device_).is_virtual() &&
          !heap(primary->device_).is_virtual() && std::memcmp(r->data_, primary->data_, o->bytes_) != 0) {
        fail("invariant 4: a secondary of " + detail::object_name(*o) +
             " counts as a valid copy but differs from the primary");
      }
    }
  }
  for (DeviceId d = 0; d < heaps_.size(); ++d) {
    const auto& h = heap(d);
    h.allocator().check();
    std::uint64_t sum = 0;
    std::uint64_t count = 0;
    h.allocator().walk([&](const detail::Block<Region>& block) {
      if (block.free) return;
      const Region& r = *block.owner;
      if (r.block_ != &block || r.device_ != d || r.offset_ != block.offset || r.data_ != h.at(block.offset) ||
          h.allocator().round_up(r.bytes_) != block.size) {
        fail("a region's fields disagree with its heap block on device " + std::to_string(d));
      }
      if (r.parent_ != nullptr && r.parent_->on_device_[d] != &r) {
        fail("invariant 2: a region names an object that does not list it");
      }
      sum += h.allocator().round_up(r.bytes_);
      ++count;
    });
    const DeviceCounters& c = stats_.devices[d];
    if (sum != h.allocator().bytes_in_use() || sum != c.bytes_in_use || count != c.live_regions) {
      fail("invariant 6: device " + std::to_string(d) + " reports " + std::to_string(c.bytes_in_use) +
           " bytes in use but its live regions hold " + std::to_string(sum));
    }
  }
}

}  // namespace cachedarrays
