// Asynchronous copies and their fences (DataManager::copyto_async, the
// Mover): invariant 7 of docs/design.md — a region a copy in flight reads or
// writes is not freed, moved or read as a valid copy until the copy is done,
// an access waits for it and never sees half a copy — and a failed copy
// loses nothing. Copies are held in flight deterministically by a
// MoverOptions::before_copy gate, never by sleeping.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/resource.h>

#include "test_support.hpp"

namespace ca = cachedarrays;
using test::two_tiers;

namespace {

using test::fast_device, test::slow_device;

// Holds every copy (or the first `held` ones) until opened; counts the
// copies that reached it and remembers their sizes in order.
class Gate {
 public:
  ca::MoverOptions options(unsigned threads = 1, int held = std::numeric_limits<int>::max()) {
    ca::MoverOptions o;
    o.threads = threads;
    o.before_copy = [this, held](std::uint64_t bytes) {
      std::unique_lock lock(mutex_);
      ++arrived_;
      order_.push_back(bytes);
      arrived_cv_.notify_all();
      if (arrived_ <= held) open_cv_.wait(lock, [&] { return open_; });
    };
    return o;
  }
  std::vector<std::uint64_t> order() {
    std::lock_guard guard(mutex_);
    return order_;
  }
  void open() {
    {
      std::lock_guard guard(mutex_);
      open_ = true;
    }
    open_cv_.notify_all();
  }
  // Blocks until `n` copies have reached the gate (so they are in flight).
  void wait_arrived(int n) {
    std::unique_lock lock(mutex_);
    arrived_cv_.wait(lock, [&] { return arrived_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable open_cv_;
  std::condition_variable arrived_cv_;
  bool open_ = false;
  int arrived_ = 0;
  std::vector<std::uint64_t> order_;
};

// The object's primary on `from`, a fresh region for it on `to`, linked.
ca::Region& linked_region(ca::DataManager& dm, ca::Object& object, ca::DeviceId to) {
  ca::Region* region = dm.allocate(to, object.bytes());
  REQUIRE(region != nullptr);
  dm.link(*dm.getprimary(object), *region);
  return *region;
}

}  // namespace

TEST_CASE("async copy: the fence completes, the copy is whole and valid, and the stats count it") {
  ca::DataManager dm(two_tiers(1 << 20, 8 << 20));
  ca::Object& o = test::make_object(dm, slow_device, 256 * 1024, 7);
  ca::Region& dst = linked_region(dm, o, fast_device);
  ca::Fence fence = dm.copyto_async(dst, *dm.getprimary(o));
  fence.wait();
  CHECK(fence.ready());
  CHECK(!dm.in_flight(dst));
  dm.poll_copies();
  CHECK(dm.isvalid(dst));
  CHECK(test::holds(dm.pointer(dst), o.bytes(), 7));
  dm.setprimary(o, dst);
  CHECK(dm.device(*dm.getprimary(o)) == fast_device);
  dm.check_invariants(/*verify_contents=*/true);
  const ca::Stats& s = dm.stats();
  CHECK(s.async.copies == 1);
  CHECK(s.async.bytes == 256 * 1024);
  CHECK(s.async.failures == 0);
  CHECK(s.bytes_copied[slow_device][fast_device] == 256 * 1024);
}

TEST_CASE("async copy: a destination in flight is not a valid copy; setprimary waits for it") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options());
  ca::Object& o = test::make_object(dm, slow_device, 64 * 1024, 11);
  ca::Region& dst = linked_region(dm, o, fast_device);
  ca::Fence fence = dm.copyto_async(dst, *dm.getprimary(o));
  gate.wait_arrived(1);
  CHECK(dm.in_flight(dst));
  CHECK(dm.in_flight(*dm.getprimary(o)));
  CHECK(!fence.ready());
  CHECK(!dm.isvalid(dst));
  dm.poll_copies();  // not finished: nothing to apply
  CHECK(dm.in_flight(dst));
  dm.check_invariants();

