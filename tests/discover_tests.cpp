// Tier discovery (heap/discover.hpp): the synthetic hwloc topologies of
// tests/data (made by tests/data/make_topologies.sh, which says what each
// machine is) give the expected tiers in the documented order, fs-DAX and
// device-DAX come from fake mountinfo and sysfs files, discover() turns the
// tiers into matching DeviceSpecs, and bad topology files are named in the
// error. This machine needs no special hardware: one NUMA node, no DAX.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/heap/discover.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace fs = std::filesystem;
using test::check_contains, test::ScratchPath;

namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

fs::path data_file(const char* name) { return fs::path(CACHEDARRAYS_TEST_DATA_DIR) / name; }

// Discovery of a topology file alone: this machine's DAX would not belong to it.
ca::DiscoverOptions topology_only(const fs::path& xml) {
  ca::DiscoverOptions options;
  options.topology_xml = xml;
  options.mountinfo.clear();
  options.dax_devices.clear();
  return options;
}

// A tier as the topology file describes it; figures as hwloc stores them
// (bandwidths in MiB/s, latency in ns), absent when the file has none.
struct Expected {
  ca::DeviceKind kind;
  int node;
  std::uint64_t capacity;
  std::string subtype;
  std::optional<double> read_mib_per_s, write_mib_per_s, latency_ns;
};

// GB/s = 1e9 bytes per second.
std::optional<double> gbps(std::optional<double> mib_per_second) {
  if (!mib_per_second) return std::nullopt;
  return *mib_per_second * 1048576.0 / 1e9;
}

void check_figure(const char* what, std::optional<double> actual, std::optional<double> expected) {
  INFO(what);
  REQUIRE(actual.has_value() == expected.has_value());
  if (expected) CHECK(*actual == doctest::Approx(*expected));
}

void check_tiers(const std::vector<ca::MemoryTier>& tiers, const std::vector<Expected>& expected) {
  REQUIRE(tiers.size() == expected.size());
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const ca::MemoryTier& tier = tiers[i];
    INFO("tier " << i << ": " << tier.source);
    CHECK(tier.kind == expected[i].kind);
    CHECK(tier.numa_node == expected[i].node);
    CHECK(tier.capacity == expected[i].capacity);
    CHECK(tier.subtype == expected[i].subtype);
    CHECK(tier.name == ca::to_string(expected[i].kind) + std::to_string(expected[i].node));
    check_figure("read GB/s", tier.read_gbps, gbps(expected[i].read_mib_per_s));
    check_figure("write GB/s", tier.write_gbps, gbps(expected[i].write_mib_per_s));
    check_figure("latency ns", tier.latency_ns, expected[i].latency_ns);
  }
}

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A scratch directory holding a fake mountinfo, sysfs dax directory and
// /dev, wired into DiscoverOptions beside a topology file.
struct FakeSystem {
  ScratchPath root;
  ca::DiscoverOptions options;

  FakeSystem(const std::string& tag, const char* topology) : root("discover-" + tag) {
    options.topology_xml = data_file(topology);
    options.mountinfo = root.path / "mountinfo";
    options.dax_devices = root.path / "sys-bus-dax-devices";
    options.dev = root.path / "dev";
    fs::create_directories(options.dax_devices);
    fs::create_directories(options.dev);
    write_file(options.mountinfo, "");
  }
  // A directory to mount at.
  fs::path directory(const std::string& name) const {
    fs::create_directories(root.path / name);
    return root.path / name;
  }
  void mount(const std::string& line) const { std::ofstream(options.mountinfo, std::ios::app) << line << "\n"; }
  // A device-DAX in sysfs of `size` bytes, with its /dev node or, bound to
  // kmem, without.
  void dax_device(const std::string& name, std::uint64_t size, bool has_dev_node) const {
    write_file(options.dax_devices / name / "size", std::to_string(size) + "\n");
    if (has_dev_node) write_file(options.dev / name, "");
  }
};

