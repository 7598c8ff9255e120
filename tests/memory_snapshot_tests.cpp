// Memory snapshots (runtime/memory_snapshot.hpp): a snapshot shows every
// device's usage and every live object as they are, taking one changes
// nothing, its JSON reads back equal, an out_of_memory writes one into the
// runtime's snapshot directory (and still throws when it cannot), and the
// leak report names what a destroyed runtime still held.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;
using test::check_contains;
using test::contains;
using test::message_of;

namespace {

using test::fill, test::holds, test::KiB;

// Neither variable of this feature from the caller's environment: the
// cases that expect the defaults make their runtimes under it.
struct CleanEnvironment {
  test::ScopedEnv dir{"CACHEDARRAYS_SNAPSHOT_DIR", std::nullopt};
  test::ScopedEnv leak{"CACHEDARRAYS_LEAK_REPORT", std::nullopt};
};

// A handle the test never destroys, as a program that leaks one: it lives
// in a buffer whose destructor does not run (it would retire the object on
// a runtime that is gone). It owns no memory, so nothing else leaks.
template <typename T>
class AbandonedHandle {
 public:
  void hold(ca::CachedArray<T>&& array) { ::new (storage_) ca::CachedArray<T>(std::move(array)); }

 private:
  alignas(ca::CachedArray<T>) std::byte storage_[sizeof(ca::CachedArray<T>)];
};

const ca::ObjectSnapshot& object_with_id(const ca::MemorySnapshot& s, std::uint64_t id) {
  for (const ca::ObjectSnapshot& o : s.objects) {
    if (o.id == id) return o;
  }
  FAIL("no object #" << id << " in the snapshot");
  throw std::logic_error("unreachable");
}

// The placement of every object: what a snapshot must not change.
std::vector<std::pair<std::uint64_t, std::optional<ca::RegionSnapshot>>> placements(const ca::MemorySnapshot& s) {
  std::vector<std::pair<std::uint64_t, std::optional<ca::RegionSnapshot>>> out;
  for (const ca::ObjectSnapshot& o : s.objects) out.emplace_back(o.id, o.primary);
  return out;
}

// Invariant 6 as a snapshot shows it: each device's bytes in use are its
// regions' bytes (every size here a multiple of the 64-byte alignment).
void check_regions_add_up(const ca::MemorySnapshot& s) {
  std::vector<std::uint64_t> bytes(s.devices.size(), 0);
  std::vector<std::uint64_t> regions(s.devices.size(), 0);
  for (const ca::ObjectSnapshot& o : s.objects) {
    if (o.primary) {
      bytes[o.primary->device] += o.bytes;
      ++regions[o.primary->device];
    }
    for (const ca::RegionSnapshot& r : o.secondaries) {
      bytes[r.device] += o.bytes;
      ++regions[r.device];
    }
  }
  for (std::size_t d = 0; d < s.devices.size(); ++d) {
    for (const ca::UnownedRegionSnapshot& r : s.devices[d].unowned_regions) {
      bytes[d] += r.bytes;
      ++regions[d];
    }
    CAPTURE(d);
    CHECK(bytes[d] == s.devices[d].bytes_used);
    CHECK(regions[d] == s.devices[d].live_regions);
  }
}

}  // namespace