  std::thread opener([&] { gate.open(); });
  dm.setprimary(o, dst);  // waits for the copy, then switches
  opener.join();
  CHECK(fence.ready());
  CHECK(dm.getprimary(o) == &dst);
  CHECK(test::object_holds(dm, o, 11));
  dm.check_invariants(true);
}

TEST_CASE("async copy: a write access waits for a copy reading the primary and never tears it") {
  ca::DataManager* manager = nullptr;
  ca::Object* object = nullptr;
  std::atomic<bool> writer_started{false};
  ca::MoverOptions options;
  // The copy starts only once the writer is about to pin: without the wait
  // in pin(), the writer would overwrite the primary while it is copied.
  options.before_copy = [&](std::uint64_t) {
    while (!writer_started.load()) std::this_thread::yield();
  };
  ca::DataManager dm(two_tiers(16 << 20, 32 << 20), options);
  manager = &dm;
  ca::Object& o = test::make_object(dm, fast_device, 8 << 20, 3);
  object = &o;
  ca::Region& backup = linked_region(dm, o, slow_device);
  ca::Fence fence = dm.copyto_async(backup, *dm.getprimary(o));

  bool ready_when_pinned = false;
  std::thread writer([&] {
    writer_started.store(true);
    manager->pin(*object, ca::Access::write);
    ready_when_pinned = fence.ready();
    test::fill(manager->pointer(*manager->getprimary(*object)), object->bytes(), 4);
    ca::DataManager::unpin(*object, ca::Access::write);
  });
  writer.join();
  CHECK(ready_when_pinned);
  dm.poll_copies();
  // The copy holds the contents from before the write, whole; it is stale now.
  CHECK(test::holds(dm.pointer(backup), o.bytes(), 3));
  CHECK(!dm.isvalid(backup));
  CHECK(test::object_holds(dm, o, 4));
  dm.check_invariants(true);
}

TEST_CASE("async copy: a read access runs beside a copy reading the same primary") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options());
  ca::Object& o = test::make_object(dm, fast_device, 64 * 1024, 5);
  ca::Region& backup = linked_region(dm, o, slow_device);
  ca::Fence fence = dm.copyto_async(backup, *dm.getprimary(o));
  gate.wait_arrived(1);
  dm.pin(o, ca::Access::read);  // would deadlock if it waited: the gate is shut
  CHECK(!fence.ready());
  CHECK(test::object_holds(dm, o, 5));
  ca::DataManager::unpin(o, ca::Access::read);
  gate.open();
  fence.wait();
  dm.poll_copies();
  CHECK(dm.isvalid(backup));
}

TEST_CASE("async copy: destroying or freeing regions in flight waits for the copy first") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options());
  ca::Object& o = test::make_object(dm, slow_device, 128 * 1024, 9);
  ca::Region& dst = linked_region(dm, o, fast_device);
  ca::Fence fence = dm.copyto_async(dst, *dm.getprimary(o));
  gate.wait_arrived(1);
  std::thread opener([&] { gate.open(); });
  dm.destroy(o);  // both regions are in flight; they go only after the copy
  opener.join();
  CHECK(fence.ready());
  CHECK(dm.usage(fast_device).live_regions == 0);
  CHECK(dm.usage(slow_device).live_regions == 0);
  dm.check_invariants();
  CHECK(dm.stats().async.copies == 1);

  // A free-standing destination freed in flight.
  ca::Object& p = test::make_object(dm, slow_device, 4096, 1);
  ca::Region* loose = dm.allocate(fast_device, 4096);
  REQUIRE(loose != nullptr);
  ca::Fence second = dm.copyto_async(*loose, *dm.getprimary(p));
  dm.free(*loose);
  CHECK(second.ready());
  dm.check_invariants();
}

