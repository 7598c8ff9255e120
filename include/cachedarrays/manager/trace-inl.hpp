// Implementation of trace.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/trace.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>

#include "cachedarrays/error.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE const char* to_string(TraceKind kind) noexcept {
  switch (kind) {
    case TraceKind::create: return "create";
    case TraceKind::retire: return "retire";
    case TraceKind::hint: return "hint";
    case TraceKind::kernel_begin: return "kernel_begin";
    case TraceKind::kernel_end: return "kernel_end";
    case TraceKind::collect: return "collect";
    case TraceKind::iteration: return "iteration";
    case TraceKind::allocate: return "allocate";
    case TraceKind::free: return "free";
    case TraceKind::copy: return "copy";
    case TraceKind::evict: return "evict";
    case TraceKind::defrag_move: return "defrag_move";
    case TraceKind::policy_switch: return "policy_switch";
  }
  return "?";
}

namespace detail {

CACHEDARRAYS_INLINE const char* hint_name(std::uint8_t detail) {
  return detail <= static_cast<std::uint8_t>(Hint::retire) ? to_string(static_cast<Hint>(detail)) : "?";
}

CACHEDARRAYS_INLINE std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace detail

CACHEDARRAYS_INLINE Trace::Trace() : start_(std::chrono::steady_clock::now()) {}

CACHEDARRAYS_INLINE void Trace::record(TraceEvent event) {
  event.ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
  events_.push_back(event);
}

CACHEDARRAYS_INLINE std::uint32_t Trace::intern(const std::string& name) {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it != names_.end()) return static_cast<std::uint32_t>(it - names_.begin());
  names_.push_back(name);
  return static_cast<std::uint32_t>(names_.size() - 1);
}

CACHEDARRAYS_INLINE std::uint32_t Trace::record_kernel(const std::string& name, const std::vector<TraceArg>& args) {
  TraceEvent e;
  e.kind = TraceKind::kernel_begin;
  e.name = intern(name);
  e.arg_begin = static_cast<std::uint32_t>(args_.size());
  e.arg_count = static_cast<std::uint32_t>(args.size());
  args_.insert(args_.end(), args.begin(), args.end());
  record(e);
  return e.name;
}

CACHEDARRAYS_INLINE void Trace::clear() {
  events_.clear();
  args_.clear();
  start_ = std::chrono::steady_clock::now();
}