TEST_CASE("memory snapshot: devices and objects of a runtime with known objects") {
  CleanEnvironment env;
  // First-touch: a and c fit the 64 KiB fast tier, b (30 KiB) does not
  // fit beside a and goes to the slow tier.
  ca::Runtime rt(test::two_tiers(64 * KiB, 256 * KiB));
  auto a = rt.array<std::byte>(40 * KiB);
  auto b = rt.array<std::byte>(30 * KiB);
  auto c = rt.array<std::byte>(10 * KiB);
  fill(a, 1);  // will_write
  fill(b, 2);
  (void)holds(b, 2);  // will_read last
  c.archive();
  rt.begin_iteration();
  rt.begin_iteration();

  const ca::MemorySnapshot s = rt.snapshot();
  CHECK(s.format_version == ca::memory_snapshot_format_version);
  CHECK(s.reason == ca::SnapshotReason::request);
  CHECK(s.requested_bytes == 0);
  CHECK(s.policy == "first-touch");
  CHECK(s.iteration == 2);

  REQUIRE(s.devices.size() == 2);
  CHECK(s.devices[0].name == "fast");
  CHECK(s.devices[0].kind == ca::DeviceKind::dram);
  CHECK(s.devices[0].capacity == 64 * KiB);
  CHECK(s.devices[0].bytes_used == 50 * KiB);
  CHECK(s.devices[0].bytes_free() == 14 * KiB);
  CHECK(s.devices[0].largest_free_block == 14 * KiB);
  CHECK(s.devices[0].live_regions == 2);
  CHECK(s.devices[0].unowned_regions.empty());
  CHECK(s.devices[1].name == "slow");
  CHECK(s.devices[1].kind == ca::DeviceKind::dax);
  CHECK(s.devices[1].bytes_used == 30 * KiB);
  CHECK(s.devices[1].live_regions == 1);
  // The same numbers as the runtime's own usage.
  const std::vector<ca::DeviceUsage> usage = rt.usage();
  for (std::size_t d = 0; d < usage.size(); ++d) {
    CHECK(s.devices[d].bytes_used == usage[d].bytes_used);
    CHECK(s.devices[d].largest_free_block == usage[d].largest_free_block);
    CHECK(s.devices[d].extent == usage[d].extent);
  }

  REQUIRE(s.objects.size() == 3);  // in creation order
  CHECK(s.objects[0].id == a.id());
  CHECK(s.objects[1].id == b.id());
  CHECK(s.objects[2].id == c.id());
  const ca::ObjectSnapshot& oa = s.objects[0];
  const ca::ObjectSnapshot& ob = s.objects[1];
  const ca::ObjectSnapshot& oc = s.objects[2];
  CHECK(oa.bytes == 40 * KiB);
  CHECK(ob.bytes == 30 * KiB);
  CHECK(oc.bytes == 10 * KiB);
  REQUIRE(oa.primary);
  REQUIRE(ob.primary);
  REQUIRE(oc.primary);
  CHECK(oa.primary->device == 0);
  CHECK(ob.primary->device == 1);
  CHECK(oc.primary->device == 0);
  CHECK(oa.primary->offset == rt.manager().offset(*rt.manager().getprimary(a.object())));
  CHECK(oc.primary->offset == rt.manager().offset(*rt.manager().getprimary(c.object())));
  CHECK(oa.primary->dirty);  // written
  CHECK_FALSE(oc.primary->dirty);
  CHECK(oa.secondaries.empty());
  CHECK(oa.last_hint == ca::Hint::will_write);
  CHECK(ob.last_hint == ca::Hint::will_read);
  CHECK(oc.last_hint == ca::Hint::archive);
  for (const ca::ObjectSnapshot& o : s.objects) {
    CAPTURE(o.id);
    CHECK_FALSE(o.pinned);
    CHECK_FALSE(o.being_written);
    CHECK_FALSE(o.retired);
    CHECK(o.created_iteration == 0u);
    CHECK(o.age_iterations == 2u);
    REQUIRE(o.created_ns);
    CHECK(*o.created_ns <= s.taken_ns);
    CHECK(o.age_ns == s.taken_ns - *o.created_ns);
  }
  CHECK_FALSE(s.trace_recorded);
  CHECK(s.trace_events.empty());
  check_regions_add_up(s);
}

TEST_CASE("memory snapshot: taking one changes no byte, no placement and no counter") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers(64 * KiB, 256 * KiB), std::make_unique<ca::policy::CachedArraysPolicy>());
  (void)rt.start_trace();
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (std::uint64_t i = 0; i < 6; ++i) {
    arrays.push_back(rt.array<std::byte>((8 + 4 * i) * KiB));
    fill(arrays.back(), i);
  }
  arrays[1].archive();
  arrays[4].archive();
  const ca::MemorySnapshot before = rt.snapshot();
  const ca::Stats stats_before = rt.stats();
  const std::size_t events_before = rt.trace()->events().size();
  for (int i = 0; i < 3; ++i) (void)rt.snapshot();
  const ca::MemorySnapshot after = rt.snapshot();
  CHECK(after.devices == before.devices);
  CHECK(placements(after) == placements(before));
  CHECK(rt.trace()->events().size() == events_before);  // a snapshot is no event
  const ca::Stats stats_after = rt.stats();
  for (std::size_t d = 0; d < 2; ++d) {
    CHECK(stats_after.devices[d].bytes_in_use == stats_before.devices[d].bytes_in_use);
    CHECK(stats_after.devices[d].allocations == stats_before.devices[d].allocations);
  }
  for (std::uint64_t i = 0; i < arrays.size(); ++i) CHECK(holds(arrays[i], i));
  rt.manager().check_invariants(true);
}