TEST_CASE("async copy: a failed copy surfaces at its fence and loses nothing") {
  std::atomic<int> fail_next{1};
  ca::MoverOptions options;
  options.before_copy = [&](std::uint64_t) {
    if (fail_next.fetch_sub(1) > 0) throw std::runtime_error("injected copy failure");
  };
  ca::DataManager dm(two_tiers(), options);
  ca::Object& o = test::make_object(dm, slow_device, 32 * 1024, 21);
  ca::Region& dst = linked_region(dm, o, fast_device);
  ca::Fence fence = dm.copyto_async(dst, *dm.getprimary(o));
  CHECK_THROWS_WITH_AS(fence.wait(), "injected copy failure", std::runtime_error);
  CHECK_THROWS_WITH_AS(dm.setprimary(o, dst), "injected copy failure", std::runtime_error);
  CHECK(dm.device(*dm.getprimary(o)) == slow_device);  // the primary never moved
  CHECK(test::object_holds(dm, o, 21));
  CHECK(!dm.isvalid(dst));
  CHECK(dm.stats().async.failures == 1);
  CHECK(dm.stats().async.copies == 0);
  dm.check_invariants(true);

  // The next copy into the same region succeeds.
  dm.copyto_async(dst, *dm.getprimary(o)).wait();
  dm.setprimary(o, dst);
  CHECK(test::object_holds(dm, o, 21));
  CHECK(dm.stats().async.copies == 1);
  dm.check_invariants(true);
}

TEST_CASE("async copy: refused into a primary, between a region and itself, or of different sizes") {
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, slow_device, 4096, 2);
  ca::Region* other = dm.allocate(fast_device, 4096);
  ca::Region* small = dm.allocate(fast_device, 1024);
  REQUIRE(other != nullptr);
  REQUIRE(small != nullptr);
  CHECK_THROWS_AS(dm.copyto_async(*dm.getprimary(o), *other), ca::invalid_operation);
  CHECK_THROWS_AS(dm.copyto_async(*other, *other), ca::invalid_operation);
  CHECK_THROWS_AS(dm.copyto_async(*small, *dm.getprimary(o)), ca::invalid_operation);
  CHECK(dm.stats().async.copies == 0);
  CHECK(dm.stats().copies[slow_device][fast_device] == 0);
  CHECK(test::object_holds(dm, o, 2));
  ca::MoverOptions none;
  none.threads = 0;
  CHECK_THROWS_AS(ca::Mover{none}, ca::invalid_argument);
  CHECK_THROWS_AS(ca::DataManager(two_tiers(), none), ca::invalid_argument);
}

TEST_CASE("async copy: several mover threads make many copies, each whole") {
  ca::MoverOptions options;
  options.threads = 3;
  ca::DataManager dm(two_tiers(4 << 20, 8 << 20), options);
  std::vector<ca::Object*> objects;
  std::vector<ca::Fence> fences;
  for (std::uint64_t i = 0; i < 24; ++i) {
    ca::Object& o = test::make_object(dm, slow_device, 64 * 1024 + 64 * i, 100 + i);
    objects.push_back(&o);
    fences.push_back(dm.copyto_async(linked_region(dm, o, fast_device), *dm.getprimary(o)));
  }
  dm.finish_copies();
  for (const ca::Fence& f : fences) CHECK(f.ready());
  for (std::uint64_t i = 0; i < objects.size(); ++i) {
    ca::Object& o = *objects[i];
    dm.setprimary(o, *dm.getlinked(*dm.getprimary(o), fast_device));
    CHECK(test::object_holds(dm, o, 100 + i));
  }
  CHECK(dm.stats().async.copies == 24);
  dm.check_invariants(true);
}

TEST_CASE("async copy: a manager destroyed with copies queued finishes them first") {
  Gate gate;
  auto dm = std::make_unique<ca::DataManager>(two_tiers(), gate.options());
  ca::Object& o = test::make_object(*dm, slow_device, 64 * 1024, 8);
  ca::Fence fence = dm->copyto_async(linked_region(*dm, o, fast_device), *dm->getprimary(o));
  gate.wait_arrived(1);
  std::thread opener([&] { gate.open(); });
  dm.reset();  // waits for the mover; the heaps outlive the copy
  opener.join();
  CHECK(fence.ready());
}