std::vector<ca::MemoryTier> dax_tiers_of(const std::vector<ca::MemoryTier>& tiers) {
  std::vector<ca::MemoryTier> dax;
  for (const ca::MemoryTier& tier : tiers)
    if (tier.kind == ca::DeviceKind::dax) dax.push_back(tier);
  return dax;
}

}  // namespace

TEST_CASE("discover: CXL expanders come after DRAM, ordered by their read bandwidth") {
  const std::vector<ca::MemoryTier> tiers = ca::discover_tiers(topology_only(data_file("topology_cxl.xml")));
  // Neither the node order nor the latency order.
  check_tiers(tiers, {{ca::DeviceKind::dram, 0, 32 * GiB, "", 92160, 61440, 110},
                      {ca::DeviceKind::numa, 1, 128 * GiB, "", 46080, 35840, 310},
                      {ca::DeviceKind::numa, 3, 256 * GiB, "", 30720, 25600, 240},
                      {ca::DeviceKind::numa, 2, 64 * GiB, "CXL-DRAM", 25600, 20480, 260}});
  CHECK(tiers[0].source == "NUMA node 0 (4 cores)");
  CHECK(tiers[1].source == "CPU-less NUMA node 1");
  CHECK(tiers[0].path.empty());
}

TEST_CASE("discover: HBM reads fastest and comes first, before the DDR node with the CPUs") {
  check_tiers(ca::discover_tiers(topology_only(data_file("topology_hbm.xml"))),
              {{ca::DeviceKind::numa, 1, 16 * GiB, "HBM", 409600, 307200, 140},
               {ca::DeviceKind::dram, 0, 64 * GiB, "", 102400, 81920, 120}});
}

TEST_CASE("discover: without memory attributes, HBM, then nodes with CPUs, then CPU-less nodes") {
  const std::vector<ca::MemoryTier> tiers = ca::discover_tiers(topology_only(data_file("topology_no_memattrs.xml")));
  check_tiers(tiers, {{ca::DeviceKind::numa, 1, 8 * GiB, "HBM", {}, {}, {}},
                      {ca::DeviceKind::numa, 3, 8 * GiB, "HBM", {}, {}, {}},
                      {ca::DeviceKind::dram, 0, 16 * GiB, "", {}, {}, {}},
                      {ca::DeviceKind::dram, 2, 16 * GiB, "", {}, {}, {}},
                      {ca::DeviceKind::numa, 4, 256 * GiB, "", {}, {}, {}}});
  CHECK(tiers[2].source == "NUMA node 0 (2 cores)");
  // Node 4 spans both sockets: persistent memory onlined as system RAM.
  check_contains(tiers[4].source, "CPU-less NUMA node 4");
  check_contains(tiers[4].source, "dax0.0");
}

TEST_CASE("discover: a DAX tier has no bandwidth, so CPU-less nodes go by latency and DAX comes last") {
  FakeSystem system("latency-order", "topology_cxl.xml");
  const fs::path pmem = system.directory("pmem0");
  system.mount("40 1 259:0 / " + pmem.string() + " rw,relatime shared:7 - ext4 /dev/pmem0 rw,dax=always");

  const std::vector<ca::MemoryTier> tiers = ca::discover_tiers(system.options);
  REQUIRE(tiers.size() == 5);
  // Neither the node order nor the bandwidth order.
  check_tiers({tiers.begin(), tiers.end() - 1}, {{ca::DeviceKind::dram, 0, 32 * GiB, "", 92160, 61440, 110},
                                                 {ca::DeviceKind::numa, 3, 256 * GiB, "", 30720, 25600, 240},
                                                 {ca::DeviceKind::numa, 2, 64 * GiB, "CXL-DRAM", 25600, 20480, 260},
                                                 {ca::DeviceKind::numa, 1, 128 * GiB, "", 46080, 35840, 310}});
  CHECK(tiers[4].kind == ca::DeviceKind::dax);
  CHECK(tiers[4].path == pmem);
}