TEST_CASE("memory snapshot: a kernel's arguments are pinned while it runs, and only then") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers());
  auto src = rt.array<float>(256);
  auto dst = rt.array<float>(256);
  auto idle = rt.array<float>(256);
  std::optional<ca::MemorySnapshot> inside;
  rt.kernel(ca::reads(src), ca::writes(dst), [&](std::span<const float>, std::span<float>) { inside = rt.snapshot(); });
  REQUIRE(inside);
  const ca::ObjectSnapshot& s_in = object_with_id(*inside, src.id());
  const ca::ObjectSnapshot& d_in = object_with_id(*inside, dst.id());
  CHECK(s_in.pinned);
  CHECK_FALSE(s_in.being_written);
  CHECK(s_in.last_hint == ca::Hint::will_read);
  CHECK(d_in.pinned);
  CHECK(d_in.being_written);
  CHECK(d_in.last_hint == ca::Hint::will_write);
  CHECK_FALSE(object_with_id(*inside, idle.id()).pinned);
  CHECK(inside->kernels_in_iteration == 1);

  const ca::MemorySnapshot later = rt.snapshot();
  CHECK_FALSE(object_with_id(later, src.id()).pinned);
  CHECK_FALSE(object_with_id(later, dst.id()).pinned);
  CHECK_FALSE(object_with_id(later, dst.id()).being_written);
}

TEST_CASE("memory snapshot: secondary copies, regions of no object, and objects made outside the runtime") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers(64 * KiB, 256 * KiB));
  ca::DataManager& dm = rt.manager();
  auto a = rt.array<std::byte>(16 * KiB);
  fill(a, 7);
  // A clean copy of a on the slow device, linked as its secondary.
  ca::Region& primary = *dm.getprimary(a.object());
  dm.setdirty(primary, false);
  ca::Region* copy = dm.allocate(1, 16 * KiB);
  REQUIRE(copy != nullptr);
  dm.copyto(*copy, primary);
  dm.link(primary, *copy);
  ca::Region* scratch = dm.allocate(1, 4 * KiB);  // free-standing: no object's
  REQUIRE(scratch != nullptr);
  ca::Object& outside = test::make_object(dm, 0, 2 * KiB, 9);

  ca::MemorySnapshot s = rt.snapshot();
  const ca::ObjectSnapshot& oa = object_with_id(s, a.id());
  REQUIRE(oa.secondaries.size() == 1);
  CHECK(oa.secondaries[0].device == 1);
  CHECK(oa.secondaries[0].offset == dm.offset(*copy));
  CHECK(oa.secondaries[0].valid);
  CHECK_FALSE(oa.secondaries[0].in_flight);
  REQUIRE(s.devices[1].unowned_regions.size() == 1);
  CHECK(s.devices[1].unowned_regions[0].offset == dm.offset(*scratch));
  CHECK(s.devices[1].unowned_regions[0].bytes == 4 * KiB);
  const ca::ObjectSnapshot& oo = object_with_id(s, outside.id());
  CHECK(oo.bytes == 2 * KiB);
  CHECK_FALSE(oo.last_hint);
  CHECK_FALSE(oo.created_iteration);
  CHECK_FALSE(oo.age_ns);

  // Writing a makes the copy stale.
  fill(a, 8);
  s = rt.snapshot();
  REQUIRE(object_with_id(s, a.id()).secondaries.size() == 1);
  CHECK_FALSE(object_with_id(s, a.id()).secondaries[0].valid);
  CHECK(object_with_id(s, a.id()).primary->dirty);

  dm.free(*scratch);
  dm.destroy(outside);
}

TEST_CASE("memory snapshot: snapshots taken while other threads run kernels are each consistent") {
  CleanEnvironment env;
  // CA:LMP on a small fast tier: the kernels' hints move objects all along.
  ca::Runtime rt(test::two_tiers(96 * KiB, 1024 * KiB),
                 std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LMP));
  constexpr int threads = 2;
  std::vector<std::vector<ca::CachedArray<std::byte>>> arrays(threads);
  for (int t = 0; t < threads; ++t) {
    for (std::uint64_t i = 0; i < 6; ++i) {
      arrays[t].push_back(rt.array<std::byte>((4 + 4 * i) * KiB));
      fill(arrays[t].back(), 100 * t + i);
    }
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::uint64_t k = 0; !stop.load(); ++k) {
        auto& mine = arrays[t];
        rt.kernel(ca::reads(mine[k % 6]), ca::writes(mine[(k + 1) % 6]),
                  [](std::span<const std::byte>, std::span<std::byte>) {});
        mine[(k + 3) % 6].archive();
      }
    });
  }
  for (int i = 0; i < 200; ++i) check_regions_add_up(rt.snapshot());
  stop = true;
  for (std::thread& w : workers) w.join();
  const ca::MemorySnapshot last = rt.snapshot();
  check_regions_add_up(last);
  CHECK(last.objects.size() == threads * 6u);
}