TEST_CASE("async copy: with an emulated slow tier the mover, not the caller, waits out its bandwidth") {
  // 64 KiB at 0.01 GB/s take 6.5 ms: far longer than the copy itself, even
  // in a sanitizer build, so the mover always has emulated time to wait.
  const double dram = 10.0;
  std::vector<ca::DeviceSpec> devices = two_tiers(2 << 20, 8 << 20);
  devices[1].emulation = test::emulation_profile(0.01, 0.01, 0, dram, dram);
  ca::DataManager dm(devices);
  ca::Object& o = test::make_object(dm, slow_device, 64 * 1024, 13);
  ca::Region& dst = linked_region(dm, o, fast_device);
  dm.copyto_async(dst, *dm.getprimary(o)).wait();
  dm.poll_copies();
  const ca::Stats& s = dm.stats();
  CHECK(s.async.emulated_wait_ns > 0);
  CHECK(s.async.busy_ns >= s.async.emulated_wait_ns);
  CHECK(s.emulated_copy_wait_ns == 0);  // the synchronous counter: the caller's own waits
  CHECK(test::holds(dm.pointer(dst), o.bytes(), 13));
}

TEST_CASE("async copy: virtual heaps complete at once and count the traffic") {
  ca::DataManager dm({ca::virtual_device(1 << 20), ca::virtual_device(1 << 24)});
  ca::Object& o = dm.create_object(4096);
  ca::Region* primary = dm.allocate(slow_device, 4096);
  dm.setprimary(o, *primary);
  ca::Region& dst = linked_region(dm, o, fast_device);
  ca::Fence fence = dm.copyto_async(dst, *primary);
  CHECK(fence.ready());
  dm.setprimary(o, dst);
  CHECK(dm.stats().async.copies == 1);
  CHECK(dm.stats().bytes_copied[slow_device][fast_device] == 4096);
}

TEST_CASE("async copy: a trace tells synchronous, asynchronous and background copies apart") {
  ca::DataManager dm(two_tiers());
  ca::Trace trace;
  dm.set_trace(&trace);
  ca::Object& o = test::make_object(dm, slow_device, 4096, 1);
  ca::Region& dst = linked_region(dm, o, fast_device);
  dm.copyto(dst, *dm.getprimary(o));
  dm.copyto_async(dst, *dm.getprimary(o)).wait();
  dm.copyto_async(dst, *dm.getprimary(o), ca::CopyPriority::background).wait();
  std::vector<std::uint8_t> details;
  for (const ca::TraceEvent& e : trace.events()) {
    if (e.kind == ca::TraceKind::copy) details.push_back(e.detail);
  }
  // The replay's copy timeline takes each kind as the runtime makes it.
  const std::vector<std::uint8_t> expected{ca::trace_copy_sync, ca::trace_copy_async, ca::trace_copy_background};
  CHECK(details == expected);
  dm.set_trace(nullptr);
}

TEST_CASE("async copy: a trace's free event names the object a region belonged to, even once unlinked") {
  // The replay holds a freed source until its copy lands (plan/schedule/copy_timeline.hpp)
  // and finds that copy by the object both events name.
  ca::DataManager dm(two_tiers());
  ca::Object& o = test::make_object(dm, fast_device, 4096, 1);
  ca::Region* x = dm.getprimary(o);
  ca::Region& y = linked_region(dm, o, slow_device);
  ca::Trace trace;
  dm.set_trace(&trace);
  dm.copyto_async(y, *x).wait();
  dm.setprimary(o, y);
  dm.unlink(*x, y);  // Listing 1's eviction: the old primary is free-standing, then freed
  dm.free(*x);
  ca::Object& gone = test::make_object(dm, fast_device, 4096, 2);
  const std::uint64_t gone_id = gone.id();
  dm.destroy(gone);
  std::vector<std::uint64_t> freed;
  for (const ca::TraceEvent& e : trace.events()) {
    if (e.kind == ca::TraceKind::free && e.device == fast_device) freed.push_back(e.object);
  }
  CHECK(freed == std::vector<std::uint64_t>{o.id(), gone_id});
  dm.set_trace(nullptr);
}

