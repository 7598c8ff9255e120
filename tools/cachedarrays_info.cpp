// cachedarrays-info: the memory tiers ca::discover() finds on this machine
// (or in an hwloc XML topology), fastest first, with the bandwidth and
// latency the firmware reports, as a table or as JSON. The tier numbers are
// the device numbers ca::discover()'s specs get. Last, the stores the copy
// engine chose on this machine (measured, or forced by CACHEDARRAYS_COPY),
// since they decide how fast data moves between those tiers.
//
//   cachedarrays-info [--topology FILE.xml] [--json]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <cachedarrays/error.hpp>
#include <cachedarrays/heap/discover.hpp>
#include <cachedarrays/manager/copy_path.hpp>
#include <cachedarrays/runtime/environment.hpp>
#include <cachedarrays/types.hpp>

#include "support/copy_path_json.hpp"

namespace ca = cachedarrays;
// Keys in the order written: the tier number first, as in the table.
using Json = nlohmann::ordered_json;

namespace {

struct Options {
  std::string topology;  // empty: this machine
  bool json = false;
};

// An hwloc XML describes another machine, and holds no DAX devices or
// mounts: this machine's would be listed as if they were its.
ca::DiscoverOptions discover_options(const Options& options) {
  ca::DiscoverOptions discover;
  if (!options.topology.empty()) {
    discover.topology_xml = options.topology;
    discover.mountinfo.clear();
    discover.dax_devices.clear();
  }
  return discover;
}

// The tier numbers lacking each figure the firmware may report.
struct MissingFigures {
  std::vector<std::size_t> read_gbps, write_gbps, latency_ns;
  [[nodiscard]] bool none() const { return read_gbps.empty() && write_gbps.empty() && latency_ns.empty(); }
};

MissingFigures missing_figures(const std::vector<ca::MemoryTier>& tiers) {
  MissingFigures missing;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    if (!tiers[i].read_gbps) missing.read_gbps.push_back(i);
    if (!tiers[i].write_gbps) missing.write_gbps.push_back(i);
    if (!tiers[i].latency_ns) missing.latency_ns.push_back(i);
  }
  return missing;
}

std::string figure(const std::optional<double>& value, int decimals) {
  return value ? fmt::format("{:.{}f}", *value, decimals) : "-";
}

// "Not reported ...: read bandwidth and write bandwidth of tier 3; latency
// of tiers 0, 1, 2, 3.": figures missing from the same tiers share a clause.
std::string unreported_line(const MissingFigures& missing) {
  if (missing.none()) return "The firmware reported read/write bandwidth and latency for every tier.\n";
  struct Clause {
    std::vector<std::string> figures;
    std::vector<std::size_t> tiers;
  };
  std::vector<Clause> clauses;
  const auto add = [&clauses](const char* figure, const std::vector<std::size_t>& which) {
    if (which.empty()) return;
    const auto same = std::find_if(clauses.begin(), clauses.end(), [&](const Clause& c) { return c.tiers == which; });
    if (same != clauses.end()) {
      same->figures.emplace_back(figure);
    } else {
      clauses.push_back({{figure}, which});
    }
  };
  add("read bandwidth", missing.read_gbps);
  add("write bandwidth", missing.write_gbps);
  add("latency", missing.latency_ns);
  std::vector<std::string> text;
  for (const Clause& clause : clauses) {
    const std::vector<std::string>& f = clause.figures;
    const std::string figures =
        f.size() == 1 ? f[0] : fmt::format("{} and {}", fmt::join(f.begin(), f.end() - 1, ", "), f.back());
    text.push_back(
        fmt::format("{} of tier{} {}", figures, clause.tiers.size() == 1 ? "" : "s", fmt::join(clause.tiers, ", ")));
  }
  return fmt::format("Not reported by the firmware (HMAT, through hwloc; never for DAX): {}.\n", fmt::join(text, "; "));
}