TEST_CASE("memory snapshot: the last trace events, with kernel names and arguments") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers());
  auto x = rt.array<float>(64);
  CHECK_FALSE(rt.snapshot().trace_recorded);
  const ca::Trace& trace = rt.start_trace();
  auto y = rt.array<float>(64);
  rt.kernel(ca::reads(x), ca::writes(y), [](std::span<const float>, std::span<float>) {});
  x.archive();

  const ca::MemorySnapshot all = rt.snapshot();
  CHECK(all.trace_recorded);
  CHECK(all.trace_events_total == trace.events().size());
  REQUIRE(all.trace_events.size() == trace.events().size());
  for (std::size_t i = 0; i < trace.events().size(); ++i) {
    CAPTURE(i);
    CHECK(all.trace_events[i].event.kind == trace.events()[i].kind);
    CHECK(all.trace_events[i].event.ns == trace.events()[i].ns);
  }
  const auto is_kernel = [](const ca::SnapshotTraceEvent& e) { return e.event.kind == ca::TraceKind::kernel_begin; };
  const auto kernel = std::find_if(all.trace_events.begin(), all.trace_events.end(), is_kernel);
  REQUIRE(kernel != all.trace_events.end());
  CHECK(kernel->name == "kernel");
  REQUIRE(kernel->args.size() == 2);
  CHECK(kernel->args[0] == ca::SnapshotTraceArg{x.id(), 256, ca::Access::read, 0});
  CHECK(kernel->args[1] == ca::SnapshotTraceArg{y.id(), 256, ca::Access::write, 0});

  const ca::MemorySnapshot last2 = rt.snapshot(2);
  CHECK(last2.trace_events_total == trace.events().size());
  REQUIRE(last2.trace_events.size() == 2);
  CHECK(last2.trace_events[0] == all.trace_events[all.trace_events.size() - 2]);
  CHECK(last2.trace_events[1].event.kind == ca::TraceKind::hint);
  CHECK(last2.trace_events[1].event.detail == static_cast<std::uint8_t>(ca::Hint::archive));
  CHECK(rt.snapshot(0).trace_events.empty());
}

