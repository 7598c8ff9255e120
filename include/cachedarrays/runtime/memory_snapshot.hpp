// A memory snapshot (issue 16, part 4): what every device holds at one
// moment — its usage and largest hole, each live object with its regions,
// pins and what the program last said of it, and the last events of the
// runtime's trace — so that a person can see why memory ran out, as
// PyTorch's memory snapshots show it. Runtime::snapshot() takes one (on
// request, and on out_of_memory when the runtime has a snapshot
// directory); write_memory_snapshot saves it as JSON, which
// tools/plot_trace.py --snapshot draws. Taking a snapshot only reads: no
// byte and no placement changes.
//
// The JSON document (format_version 1). Sizes and offsets are bytes;
// offsets count from the start of the device's heap. "ns" fields of
// objects and of the snapshot count from the moment the Runtime was made;
// the trace events' "ns" count from the start of the trace.
//
//   format                "cachedarrays memory snapshot"
//   format_version        1; a reader refuses a larger one
//   reason                "request" | "out_of_memory"
//   requested_bytes       out_of_memory: the size that fit on no device; else 0
//   policy                the policy's name ("first-touch", "ca-lm", ...)
//   iteration             Runtime::iteration() when taken
//   kernels_in_iteration  Runtime::kernels_in_iteration() when taken
//   taken_ns              when taken
//   devices[]             one per device, fastest first:
//     device, name, kind ("dram" | "numa" | "dax" | "virtual"),
//     capacity, bytes_used, bytes_free, largest_free_block, live_regions,
//     extent (one past the highest byte taken),
//     unowned_regions[]   {offset, bytes}: live regions of no object (a
//                         policy's scratch, a copy not yet linked)
//   objects[]             every live object, in creation order:
//     id, bytes,
//     primary             {device, offset, dirty, in_flight}, or null for an
//                         object no policy has placed yet
//     secondaries[]       {device, offset, dirty, valid, in_flight}: copies;
//                         valid = holds the current contents
//     pinned              a read()/write() or kernel has it open: it cannot move
//     being_written       a write access is open
//     retired             the program retired it and the policy holds it
//                         until a collection (not a leak)
//     last_hint           "will_use" | "will_read" | "will_write" | "archive" |
//                         "retire", or null: no hint yet, or not made by
//                         this runtime (made through manager() directly)
//     created_iteration, created_ns, age_iterations, age_ns
//                         when it was made and how long ago; null when
//                         not made by this runtime
//   trace                 {recorded, events_total, events[]}: recorded = the
//                         runtime has a trace (Runtime::start_trace); events
//                         are its last events (at most the number asked
//                         for, oldest first) of events_total:
//     ns, kind (TraceKind's name), detail, device, device2, object, bytes,
//     name (kernels' name, else ""), hint (hint events: the hint's name),
//     args[] (kernel_begin: {object, bytes, access "read" | "write", device})
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

class DataManager;

inline constexpr int memory_snapshot_format_version = 1;
// How many of the trace's last events a snapshot keeps unless told.
inline constexpr std::size_t default_snapshot_trace_events = 256;

enum class SnapshotReason : std::uint8_t { request, out_of_memory };
[[nodiscard]] constexpr const char* to_string(SnapshotReason reason) noexcept {
  return reason == SnapshotReason::out_of_memory ? "out_of_memory" : "request";
}

// A contiguous slice of a device's heap that holds no object's data.
struct UnownedRegionSnapshot {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  bool operator==(const UnownedRegionSnapshot&) const = default;
};

struct DeviceSnapshot {
  DeviceId device = 0;
  std::string name;
  DeviceKind kind = DeviceKind::dram;
  std::uint64_t capacity = 0;
  std::uint64_t bytes_used = 0;
  std::uint64_t largest_free_block = 0;
  std::uint64_t live_regions = 0;
  std::uint64_t extent = 0;
  std::vector<UnownedRegionSnapshot> unowned_regions;
  [[nodiscard]] std::uint64_t bytes_free() const noexcept { return capacity - bytes_used; }
  bool operator==(const DeviceSnapshot&) const = default;
};

