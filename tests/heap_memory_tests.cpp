// The heap memory backings (src/heap/): each kind reserves usable memory of
// the capacity asked for, DAX files are created and removed by the rules of
// DeviceSpec, a user's file keeps its contents, and every bad spec fails
// with the exception type and the figures a person needs to fix it.
#include <doctest/doctest.h>
#include <numa.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "heap/heap_memory.hpp"

namespace ca = cachedarrays;
namespace fs = std::filesystem;
using ca::detail::HeapMemory;
using ca::detail::make_heap_memory;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t page = 4096;

// Fills the whole heap with a position-dependent pattern, then reads it all
// back: every byte of [base, base + capacity) must be mapped read-write.
void check_usable(const HeapMemory& memory, std::uint64_t requested, std::uint64_t alignment) {
  REQUIRE(memory.base() != nullptr);
  CHECK(memory.capacity() >= requested);
  CHECK(reinterpret_cast<std::uintptr_t>(memory.base()) % alignment == 0);
  CHECK_FALSE(memory.description().empty());
  auto* bytes = reinterpret_cast<unsigned char*>(memory.base());
  const std::uint64_t n = memory.capacity();
  const auto pattern = [](std::uint64_t i) {
    return static_cast<unsigned char>(i * 31 + i / 4093);
  };
  for (std::uint64_t i = 0; i < n; ++i) bytes[i] = pattern(i);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (bytes[i] != pattern(i)) ++wrong;
  }
  CHECK(wrong == 0);
}

// Pages of [base, base + bytes) the kernel has backed with physical memory.
std::uint64_t resident_pages(const std::byte* base, std::uint64_t bytes) {
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  REQUIRE(::mincore(const_cast<std::byte*>(base), bytes, vec.data()) == 0);
  const auto resident = [](unsigned char c) { return (c & 1) != 0; };
  return static_cast<std::uint64_t>(std::count_if(vec.begin(), vec.end(), resident));
}

// The files this process's default-named DAX heaps have in `dir`.
std::set<std::string> heap_files(const fs::path& dir) {
  const std::string prefix = "cachedarrays-" + std::to_string(::getpid()) + "-";
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) names.insert(name);
  }
  return names;
}

// A scratch path unique to this process, removed (with its contents) when
// the test ends, whatever happened.
struct ScratchPath {
  fs::path path;
  explicit ScratchPath(const std::string& tag)
      : path(fs::path(fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path()) /
             ("cachedarrays-test-" + std::to_string(::getpid()) + "-" + tag)) {
    fs::remove_all(path);
  }
  ~ScratchPath() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;
};

// The message of the `Exception` that making a heap for `spec` must throw;
// any other exception escapes and fails the test.
template <typename Exception>
std::string thrown_message(const ca::DeviceSpec& spec) {
  try {
    (void)make_heap_memory(spec);
  } catch (const Exception& e) {
    return e.what();
  }
  FAIL("no exception was thrown for device " << spec.display_name());
  return {};
}

