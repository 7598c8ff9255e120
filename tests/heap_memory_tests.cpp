// The heap memory backings (src/heap/): each kind reserves usable memory of
// the capacity asked for, DAX files are created and removed by the rules of
// DeviceSpec, and a user's file keeps its contents. Bad specs are in
// negative_tests.cpp.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace fs = std::filesystem;
using ca::detail::HeapMemory;
using ca::detail::make_heap_memory;
using test::check_contains, test::heap_files, test::ScratchPath;

namespace {

using test::MiB;
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
  const auto pattern = [](std::uint64_t i) { return static_cast<unsigned char>(i * 31 + i / 4093); };
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

TEST_CASE("dax heap, default path: an unnamed temporary file under /dev/shm, which no name keeps alive") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("skipped: no /dev/shm on this machine");
    return;
  }
  const std::set<std::string> before = heap_files("/dev/shm");
  const ca::DeviceSpec spec = ca::dax_file({}, 8 * MiB);
  {
    const auto memory = make_heap_memory(spec);
    // No file of ours has a name while the heap lives, so none can outlive it.
    CHECK(heap_files("/dev/shm") == before);
    check_contains(memory->description(), "/dev/shm, 8.00 MiB");
    check_contains(memory->description(), "an unnamed temporary file: nothing is left behind");
    // The mapping is of a file with no name: /proc shows it "(deleted)".
    std::ifstream maps("/proc/self/maps");
    const auto base = reinterpret_cast<std::uintptr_t>(memory->base());
    std::string line, mapped;
    while (std::getline(maps, line)) {
      std::uintptr_t from = 0, to = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx", &from, &to) == 2 && from <= base && base < to) mapped = line;
    }
    CAPTURE(mapped);
    check_contains(mapped, "/dev/shm/");
    check_contains(mapped, "(deleted)");
    // /dev/shm is tmpfs: never real persistent memory.
    CHECK_FALSE(memory->is_pmem());
    check_contains(memory->description(), "not pmem");
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK(heap_files("/dev/shm") == before);
}

TEST_CASE("dax heap, default path: two heaps are two files") {
  const auto a = make_heap_memory(ca::dax_file({}, 1 * MiB));
  const auto b = make_heap_memory(ca::dax_file({}, 1 * MiB));
  CHECK(a->base() != b->base());
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

TEST_CASE("dax heap, directory path: an unnamed file inside it; kept, a named one") {
  ScratchPath scratch("dir");
  fs::create_directory(scratch.path);
  ca::DeviceSpec spec = ca::dax_file(scratch.path, 8 * MiB);
  {
    const auto memory = make_heap_memory(spec);
    CHECK(fs::is_empty(scratch.path));  // no name: nothing to outlive the process
    check_contains(memory->description(), scratch.path.string() + ", 8.00 MiB");
    check_contains(memory->description(), "an unnamed temporary file");
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK(fs::is_empty(scratch.path));
  spec.keep_file = true;
  {
    const auto memory = make_heap_memory(spec);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(scratch.path)) files.push_back(entry.path());
    REQUIRE(files.size() == 1);
    CHECK(files[0].filename().string().starts_with("cachedarrays-" + std::to_string(::getpid()) + "-"));
    CHECK(fs::file_size(files[0]) >= spec.capacity);
    check_contains(memory->description(), files[0].string());
    check_usable(*memory, spec.capacity, spec.alignment);
  }
  CHECK_FALSE(fs::is_empty(scratch.path));  // kept; ScratchPath removes it
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