// One region of an object. The primary is always valid; a secondary is
// valid while it holds the object's current contents (DESIGN.md invariant 4).
struct RegionSnapshot {
  DeviceId device = 0;
  std::uint64_t offset = 0;
  bool dirty = false;
  bool valid = true;
  bool in_flight = false;  // an asynchronous copy reads or writes it
  bool operator==(const RegionSnapshot&) const = default;
};

struct ObjectSnapshot {
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;
  std::optional<RegionSnapshot> primary;
  std::vector<RegionSnapshot> secondaries;
  bool pinned = false;
  bool being_written = false;
  bool retired = false;
  std::optional<Hint> last_hint;
  std::optional<std::uint64_t> created_iteration;
  std::optional<std::uint64_t> created_ns;
  std::optional<std::uint64_t> age_iterations;
  std::optional<std::uint64_t> age_ns;
  bool operator==(const ObjectSnapshot&) const = default;
};

struct SnapshotTraceArg {
  std::uint64_t object = 0;
  std::uint64_t bytes = 0;
  Access access = Access::read;
  DeviceId device = 0;
  bool operator==(const SnapshotTraceArg&) const = default;
};

// A trace event with its kernel name and arguments resolved, so that the
// snapshot does not depend on the trace it came from.
struct SnapshotTraceEvent {
  std::uint64_t ns = 0;
  TraceKind kind = TraceKind::create;
  std::uint8_t detail = 0;
  DeviceId device = 0;
  DeviceId device2 = 0;
  std::uint64_t object = 0;
  std::uint64_t bytes = 0;
  std::string name;
  std::vector<SnapshotTraceArg> args;
  bool operator==(const SnapshotTraceEvent&) const = default;
};

struct MemorySnapshot {
  int format_version = memory_snapshot_format_version;
  SnapshotReason reason = SnapshotReason::request;
  std::uint64_t requested_bytes = 0;
  std::string policy;
  std::uint64_t iteration = 0;
  std::uint64_t kernels_in_iteration = 0;
  std::uint64_t taken_ns = 0;
  std::vector<DeviceSnapshot> devices;
  std::vector<ObjectSnapshot> objects;
  bool trace_recorded = false;
  std::uint64_t trace_events_total = 0;
  std::vector<SnapshotTraceEvent> trace_events;
  bool operator==(const MemorySnapshot&) const = default;
};

// The JSON document described above; `indent` < 0 writes one line.
[[nodiscard]] std::string memory_snapshot_json(const MemorySnapshot& snapshot, int indent = 1);
// Reads a document memory_snapshot_json wrote. Throws invalid_argument
// naming the field that is missing or of the wrong type, or a
// format_version newer than this library reads.
[[nodiscard]] MemorySnapshot parse_memory_snapshot(std::string_view json);

// Writes the JSON to `path` (its directory must exist). Throws
// invalid_argument for an empty path, heap_error when the file cannot be
// written.
void write_memory_snapshot(const MemorySnapshot& snapshot, const std::filesystem::path& path);
// parse_memory_snapshot of a file; heap_error when it cannot be read.
[[nodiscard]] MemorySnapshot read_memory_snapshot(const std::filesystem::path& path);

// The objects the program still holds: alive and not retired (objects the
// policy holds for a later collection are not leaks).
[[nodiscard]] std::vector<const ObjectSnapshot*> leaked_objects(const MemorySnapshot& snapshot);
// The leak report of a runtime destroyed with `snapshot`'s objects alive:
// how many, their total bytes, and the `largest` largest (id, size,
// device, age, last hint). Writes nothing and returns 0 when nothing
// leaked; else returns the number of leaked objects.
std::size_t write_leak_report(const MemorySnapshot& snapshot, std::ostream& out, std::size_t largest = 10);

namespace detail {

// Fills in s's devices, objects (with what the runtime remembers of each,
// Object::history) and the last `trace_events` events of `trace` (null:
// none recorded) from what `manager` holds; s's other fields are the
// caller's. Only reads.
void fill_snapshot(MemorySnapshot& s, const DataManager& manager, const Trace* trace, std::size_t trace_events);

}  // namespace detail

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/memory_snapshot-inl.hpp"
#endif