TEST_CASE("discover: fs-DAX mounts are those mounted dax or dax=always, each filesystem once") {
  FakeSystem system("fs-dax", "topology_hbm.xml");
  const fs::path first = system.directory("pmem0");
  const fs::path spaced = system.directory("pmem 1");  // mountinfo writes the space as \040
  const fs::path absent = system.root.path / "not-mounted-here";
  system.mount("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro");
  system.mount("40 22 259:0 / " + first.string() + " rw,relatime shared:7 - ext4 /dev/pmem0 rw,dax=always");
  system.mount("41 22 259:1 / " + system.root.path.string() + "/pmem\\0401 rw,relatime,dax - xfs /dev/pmem1 rw");
  system.mount("42 22 259:2 / " + system.directory("inode").string() + " rw - ext4 /dev/pmem2 rw,dax=inode");
  system.mount("43 22 259:3 / " + system.directory("never").string() + " rw - ext4 /dev/pmem3 rw,dax=never");
  system.mount("44 22 259:0 /sub " + system.directory("bind").string() +
               " rw shared:7 - ext4 /dev/pmem0 rw,dax=always");
  system.mount("45 22 259:4 / " + absent.string() + " rw master:3 - ext4 /dev/pmem4 rw,dax");

  const std::vector<ca::MemoryTier> dax = dax_tiers_of(ca::discover_tiers(system.options));
  REQUIRE(dax.size() == 3);
  CHECK(dax[0].path == first);
  CHECK(dax[0].name == first.string());
  CHECK(dax[0].capacity == fs::space(first).capacity);
  CHECK(dax[0].capacity > 0);
  CHECK(dax[0].numa_node == -1);
  CHECK_FALSE(dax[0].read_gbps.has_value());
  CHECK(dax[0].source == "fs-DAX mount " + first.string() + " (ext4 on /dev/pmem0)");
  CHECK(dax[1].path == spaced);
  check_contains(dax[1].source, "xfs on /dev/pmem1");
  // statvfs fails on a mount point that is not there: size 0, and the source says why.
  CHECK(dax[2].path == absent);
  CHECK(dax[2].capacity == 0);
  check_contains(dax[2].source, "statvfs failed: No such file or directory");
}

TEST_CASE("discover: device-DAX is a sysfs dax device with a size and a /dev node, by name, before fs-DAX") {
  FakeSystem system("device-dax", "topology_hbm.xml");
  system.dax_device("dax0.0", 16 * GiB, true);
  system.dax_device("dax2.0", 8 * GiB, true);
  // Bound to kmem: no /dev node, its memory is a NUMA node already.
  system.dax_device("dax1.0", 32 * GiB, false);
  // No size: not a device.
  fs::create_directories(system.options.dax_devices / "dax3.0");
  write_file(system.options.dev / "dax3.0", "");
  const fs::path pmem = system.directory("pmem0");
  system.mount("40 1 259:0 / " + pmem.string() + " rw - ext4 /dev/pmem0 rw,dax");

  const std::vector<ca::MemoryTier> dax = dax_tiers_of(ca::discover_tiers(system.options));
  REQUIRE(dax.size() == 3);
  CHECK(dax[0].name == "dax0.0");
  CHECK(dax[0].capacity == 16 * GiB);
  CHECK(dax[0].path == system.options.dev / "dax0.0");
  CHECK(dax[0].source == "device-DAX " + (system.options.dev / "dax0.0").string());
  CHECK(dax[1].name == "dax2.0");
  CHECK(dax[1].capacity == 8 * GiB);
  CHECK(dax[2].path == pmem);
}

