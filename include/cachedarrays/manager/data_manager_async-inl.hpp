// Implementation of DataManager's asynchronous copies (data_manager.hpp:
// copyto_async, in_flight, finish_copies, poll_copies) and of invariant 7:
// the regions a copy in flight reads or writes are "settled" — the copy
// waited for and its outcome applied — before anything reads, overwrites,
// frees or moves them. Header-only mode includes this file from
// data_manager.hpp; the compiled library from src/manager/manager.cpp.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/data_manager.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "cachedarrays/heap/heap.hpp"
#include "cachedarrays/manager/emulation.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE Fence DataManager::copyto_async(Region& dst, const Region& src, CopyPriority priority) {
  if (check_copy(dst, src, "copyto_async")) {
    throw invalid_operation("cachedarrays: copyto_async into the " + region_name(dst) +
                            ": a primary must hold the object's contents at every moment; copy into a "
                            "secondary or a free-standing region, then setprimary it");
  }
  settle(src, /*rethrow=*/true);
  settle(dst);

  auto copy = std::make_shared<detail::CopyState>();
  copy->bytes = src.bytes_;
  copy->background = priority == CopyPriority::background;
  copy->dst_region = &dst;
  copy->src_region = &src;
  // The source's version, unless the source was being written and the copy
  // may be torn (invariant 4); isvalid() says no until the copy has landed
  // (invariant 7), and a failed copy resets it.
  const bool torn = src.parent_ != nullptr && src.parent_->being_written();
  dst.version_ = torn ? std::uint64_t{0} : src.version_.load();
  dst.dirty_ = false;

  const auto& to = heap(dst.device_);
  const auto& from = heap(src.device_);
  const bool stored = !to.is_virtual() && !from.is_virtual();
  if (stored) {
    copy->dst = dst.data_;
    copy->src = src.data_;
    copy->where = destination_kind(dst);
    // The cache model is updated now, under the caller's lock; the mover
    // waits out the time its misses cost.
    copy->after_ns = memory_mode_ns(src.device_, src.offset_, src.bytes_, Access::read) +
                     memory_mode_ns(dst.device_, dst.offset_, dst.bytes_, Access::write);
    copy->least_ns = emulation::copy_ns(memory_mode_[src.device_] ? std::nullopt : from.spec().emulation,
                                        memory_mode_[dst.device_] ? std::nullopt : to.spec().emulation, src.bytes_);
  }
  stats_.bytes_copied[src.device_][dst.device_] += src.bytes_;
  ++stats_.copies[src.device_][dst.device_];
  if (trace_ != nullptr) {
    const Object* object = dst.parent_ != nullptr ? dst.parent_ : src.parent_;
    trace(TraceKind::copy, src.device_, src.bytes_, object, dst.device_,
          copy->background ? trace_copy_background : trace_copy_async);
  }

  dst.copy_ = copy;
  dst.has_copy_ = true;
  src.copy_ = copy;
  src.has_copy_ = true;
  copies_in_flight_.push_back(copy);
  if (stored) {
    if (!mover_.submit(copy)) {
      // No mover thread: the copy is made here, as a take-over would.
      Mover::make_and_complete(*copy, mover_.options());
      ++stats_.async.made_without_mover;
    }
  } else {
    // Virtual heaps store nothing: the copy is done as soon as it is issued.
    copy->complete(nullptr);
  }
  return Fence(std::move(copy));
}

CACHEDARRAYS_INLINE bool DataManager::in_flight(const Region& region) const noexcept {
  return region.copy_ != nullptr && !region.copy_->done.load(std::memory_order_acquire);
}

CACHEDARRAYS_INLINE void DataManager::wait_for_copy(const Region& region) {
  check_region(region, "wait_for_copy");
  settle(region, /*rethrow=*/true);
}

CACHEDARRAYS_INLINE void DataManager::settle(const Region& region, bool rethrow, bool drop_background) {
  if (region.copy_ == nullptr) return;
  const std::shared_ptr<detail::CopyState> copy = region.copy_;  // apply() clears region.copy_
  if (!copy->done.load(std::memory_order_acquire) && mover_.withdraw(*copy)) {
    if (drop_background && copy->background) {
      copy->cancelled = true;
      copy->complete(nullptr);
    } else {
      // Waiting would mean waiting for every copy queued before it too.
      const auto t0 = std::chrono::steady_clock::now();
      Mover::make_and_complete(*copy, mover_.options());
      ++stats_.async.taken_over;
      ++stats_.async.fence_waits;
      stats_.async.fence_wait_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  const std::uint64_t waited = copy->wait();
  if (waited > 0) {
    ++stats_.async.fence_waits;
    stats_.async.fence_wait_ns += waited;
  }
  apply(*copy);
  if (rethrow && copy->error != nullptr && &region == copy->dst_region) std::rethrow_exception(copy->error);
}

CACHEDARRAYS_INLINE void DataManager::apply(detail::CopyState& copy) {
  if (copy.settled) return;
  copy.settled = true;
  stats_.async.busy_ns += copy.busy_ns;
  stats_.async.emulated_wait_ns += copy.emulated_wait_ns;
  if (copy.cancelled) {
    ++stats_.async.cancelled;
    copy.dst_region->version_ = 0;  // never made: not a valid copy
  } else if (copy.error != nullptr) {
    ++stats_.async.failures;
    copy.dst_region->version_ = 0;  // never a valid copy
  } else {
    ++stats_.async.copies;
    stats_.async.bytes += copy.bytes;
  }
  for (const Region* region : {static_cast<const Region*>(copy.dst_region), copy.src_region}) {
    if (region->copy_.get() == &copy) {
      region->copy_.reset();
      region->has_copy_ = false;
    }
  }
  std::erase_if(copies_in_flight_, [&](const std::shared_ptr<detail::CopyState>& c) { return c.get() == &copy; });
}

CACHEDARRAYS_INLINE void DataManager::finish_copies() {
  while (!copies_in_flight_.empty()) {
    const std::shared_ptr<detail::CopyState> copy = copies_in_flight_.front();
    const std::uint64_t waited = copy->wait();
    if (waited > 0) {
      ++stats_.async.fence_waits;
      stats_.async.fence_wait_ns += waited;
    }
    apply(*copy);
  }
}

CACHEDARRAYS_INLINE void DataManager::poll_copies() {
  std::vector<std::shared_ptr<detail::CopyState>> finished;
  for (const auto& copy : copies_in_flight_) {
    if (copy->done.load(std::memory_order_acquire)) finished.push_back(copy);
  }
  for (const auto& copy : finished) apply(*copy);
}

}  // namespace cachedarrays