CACHEDARRAYS_INLINE void Trace::write_chrome_json(std::ostream& out,
                                                  const std::vector<std::string>& device_names) const {
  const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  const auto device = [&](DeviceId d) {
    return d < device_names.size() ? device_names[d] : "device " + std::to_string(d);
  };
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const std::string& json) {
    out << (first ? "" : ",\n") << json;
    first = false;
  };
  // Thread names: one lane for kernels, one for hints, one per device.
  emit(R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"kernels"}})");
  emit(R"({"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"hints"}})");
  for (DeviceId d = 0; d < device_names.size(); ++d) {
    emit(fmt::format(R"({{"name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":"{}"}}}})", 10 + d,
                     detail::json_escape(device(d))));
  }
  std::map<DeviceId, std::int64_t> occupancy;
  for (DeviceId d = 0; d < device_names.size(); ++d) {
    occupancy[d] = d < initial_occupancy_.size() ? static_cast<std::int64_t>(initial_occupancy_[d]) : 0;
    emit(fmt::format(R"({{"name":"occupancy {}","ph":"C","pid":1,"ts":0,"args":{{"bytes":{}}}}})",
                     detail::json_escape(device(d)), occupancy[d]));
  }
  std::vector<const TraceEvent*> open_kernels;
  for (const TraceEvent& e : events_) {
    switch (e.kind) {
      case TraceKind::kernel_begin: open_kernels.push_back(&e); break;
      case TraceKind::kernel_end: {
        auto it = std::find_if(open_kernels.rbegin(), open_kernels.rend(),
                               [&](const TraceEvent* b) { return b->name == e.name; });
        if (it == open_kernels.rend()) break;
        const TraceEvent& b = **it;
        std::string args;
        for (std::uint32_t i = 0; i < b.arg_count; ++i) {
          const TraceArg& a = args_[b.arg_begin + i];
          args += fmt::format("{}\"#{} {}\":\"{} B on {}\"", i == 0 ? "" : ",", a.object, a.write ? "w" : "r", a.bytes,
                              detail::json_escape(device(a.device)));
        }
        emit(fmt::format(R"({{"name":"{}","ph":"X","pid":1,"tid":1,"ts":{:.3f},"dur":{:.3f},"args":{{{}}}}})",
                         detail::json_escape(names_[b.name]), us(b.ns), us(e.ns - b.ns), args));
        open_kernels.erase(std::next(it).base());
        break;
      }
      case TraceKind::hint:
        emit(fmt::format(R"({{"name":"{} #{}","ph":"i","s":"t","pid":1,"tid":2,"ts":{:.3f}}})",
                         detail::hint_name(e.detail), e.object, us(e.ns)));
        break;
      case TraceKind::allocate:
      case TraceKind::free: {
        std::int64_t& bytes = occupancy[e.device];
        bytes +=
            e.kind == TraceKind::allocate ? static_cast<std::int64_t>(e.bytes) : -static_cast<std::int64_t>(e.bytes);
        emit(fmt::format(R"({{"name":"occupancy {}","ph":"C","pid":1,"ts":{:.3f},"args":{{"bytes":{}}}}})",
                         detail::json_escape(device(e.device)), us(e.ns), bytes));
        break;
      }
      case TraceKind::copy:
        emit(fmt::format(R"({{"name":"copy #{} {} B {} -> {}","ph":"i","s":"t","pid":1,"tid":{},"ts":{:.3f}}})",
                         e.object, e.bytes, detail::json_escape(device(e.device)),
                         detail::json_escape(device(e.device2)), 10 + e.device2, us(e.ns)));
        break;
      case TraceKind::evict:
      case TraceKind::defrag_move:
        emit(fmt::format(R"({{"name":"{} #{} {} B","ph":"i","s":"t","pid":1,"tid":{},"ts":{:.3f}}})", to_string(e.kind),
                         e.object, e.bytes, 10 + e.device, us(e.ns)));
        break;
      case TraceKind::policy_switch:
        emit(fmt::format(R"({{"name":"policy {} at iteration {}","ph":"i","s":"g","pid":1,"tid":2,"ts":{:.3f}}})",
                         detail::json_escape(names_[e.name]), e.object, us(e.ns)));
        break;
      case TraceKind::create:
      case TraceKind::retire:
      case TraceKind::collect:
      case TraceKind::iteration:
        emit(fmt::format(R"({{"name":"{} #{}","ph":"i","s":"t","pid":1,"tid":2,"ts":{:.3f}}})", to_string(e.kind),
                         e.object, us(e.ns)));
        break;
    }
  }
  out << "\n]}\n";
}

CACHEDARRAYS_INLINE void Trace::write_csv(std::ostream& out) const {
  out << "ns,kind,detail,device,device2,object,bytes,name,args\n";
  // Occupancy when recording started, so that readers can rebuild it.
  for (std::size_t d = 0; d < initial_occupancy_.size(); ++d) {
    fmt::print(out, "0,initial,0,{},0,0,{},,\n", d, initial_occupancy_[d]);
  }
  for (const TraceEvent& e : events_) {
    std::string args;
    for (std::uint32_t i = 0; i < e.arg_count; ++i) {
      const TraceArg& a = args_[e.arg_begin + i];
      args += fmt::format("{}{}:{}:{}:{}", i == 0 ? "" : " ", a.object, a.bytes, a.write ? 'w' : 'r', a.device);
    }
    const bool named =
        e.kind == TraceKind::kernel_begin || e.kind == TraceKind::kernel_end || e.kind == TraceKind::policy_switch;
    const std::string detail = e.kind == TraceKind::hint ? detail::hint_name(e.detail) : std::to_string(e.detail);
    fmt::print(out, "{},{},{},{},{},{},{},{},{}\n", e.ns, to_string(e.kind), detail, e.device, e.device2, e.object,
               e.bytes, named ? names_[e.name] : "", args);
  }
}

CACHEDARRAYS_INLINE void Trace::save(const std::string& path, const std::vector<std::string>& device_names) const {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
  if (!json && !csv) {
    throw invalid_argument("cachedarrays: trace file '" + path + "' must end in .json (Chrome trace) or .csv");
  }
  std::ofstream out(path);
  if (!out) throw heap_error("cachedarrays: cannot write the trace to '" + path + "'; check the directory exists");
  if (json)
    write_chrome_json(out, device_names);
  else
    write_csv(out);
  if (!out) throw heap_error("cachedarrays: writing the trace to '" + path + "' failed (disk full?)");
}

}  // namespace cachedarrays
