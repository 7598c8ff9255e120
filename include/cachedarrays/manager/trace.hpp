// An opt-in record of every event of a run (docs/design.md "Telemetry"): object
// creation and retirement, hints, kernels with their arguments and the
// device each argument was on, and the mechanism's allocations, frees,
// copies, evictions and defrag moves, each with a timestamp. Exported as
// Chrome trace JSON (opens in Perfetto / chrome://tracing, with one counter
// track per heap's occupancy) and as CSV; the application-level events are
// what the replay simulator replays against another policy or machine.
#pragma once

#include "cachedarrays/config.hpp"

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cachedarrays/types.hpp"

namespace cachedarrays {

/// What a TraceEvent records; the comment of each kind lists the event
/// fields it fills. The application-level kinds (create to iteration) are
/// what the replay simulator replays; the rest are the mechanism's.
enum class TraceKind : std::uint8_t {
  // application level (the replay input)
  create,        ///< An object was made: object, bytes.
  retire,        ///< The program retired an object: object.
  hint,          ///< A hint: object, detail = the Hint.
  kernel_begin,  ///< A kernel started: name, args (object, bytes, access, device).
  kernel_end,    ///< A kernel ended: name.
  collect,       ///< Runtime::collect.
  iteration,     ///< An iteration began: object = its number (Runtime::begin_iteration).
  // mechanism level
  allocate,     ///< A region was allocated: device, bytes, object (0: free-standing).
  free,         ///< A region was freed: device, bytes, object (it belongs or last belonged to; 0: none).
  copy,         ///< A copy: device (source), device2 (destination), bytes, object;
                ///< detail: who makes it (trace_copy_sync, _async, _background).
  evict,        ///< A region cleared by evictfrom: device, bytes, object.
  defrag_move,  ///< A region moved by defrag or make_hole: device, bytes, object.
  // policy level
  policy_switch,  ///< The running policy changed (the auto policy's choice): object = the iteration, name.
};

/// The kind's name ("create", "kernel_begin", ...), as traces and snapshots write it.
[[nodiscard]] const char* to_string(TraceKind kind) noexcept;

// A TraceKind::copy event's detail: who makes the copy, and when.
inline constexpr std::uint8_t trace_copy_sync = 0;   ///< Copy detail: the caller, at once (copyto).
inline constexpr std::uint8_t trace_copy_async = 1;  ///< Copy detail: the mover, in the order queued (copyto_async).
/// Copy detail: the mover, behind every copy queued before it starts
/// (copyto_async with CopyPriority::background: manager/mover.hpp).
inline constexpr std::uint8_t trace_copy_background = 2;

/// The kernel name under which a trace records a read() / write() scoped
/// access (a kernel with no end event); the replay recognises them by it.
[[nodiscard]] constexpr const char* scoped_access_kernel(Access access) noexcept {
  return access == Access::read ? "read()" : "write()";
}

/// One argument of a kernel_begin event.
struct TraceArg {
  std::uint64_t object = 0;  ///< The object's id.
  std::uint64_t bytes = 0;   ///< The object's size.
  bool write = false;        ///< Written (Access::write), else only read.
  DeviceId device = 0;       ///< The device of its primary when the kernel began.
};

/// One event of a Trace; which fields mean something depends on `kind`.
struct TraceEvent {
  std::uint64_t ns = 0;                ///< Since the trace started.
  TraceKind kind = TraceKind::create;  ///< What happened.
  std::uint8_t detail = 0;             ///< hint: the Hint; copy: trace_copy_sync, _async or _background.
  DeviceId device = 0;                 ///< The device (a copy's source).
  DeviceId device2 = 0;                ///< A copy's destination device.
  std::uint64_t object = 0;            ///< The object's id (0: none); iteration: the iteration's number.
  std::uint64_t bytes = 0;             ///< The bytes concerned (an object's size, a block's, a copy's).
  std::uint32_t name = 0;              ///< kernel_begin/end, policy_switch: index into names().
  std::uint32_t arg_begin = 0;         ///< kernel_begin: its args in args(), from this index...
  std::uint32_t arg_count = 0;         ///< ...this many.
  /// Field-by-field equality.
  bool operator==(const TraceEvent&) const = default;
};

/// The record of a run's events (see the file comment): filled by the
/// Runtime and the DataManager while recording, exported as Chrome trace
/// JSON or CSV, replayed by the replay simulator.
class Trace {
 public:
  /// An empty trace whose clock starts now.
  Trace();

  /// Appends `event`, stamping its `ns` with the time since the trace started.
  void record(TraceEvent event);
  /// A kernel_begin with its arguments; returns the name's index.
  std::uint32_t record_kernel(const std::string& name, const std::vector<TraceArg>& args);

  /// Every event recorded, in order.
  [[nodiscard]] const std::vector<TraceEvent>& events() const noexcept { return events_; }
  /// The kernels' arguments, indexed by TraceEvent::arg_begin and arg_count.
  [[nodiscard]] const std::vector<TraceArg>& args() const noexcept { return args_; }
  /// The kernel names, indexed by TraceEvent::name.
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }
  /// The index of `name` in names(), added if it is not there yet.
  [[nodiscard]] std::uint32_t intern(const std::string& name);
  /// Bytes in use on each device when recording started (the counter
  /// tracks start from them).
  void set_initial_occupancy(std::vector<std::uint64_t> bytes) { initial_occupancy_ = std::move(bytes); }
  /// Drops the events and arguments and restarts the clock (names stay).
  void clear();

  /// Chrome trace JSON: kernels as complete slices, hints and mechanism
  /// events as instants, and a counter track `occupancy <device>` per heap.
  void write_chrome_json(std::ostream& out, const std::vector<std::string>& device_names) const;
  /// One row per event: ns,kind,detail,device,device2,object,bytes,name,args
  /// (args as object:bytes:r|w:device separated by spaces), after one
  /// "initial" row per device giving its bytes in use when recording began.
  void write_csv(std::ostream& out) const;
  /// Writes either format, chosen by the file's extension (.json or .csv);
  /// throws invalid_argument for another extension or heap_error if the file
  /// cannot be written.
  void save(const std::string& path, const std::vector<std::string>& device_names) const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<TraceEvent> events_;
  std::vector<TraceArg> args_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> initial_occupancy_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/trace-inl.hpp"
#endif
