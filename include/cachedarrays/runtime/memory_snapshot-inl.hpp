// Implementation of memory_snapshot.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp). The Runtime's
// snapshot members are in runtime-inl.hpp.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/memory_snapshot.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/json_reader.hpp"
#include "cachedarrays/manager/data_manager.hpp"

namespace cachedarrays {

namespace detail {

// "850 ns", "12.30 us", "1.23 ms", "4.56 s": ages in the leak report.
CACHEDARRAYS_INLINE std::string snapshot_duration(std::uint64_t ns) {
  char text[48];
  const double v = static_cast<double>(ns);
  if (ns < 1000) {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(text, sizeof text, "%.2f us", v / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(text, sizeof text, "%.2f ms", v / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", v / 1e9);
  }
  return text;
}

// Devices, objects and trace events: the part of a snapshot the runtime's
// lower layers hold. Ages count from s.iteration and s.taken_ns.
CACHEDARRAYS_INLINE void fill_snapshot(MemorySnapshot& s, const DataManager& manager, const Trace* trace,
                                       std::size_t trace_events) {
  for (DeviceId d = 0; d < manager.device_count(); ++d) {
    const DeviceUsage u = manager.usage(d);
    DeviceSnapshot& device = s.devices.emplace_back();
    device.device = d;
    device.name = u.name;
    device.kind = manager.spec(d).kind;
    device.capacity = u.capacity;
    device.bytes_used = u.bytes_used;
    device.largest_free_block = u.largest_free_block;
    device.live_regions = u.live_regions;
    device.extent = u.extent;
    manager.for_each_region(d, [&](Region& r) {
      if (manager.parent(r) == nullptr) device.unowned_regions.push_back({manager.offset(r), manager.size(r)});
    });
  }
  const auto region = [&](const Region& r) {
    return RegionSnapshot{.device = manager.device(r),
                          .offset = manager.offset(r),
                          .dirty = manager.isdirty(r),
                          .valid = manager.isvalid(r),
                          .in_flight = manager.in_flight(r)};
  };
  manager.for_each_object([&](const Object& o) {
    ObjectSnapshot& object = s.objects.emplace_back();
    object.id = o.id();
    object.bytes = o.bytes();
    if (const Region* primary = manager.getprimary(o)) {
      object.primary = region(*primary);
      for (DeviceId d = 0; d < manager.device_count(); ++d) {
        const Region* linked = manager.getlinked(*primary, d);
        if (linked != nullptr && linked != primary) object.secondaries.push_back(region(*linked));
      }
    }
    object.pinned = o.pinned();
    object.being_written = o.being_written();
    if (const Object::History& history = o.history(); history.made_by_runtime) {
      object.retired = history.retired;
      object.last_hint = o.last_hint();
      object.created_iteration = history.created_iteration;
      object.created_ns = history.created_ns;
      object.age_iterations = s.iteration - history.created_iteration;
      object.age_ns = s.taken_ns >= history.created_ns ? s.taken_ns - history.created_ns : 0;
    }
  });
  if (trace != nullptr) {
    s.trace_recorded = true;
    const std::vector<TraceEvent>& events = trace->events();
    s.trace_events_total = events.size();
    for (std::size_t i = events.size() - std::min(trace_events, events.size()); i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      SnapshotTraceEvent& event = s.trace_events.emplace_back();
      event.event = e;
      // The indexes into the trace's tables, resolved into name and args.
      event.event.name = event.event.arg_begin = event.event.arg_count = 0;
      if (e.kind == TraceKind::kernel_begin || e.kind == TraceKind::kernel_end) event.name = trace->names().at(e.name);
      for (std::uint32_t a = 0; a < e.arg_count; ++a) {
        const TraceArg& arg = trace->args().at(e.arg_begin + a);
        event.args.push_back({arg.object, arg.bytes, arg.write ? Access::write : Access::read, arg.device});
      }
    }
  }
}

// The value of the enum whose to_string is `name`, among the first `count`.
template <typename Enum>
std::optional<Enum> enum_named(const std::string& name, int count) {
  for (int i = 0; i < count; ++i) {
    if (name == to_string(static_cast<Enum>(i))) return static_cast<Enum>(i);
  }
  return std::nullopt;
}
inline constexpr int trace_kind_count = static_cast<int>(TraceKind::policy_switch) + 1;
inline constexpr int hint_count = static_cast<int>(Hint::retire) + 1;
inline constexpr int device_kind_count = static_cast<int>(DeviceKind::virtual_address) + 1;

template <typename T>
nlohmann::ordered_json json_or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

CACHEDARRAYS_INLINE nlohmann::ordered_json region_json(const RegionSnapshot& r, bool primary) {
  nlohmann::ordered_json j{{"device", r.device}, {"offset", r.offset}, {"dirty", r.dirty}};
  if (!primary) j["valid"] = r.valid;
  j["in_flight"] = r.in_flight;
  return j;
}

// Reads the snapshot fields one by one, naming the field in every error.
class SnapshotReader {
 public:
  using json = nlohmann::json;

  MemorySnapshot read(const json& j) const {
    MemorySnapshot s;
    if (r_.string(r_.field(j, "", "format"), "format") != "cachedarrays memory snapshot") {
      r_.fail("format", "must be \"cachedarrays memory snapshot\"; this is another kind of JSON");
    }
    const std::uint64_t version = r_.unsigned_int(r_.field(j, "", "format_version"), "format_version");
    if (version == 0 || version > static_cast<std::uint64_t>(memory_snapshot_format_version)) {
      r_.fail("format_version", std::to_string(version) + " is not a version this library reads (1 to " +
                                    std::to_string(memory_snapshot_format_version) + ")");
    }
    s.format_version = static_cast<int>(version);
    const std::string reason = r_.string(r_.field(j, "", "reason"), "reason");
    if (reason == "out_of_memory") {
      s.reason = SnapshotReason::out_of_memory;
    } else if (reason != "request") {
      r_.fail("reason", "must be \"request\" or \"out_of_memory\", not \"" + reason + "\"");
    }
    s.requested_bytes = unsigned_field(j, "", "requested_bytes");
    s.policy = r_.string(r_.field(j, "", "policy"), "policy");
    s.iteration = unsigned_field(j, "", "iteration");
    s.kernels_in_iteration = unsigned_field(j, "", "kernels_in_iteration");
    s.taken_ns = unsigned_field(j, "", "taken_ns");
    const json& devices = r_.array(r_.field(j, "", "devices"), "devices");
    for (std::size_t i = 0; i < devices.size(); ++i) s.devices.push_back(device(devices[i], at("devices", i)));
    const json& objects = r_.array(r_.field(j, "", "objects"), "objects");
    for (std::size_t i = 0; i < objects.size(); ++i) s.objects.push_back(object(objects[i], at("objects", i)));
    const json& trace = r_.object(r_.field(j, "", "trace"), "trace");
    s.trace_recorded = r_.boolean(r_.field(trace, "trace", "recorded"), "trace.recorded");
    s.trace_events_total = unsigned_field(trace, "trace", "events_total");
    const json& events = r_.array(r_.field(trace, "trace", "events"), "trace.events");
    for (std::size_t i = 0; i < events.size(); ++i) s.trace_events.push_back(event(events[i], at("trace.events", i)));
    return s;
  }

 private:
  static std::string at(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }
  static std::string dotted(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
  std::uint64_t unsigned_field(const json& j, const std::string& path, const char* key) const {
    return r_.unsigned_int(r_.field(j, path, key), dotted(path, key));
  }
  bool bool_field(const json& j, const std::string& path, const char* key) const {
    return r_.boolean(r_.field(j, path, key), dotted(path, key));
  }
  std::optional<std::uint64_t> optional_unsigned(const json& j, const std::string& path, const char* key) const {
    const json& v = r_.field(j, path, key);
    if (v.is_null()) return std::nullopt;
    return r_.unsigned_int(v, dotted(path, key));
  }
  DeviceId device_id(const json& j, const std::string& path) const {
    const std::uint64_t d = unsigned_field(j, path, "device");
    if (d >= max_devices) r_.fail(dotted(path, "device"), "device " + std::to_string(d) + " is not below 8");
    return static_cast<DeviceId>(d);
  }

  DeviceSnapshot device(const json& j, const std::string& path) const {
    DeviceSnapshot d;
    d.device = device_id(j, path);
    d.name = r_.string(r_.field(j, path, "name"), dotted(path, "name"));
    const std::string kind = r_.string(r_.field(j, path, "kind"), dotted(path, "kind"));
    const auto named = enum_named<DeviceKind>(kind, device_kind_count);
    if (!named) r_.fail(dotted(path, "kind"), "must be dram, numa, dax or virtual, not \"" + kind + "\"");
    d.kind = *named;
    d.capacity = unsigned_field(j, path, "capacity");
    d.bytes_used = unsigned_field(j, path, "bytes_used");
    d.largest_free_block = unsigned_field(j, path, "largest_free_block");
    d.live_regions = unsigned_field(j, path, "live_regions");
    d.extent = unsigned_field(j, path, "extent");
    const std::string unowned_path = dotted(path, "unowned_regions");
    const json& unowned = r_.array(r_.field(j, path, "unowned_regions"), unowned_path);
    for (std::size_t i = 0; i < unowned.size(); ++i) {
      const std::string p = at(unowned_path, i);
      d.unowned_regions.push_back({unsigned_field(unowned[i], p, "offset"), unsigned_field(unowned[i], p, "bytes")});
    }
    return d;
  }

  RegionSnapshot region(const json& j, const std::string& path, bool primary) const {
    RegionSnapshot r;
    r.device = device_id(j, path);
    r.offset = unsigned_field(j, path, "offset");
    r.dirty = bool_field(j, path, "dirty");
    r.valid = primary || bool_field(j, path, "valid");
    r.in_flight = bool_field(j, path, "in_flight");
    return r;
  }

  ObjectSnapshot object(const json& j, const std::string& path) const {
    ObjectSnapshot o;
    o.id = unsigned_field(j, path, "id");
    o.bytes = unsigned_field(j, path, "bytes");
    if (const json& primary = r_.field(j, path, "primary"); !primary.is_null()) {
      o.primary = region(primary, dotted(path, "primary"), true);
    }
    const std::string secondaries_path = dotted(path, "secondaries");
    const json& secondaries = r_.array(r_.field(j, path, "secondaries"), secondaries_path);
    for (std::size_t i = 0; i < secondaries.size(); ++i) {
      o.secondaries.push_back(region(secondaries[i], at(secondaries_path, i), false));
    }
    o.pinned = bool_field(j, path, "pinned");
    o.being_written = bool_field(j, path, "being_written");
    o.retired = bool_field(j, path, "retired");
    if (const json& hint = r_.field(j, path, "last_hint"); !hint.is_null()) {
      const std::string name = r_.string(hint, dotted(path, "last_hint"));
      o.last_hint = enum_named<Hint>(name, hint_count);
      if (!o.last_hint) r_.fail(dotted(path, "last_hint"), "\"" + name + "\" is not a hint");
    }
    o.created_iteration = optional_unsigned(j, path, "created_iteration");
    o.created_ns = optional_unsigned(j, path, "created_ns");
    o.age_iterations = optional_unsigned(j, path, "age_iterations");
    o.age_ns = optional_unsigned(j, path, "age_ns");
    return o;
  }

  SnapshotTraceEvent event(const json& j, const std::string& path) const {
    SnapshotTraceEvent e;
    e.event.ns = unsigned_field(j, path, "ns");
    const std::string kind = r_.string(r_.field(j, path, "kind"), dotted(path, "kind"));
    const auto named = enum_named<TraceKind>(kind, trace_kind_count);
    if (!named) r_.fail(dotted(path, "kind"), "\"" + kind + "\" is not a trace event kind");
    e.event.kind = *named;
    const std::uint64_t detail = unsigned_field(j, path, "detail");
    if (detail > 255) r_.fail(dotted(path, "detail"), std::to_string(detail) + " does not fit a byte");
    e.event.detail = static_cast<std::uint8_t>(detail);
    e.event.device = device_id(j, path);
    const std::uint64_t device2 = unsigned_field(j, path, "device2");
    if (device2 >= max_devices) {
      r_.fail(dotted(path, "device2"), "device " + std::to_string(device2) + " is not below 8");
    }
    e.event.device2 = static_cast<DeviceId>(device2);
    e.event.object = unsigned_field(j, path, "object");
    e.event.bytes = unsigned_field(j, path, "bytes");
    e.name = r_.string(r_.field(j, path, "name"), dotted(path, "name"));
    const std::string args_path = dotted(path, "args");
    const json& args = r_.array(r_.field(j, path, "args"), args_path);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string p = at(args_path, i);
      SnapshotTraceArg a;
      a.object = unsigned_field(args[i], p, "object");
      a.bytes = unsigned_field(args[i], p, "bytes");
      const std::string access = r_.string(r_.field(args[i], p, "access"), dotted(p, "access"));
      if (access != "read" && access != "write") r_.fail(dotted(p, "access"), "must be \"read\" or \"write\"");
      a.access = access == "write" ? Access::write : Access::read;
      a.device = device_id(args[i], p);
      e.args.push_back(a);
    }
    return e;
  }

  detail::JsonReader r_{"memory snapshot JSON"};
};

}  // namespace detail

CACHEDARRAYS_INLINE std::string memory_snapshot_json(const MemorySnapshot& s, int indent) {
  using json = nlohmann::ordered_json;
  json devices = json::array();
  for (const DeviceSnapshot& d : s.devices) {
    json unowned = json::array();
    for (const UnownedRegionSnapshot& r : d.unowned_regions) {
      unowned.push_back({{"offset", r.offset}, {"bytes", r.bytes}});
    }
    devices.push_back({{"device", d.device},
                       {"name", d.name},
                       {"kind", to_string(d.kind)},
                       {"capacity", d.capacity},
                       {"bytes_used", d.bytes_used},
                       {"bytes_free", d.bytes_free()},
                       {"largest_free_block", d.largest_free_block},
                       {"live_regions", d.live_regions},
                       {"extent", d.extent},
                       {"unowned_regions", std::move(unowned)}});
  }
  json objects = json::array();
  for (const ObjectSnapshot& o : s.objects) {
    json secondaries = json::array();
    for (const RegionSnapshot& r : o.secondaries) secondaries.push_back(detail::region_json(r, false));
    objects.push_back({{"id", o.id},
                       {"bytes", o.bytes},
                       {"primary", o.primary ? detail::region_json(*o.primary, true) : json(nullptr)},
                       {"secondaries", std::move(secondaries)},
                       {"pinned", o.pinned},
                       {"being_written", o.being_written},
                       {"retired", o.retired},
                       {"last_hint", o.last_hint ? json(to_string(*o.last_hint)) : json(nullptr)},
                       {"created_iteration", detail::json_or_null(o.created_iteration)},
                       {"created_ns", detail::json_or_null(o.created_ns)},
                       {"age_iterations", detail::json_or_null(o.age_iterations)},
                       {"age_ns", detail::json_or_null(o.age_ns)}});
  }
  json events = json::array();
  for (const SnapshotTraceEvent& e : s.trace_events) {
    json args = json::array();
    for (const SnapshotTraceArg& a : e.args) {
      args.push_back({{"object", a.object},
                      {"bytes", a.bytes},
                      {"access", a.access == Access::write ? "write" : "read"},
                      {"device", a.device}});
    }
    const TraceEvent& t = e.event;
    json event{{"ns", t.ns},           {"kind", to_string(t.kind)}, {"detail", t.detail}, {"device", t.device},
               {"device2", t.device2}, {"object", t.object},        {"bytes", t.bytes},   {"name", e.name}};
    if (t.kind == TraceKind::hint && t.detail < detail::hint_count) {
      event["hint"] = to_string(static_cast<Hint>(t.detail));
    }
    event["args"] = std::move(args);
    events.push_back(std::move(event));
  }
  const json document{
      {"format", "cachedarrays memory snapshot"},
      {"format_version", s.format_version},
      {"reason", to_string(s.reason)},
      {"requested_bytes", s.requested_bytes},
      {"policy", s.policy},
      {"iteration", s.iteration},
      {"kernels_in_iteration", s.kernels_in_iteration},
      {"taken_ns", s.taken_ns},
      {"devices", std::move(devices)},
      {"objects", std::move(objects)},
      {"trace",
       {{"recorded", s.trace_recorded}, {"events_total", s.trace_events_total}, {"events", std::move(events)}}}};
  return document.dump(indent);
}

CACHEDARRAYS_INLINE MemorySnapshot parse_memory_snapshot(std::string_view json) {
  const detail::JsonReader reader("memory snapshot JSON");
  return detail::SnapshotReader().read(reader.parse(json));
}

CACHEDARRAYS_INLINE void write_memory_snapshot(const MemorySnapshot& snapshot, const std::filesystem::path& path) {
  if (path.empty()) throw invalid_argument("cachedarrays: write_memory_snapshot: the path is empty; give a file name");
  detail::write_json_file(path.string(), memory_snapshot_json(snapshot), "the memory snapshot");
}

CACHEDARRAYS_INLINE MemorySnapshot read_memory_snapshot(const std::filesystem::path& path) {
  return detail::read_json_file(path.string(), "memory snapshot",
                                [](const std::string& text) { return parse_memory_snapshot(text); });
}

CACHEDARRAYS_INLINE std::vector<const ObjectSnapshot*> leaked_objects(const MemorySnapshot& snapshot) {
  std::vector<const ObjectSnapshot*> leaked;
  for (const ObjectSnapshot& o : snapshot.objects) {
    if (!o.retired) leaked.push_back(&o);
  }
  return leaked;
}

CACHEDARRAYS_INLINE std::size_t write_leak_report(const MemorySnapshot& snapshot, std::ostream& out,
                                                  std::size_t largest) {
  std::vector<const ObjectSnapshot*> leaked = leaked_objects(snapshot);
  if (leaked.empty()) return 0;
  std::uint64_t total = 0;
  for (const ObjectSnapshot* o : leaked) total += o->bytes;
  std::stable_sort(leaked.begin(), leaked.end(),
                   [](const ObjectSnapshot* a, const ObjectSnapshot* b) { return a->bytes > b->bytes; });
  out << "cachedarrays: leak report: " << leaked.size() << (leaked.size() == 1 ? " object" : " objects") << " ("
      << format_bytes(total) << ") still alive when their Runtime (policy '" << snapshot.policy
      << "') was destroyed; the largest:\n";
  const std::size_t shown = std::min(largest, leaked.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const ObjectSnapshot& o = *leaked[i];
    out << "  #" << o.id << " " << format_bytes(o.bytes);
    if (o.primary) {
      const DeviceId d = o.primary->device;
      out << " on device " << d;
      if (d < snapshot.devices.size()) out << " '" << snapshot.devices[d].name << "'";
    } else {
      out << " not placed";
    }
    if (o.age_iterations && o.age_ns) {
      out << ", made in iteration " << *o.created_iteration << " (" << *o.age_iterations
          << (*o.age_iterations == 1 ? " iteration and " : " iterations and ") << detail::snapshot_duration(*o.age_ns)
          << " ago)";
    } else {
      out << ", made outside the runtime (through manager())";
    }
    out << ", last hint " << (o.last_hint ? to_string(*o.last_hint) : "none");
    if (o.pinned) out << ", pinned";
    out << "\n";
  }
  if (shown < leaked.size()) {
    std::uint64_t rest = 0;
    for (std::size_t i = shown; i < leaked.size(); ++i) rest += leaked[i]->bytes;
    out << "  and " << leaked.size() - shown << " more (" << format_bytes(rest) << ")\n";
  }
  out << "Retire each array once the program no longer needs it, and destroy every CachedArray before its "
         "Runtime: a handle that outlives its Runtime dangles.\n";
  out.flush();
  return leaked.size();
}

}  // namespace cachedarrays