TEST_CASE("memory snapshot: the JSON has the documented fields and reads back equal") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers(64 * KiB, 256 * KiB));
  (void)rt.start_trace();
  auto a = rt.array<std::byte>(40 * KiB);
  auto b = rt.array<std::byte>(30 * KiB);
  fill(a, 1);
  b.archive();
  rt.begin_iteration();
  ca::MemorySnapshot s;
  rt.kernel(ca::reads(a), ca::writes(b), [&](std::span<const std::byte>, std::span<std::byte>) { s = rt.snapshot(); });

  const nlohmann::json j = nlohmann::json::parse(ca::memory_snapshot_json(s));
  for (const char* key : {"format", "format_version", "reason", "requested_bytes", "policy", "iteration",
                          "kernels_in_iteration", "taken_ns", "devices", "objects", "trace"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  CHECK(j["format"] == "cachedarrays memory snapshot");
  CHECK(j["format_version"] == ca::memory_snapshot_format_version);
  CHECK(j["reason"] == "request");
  CHECK(j["policy"] == "first-touch");
  CHECK(j["iteration"] == 1);
  REQUIRE(j["devices"].size() == 2);
  for (const char* key : {"device", "name", "kind", "capacity", "bytes_used", "bytes_free", "largest_free_block",
                          "live_regions", "extent", "unowned_regions"}) {
    CAPTURE(key);
    CHECK(j["devices"][1].contains(key));
  }
  CHECK(j["devices"][0]["capacity"] == 64 * KiB);
  CHECK(j["devices"][0]["bytes_used"] == 40 * KiB);
  CHECK(j["devices"][0]["bytes_free"] == 24 * KiB);
  CHECK(j["devices"][1]["kind"] == "dax");
  REQUIRE(j["objects"].size() == 2);
  const nlohmann::json& ja = j["objects"][0];
  const nlohmann::json& jb = j["objects"][1];
  for (const char* key : {"id", "bytes", "primary", "secondaries", "pinned", "being_written", "retired", "last_hint",
                          "created_iteration", "created_ns", "age_iterations", "age_ns"}) {
    CAPTURE(key);
    CHECK(ja.contains(key));
  }
  CHECK(ja["id"] == a.id());
  CHECK(ja["bytes"] == 40 * KiB);
  CHECK(ja["primary"]["device"] == 0);
  CHECK(ja["primary"]["offset"] == s.objects[0].primary->offset);
  CHECK(ja["primary"]["dirty"] == true);
  CHECK(ja["pinned"] == true);
  CHECK(ja["being_written"] == false);
  CHECK(ja["last_hint"] == "will_read");
  CHECK(ja["created_iteration"] == 0);
  CHECK(ja["age_iterations"] == 1);
  CHECK(jb["primary"]["device"] == 1);
  CHECK(jb["being_written"] == true);
  CHECK(jb["last_hint"] == "will_write");
  const nlohmann::json& trace = j["trace"];
  CHECK(trace["recorded"] == true);
  CHECK(trace["events_total"] == s.trace_events_total);
  REQUIRE(trace["events"].size() == s.trace_events.size());
  const nlohmann::json& last = trace["events"].back();  // the kernel's begin
  for (const char* key : {"ns", "kind", "detail", "device", "device2", "object", "bytes", "name", "args"}) {
    CAPTURE(key);
    CHECK(last.contains(key));
  }
  CHECK(last["kind"] == "kernel_begin");
  CHECK(last["name"] == "kernel");
  REQUIRE(last["args"].size() == 2);
  CHECK(last["args"][1]["object"] == b.id());
  CHECK(last["args"][1]["access"] == "write");
  CHECK(last["args"][1]["device"] == 1);
  const auto hint = std::find_if(trace["events"].begin(), trace["events"].end(),
                                 [](const nlohmann::json& e) { return e["kind"] == "hint"; });
  REQUIRE(hint != trace["events"].end());
  CHECK((*hint)["hint"] == "archive");

  // Every field reads back as it was, through a string and through a file.
  CHECK(ca::parse_memory_snapshot(ca::memory_snapshot_json(s)) == s);
  CHECK(ca::parse_memory_snapshot(ca::memory_snapshot_json(s, -1)) == s);
  test::ScratchPath file("snapshot.json");
  ca::write_memory_snapshot(s, file.path);
  CHECK(ca::read_memory_snapshot(file.path) == s);
  // An unset optional reads back unset, and a changed value does not pass.
  ca::MemorySnapshot changed = s;
  changed.objects[0].last_hint.reset();
  changed.objects[1].created_ns.reset();
  CHECK(ca::parse_memory_snapshot(ca::memory_snapshot_json(changed)) == changed);
  CHECK_FALSE(ca::parse_memory_snapshot(ca::memory_snapshot_json(changed)) == s);
}

TEST_CASE("memory snapshot: a document that is not one is refused, naming what is wrong") {
  ca::MemorySnapshot s;
  ca::DeviceSnapshot fast;
  fast.name = "fast";
  fast.capacity = 4096;
  s.devices.push_back(fast);
  nlohmann::json j = nlohmann::json::parse(ca::memory_snapshot_json(s));
  j["format_version"] = ca::memory_snapshot_format_version + 1;
  check_contains(test::invalid_argument_of([&] { (void)ca::parse_memory_snapshot(j.dump()); }), "format_version");
  j = nlohmann::json::parse(ca::memory_snapshot_json(s));
  j.erase("objects");
  check_contains(test::invalid_argument_of([&] { (void)ca::parse_memory_snapshot(j.dump()); }), "objects: is missing");
  j = nlohmann::json::parse(ca::memory_snapshot_json(s));
  j["devices"][0]["kind"] = "tape";
  check_contains(test::invalid_argument_of([&] { (void)ca::parse_memory_snapshot(j.dump()); }), "devices[0].kind");
  j = nlohmann::json::parse(ca::memory_snapshot_json(s));
  j["format"] = "something else";
  check_contains(test::invalid_argument_of([&] { (void)ca::parse_memory_snapshot(j.dump()); }), "format");
  check_contains(test::invalid_argument_of([&] { (void)ca::parse_memory_snapshot("{\"traceEvents\": ["); }),
                 "is not JSON");
  check_contains(test::invalid_argument_of([&] { ca::write_memory_snapshot(s, ""); }), "the path is empty");
  test::ScratchPath missing("no-such-directory");
  CHECK_THROWS_AS(ca::write_memory_snapshot(s, missing.path / "snapshot.json"), ca::heap_error);
  CHECK_THROWS_AS((void)ca::read_memory_snapshot(missing.path / "snapshot.json"), ca::heap_error);
}

TEST_CASE("memory snapshot: out_of_memory writes one into the snapshot directory, naming the file") {
  CleanEnvironment env;
  test::ScratchPath dir("oom-snapshots");
  ca::Runtime rt(test::two_tiers(64 * KiB, 128 * KiB));
  CHECK(rt.snapshot_directory().empty());
  rt.set_snapshot_directory(dir.path / "nested");  // created when first needed
  CHECK(rt.snapshot_directory() == dir.path / "nested");
  auto a = rt.array<std::byte>(60 * KiB);
  auto b = rt.array<std::byte>(100 * KiB);
  fill(a, 1);
  fill(b, 2);

  std::string path;
  std::string message;
  try {
    (void)rt.array<std::byte>(40 * KiB);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    path = e.snapshot_path();
    message = e.what();
  }
  REQUIRE_FALSE(path.empty());
  CHECK(std::filesystem::path(path).parent_path() == dir.path / "nested");
  check_contains(message, "A memory snapshot of this moment is in '" + path + "'");
  check_contains(message, "device 0 'fast': capacity 64.00 KiB");  // the message is still the whole one
  REQUIRE(std::filesystem::is_regular_file(path));

  const ca::MemorySnapshot s = ca::read_memory_snapshot(path);
  CHECK(s.reason == ca::SnapshotReason::out_of_memory);
  CHECK(s.requested_bytes == 40 * KiB);
  // The objects that filled the tiers, and not the one that found no room.
  REQUIRE(s.objects.size() == 2);
  CHECK(s.objects[0].id == a.id());
  CHECK(s.objects[0].bytes == 60 * KiB);
  CHECK(s.objects[0].primary->device == 0);
  CHECK(s.objects[1].id == b.id());
  CHECK(s.objects[1].bytes == 100 * KiB);
  CHECK(s.objects[1].primary->device == 1);
  CHECK(s.devices[0].bytes_used == 60 * KiB);
  CHECK(s.devices[1].bytes_used == 100 * KiB);
  CHECK(s.devices[1].largest_free_block == 28 * KiB);

  // A second failure gets a file of its own; nothing the program stored changed.
  try {
    (void)rt.array<std::byte>(50 * KiB);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    CHECK(e.snapshot_path() != path);
    CHECK(std::filesystem::is_regular_file(e.snapshot_path()));
  }
  CHECK(holds(a, 1));
  CHECK(holds(b, 2));
  rt.manager().check_invariants();
}

TEST_CASE("memory snapshot: without a snapshot directory out_of_memory writes nothing and says nothing of it") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers(64 * KiB, 128 * KiB));
  auto a = rt.array<std::byte>(60 * KiB);
  auto b = rt.array<std::byte>(100 * KiB);
  try {
    (void)rt.array<std::byte>(40 * KiB);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    CHECK(e.snapshot_path().empty());
    CHECK_FALSE(contains(e.what(), "snapshot"));
  }
}

