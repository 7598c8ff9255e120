// Implementation of kernel_profile.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cachedarrays/error.hpp"
#include "cachedarrays/json_reader.hpp"

namespace cachedarrays::plan {

namespace detail {

inline constexpr const char* profiles_format = "cachedarrays-kernel-profiles";
inline constexpr std::uint64_t profiles_version = 1;

}  // namespace detail

CACHEDARRAYS_INLINE std::string MachineKey::describe() const {
  return cpu + ", " + std::to_string(cores) + " compute threads, oneDNN " + onednn + ", slow tier " + slow_tier;
}

CACHEDARRAYS_INLINE const KernelProfile* KernelProfiles::find(std::string_view signature) const {
  const auto it = kernels_.find(signature);
  return it == kernels_.end() ? nullptr : &it->second;
}

CACHEDARRAYS_INLINE std::string KernelProfiles::to_json() const {
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [signature, p] : kernels_) {
    kernels[signature] = {{"fast_seconds", p.fast_seconds},
                          {"slow_seconds", p.slow_seconds},
                          {"flops", p.flops},
                          {"bytes_read", p.bytes_read},
                          {"bytes_written", p.bytes_written}};
  }
  const nlohmann::json j = {
      {"format", detail::profiles_format},
      {"version", detail::profiles_version},
      {"machine", {{"cpu", key_.cpu}, {"cores", key_.cores}, {"onednn", key_.onednn}, {"slow_tier", key_.slow_tier}}},
      {"kernels", std::move(kernels)}};
  return j.dump(1);
}

CACHEDARRAYS_INLINE KernelProfiles KernelProfiles::from_json(std::string_view text) {
  const cachedarrays::detail::JsonReader r("kernel profiles JSON");
  const nlohmann::json j = r.parse(text);
  if (r.string(r.field(j, "(document)", "format"), "format") != detail::profiles_format) {
    r.fail("format", std::string("must be \"") + detail::profiles_format + "\"");
  }
  if (const std::uint64_t v = r.unsigned_int(r.field(j, "(document)", "version"), "version");
      v != detail::profiles_version) {
    r.fail("version", std::to_string(v) + " is not the version this library reads (" +
                          std::to_string(detail::profiles_version) + ")");
  }
  const nlohmann::json& m = r.field(j, "(document)", "machine");
  const std::uint64_t cores = r.unsigned_int(r.field(m, "machine", "cores"), "machine.cores");
  if (cores == 0 || cores > 1'000'000) r.fail("machine.cores", std::to_string(cores) + " is not a core count");
  KernelProfiles profiles(MachineKey{r.string(r.field(m, "machine", "cpu"), "machine.cpu"),
                                     static_cast<unsigned>(cores),
                                     r.string(r.field(m, "machine", "onednn"), "machine.onednn"),
                                     r.string(r.field(m, "machine", "slow_tier"), "machine.slow_tier")});
  const nlohmann::json& kernels = r.object(r.field(j, "(document)", "kernels"), "kernels");
  for (const auto& [signature, k] : kernels.items()) {
    const std::string path = "kernels[\"" + signature + "\"]";
    KernelProfile p;
    p.fast_seconds = r.non_negative(r.field(k, path, "fast_seconds"), path + ".fast_seconds");
    p.slow_seconds = r.non_negative(r.field(k, path, "slow_seconds"), path + ".slow_seconds");
    p.flops = r.unsigned_int(r.field(k, path, "flops"), path + ".flops");
    p.bytes_read = r.unsigned_int(r.field(k, path, "bytes_read"), path + ".bytes_read");
    p.bytes_written = r.unsigned_int(r.field(k, path, "bytes_written"), path + ".bytes_written");
    profiles.set(signature, p);
  }
  return profiles;
}

CACHEDARRAYS_INLINE void KernelProfiles::save(const std::string& path) const {
  cachedarrays::detail::write_json_file(path, to_json(), "kernel profiles");
}

CACHEDARRAYS_INLINE KernelProfiles KernelProfiles::load(const std::string& path) {
  return cachedarrays::detail::read_json_file(path, "kernel profiles",
                                              [](const std::string& text) { return from_json(text); });
}

CACHEDARRAYS_INLINE std::vector<TracedKernel> traced_kernels(const Trace& trace) {
  std::vector<TracedKernel> kernels;
  std::vector<const TraceEvent*> open;  // begun, not yet ended
  for (const TraceEvent& e : trace.events()) {
    if (e.kind == TraceKind::kernel_begin) {
      open.push_back(&e);
    } else if (e.kind == TraceKind::kernel_end) {
      // The latest open kernel of this name: kernels nest, if at all, inside out.
      const auto it = std::find_if(open.rbegin(), open.rend(), [&](const TraceEvent* b) { return b->name == e.name; });
      if (it == open.rend()) continue;  // begun before recording started
      const TraceEvent& b = **it;
      TracedKernel k{b.name, static_cast<double>(e.ns - b.ns) * 1e-9, 0, 0};
      for (std::uint32_t i = 0; i < b.arg_count; ++i) {
        const TraceArg& a = trace.args().at(b.arg_begin + i);
        (a.write ? k.bytes_written : k.bytes_read) += a.bytes;
      }
      kernels.push_back(k);
      open.erase(std::next(it).base());
    }
  }
  return kernels;
}

CACHEDARRAYS_INLINE KernelProfiles load_or_measure(const std::string& path, const MachineKey& machine,
                                                   std::span<const std::string> needed,
                                                   const std::function<KernelProfiles()>& measure) {
  KernelProfiles profiles(machine);
  if (std::filesystem::exists(path)) {
    KernelProfiles cached = KernelProfiles::load(path);  // a malformed file throws, naming the field
    if (cached.key() == machine) {
      bool complete = true;
      for (const std::string& s : needed) complete = complete && cached.find(s) != nullptr;
      if (complete) return cached;
      profiles = std::move(cached);  // keep what it holds, add what is missing
    }
  }
  const KernelProfiles measured = measure();
  if (measured.key() != machine) {
    throw invalid_argument("cachedarrays: load_or_measure: the measurement was made on " + measured.key().describe() +
                           ", not on " + machine.describe() + " as the cache key says");
  }
  for (const auto& [signature, p] : measured.kernels()) profiles.set(signature, p);
  profiles.save(path);
  return profiles;
}

}  // namespace cachedarrays::plan