std::string table_report(const std::vector<ca::MemoryTier>& tiers, const Options& options) {
  constexpr std::size_t columns = 9;
  using Row = std::array<std::string, columns>;
  // Numbers right-aligned, words left-aligned; the source, last, unpadded.
  constexpr std::array<bool, columns> right = {true, false, false, true, true, true, true, true, false};
  std::vector<Row> rows = {
      {"#", "kind", "subtype", "node", "capacity", "read GB/s", "write GB/s", "latency ns", "source"}};
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const ca::MemoryTier& tier = tiers[i];
    rows.push_back({std::to_string(i), ca::to_string(tier.kind), tier.subtype.empty() ? "-" : tier.subtype,
                    tier.numa_node < 0 ? "-" : std::to_string(tier.numa_node), ca::format_bytes(tier.capacity),
                    figure(tier.read_gbps, 1), figure(tier.write_gbps, 1), figure(tier.latency_ns, 0), tier.source});
  }
  std::array<std::size_t, columns> width{};
  for (const Row& row : rows)
    for (std::size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], row[c].size());

  std::string out =
      fmt::format("Memory tiers of {}, fastest first\n", options.topology.empty() ? "this machine" : options.topology);
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c + 1 < columns; ++c)
      line += right[c] ? fmt::format("{:>{}}  ", row[c], width[c]) : fmt::format("{:<{}}  ", row[c], width[c]);
    out += line + row[columns - 1] + "\n";
  }
  if (tiers.empty()) out += "No memory tiers found.\n";

  out += unreported_line(missing_figures(tiers));
  if (!options.topology.empty()) {
    out += "An hwloc XML topology holds no DAX devices or mounts: only its NUMA nodes are listed.\n";
  }
  out += fmt::format("Copy path{}: {}\n", options.topology.empty() ? "" : " (of this machine)",
                     ca::copy_path_report().summary());
  return out;
}

Json json_report(const std::vector<ca::MemoryTier>& tiers, const Options& options) {
  const auto optional = [](const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); };
  Json list = Json::array();
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const ca::MemoryTier& tier = tiers[i];
    list.push_back({
        {"tier", i},
        {"kind", ca::to_string(tier.kind)},
        {"name", tier.name},
        {"subtype", tier.subtype.empty() ? Json(nullptr) : Json(tier.subtype)},
        {"numa_node", tier.numa_node < 0 ? Json(nullptr) : Json(tier.numa_node)},
        {"capacity_bytes", tier.capacity},
        {"read_gbps", optional(tier.read_gbps)},
        {"write_gbps", optional(tier.write_gbps)},
        {"latency_ns", optional(tier.latency_ns)},
        {"path", tier.path.empty() ? Json(nullptr) : Json(tier.path.string())},
        {"source", tier.source},
    });
  }
  const MissingFigures missing = missing_figures(tiers);
  return {
      {"topology", options.topology.empty() ? Json(nullptr) : Json(options.topology)},
      {"tiers", list},
      {"not_reported",
       {{"read_gbps", missing.read_gbps}, {"write_gbps", missing.write_gbps}, {"latency_ns", missing.latency_ns}}},
      {"copy_path", ca::tools::copy_path_json<Json>(ca::copy_path_report())},
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The memory tiers of this machine, fastest first, as cachedarrays::discover() finds them"};
  Options options;
  app.add_option("--topology", options.topology,
                 "An hwloc XML topology (lstopo --of xml FILE) instead of this machine");
  app.add_flag("--json", options.json, "Print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);

  try {
    // The copy engine's settings (CACHEDARRAYS_COPY, _NT_ISA), whose choice
    // the report prints; no Runtime is made here to read them.
    ca::apply_process_environment();
    const std::vector<ca::MemoryTier> tiers = ca::discover_tiers(discover_options(options));
    if (options.json) {
      fmt::print("{}\n", json_report(tiers, options).dump(2));
    } else {
      fmt::print("{}", table_report(tiers, options));
    }
  } catch (const ca::error& e) {
    fmt::print(stderr, "cachedarrays-info: {}\n", e.what());
    return 1;
  }
  return 0;
}