TEST_CASE("memory snapshot: a directory that cannot be written still throws out_of_memory, with a note") {
  CleanEnvironment env;
  test::ScratchPath file("not-a-directory");
  std::ofstream(file.path) << "a file\n";
  ca::Runtime rt(test::two_tiers(64 * KiB, 128 * KiB));
  // A file where a directory must be is refused at once...
  check_contains(test::invalid_argument_of([&] { rt.set_snapshot_directory(file.path); }), "is not a directory");
  // ... a directory below a file is found unwritable only when it is needed
  // (even root cannot create it).
  rt.set_snapshot_directory(file.path / "snapshots");
  auto a = rt.array<std::byte>(60 * KiB);
  auto b = rt.array<std::byte>(100 * KiB);
  fill(a, 3);
  std::string message;
  try {
    (void)rt.array<std::byte>(40 * KiB);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    CHECK(e.snapshot_path().empty());
    CHECK(e.requested_bytes() == 40 * KiB);
    message = e.what();
  }
  check_contains(message, "cannot place an object of 40.00 KiB");
  check_contains(message, "No memory snapshot was written: cannot create the snapshot directory '" +
                              (file.path / "snapshots").string() + "'");
  CHECK(holds(a, 3));
  // Emptying the setting turns snapshots off.
  rt.set_snapshot_directory({});
  CHECK_FALSE(contains(message_of<ca::out_of_memory>([&] { (void)rt.array<std::byte>(40 * KiB); }), "snapshot"));
}

// The plot test (tests/plot_snapshot_test.py) runs this case with
// CACHEDARRAYS_SNAPSHOT_DIR set and draws what it wrote; alone, the case
// sets the variable itself to a scratch directory.
TEST_CASE("memory snapshot: CACHEDARRAYS_SNAPSHOT_DIR gives the snapshot directory") {
  test::ScopedEnv no_leak_report("CACHEDARRAYS_LEAK_REPORT", std::nullopt);
  test::ScratchPath scratch("env-snapshots");
  const char* preset = std::getenv("CACHEDARRAYS_SNAPSHOT_DIR");
  const std::filesystem::path dir = preset != nullptr && *preset != '\0' ? preset : scratch.path.string();
  test::ScopedEnv set_dir("CACHEDARRAYS_SNAPSHOT_DIR", dir.string());
  ca::Runtime rt(test::two_tiers(64 * KiB, 128 * KiB), std::make_unique<ca::policy::CachedArraysPolicy>());
  CHECK(rt.snapshot_directory() == std::filesystem::absolute(dir));
  (void)rt.start_trace();
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (std::uint64_t i = 0; i < 5; ++i) {
    arrays.push_back(rt.array<std::byte>(24 * KiB + i * KiB));
    fill(arrays.back(), i);
  }
  arrays[0].archive();
  arrays[2].archive();
  rt.kernel(ca::reads(arrays[3]), ca::writes(arrays[4]), [](std::span<const std::byte>, std::span<std::byte>) {});
  std::string path;
  try {
    (void)rt.array<std::byte>(64 * KiB);
    FAIL("expected out_of_memory");
  } catch (const ca::out_of_memory& e) {
    path = e.snapshot_path();
    check_contains(e.what(), path);
  }
  REQUIRE_FALSE(path.empty());
  CHECK(std::filesystem::path(path).parent_path() == std::filesystem::absolute(dir));
  const ca::MemorySnapshot s = ca::read_memory_snapshot(path);
  CHECK(s.objects.size() == arrays.size());
  CHECK(s.trace_recorded);
  CHECK_FALSE(s.trace_events.empty());
  CHECK(s.policy == "ca-lm");
}

