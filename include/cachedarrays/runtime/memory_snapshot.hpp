// A memory snapshot: what every device holds at one
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

/// The format_version this library writes, and the newest it reads.
inline constexpr int memory_snapshot_format_version = 1;
/// How many of the trace's last events a snapshot keeps unless told.
inline constexpr std::size_t default_snapshot_trace_events = 256;

/// Why a snapshot was taken: on `request` (Runtime::snapshot) or for an
/// `out_of_memory` about to be thrown.
enum class SnapshotReason : std::uint8_t { request, out_of_memory };
/// The reason's name in the JSON: "request" or "out_of_memory".
[[nodiscard]] constexpr const char* to_string(SnapshotReason reason) noexcept {
  return reason == SnapshotReason::out_of_memory ? "out_of_memory" : "request";
}

/// A contiguous slice of a device's heap that holds no object's data.
struct UnownedRegionSnapshot {
  std::uint64_t offset = 0;  ///< From the start of the device's heap, in bytes.
  std::uint64_t bytes = 0;   ///< The region's size.
  /// Field-by-field equality (a snapshot read back equals the one written).
  bool operator==(const UnownedRegionSnapshot&) const = default;
};

/// One device as a snapshot shows it: its occupancy (as DeviceUsage) and
/// the live regions no object owns.
struct DeviceSnapshot {
  DeviceId device = 0;                   ///< The device's number.
  std::string name;                      ///< DeviceSpec::display_name().
  DeviceKind kind = DeviceKind::dram;    ///< Where its memory comes from.
  std::uint64_t capacity = 0;            ///< The heap's size in bytes.
  std::uint64_t bytes_used = 0;          ///< Bytes in live blocks, alignment included.
  std::uint64_t largest_free_block = 0;  ///< Bytes of the largest free block.
  std::uint64_t live_regions = 0;        ///< Regions allocated and not freed.
  std::uint64_t extent = 0;              ///< One past the highest byte taken.
  /// Live regions of no object (a policy's scratch, a copy not yet linked).
  std::vector<UnownedRegionSnapshot> unowned_regions;
  /// capacity - bytes_used: free bytes, possibly in many holes.
  [[nodiscard]] std::uint64_t bytes_free() const noexcept { return capacity - bytes_used; }
  /// Field-by-field equality.
  bool operator==(const DeviceSnapshot&) const = default;
};

/// One region of an object. The primary is always valid; a secondary is
/// valid while it holds the object's current contents (docs/design.md
/// invariant 4).
struct RegionSnapshot {
  DeviceId device = 0;       ///< The device it lies on.
  std::uint64_t offset = 0;  ///< From the start of that device's heap, in bytes.
  bool dirty = false;        ///< DataManager::isdirty.
  bool valid = true;         ///< Holds the object's current contents.
  bool in_flight = false;    ///< An asynchronous copy reads or writes it.
  /// Field-by-field equality.
  bool operator==(const RegionSnapshot&) const = default;
};

/// One live object: its regions, its pins, and what the runtime that made
/// it remembers (empty for objects made through the data manager directly).
struct ObjectSnapshot {
  std::uint64_t id = 0;                     ///< Object::id.
  std::uint64_t bytes = 0;                  ///< Object::bytes.
  std::optional<RegionSnapshot> primary;    ///< Empty for an object no policy has placed yet.
  std::vector<RegionSnapshot> secondaries;  ///< Its copies on other devices.
  bool pinned = false;                      ///< A read()/write() or kernel has it open: it cannot move.
  bool being_written = false;               ///< A write access is open.
  /// The program retired it and the policy holds it until a collection
  /// (not a leak).
  bool retired = false;
  std::optional<Hint> last_hint;                   ///< The last hint; empty: none yet, or not made by this runtime.
  std::optional<std::uint64_t> created_iteration;  ///< Runtime::iteration() when it was made.
  std::optional<std::uint64_t> created_ns;         ///< When it was made, ns since the Runtime was made.
  std::optional<std::uint64_t> age_iterations;     ///< Iterations since it was made.
  std::optional<std::uint64_t> age_ns;             ///< Nanoseconds since it was made.
  /// Field-by-field equality.
  bool operator==(const ObjectSnapshot&) const = default;
};