void check_contains(const std::string& message, const std::string& part) {
  INFO("message: " << message);
  CHECK(message.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("dram heap: whole range usable, base aligned, pages resident after prefault") {
  const ca::DeviceSpec spec = ca::dram(8 * MiB, "fast");
  const auto memory = make_heap_memory(spec);
  CHECK(resident_pages(memory->base(), memory->capacity()) == memory->capacity() / page);
  CHECK_FALSE(memory->is_pmem());
  check_contains(memory->description(), "anonymous mapping");
  check_usable(*memory, spec.capacity, spec.alignment);
}

TEST_CASE("dram heap: a large alignment is honoured by the base address") {
  ca::DeviceSpec spec = ca::dram(8 * MiB);
  spec.alignment = 2 * MiB;
  const auto memory = make_heap_memory(spec);
  check_usable(*memory, spec.capacity, spec.alignment);
}

TEST_CASE("dram heap: a capacity that is not a whole number of pages") {
  const ca::DeviceSpec spec = ca::dram(3 * MiB + 100);
  const auto memory = make_heap_memory(spec);
  check_usable(*memory, spec.capacity, spec.alignment);
}

TEST_CASE("prefault assigns every page of a fresh mapping") {
  ca::DeviceSpec spec = ca::dram(8 * MiB);
  spec.prefault = false;
  const auto memory = make_heap_memory(spec);
  CHECK(resident_pages(memory->base(), memory->capacity()) == 0);
  ca::detail::prefault(memory->base(), memory->capacity());
  CHECK(resident_pages(memory->base(), memory->capacity()) == memory->capacity() / page);
}

TEST_CASE("prefault leaves contents unchanged, also for an unaligned range") {
  std::vector<unsigned char> buffer(5 * page + 123);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<unsigned char>(i * 7 + 1);
  const std::vector<unsigned char> before = buffer;
  ca::detail::prefault(reinterpret_cast<std::byte*>(buffer.data()) + 5, buffer.size() - 9);
  CHECK(buffer == before);
}

TEST_CASE("dram heap bound to NUMA node 0") {
  ca::DeviceSpec spec = ca::dram(8 * MiB);
  spec.numa_node = 0;
  const auto memory = make_heap_memory(spec);
  check_contains(memory->description(), "node 0");
  check_usable(*memory, spec.capacity, spec.alignment);
}

TEST_CASE("numa heap on node 0") {
  // Node 0 exists on every machine; without NUMA support it is all memory.
  ca::DeviceSpec spec = ca::numa_node(0, 8 * MiB);
  spec.alignment = 64 * 1024;
  const auto memory = make_heap_memory(spec);
  CHECK_FALSE(memory->is_pmem());
  check_contains(memory->description(), "node 0");
  CHECK(resident_pages(memory->base(), memory->capacity()) == memory->capacity() / page);
  check_usable(*memory, spec.capacity, spec.alignment);
}

TEST_CASE("dax heap, default path: a fresh file under /dev/shm, removed at destruction") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const std::set<std::string> before = heap_files("/dev/shm");
  const ca::DeviceSpec spec = ca::dax_file({}, 8 * MiB);
  std::string created;
  {
    const auto memory = make_heap_memory(spec);
    const std::set<std::string> during = heap_files("/dev/shm");
    REQUIRE(during.size() == before.size() + 1);
    for (const auto& name : during) {
      if (!before.contains(name)) created = name;
    }
    REQUIRE_FALSE(created.empty());
    CHECK(fs::file_size(fs::path("/dev/shm") / created) >= spec.capacity);
    check_contains(memory->description(), "/dev/shm/" + created);
    // /dev/shm is tmpfs: never real persistent memory.
    CHECK_FALSE(memory->is_pmem());
    check_contains(memory->description(), "not pmem");
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK_FALSE(fs::exists(fs::path("/dev/shm") / created));
}

TEST_CASE("dax heap, default path: two heaps get two different files") {
  const auto a = make_heap_memory(ca::dax_file({}, 1 * MiB));
  const auto b = make_heap_memory(ca::dax_file({}, 1 * MiB));
  CHECK(a->description() != b->description());
  a->base()[0] = std::byte{1};
  b->base()[0] = std::byte{2};
  CHECK(a->base()[0] == std::byte{1});
}

TEST_CASE("dax heap, keep_file: the file outlives the heap") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const std::set<std::string> before = heap_files("/dev/shm");
  ca::DeviceSpec spec = ca::dax_file({}, 4 * MiB);
  spec.keep_file = true;
  { const auto memory = make_heap_memory(spec); }
  const std::set<std::string> after = heap_files("/dev/shm");
  REQUIRE(after.size() == before.size() + 1);
  for (const auto& name : after) {
    if (before.contains(name)) continue;
    const fs::path kept = fs::path("/dev/shm") / name;
    CHECK(fs::file_size(kept) >= spec.capacity);
    fs::remove(kept);
  }
}

TEST_CASE("dax heap, existing user file: mapped as is, contents kept, never removed") {
  ScratchPath scratch("user-file");
  const std::uint64_t file_size = 8 * MiB + page;  // larger than asked for
  {
    std::vector<char> contents(file_size);
    for (std::size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i % 251);
    std::memcpy(contents.data(), "user data", 9);
    std::ofstream out(scratch.path, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
  ca::DeviceSpec spec = ca::dax_file(scratch.path, 8 * MiB);
  spec.prefault = true;  // must not change a byte of the user's data
  {
    const auto memory = make_heap_memory(spec);
    REQUIRE(memory->base() != nullptr);
    CHECK(memory->capacity() >= spec.capacity);
    const auto* bytes = reinterpret_cast<const char*>(memory->base());
    CHECK(std::memcmp(bytes, "user data", 9) == 0);
    std::uint64_t changed = 0;
    for (std::uint64_t i = 9; i < spec.capacity; ++i) {
      if (bytes[i] != static_cast<char>(i % 251)) ++changed;
    }
    CHECK(changed == 0);
    check_contains(memory->description(), scratch.path.string());
    memory->base()[100] = std::byte{'X'};  // a shared mapping: reaches the file
  }
  REQUIRE(fs::exists(scratch.path));
  CHECK(fs::file_size(scratch.path) == file_size);  // not truncated to the capacity
  std::ifstream in(scratch.path, std::ios::binary);
  std::vector<char> head(101);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  CHECK(std::string(head.data(), 9) == "user data");
  CHECK(head[100] == 'X');
}

TEST_CASE("dax heap, directory path: a fresh file inside it, removed at destruction") {
  ScratchPath scratch("dir");
  fs::create_directory(scratch.path);
  const ca::DeviceSpec spec = ca::dax_file(scratch.path, 8 * MiB);
  {
    const auto memory = make_heap_memory(spec);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(scratch.path)) files.push_back(entry.path());
    REQUIRE(files.size() == 1);
    CHECK(fs::file_size(files[0]) >= spec.capacity);
    check_contains(memory->description(), files[0].string());
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK(fs::is_empty(scratch.path));
}

TEST_CASE("dax heap, new file in an existing directory: created there, removed unless kept") {
  ScratchPath scratch("named");
  fs::create_directory(scratch.path);
  const fs::path file = scratch.path / "heap.bin";
  ca::DeviceSpec spec = ca::dax_file(file, 4 * MiB);
  {
    const auto memory = make_heap_memory(spec);
    CHECK(fs::file_size(file) == spec.capacity);
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK_FALSE(fs::exists(file));
  spec.keep_file = true;
  { const auto memory = make_heap_memory(spec); }
  CHECK(fs::exists(file));  // ScratchPath removes it
}

// ---- bad specs -----------------------------------------------------------------

TEST_CASE("capacity 0 is an invalid argument naming the device") {
  for (const auto& spec :
       {ca::dram(0, "fast0"), ca::dax_file({}, 0, "slow0"), ca::numa_node(0, 0, "far0")}) {
    const std::string message = thrown_message<ca::invalid_argument>(spec);
    check_contains(message, spec.display_name());
    check_contains(message, "capacity");
  }
}

TEST_CASE("an alignment that is not a power of two >= 8 is an invalid argument") {
  for (const std::uint64_t alignment : {48, 4, 0, 100}) {
    ca::DeviceSpec spec = ca::dram(8 * MiB);
    spec.alignment = alignment;
    const std::string message = thrown_message<ca::invalid_argument>(spec);
    check_contains(message, "alignment " + std::to_string(alignment) + " ");
    check_contains(message, "power of two");
  }
}

TEST_CASE("an alignment larger than the capacity is an invalid argument") {
  ca::DeviceSpec spec = ca::dram(8 * MiB);
  spec.alignment = 16 * MiB;
  const std::string message = thrown_message<ca::invalid_argument>(spec);
  check_contains(message, std::to_string(16 * MiB));
  check_contains(message, ca::format_bytes(8 * MiB));
}

TEST_CASE("dax heap in a directory that does not exist") {
  ScratchPath scratch("missing-dir");  // removed, so it does not exist
  const fs::path file = scratch.path / "heap";
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(file, 8 * MiB));
  check_contains(message, "directory " + scratch.path.string() + " does not exist");
  CHECK_FALSE(fs::exists(scratch.path));
}

TEST_CASE("dax heap on an existing file that is too small: error, file untouched") {
  ScratchPath scratch("small-file");
  {
    std::ofstream out(scratch.path, std::ios::binary);
    const std::vector<char> contents(1 * MiB, 'u');
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(scratch.path, 8 * MiB));
  check_contains(message, scratch.path.string());
  check_contains(message, ca::format_bytes(1 * MiB));
  check_contains(message, ca::format_bytes(8 * MiB));
  REQUIRE(fs::exists(scratch.path));  // never removed or resized: not ours
  CHECK(fs::file_size(scratch.path) == 1 * MiB);
}

TEST_CASE("dax heap larger than the free space of its filesystem") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const std::uint64_t capacity = std::uint64_t{1} << 50;  // 1 PiB
  const std::set<std::string> before = heap_files("/dev/shm");
  const fs::path named = "/dev/shm/cachedarrays-test-" + std::to_string(::getpid()) + "-huge";
  for (const fs::path& path : {fs::path{}, fs::path("/dev/shm"), named}) {
    ca::DeviceSpec spec = ca::dax_file(path, capacity);
    spec.prefault = false;
    const std::string message = thrown_message<ca::heap_error>(spec);
    check_contains(message, "filesystem of /dev/shm has ");
    check_contains(message, "heap needs " + ca::format_bytes(capacity));
  }
  CHECK(heap_files("/dev/shm") == before);  // nothing left behind
  CHECK_FALSE(fs::exists(named));
}

TEST_CASE("a NUMA node that does not exist") {
  const std::string numa_message = thrown_message<ca::heap_error>(ca::numa_node(4096, 8 * MiB));
  check_contains(numa_message, "node 4096");
  check_contains(numa_message, "valid node");

  ca::DeviceSpec bound = ca::dram(8 * MiB);
  bound.numa_node = 4096;
  const std::string dram_message = thrown_message<ca::heap_error>(bound);
  check_contains(dram_message, "node 4096");
  check_contains(dram_message, "valid node");
}

TEST_CASE("a numa device without a node is an invalid argument") {
  const std::string message = thrown_message<ca::invalid_argument>(ca::numa_node(-1, 8 * MiB));
  check_contains(message, "numa_node is -1");
}

TEST_CASE("a numa device larger than its node") {
  if (numa_available() < 0) {
    MESSAGE("skipped: no NUMA support on this machine");
    return;
  }
  const auto node_bytes = static_cast<std::uint64_t>(numa_node_size64(0, nullptr));
  ca::DeviceSpec spec = ca::numa_node(0, node_bytes * 2);
  spec.prefault = false;
  const std::string message = thrown_message<ca::heap_error>(spec);
  check_contains(message, ca::format_bytes(node_bytes * 2));
  check_contains(message, ca::format_bytes(node_bytes));
}

TEST_CASE("dax heap in a place where no file can be created, even by root") {
  // sysfs refuses new files to every user (EACCES even for root), while
  // access(W_OK) says yes to root: this exercises the real open error.
  if (!fs::is_directory("/sys/kernel")) {
    MESSAGE("skipped: no sysfs on this machine");
    return;
  }
  const fs::path file = "/sys/cachedarrays-test-heap";
  const std::string message = thrown_message<ca::heap_error>(ca::dax_file(file, 8 * MiB));
  check_contains(message, "/sys");
  CHECK_FALSE(fs::exists(file));
}

TEST_CASE("dax heap whose parent is a file, not a directory") {
  ScratchPath scratch("parent-file");
  { std::ofstream out(scratch.path); }
  const std::string message =
      thrown_message<ca::heap_error>(ca::dax_file(scratch.path / "heap", 8 * MiB));
  check_contains(message, scratch.path.string() + " is not a directory");
}