TEST_CASE("memory snapshot: bad values of the environment variables are refused, naming the variable") {
  test::ScratchPath file("snapshot-dir-file");
  std::ofstream(file.path) << "a file\n";
  {
    test::ScopedEnv dir("CACHEDARRAYS_SNAPSHOT_DIR", file.path.string());
    const std::string m = test::invalid_argument_of([] { ca::Runtime rt(test::two_tiers()); });
    check_contains(m, "CACHEDARRAYS_SNAPSHOT_DIR");
    check_contains(m, "is not a directory");
  }
  {
    test::ScopedEnv leak("CACHEDARRAYS_LEAK_REPORT", "yes");
    const std::string m = test::invalid_argument_of([] { ca::Runtime rt(test::two_tiers()); });
    check_contains(m, "CACHEDARRAYS_LEAK_REPORT='yes'");
    check_contains(m, "use 1");
  }
  {
    CleanEnvironment clean;
    test::ScopedEnv empty("CACHEDARRAYS_SNAPSHOT_DIR", "");  // empty counts as unset
    ca::Runtime rt(test::two_tiers());
    CHECK(rt.snapshot_directory().empty());
  }
}

TEST_CASE("memory snapshot: the leak report names what a destroyed runtime still held, largest first") {
  CleanEnvironment env;
  std::ostringstream report;
  AbandonedHandle<std::byte> big_handle;
  AbandonedHandle<std::byte> small_handle;
  std::uint64_t big_id = 0;
  std::uint64_t small_id = 0;
  std::uint64_t retired_id = 0;
  std::uint64_t outside_id = 0;
  {
    ca::Runtime rt(test::two_tiers(64 * KiB, 256 * KiB));
    rt.set_leak_report(&report);
    auto small = rt.array<std::byte>(4 * KiB);
    auto big = rt.array<std::byte>(48 * KiB);
    auto done = rt.array<std::byte>(8 * KiB);
    fill(big, 1);
    small.archive();
    retired_id = done.id();
    done.retire();
    rt.begin_iteration();
    big_id = big.id();
    small_id = small.id();
    big_handle.hold(std::move(big));
    small_handle.hold(std::move(small));
    outside_id = test::make_object(rt.manager(), 1, 1 * KiB, 5).id();
    CHECK(report.str().empty());  // nothing until the runtime goes
  }
  const std::string r = report.str();
  INFO("report:\n" << r);
  CHECK(contains(r, "leak report: 3 objects (53.00 KiB) still alive"));
  CHECK(contains(r, "policy 'first-touch'"));
  CHECK(contains(
      r, "#" + std::to_string(big_id) + " 48.00 KiB on device 0 'fast', made in iteration 0 (1 iteration and "));
  CHECK(contains(r, "last hint will_write"));
  CHECK(contains(r, "#" + std::to_string(small_id) + " 4.00 KiB on device 0 'fast'"));
  CHECK(contains(r, "last hint archive"));
  CHECK(contains(r, "#" + std::to_string(outside_id) + " 1.00 KiB on device 1 'slow', made outside the runtime"));
  CHECK_FALSE(contains(r, "#" + std::to_string(retired_id) + " "));
  CHECK(r.find("#" + std::to_string(big_id)) < r.find("#" + std::to_string(small_id)));
  CHECK(r.find("#" + std::to_string(small_id)) < r.find("#" + std::to_string(outside_id)));
}