TEST_CASE("discover: discover() gives each tier as a DeviceSpec of its whole capacity, in the same order") {
  FakeSystem system("specs", "topology_cxl.xml");
  system.dax_device("dax0.0", 16 * GiB, true);
  const fs::path pmem = system.directory("pmem0");
  system.mount("40 1 259:0 / " + pmem.string() + " rw - ext4 /dev/pmem0 rw,dax");

  const std::vector<ca::MemoryTier> tiers = ca::discover_tiers(system.options);
  const std::vector<ca::DeviceSpec> specs = ca::discover(system.options);
  REQUIRE(tiers.size() == 6);
  REQUIRE(specs.size() == tiers.size());
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    INFO("tier " << i << ": " << tiers[i].source);
    CHECK(specs[i].kind == tiers[i].kind);
    CHECK(specs[i].capacity == tiers[i].capacity);
    CHECK(specs[i].name == tiers[i].name);
    CHECK(specs[i].numa_node == tiers[i].numa_node);
    CHECK(specs[i].path == tiers[i].path);
  }
  // The DRAM spec is bound to its node; the DAX specs name the device and the mount.
  CHECK(specs[0].kind == ca::DeviceKind::dram);
  CHECK(specs[0].numa_node == 0);
  CHECK(specs[4].path == system.options.dev / "dax0.0");
  CHECK(specs[5].path == pmem);

  ca::MemoryTier simulated;
  simulated.kind = ca::DeviceKind::virtual_address;
  simulated.name = "sim";
  check_contains(test::invalid_argument_of([&] { (void)ca::to_device_spec(simulated); }), "'sim'");
}

TEST_CASE("discover: a topology file that is missing, a directory or not hwloc XML is named in the error") {
  ScratchPath scratch("discover-bad-xml");
  fs::create_directories(scratch.path);

  SUBCASE("missing") {
    const fs::path missing = scratch.path / "no-such-topology.xml";
    const std::string message = test::invalid_argument_of([&] { (void)ca::discover_tiers(topology_only(missing)); });
    check_contains(message, missing.string());
    check_contains(message, "No such file or directory");
    check_contains(message, "lstopo --of xml");
  }
  SUBCASE("a directory") {
    check_contains(test::invalid_argument_of([&] { (void)ca::discover(topology_only(scratch.path)); }),
                   "Is a directory");
  }
  SUBCASE("malformed") {
    const fs::path malformed = scratch.path / "truncated.xml";
    write_file(malformed, "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\"\n");
    const std::string message = test::invalid_argument_of([&] { (void)ca::discover(topology_only(malformed)); });
    check_contains(message, malformed.string());
    check_contains(message, "hwloc rejects");
  }
}

TEST_CASE("discover: a machine with one NUMA node has one DRAM tier, of that node's memory") {
  const fs::path nodes = "/sys/devices/system/node";
  std::uint64_t node0_bytes = 0;
  int node_count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(nodes, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("node") && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4])) != 0) {
      ++node_count;
    }
  }
  // "Node 0 MemTotal:       14772440 kB"
  std::ifstream meminfo(nodes / "node0" / "meminfo");
  for (std::string word; meminfo >> word;) {
    if (word == "MemTotal:") {
      meminfo >> node0_bytes;
      node0_bytes *= 1024;
      break;
    }
  }
  if (node_count != 1 || node0_bytes == 0) {
    MESSAGE("skipped: this check is for a machine with one NUMA node (found " << node_count << ")");
    return;
  }
  const std::vector<ca::MemoryTier> tiers = ca::discover_tiers();
  REQUIRE_FALSE(tiers.empty());
  CHECK(tiers[0].kind == ca::DeviceKind::dram);
  CHECK(tiers[0].numa_node == 0);
  CHECK(tiers[0].capacity > 0);
  // hwloc leaves out memory reserved for huge pages.
  CHECK(tiers[0].capacity <= node0_bytes);
  CHECK(tiers[0].capacity > node0_bytes / 2);
  // Anything after it is a DAX device or mount this machine has.
  for (std::size_t i = 1; i < tiers.size(); ++i) {
    INFO("tier " << i << ": " << tiers[i].source);
    CHECK(tiers[i].kind == ca::DeviceKind::dax);
    CHECK(fs::exists(tiers[i].path));
  }
}
