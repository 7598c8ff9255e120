// Bad blocks of a DAX heap's file: a file with bad blocks inside
// the heap's capacity is refused, on every path a DAX heap is made by, with
// a message naming the file and the blocks; one on no persistent memory is
// "not applicable" and taken as before.
//
// No machine these tests run on has bad blocks: they need persistent memory
// with media errors, or ndctl's nfit_test kernel module (what PMDK's own
// tests use), which needs root and the kernel's test build; libpmem2 has no
// file-based emulation. So the refusal is reached through the seam of
// make_dax_memory, with planted lists; what libpmem2 really answers is
// checked only where it can be here, on tmpfs (not applicable).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/bad_blocks.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace fs = std::filesystem;
using ca::detail::BadBlock;
using ca::detail::BadBlockQuery;
using ca::detail::BadBlockReport;
using ca::detail::BadBlockScan;
using test::check_contains, test::message_of, test::ScratchPath;

namespace {

using test::MiB;

// A query that answers `report` and records the size of each file it was
// asked about, so a test sees that the heap asked about its own file (a
// regular file holding the whole capacity) and not some other descriptor.
struct PlantedQuery {
  BadBlockReport report;
  std::vector<std::uint64_t> asked_sizes;

  BadBlockQuery query() {
    return [this](int fd) {
      struct stat st {};
      REQUIRE(::fstat(fd, &st) == 0);
      CHECK(S_ISREG(st.st_mode));
      asked_sizes.push_back(static_cast<std::uint64_t>(st.st_size));
      return report;
    };
  }
};

BadBlockReport scanned(std::vector<BadBlock> blocks) { return {BadBlockScan::scanned, std::move(blocks), {}}; }

// Four blocks inside an 8 MiB heap, one beyond it.
std::vector<BadBlock> four_inside_eight_mib() {
  return {{4096, 512}, {1 * MiB, 4096}, {2 * MiB, 512}, {6 * MiB, 8192}, {9 * MiB, 4096}};
}

void check_refusal(const std::string& message, const std::string& file) {
  check_contains(message, "device 'slow' (dax)");
  check_contains(message, file);
  check_contains(message, "4 bad blocks");
  check_contains(message, "byte 4096 (512 bytes), byte 1048576 (4096 bytes), byte 2097152 (512 bytes) and 1 more");
  check_contains(message, "SIGBUS");
  check_contains(message, "ndctl clear-errors");
  check_contains(message, "another file");
  CHECK_FALSE(test::contains(message, "9437184"));  // beyond the heap: not its concern
}

// The heap_error that making a heap of `spec` throws when asking `planted`.
std::string heap_refusal(const ca::DeviceSpec& spec, PlantedQuery& planted) {
  return message_of<ca::heap_error>([&] { (void)ca::detail::make_dax_memory(spec, planted.query()); });
}

// Bytes of `path`, to see that a refused file the user owns is untouched.
std::string contents_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("bad blocks: a heap file with bad blocks inside its capacity is refused, on every path") {
  PlantedQuery planted{scanned(four_inside_eight_mib()), {}};
  ScratchPath scratch("bad-blocks");
  fs::create_directory(scratch.path);
  ca::DeviceSpec spec = ca::dax_file({}, 8 * MiB, "slow");

  SUBCASE("an unnamed file (the default; here in a scratch directory): refused, nothing is left") {
    spec.path = scratch.path;
    const std::string message = heap_refusal(spec, planted);
    check_refusal(message, "the unnamed heap file made in " + scratch.path.string());
    CHECK(fs::is_empty(scratch.path));
  }
  SUBCASE("keep_file: the named file it made is removed, as it never held a heap") {
    spec.path = scratch.path;
    spec.keep_file = true;
    const std::string message = heap_refusal(spec, planted);
    check_refusal(message, scratch.path.string() + "/cachedarrays-" + std::to_string(::getpid()) + "-");
    CHECK(fs::is_empty(scratch.path));
  }
  SUBCASE("a new file the user named: created, refused, removed") {
    spec.path = scratch.path / "heap.bin";
    spec.keep_file = true;
    const std::string message = heap_refusal(spec, planted);
    check_refusal(message, spec.path.string());
    CHECK_FALSE(fs::exists(spec.path));
  }
  SUBCASE("an existing file: refused, and left as it was") {
    spec.path = scratch.path / "user.bin";
    const std::string data(8 * MiB, 'u');
    std::ofstream(spec.path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
    const std::string message = heap_refusal(spec, planted);
    check_refusal(message, spec.path.string());
    REQUIRE(fs::exists(spec.path));
    CHECK(contents_of(spec.path) == data);
  }
  // Asked once, about the heap's own file with every block allocated.
  REQUIRE(planted.asked_sizes.size() == 1);
  CHECK(planted.asked_sizes[0] >= spec.capacity);
}

TEST_CASE("bad blocks: only those inside the capacity count, clipped to it") {
  const std::vector<BadBlock> blocks{{0, 0}, {100, 50}, {8 * MiB - 512, 4096}, {8 * MiB, 512}, {20 * MiB, 1}};
  CHECK(ca::detail::bad_blocks_within(blocks, 8 * MiB) == std::vector<BadBlock>{{100, 50}, {8 * MiB - 512, 512}});
  CHECK(ca::detail::bad_blocks_within(blocks, 100).empty());
  CHECK(ca::detail::bad_blocks_within({{~std::uint64_t{0} - 1, ~std::uint64_t{0}}}, 8 * MiB).empty());

  // A user's file larger than the heap: bad blocks past the capacity do not
  // refuse it, one straddling the end does.
  ScratchPath scratch("bad-blocks-beyond");
  const std::string data(16 * MiB, 'x');
  std::ofstream(scratch.path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  const ca::DeviceSpec spec = ca::dax_file(scratch.path, 8 * MiB, "slow");
  PlantedQuery beyond{scanned({{8 * MiB, 4096}, {12 * MiB, 512}}), {}};
  CHECK(ca::detail::make_dax_memory(spec, beyond.query()) != nullptr);
  PlantedQuery straddling{scanned({{8 * MiB - 512, 4096}}), {}};
  const std::string message = heap_refusal(spec, straddling);
  check_contains(message, "1 bad block (");
  check_contains(message, "byte 8388096 (512 bytes); reading");
}

TEST_CASE("bad blocks: none found, or not checked, maps the heap and says so") {
  const ca::DeviceSpec spec = ca::dax_file({}, 8 * MiB, "slow");
  SUBCASE("scanned, empty: on persistent memory without bad blocks") {
    PlantedQuery planted{scanned({}), {}};
    const auto memory = ca::detail::make_dax_memory(spec, planted.query());
    REQUIRE(memory != nullptr);
    memory->base()[spec.capacity - 1] = std::byte{1};
    check_contains(memory->description(), "; no bad blocks)");
    CHECK(planted.asked_sizes.size() == 1);
  }
  SUBCASE("the query failed: mapped, and the description says why it was not checked") {
    PlantedQuery planted{{BadBlockScan::failed, {}, "pmem2_badblock_context_new: Permission denied (-13)"}, {}};
    const auto memory = ca::detail::make_dax_memory(spec, planted.query());
    REQUIRE(memory != nullptr);
    check_contains(memory->description(), "; bad blocks not checked: pmem2_badblock_context_new: Permission denied");
  }
  SUBCASE("not applicable: mapped, described as before") {
    PlantedQuery planted{{BadBlockScan::not_applicable, {}, "pmem2_source_numa_node: unknown region (-100026)"}, {}};
    const auto memory = ca::detail::make_dax_memory(spec, planted.query());
    REQUIRE(memory != nullptr);
    CHECK_FALSE(test::contains(memory->description(), "bad blocks"));
  }
}

TEST_CASE("bad blocks: libpmem2 on tmpfs says not applicable, and the default heap is made as before") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const int fd = ::open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, S_IRUSR | S_IWUSR);
  REQUIRE(fd >= 0);
  REQUIRE(::posix_fallocate(fd, 0, static_cast<off_t>(1 * MiB)) == 0);
  const BadBlockReport report = ca::detail::bad_blocks_of(fd);
  ::close(fd);
  // tmpfs lies on no persistent-memory namespace: libpmem2 finds no region.
  CHECK(report.scan == BadBlockScan::not_applicable);
  CHECK(report.blocks.empty());
  check_contains(report.detail, "pmem2_source_numa_node");
  check_contains(report.detail, "(-100026)");  // PMEM2_E_DAX_REGION_NOT_FOUND

  // A directory is no file libpmem2 can ask about: not applicable either.
  const int dir = ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dir >= 0);
  const BadBlockReport of_dir = ca::detail::bad_blocks_of(dir);
  ::close(dir);
  CHECK(of_dir.scan == BadBlockScan::not_applicable);
  check_contains(of_dir.detail, "(-100005)");  // PMEM2_E_INVALID_FILE_TYPE

  const auto memory = ca::detail::make_heap_memory(ca::dax_file({}, 8 * MiB, "slow"));
  REQUIRE(memory != nullptr);
  CHECK_FALSE(test::contains(memory->description(), "bad blocks"));
  check_contains(memory->description(), "an unnamed temporary file");
}