/// One argument of a kernel_begin event in a snapshot.
struct SnapshotTraceArg {
  std::uint64_t object = 0;      ///< The object's id.
  std::uint64_t bytes = 0;       ///< The object's size.
  Access access = Access::read;  ///< How the kernel used it.
  DeviceId device = 0;           ///< The device of its primary when the kernel began.
  /// Field-by-field equality.
  bool operator==(const SnapshotTraceArg&) const = default;
};

/// A trace event with its kernel name and arguments resolved, so that the
/// snapshot does not depend on the trace it came from.
struct SnapshotTraceEvent {
  /// The event as the trace recorded it, except its indexes into the
  /// trace's tables (TraceEvent::name, arg_begin and arg_count), which are 0:
  /// `name` and `args` hold what they pointed at.
  TraceEvent event;
  std::string name;                    ///< A kernel event's kernel name, else empty.
  std::vector<SnapshotTraceArg> args;  ///< A kernel_begin's arguments.
  /// Field-by-field equality.
  bool operator==(const SnapshotTraceEvent&) const = default;
};

/// What every device holds at one moment (Runtime::snapshot), as the file
/// comment's JSON document describes it field by field.
struct MemorySnapshot {
  int format_version = memory_snapshot_format_version;  ///< The document's format version.
  SnapshotReason reason = SnapshotReason::request;      ///< Why it was taken.
  std::uint64_t requested_bytes = 0;                    ///< out_of_memory: the size that fit on no device; else 0.
  std::string policy;                                   ///< The policy's name ("first-touch", "ca-lm", ...).
  std::uint64_t iteration = 0;                          ///< Runtime::iteration() when taken.
  std::uint64_t kernels_in_iteration = 0;               ///< Runtime::kernels_in_iteration() when taken.
  std::uint64_t taken_ns = 0;                           ///< When taken, in ns since the Runtime was made.
  std::vector<DeviceSnapshot> devices;                  ///< One per device, fastest first.
  std::vector<ObjectSnapshot> objects;                  ///< Every live object, in creation order.
  bool trace_recorded = false;                          ///< The runtime had a trace (Runtime::start_trace).
  std::uint64_t trace_events_total = 0;                 ///< Events in that trace.
  /// Its last events (at most the number asked for), oldest first.
  std::vector<SnapshotTraceEvent> trace_events;
  /// Field-by-field equality.
  bool operator==(const MemorySnapshot&) const = default;
};

/// The JSON document described above; `indent` < 0 writes one line.
[[nodiscard]] std::string memory_snapshot_json(const MemorySnapshot& snapshot, int indent = 1);
/// Reads a document memory_snapshot_json wrote. Throws invalid_argument
/// naming the field that is missing or of the wrong type, or a
/// format_version newer than this library reads.
[[nodiscard]] MemorySnapshot parse_memory_snapshot(std::string_view json);

/// Writes the JSON to `path` (its directory must exist). Throws
/// invalid_argument for an empty path, heap_error when the file cannot be
/// written.
void write_memory_snapshot(const MemorySnapshot& snapshot, const std::filesystem::path& path);
/// parse_memory_snapshot of a file; heap_error when it cannot be read.
[[nodiscard]] MemorySnapshot read_memory_snapshot(const std::filesystem::path& path);

/// The objects the program still holds: alive and not retired (objects the
/// policy holds for a later collection are not leaks).
[[nodiscard]] std::vector<const ObjectSnapshot*> leaked_objects(const MemorySnapshot& snapshot);
/// The leak report of a runtime destroyed with `snapshot`'s objects alive:
/// how many, their total bytes, and the `largest` largest (id, size,
/// device, age, last hint). Writes nothing and returns 0 when nothing
/// leaked; else returns the number of leaked objects.
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