TEST_CASE("async copy: the paper's moves use a copy issued ahead instead of copying again") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options());
  // Listing 2 with a prefetch in flight: it waits for it and promotes it.
  ca::Object& o = test::make_object(dm, slow_device, 64 * 1024, 31);
  ca::Region& ahead = linked_region(dm, o, fast_device);
  (void)dm.copyto_async(ahead, *dm.getprimary(o));
  gate.wait_arrived(1);
  std::thread opener([&] { gate.open(); });
  CHECK(ca::policy::prefetch(dm, o, fast_device, slow_device));
  opener.join();
  CHECK(dm.getprimary(o) == &ahead);
  CHECK(test::object_holds(dm, o, 31));
  CHECK(dm.stats().copies[slow_device][fast_device] == 1);

  // Listing 1 with a write-back in flight: it lands, and the eviction needs
  // no copy of its own.
  dm.pin(o, ca::Access::write);  // dirty, as a kernel's write leaves it
  test::fill(dm.pointer(*dm.getprimary(o)), o.bytes(), 32);
  ca::DataManager::unpin(o, ca::Access::write);
  (void)dm.copyto_async(*dm.getlinked(*dm.getprimary(o), slow_device), *dm.getprimary(o));
  const ca::policy::EvictOutcome out = ca::policy::evict(dm, o, fast_device, slow_device);
  CHECK(out.moved);
  CHECK_FALSE(out.wrote_back);
  CHECK(dm.device(*dm.getprimary(o)) == slow_device);
  CHECK(test::object_holds(dm, o, 32));
  CHECK(dm.stats().copies[fast_device][slow_device] == 1);
  CHECK(dm.stats().async.copies == 2);
  dm.check_invariants(true);
}

TEST_CASE("async copy: a background copy runs after the normal copies queued before it starts") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options());
  ca::Object& first = test::make_object(dm, slow_device, 4096, 1);
  ca::Object& writeback = test::make_object(dm, fast_device, 8192, 2);
  ca::Object& prefetch = test::make_object(dm, slow_device, 12288, 3);
  (void)dm.copyto_async(linked_region(dm, first, fast_device), *dm.getprimary(first));
  gate.wait_arrived(1);  // the mover holds the first copy; the next two queue
  (void)dm.copyto_async(linked_region(dm, writeback, slow_device), *dm.getprimary(writeback),
                        ca::CopyPriority::background);
  (void)dm.copyto_async(linked_region(dm, prefetch, fast_device), *dm.getprimary(prefetch));
  gate.open();
  dm.finish_copies();
  CHECK(gate.order() == std::vector<std::uint64_t>{4096, 12288, 8192});
  CHECK(dm.isvalid(*dm.getlinked(*dm.getprimary(writeback), slow_device)));
  dm.check_invariants(true);
}

TEST_CASE("async copy: a copy the mover has not started is made by the thread that needs it") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options(1, /*held=*/1));
  ca::Object& first = test::make_object(dm, slow_device, 4096, 1);
  ca::Object& needed = test::make_object(dm, slow_device, 64 * 1024, 7);
  ca::Fence held = dm.copyto_async(linked_region(dm, first, fast_device), *dm.getprimary(first));
  gate.wait_arrived(1);
  ca::Region& copy = linked_region(dm, needed, fast_device);
  ca::Fence fence = dm.copyto_async(copy, *dm.getprimary(needed));
  // The mover is held on the first copy: waiting behind it would never end.
  dm.setprimary(needed, copy);
  CHECK(fence.ready());
  CHECK(!held.ready());
  CHECK(test::object_holds(dm, needed, 7));
  CHECK(dm.stats().async.taken_over == 1);
  CHECK(dm.stats().async.copies == 1);
  gate.open();
  dm.finish_copies();
  CHECK(dm.stats().async.copies == 2);
  dm.check_invariants(true);
}