TEST_CASE("memory snapshot: the leak report is off by default, and quiet when nothing leaked") {
  CleanEnvironment env;
  std::ostringstream captured;
  std::streambuf* const cerr = std::cerr.rdbuf(captured.rdbuf());
  AbandonedHandle<int> handle;
  {
    ca::Runtime rt(test::two_tiers());
    handle.hold(rt.array<int>(16));
  }
  std::ostringstream report;
  {
    ca::Runtime rt(test::two_tiers());
    rt.set_leak_report(&report);
    auto a = rt.array<int>(16);
  }
  std::cerr.rdbuf(cerr);
  CHECK(captured.str().empty());
  CHECK(report.str().empty());
}

TEST_CASE("memory snapshot: CACHEDARRAYS_LEAK_REPORT=1 sends the leak report to stderr") {
  CleanEnvironment env;
  test::ScopedEnv on("CACHEDARRAYS_LEAK_REPORT", "1");
  std::ostringstream captured;
  std::streambuf* const cerr = std::cerr.rdbuf(captured.rdbuf());
  AbandonedHandle<int> handle;
  std::uint64_t id = 0;
  {
    ca::Runtime rt(test::two_tiers());
    auto leaked = rt.array<int>(256);
    id = leaked.id();
    handle.hold(std::move(leaked));
  }
  std::cerr.rdbuf(cerr);
  check_contains(captured.str(), "leak report: 1 object (1.00 KiB)");
  check_contains(captured.str(), "#" + std::to_string(id) + " 1.00 KiB on device 0 'fast'");
}

TEST_CASE("memory snapshot: an object the policy holds after its retire is marked retired and is no leak") {
  CleanEnvironment env;
  std::ostringstream report;
  {
    // CA:L defers retires to the next collection (paper V-a).
    ca::Runtime rt(test::two_tiers(), std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::L));
    rt.set_leak_report(&report);
    auto a = rt.array<int>(64);
    const std::uint64_t id = a.id();
    a.retire();
    const ca::MemorySnapshot s = rt.snapshot();
    REQUIRE(s.objects.size() == 1);  // still alive: held for the collection
    CHECK(s.objects[0].id == id);
    CHECK(s.objects[0].retired);
    CHECK(s.objects[0].last_hint == ca::Hint::retire);
    CHECK(ca::leaked_objects(s).empty());
  }
  CHECK(report.str().empty());
}

TEST_CASE("memory snapshot: the leak report shows the largest few and counts the rest") {
  ca::MemorySnapshot s;
  s.policy = "test";
  ca::DeviceSnapshot fast;
  fast.name = "fast";
  fast.capacity = 1 << 20;
  s.devices.push_back(fast);
  for (std::uint64_t id = 1; id <= 5; ++id) {
    ca::ObjectSnapshot o;
    o.id = id;
    o.bytes = id * KiB;
    o.primary = ca::RegionSnapshot{.device = 0, .offset = id * 8 * KiB};
    o.retired = id == 5;  // the largest, but retired: not a leak
    s.objects.push_back(o);
  }
  std::ostringstream out;
  CHECK(ca::write_leak_report(s, out, 2) == 4);
  const std::string r = out.str();
  INFO(r);
  CHECK(contains(r, "4 objects (10.00 KiB)"));
  CHECK(contains(r, "#4 4.00 KiB"));
  CHECK(contains(r, "#3 3.00 KiB"));
  CHECK_FALSE(contains(r, "#2 "));
  CHECK_FALSE(contains(r, "#5 "));
  CHECK(contains(r, "and 2 more (3.00 KiB)"));
  std::ostringstream none;
  s.objects.clear();
  CHECK(ca::write_leak_report(s, none) == 0);
  CHECK(none.str().empty());
}

TEST_CASE("memory snapshot: live objects' history survives the rebuilds after thousands of dead ones") {
  CleanEnvironment env;
  ca::Runtime rt(test::two_tiers());
  auto first = rt.array<int>(16);
  first.will_read();
  std::vector<ca::CachedArray<int>> kept;
  for (int i = 0; i < 5000; ++i) {
    auto temporary = rt.array<int>(16);
    temporary.will_write();
    if (i % 50 == 0) {
      rt.begin_iteration();
      temporary.archive();
      kept.push_back(std::move(temporary));
    }
  }
  const ca::MemorySnapshot s = rt.snapshot();
  REQUIRE(s.objects.size() == 1 + kept.size());
  CHECK(s.objects[0].id == first.id());
  CHECK(s.objects[0].last_hint == ca::Hint::will_read);
  CHECK(s.objects[0].created_iteration == 0u);
  for (std::size_t k = 0; k < kept.size(); ++k) {
    CAPTURE(k);
    const ca::ObjectSnapshot& o = object_with_id(s, kept[k].id());
    CHECK(o.last_hint == ca::Hint::archive);
    CHECK(o.created_iteration == k);  // made in the iteration before its own begin_iteration
    CHECK(o.age_iterations == kept.size() - k);
  }
}
