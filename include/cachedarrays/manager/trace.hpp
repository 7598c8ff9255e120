// An opt-in record of every event of a run (DESIGN.md "Telemetry"): object
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

enum class TraceKind : std::uint8_t {
  // application level (the replay input)
  create,        // object, bytes
  retire,        // object
  hint,          // object, detail = Hint
  kernel_begin,  // name, args (object, bytes, access, device)
  kernel_end,    // name
  collect,
  iteration,     // object = the iteration's number (Runtime::begin_iteration)
  // mechanism level
  allocate,      // device, bytes, object (0: free-standing)
  free,          // device, bytes, object (it belongs or last belonged to; 0: none)
  copy,          // device (source), device2 (destination), bytes, object;
                 // detail: who makes it (trace_copy_sync, _async, _background)
  evict,         // device, bytes, object: a region cleared by evictfrom
  defrag_move,   // device, bytes, object
};

[[nodiscard]] const char* to_string(TraceKind kind) noexcept;

// A TraceKind::copy event's detail: who makes the copy, and when.
inline constexpr std::uint8_t trace_copy_sync = 0;   // the caller, at once (copyto)
inline constexpr std::uint8_t trace_copy_async = 1;  // the mover, in the order queued (copyto_async)
// The mover, behind every copy queued before it starts (copyto_async with
// CopyPriority::background: manager/mover.hpp).
inline constexpr std::uint8_t trace_copy_background = 2;

// The kernel name under which a trace records a read() / write() scoped
// access (a kernel with no end event); the replay recognises them by it.
[[nodiscard]] constexpr const char* scoped_access_kernel(Access access) noexcept {
  return access == Access::read ? "read()" : "write()";
}

struct TraceArg {
  std::uint64_t object = 0;
  std::uint64_t bytes = 0;
  bool write = false;
  DeviceId device = 0;
};

struct TraceEvent {
  std::uint64_t ns = 0;  // since the trace started
  TraceKind kind = TraceKind::create;
  std::uint8_t detail = 0;
  DeviceId device = 0;
  DeviceId device2 = 0;
  std::uint64_t object = 0;
  std::uint64_t bytes = 0;
  std::uint32_t name = 0;       // kernel_begin/end: index into names()
  std::uint32_t arg_begin = 0;  // kernel_begin: its args in args()
  std::uint32_t arg_count = 0;
};

class Trace {
 public:
  Trace();

  void record(TraceEvent event);
  // A kernel_begin with its arguments; returns the name's index.
  std::uint32_t record_kernel(const std::string& name, const std::vector<TraceArg>& args);

  [[nodiscard]] const std::vector<TraceEvent>& events() const noexcept { return events_; }
  [[nodiscard]] const std::vector<TraceArg>& args() const noexcept { return args_; }
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }
  [[nodiscard]] std::uint32_t intern(const std::string& name);
  // Bytes in use on each device when recording started (the counter
  // tracks start from them).
  void set_initial_occupancy(std::vector<std::uint64_t> bytes) { initial_occupancy_ = std::move(bytes); }
  void clear();

  // Chrome trace JSON: kernels as complete slices, hints and mechanism
  // events as instants, and a counter track "occupancy <device>" per heap.
  void write_chrome_json(std::ostream& out, const std::vector<std::string>& device_names) const;
  // One row per event: ns,kind,detail,device,device2,object,bytes,name,args
  // (args as object:bytes:r|w:device separated by spaces), after one
  // "initial" row per device giving its bytes in use when recording began.
  void write_csv(std::ostream& out) const;
  // Writes either format, chosen by the file's extension (.json or .csv);
  // throws invalid_argument for another extension or heap_error if the file
  // cannot be written.
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
