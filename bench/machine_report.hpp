// What a benchmark ran on, read at run time, so that every table and every
// JSON file says which machine its figures belong to: the CPU (model and
// vendor), the widest vector ISA it has, the cores online, and which stores
// the copy engine chose on it (figures that move data depend on that
// choice; copy_bandwidth writes the whole CopyPathReport). One header line
// on stdout, one "machine" object in the JSON (bench::write_json adds it).
#pragma once

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <cachedarrays/error.hpp>
#include <cachedarrays/manager/copy_path.hpp>
#include <cachedarrays/runtime/environment.hpp>

namespace cachedarrays::bench {

struct MachineReport {
  std::string cpu;        // /proc/cpuinfo's model name
  std::string vendor;     // "GenuineIntel", "AuthenticAMD", ...
  std::string isa;        // avx512f, avx2, sse2: the widest the CPU supports
  long cores = 0;         // online
  std::string copy_path;  // CopyPathReport::summary(), or why there is none
};

// The value of the first "key : value" line of /proc/cpuinfo, or "".
inline std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    if (name == key) return line.substr(std::min(line.size(), colon + 2));
  }
  return "";
}

inline MachineReport read_machine_report() {
  MachineReport m;
  m.cpu = cpuinfo_field("model name");
  m.vendor = cpuinfo_field("vendor_id");
  __builtin_cpu_init();
  if (m.vendor.empty()) {
    m.vendor = __builtin_cpu_is("intel") ? "GenuineIntel" : __builtin_cpu_is("amd") ? "AuthenticAMD" : "unknown";
  }
  if (m.cpu.empty()) m.cpu = "unknown";
  m.isa = __builtin_cpu_supports("avx512f") ? "avx512f" : __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
  m.cores = sysconf(_SC_NPROCESSORS_ONLN);
  try {
    // The copy engine's settings from CACHEDARRAYS_COPY and _NT_ISA, which a
    // benchmark of a bare DataManager makes no Runtime to read.
    apply_process_environment();
    const CopyPathReport& copy = copy_path_report();
    m.copy_path = copy.summary();
  } catch (const error& e) {
    // A bad CACHEDARRAYS_COPY: the benchmark itself will say so when it copies.
    m.copy_path = std::string("none (") + e.what() + ")";
  }
  return m;
}

// Read once per run: the copy path is the process's anyway, and the rest
// does not change while a benchmark runs.
inline const MachineReport& machine_report() {
  static const MachineReport report = read_machine_report();
  return report;
}

inline std::string machine_line(const MachineReport& m) {
  return fmt::format("machine: {} ({}), {}, {} cores online; copy path {}", m.cpu, m.vendor, m.isa, m.cores,
                     m.copy_path);
}

inline nlohmann::json machine_json(const MachineReport& m) {
  return {{"cpu", m.cpu}, {"vendor", m.vendor}, {"isa", m.isa}, {"cores", m.cores}, {"copy_path", m.copy_path}};
}

// The header line every benchmark prints first.
inline void print_machine_line() {
  fmt::print("{}\n", machine_line(machine_report()));
  std::fflush(stdout);
}

}  // namespace cachedarrays::bench