TEST_CASE(
    "async copy: copies issued while the mover's wakes are held start at the release; one settled meanwhile is made") {
  ca::MoverOptions options;
  options.threads = 1;
  ca::DataManager dm(two_tiers(), options);
  ca::Object& first = test::make_object(dm, slow_device, 4096, 1);
  ca::Object& settled = test::make_object(dm, slow_device, 64 * 1024, 7);
  ca::Object& later = test::make_object(dm, slow_device, 32 * 1024, 9);
  // The mover's thread starts with this copy, then waits for the next.
  dm.copyto_async(linked_region(dm, first, fast_device), *dm.getprimary(first)).wait();
  dm.hold_mover_wakes();
  ca::Region& settled_copy = linked_region(dm, settled, fast_device);
  const ca::Fence settled_fence = dm.copyto_async(settled_copy, *dm.getprimary(settled));
  // No thread was woken for it: settling makes it here rather than wait.
  dm.setprimary(settled, settled_copy);
  CHECK(settled_fence.ready());
  CHECK(test::object_holds(dm, settled, 7));
  ca::Region& later_copy = linked_region(dm, later, fast_device);
  const ca::Fence later_fence = dm.copyto_async(later_copy, *dm.getprimary(later));
  dm.release_mover_wakes();
  later_fence.wait();  // the release woke the mover: else this would wait for ever
  dm.setprimary(later, later_copy);
  CHECK(test::object_holds(dm, later, 9));
  dm.finish_copies();
  CHECK(dm.stats().async.copies == 3);
  CHECK(dm.stats().async.failures == 0);
  dm.check_invariants(true);
}

TEST_CASE("async copy: a background copy not yet started is dropped when its data is destroyed or overwritten") {
  Gate gate;
  ca::DataManager dm(two_tiers(), gate.options(1, /*held=*/1));
  ca::Object& first = test::make_object(dm, slow_device, 4096, 1);
  (void)dm.copyto_async(linked_region(dm, first, fast_device), *dm.getprimary(first));
  gate.wait_arrived(1);

  SUBCASE("destroyed: nothing is copied, both regions go") {
    ca::Object& dead = test::make_object(dm, fast_device, 64 * 1024, 2);
    ca::Fence fence =
        dm.copyto_async(linked_region(dm, dead, slow_device), *dm.getprimary(dead), ca::CopyPriority::background);
    dm.destroy(dead);
    CHECK(fence.ready());
    CHECK(dm.usage(slow_device).live_regions == 1);  // first's primary only
  }
  SUBCASE("overwritten: the write-back is not a valid copy; the object keeps the new contents") {
    ca::Object& o = test::make_object(dm, fast_device, 64 * 1024, 3);
    ca::Region& backup = linked_region(dm, o, slow_device);
    ca::Fence fence = dm.copyto_async(backup, *dm.getprimary(o), ca::CopyPriority::background);
    dm.pin(o, ca::Access::write);
    CHECK(fence.ready());
    test::fill(dm.pointer(*dm.getprimary(o)), o.bytes(), 4);
    ca::DataManager::unpin(o, ca::Access::write);
    CHECK(!dm.isvalid(backup));
    CHECK(test::object_holds(dm, o, 4));
  }
  CHECK(dm.stats().async.cancelled == 1);
  CHECK(gate.order().size() == 1);  // the dropped copy never reached the mover
  gate.open();
  dm.finish_copies();
  dm.check_invariants(true);
}

TEST_CASE("async copy: an idle-priority mover copies on a SCHED_IDLE thread, and the copy is whole") {
  int policy_seen = -1;
  int nice_seen = 0;
  ca::MoverOptions options;
  options.priority = ca::MoverPriority::idle;
  options.before_copy = [&](std::uint64_t) {  // on the mover thread
    policy_seen = sched_getscheduler(0);
    nice_seen = getpriority(PRIO_PROCESS, 0);
  };
  ca::DataManager dm(two_tiers(1 << 20, 8 << 20), options);
  ca::Object& o = test::make_object(dm, slow_device, 64 * 1024, 3);
  ca::Region& dst = linked_region(dm, o, fast_device);
  dm.copyto_async(dst, *dm.getprimary(o)).wait();
  // SCHED_IDLE, or where the scheduler refused it, the lowest nice value.
  CHECK((policy_seen == SCHED_IDLE || nice_seen == 19));
  // The compute thread keeps its own scheduling.
  CHECK(sched_getscheduler(0) == SCHED_OTHER);
  dm.poll_copies();
  CHECK(test::holds(dm.pointer(dst), o.bytes(), 3));
  dm.check_invariants(/*verify_contents=*/true);
}
