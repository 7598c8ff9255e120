// DAX heap: a file mapped with libpmem. On a DAX filesystem or a device DAX
// this is real persistent memory; anywhere else (the default, /dev/shm) it
// is an ordinary shared file mapping that stands in for the slow tier.
//
// A heap in a directory (the default /dev/shm, or one the user gave) is an
// unnamed temporary file (O_TMPFILE, or a file unlinked at once where the
// filesystem lacks it, as libpmem's PMEM_FILE_TMPFILE does): its blocks are
// freed when the last mapping goes, so even a process killed with SIGKILL
// leaves nothing behind. With keep_file it is a named file cachedarrays-<pid>-<n>
// that outlives the heap. A new file at a path the user named is removed
// when the heap goes away (unless keep_file); a file that already existed
// is mapped as it is and never truncated or removed.
//
// Bad blocks: every file is asked for its bad blocks (libpmem2,
// bad_blocks.hpp) before a heap uses it, and one with bad blocks inside the
// capacity is refused with a heap_error naming them. Refusing is the whole
// answer: placing data around them would need the block allocator to carve
// holes out of its free space and keep them out of evictfrom and defrag,
// which slide blocks across the heap -- out of scope. A file on no
// persistent memory cannot have any and is taken as before.
#pragma once

#include <fcntl.h>
#include <libpmem.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/dax_directory.hpp"
#include "cachedarrays/heap/detail/bad_blocks.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::detail {

// At namespace scope so that the class below can use it; an alias may be
// declared again for the same namespace, so it cannot clash with another
// file of a header-only build.
namespace fs = std::filesystem;

// Distinguishes the heaps of one process; the pid distinguishes processes.
// An inline variable: one counter per process also when every translation
// unit of a header-only program compiles this file (a per-TU counter would
// hand two TUs the same name).
inline std::atomic<std::uint64_t> next_dax_file_number{0};

// A pid is reused, so a stale file of a crashed run may hold our name:
// creation is exclusive and moves on to the next number.
inline constexpr int max_dax_name_attempts = 1000;

CACHEDARRAYS_INLINE bool directory_exists(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// /dev/shm is memory-backed, so the stand-in slow tier costs no disk I/O;
// the fallback directory ($TMPDIR) and /tmp are the fallbacks where it is
// missing (containers, macOS).
CACHEDARRAYS_INLINE fs::path default_dax_directory() {
  if (directory_exists("/dev/shm")) return "/dev/shm";
  if (fs::path fallback = dax_fallback_directory(); !fallback.empty() && directory_exists(fallback)) {
    return fallback;
  }
  return "/tmp";
}

CACHEDARRAYS_INLINE bool is_permission_error(int err) { return err == EACCES || err == EPERM || err == EROFS; }

// Free bytes on the filesystem holding `dir`; root may also use the blocks
// reserved for it. Returns false for pseudo-filesystems that report no size
// (their real error comes from the open).
CACHEDARRAYS_INLINE bool filesystem_free_bytes(const fs::path& dir, std::uint64_t& bytes) {
  struct statvfs fs_stat {};
  if (::statvfs(dir.c_str(), &fs_stat) != 0 || fs_stat.f_blocks == 0) return false;
  const auto blocks = ::geteuid() == 0 ? fs_stat.f_bfree : fs_stat.f_bavail;
  bytes = static_cast<std::uint64_t>(blocks) * fs_stat.f_frsize;
  return true;
}

// A file descriptor closed when it goes out of scope.
class DaxFileDescriptor {
 public:
  explicit DaxFileDescriptor(int fd) noexcept : fd_(fd) {}
  DaxFileDescriptor(const DaxFileDescriptor&) = delete;
  DaxFileDescriptor& operator=(const DaxFileDescriptor&) = delete;
  ~DaxFileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// An unnamed file in `dir`, open read-write; -1 with errno set on failure.
// O_TMPFILE where the filesystem has it; else (EOPNOTSUPP, or EISDIR from
// kernels older than 3.11) a named file unlinked at once, as libpmem's
// PMEM_FILE_TMPFILE does -- the one moment a kill could leave a name behind.
CACHEDARRAYS_INLINE int open_unnamed_dax_file(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR)) return fd;
  std::string name = (dir / "cachedarrays-XXXXXX").string();
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

// The refusal of a file with bad blocks inside the heap: which file (`file`
// names it), how many, where the first few are, and what to do.
CACHEDARRAYS_INLINE std::string bad_blocks_message(const DeviceSpec& spec, const std::string& file,
                                                   const std::vector<BadBlock>& within) {
  constexpr std::size_t listed = 3;
  std::string where;
  for (std::size_t i = 0; i < within.size() && i < listed; ++i) {
    where += (i == 0 ? "" : ", ") + std::string("byte ") + std::to_string(within[i].offset) + " (" +
             std::to_string(within[i].length) + " bytes)";
  }
  if (within.size() > listed) where += " and " + std::to_string(within.size() - listed) + " more";
  return heap_label(spec) + ": " + file + " has " + std::to_string(within.size()) + " bad block" +
         (within.size() == 1 ? "" : "s") + " (uncorrectable media errors of the persistent memory) within the " +
         format_bytes(spec.capacity) + " the heap would use, at " + where +
         "; reading one kills the process with SIGBUS, so the heap is not created. Give another file, "
         "directory or namespace, or clear the errors, losing what those blocks held: as root "
         "`ndctl clear-errors <namespace>`, or, for a file on an fsdax filesystem, libpmem2's "
         "pmem2_badblock_clear, which puts new zeroed blocks in their place";
}

CACHEDARRAYS_INLINE std::string dax_space_message(const DeviceSpec& spec, const fs::path& dir) {
  std::uint64_t available = 0;
  const std::string have = filesystem_free_bytes(dir, available) ? format_bytes(available) : "too little";
  return heap_label(spec) + ": filesystem of " + dir.string() + " has " + have + " free, heap needs " +
         format_bytes(spec.capacity) + "; pick a smaller capacity or another path";
}

class DaxMemory final : public HeapMemory {
 public:
  // `bad_blocks`: asked about every file before the heap uses it.
  explicit DaxMemory(BadBlockQuery bad_blocks) : bad_blocks_(std::move(bad_blocks)) {}
  DaxMemory(const DaxMemory&) = delete;
  DaxMemory& operator=(const DaxMemory&) = delete;
  ~DaxMemory() override {
    if (mapping_ != nullptr) pmem_unmap(mapping_, mapped_bytes_);
    if (remove_file_) ::unlink(path_.c_str());
  }

  // A fresh file inside `dir`: unnamed, or named cachedarrays-<pid>-<n> when
  // the spec keeps it.
  void create_unique(const DeviceSpec& spec, const fs::path& dir) {
    check_can_create(spec, dir);
    if (!spec.keep_file) {
      create_unnamed(spec, dir);
      return;
    }
    for (int attempt = 0; attempt < max_dax_name_attempts; ++attempt) {
      const fs::path candidate =
          dir / ("cachedarrays-" + std::to_string(::getpid()) + "-" + std::to_string(next_dax_file_number++));
      if (try_create(spec, candidate, dir)) return;
    }
    throw heap_error(heap_label(spec) + ": " + std::to_string(max_dax_name_attempts) + " file names cachedarrays-" +
                     std::to_string(::getpid()) + "-* in " + dir.string() +
                     " are all taken; remove stale cachedarrays-* files there");
  }

  // The file `path` (which does not exist yet) inside the existing `dir`.
  void create_named(const DeviceSpec& spec, const fs::path& path, const fs::path& dir) {
    check_can_create(spec, dir);
    if (!try_create(spec, path, dir)) {
      throw heap_error(heap_label(spec) + ": " + path.string() +
                       " was created by someone else while the heap was being set up; "
                       "give another path or a directory");
    }
  }

  // An existing file (or device DAX) the user named: mapped whole, as it is.
  void map_existing(const DeviceSpec& spec, const fs::path& path, const struct stat& st) {
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
      throw heap_error(heap_label(spec) + ": " + path.string() +
                       " is neither a regular file, a directory nor a device DAX; give a file "
                       "to map or a directory to create one in");
    }
    if (::access(path.c_str(), R_OK | W_OK) != 0) {
      const int err = errno;
      throw heap_error(heap_label(spec) + ": " + path.string() + " is not writable (" + std::strerror(err) +
                       "); the heap needs read-write access: fix its permissions or give another "
                       "path");
    }
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) < spec.capacity) {
      throw too_small(spec, path, static_cast<std::uint64_t>(st.st_size));
    }
    // Without PMEM_FILE_CREATE libpmem maps the whole file and never
    // changes its size: the user's data stays as it was.
    std::size_t mapped = 0;
    int is_pmem = 0;
    void* mapping = pmem_map_file(path.c_str(), 0, 0, 0, &mapped, &is_pmem);
    if (mapping == nullptr) {
      const int err = errno;
      if (is_permission_error(err)) {
        throw heap_error(heap_label(spec) + ": cannot map " + path.string() + " read-write (" + std::strerror(err) +
                         "); fix its permissions or give another path");
      }
      throw heap_error(heap_label(spec) + ": cannot map " + path.string() + ": " + std::strerror(err) +
                       "; give a regular file, a device DAX (/dev/daxN.M) or a directory");
    }
    adopt(spec, path, mapping, mapped, is_pmem != 0, /*remove=*/false);
    owner_ = "existing file, never removed";
    // A device DAX has no st_size: its length is known only once mapped.
    if (mapped_bytes_ < spec.capacity) throw too_small(spec, path, mapped_bytes_);
    refuse_bad_blocks_at(spec, path);
  }

  // Regions are aligned relative to the base, and libpmem chooses where the
  // file is mapped (it aims for a 2 MiB boundary, 1 GiB for very large
  // files, so huge pages can back it): the alignment can only be checked.
  void check_alignment(const DeviceSpec& spec) const {
    const auto address = reinterpret_cast<std::uintptr_t>(base_);
    if (address % spec.alignment != 0) {
      const std::uintptr_t achieved = address & (~address + 1);  // lowest set bit
      throw heap_error(heap_label(spec) + ": libpmem mapped " + path_.string() + " at an address aligned to " +
                       std::to_string(achieved) + " bytes, but alignment " + std::to_string(spec.alignment) +
                       " was asked for; use an alignment of at most " + std::to_string(achieved));
    }
  }

  void describe(const DeviceSpec& spec) {
    const char* kind = is_pmem_ ? "real persistent memory" : "not pmem: an ordinary file stands in for the slow tier";
    description_ =
        path_.string() + ", " + format_bytes(spec.capacity) + " (" + kind + "; " + owner_ + bad_blocks_note_ + ")";
  }

 private:
  void check_can_create(const DeviceSpec& spec, const fs::path& dir) const {
    // As root access() says yes almost everywhere; the open inside
    // pmem_map_file then gives the real answer (handled in try_create).
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      const int err = errno;
      throw heap_error(heap_label(spec) + ": cannot create the heap file in " + dir.string() +
                       ": directory is not writable (" + std::strerror(err) +
                       "); give a writable directory (e.g. /dev/shm) or fix its permissions");
    }
    std::uint64_t available = 0;
    if (filesystem_free_bytes(dir, available) && available < spec.capacity) {
      throw heap_error(dax_space_message(spec, dir));
    }
  }

  // Returns false when `path` already exists (the caller decides whether to
  // try another name); throws for every other failure.
  bool try_create(const DeviceSpec& spec, const fs::path& path, const fs::path& dir) {
    // EXCL: never truncate a file that appeared meanwhile, and it lets
    // libpmem remove the file itself if allocating its blocks fails.
    // Not SPARSE: posix_fallocate reserves every block now, so a full
    // filesystem is reported here instead of as SIGBUS in a later kernel.
    std::size_t mapped = 0;
    int is_pmem = 0;
    void* mapping = pmem_map_file(path.c_str(), spec.capacity, PMEM_FILE_CREATE | PMEM_FILE_EXCL, S_IRUSR | S_IWUSR,
                                  &mapped, &is_pmem);
    if (mapping == nullptr) {
      const int err = errno;
      if (err == EEXIST) return false;
      creation_failed(spec, err, "create " + path.string(), dir, "a path");
    }
    // Removed also with keep_file if it is refused: it never held a heap.
    adopt(spec, path, mapping, mapped, is_pmem != 0, /*remove=*/true);
    refuse_bad_blocks_at(spec, path);
    remove_file_ = !spec.keep_file;
    owner_ = spec.keep_file ? "created, kept after shutdown" : "created, removed at shutdown";
    return true;
  }

  // An unnamed temporary file in `dir` (see the file comment), made here and
  // not by libpmem's PMEM_FILE_TMPFILE, which keeps its descriptor to
  // itself: the bad-block query needs one, and the file has no name to open.
  void create_unnamed(const DeviceSpec& spec, const fs::path& dir) {
    const std::string what = "create a temporary heap file in " + dir.string();
    const DaxFileDescriptor file(open_unnamed_dax_file(dir));
    if (file.get() < 0) creation_failed(spec, errno, what, dir, "a directory");
    // Every block now, as in try_create (not SPARSE): a full filesystem is
    // reported here instead of as SIGBUS later; and only allocated blocks
    // have a place on the media to ask about.
    if (const int err = ::posix_fallocate(file.get(), 0, static_cast<off_t>(spec.capacity)); err != 0) {
      creation_failed(spec, err, what, dir, "a directory");
    }
    refuse_bad_blocks(spec, "the unnamed heap file made in " + dir.string(), file.get());
    // pmem_map_file takes a path: /proc/self/fd/N opens this very file
    // again, unnamed as it is, and libpmem still chooses how to map it
    // (MAP_SYNC on DAX, a huge-page-aligned address). The mapping keeps the
    // file alive once the descriptor is closed.
    const std::string reopen = "/proc/self/fd/" + std::to_string(file.get());
    std::size_t mapped = 0;
    int is_pmem = 0;
    void* mapping = pmem_map_file(reopen.c_str(), 0, 0, 0, &mapped, &is_pmem);
    if (mapping == nullptr) {
      const int err = errno;
      throw heap_error(heap_label(spec) + ": cannot map the temporary heap file made in " + dir.string() +
                       " (opened again as " + reopen + "): " + std::strerror(err) +
                       "; /proc must be mounted for an unnamed heap file, or give a path for a named one");
    }
    adopt(spec, dir, mapping, mapped, is_pmem != 0, /*remove=*/false);
    owner_ = "an unnamed temporary file: nothing is left behind, even if the process is killed";
  }

  // Why creating the heap's file (`what`: "create <path>") in `dir` failed
  // with `err`, and what to give instead (`other`: "a path", "a directory").
  [[noreturn]] static void creation_failed(const DeviceSpec& spec, int err, const std::string& what,
                                           const fs::path& dir, const char* other) {
    if (err == ENOSPC) throw heap_error(dax_space_message(spec, dir));
    if (is_permission_error(err)) {
      throw heap_error(heap_label(spec) + ": cannot " + what + " (" + std::strerror(err) +
                       "); give a writable directory (e.g. /dev/shm) or fix its permissions");
    }
    throw heap_error(heap_label(spec) + ": cannot " + what + ": " + std::strerror(err) + "; give " + other +
                     " on a filesystem that holds ordinary files (e.g. /dev/shm)");
  }

  heap_error too_small(const DeviceSpec& spec, const fs::path& path, std::uint64_t size) const {
    return heap_error(heap_label(spec) + ": " + path.string() + " is " + format_bytes(size) +
                      ", smaller than the capacity of " + format_bytes(spec.capacity) +
                      " asked for; enlarge it (truncate -s " + std::to_string(spec.capacity) + " " + path.string() +
                      "), ask for a smaller capacity, or give a new path or a directory so that "
                      "a file of the right size is created");
  }

  // Throws when the file open as `fd` (`file` names it in the message) has
  // bad blocks within the capacity. A file that cannot have any (not on
  // persistent memory) passes silently; on persistent memory the outcome
  // goes into the description.
  void refuse_bad_blocks(const DeviceSpec& spec, const std::string& file, int fd) {
    const BadBlockReport report = bad_blocks_(fd);
    const std::vector<BadBlock> within = bad_blocks_within(report.blocks, spec.capacity);
    if (!within.empty()) throw heap_error(bad_blocks_message(spec, file, within));
    if (report.scan == BadBlockScan::scanned) {
      bad_blocks_note_ = "; no bad blocks";
    } else if (report.scan == BadBlockScan::failed) {
      bad_blocks_note_ = "; bad blocks not checked: " + report.detail;
    }
  }

  // refuse_bad_blocks for a file libpmem has mapped by its name.
  void refuse_bad_blocks_at(const DeviceSpec& spec, const fs::path& path) {
    const DaxFileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.get() < 0) {
      const int err = errno;
      bad_blocks_note_ = std::string("; bad blocks not checked: cannot open it again: ") + std::strerror(err);
      return;
    }
    refuse_bad_blocks(spec, path.string(), file.get());
  }

  // From here on the destructor owns the mapping (and the file, if ours).
  void adopt(const DeviceSpec& spec, const fs::path& path, void* mapping, std::size_t mapped, bool is_pmem,
             bool remove) {
    mapping_ = mapping;
    mapped_bytes_ = mapped;
    path_ = path;
    remove_file_ = remove;
    base_ = static_cast<std::byte*>(mapping);
    // Only the capacity asked for is used, even when a user's file is larger.
    capacity_ = spec.capacity;
    is_pmem_ = is_pmem;
  }

  BadBlockQuery bad_blocks_;
  void* mapping_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  fs::path path_;
  bool remove_file_ = false;
  std::string owner_;
  std::string bad_blocks_note_;  // "; no bad blocks" where they were checked
};

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_dax_memory(const DeviceSpec& spec) {
  return make_dax_memory(spec, bad_blocks_of);
}

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_dax_memory(const DeviceSpec& spec, const BadBlockQuery& query) {
  // Built inside the unique_ptr: when a step after the mapping throws, the
  // destructor unmaps and removes the file if the library created it.
  auto memory = std::make_unique<DaxMemory>(query);
  const fs::path& path = spec.path;
  if (path.empty()) {
    memory->create_unique(spec, default_dax_directory());
  } else {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        memory->create_unique(spec, path);
      } else {
        memory->map_existing(spec, path, st);
      }
    } else if (const int err = errno; err == ENOENT || err == ENOTDIR) {
      // ENOTDIR: some component of the parent is a file; say which below.
      const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
      if (std::error_code ec; fs::exists(dir, ec) && !directory_exists(dir)) {
        throw heap_error(heap_label(spec) + ": " + dir.string() + " is not a directory, so the " + "heap file " +
                         path.string() +
                         " cannot be created in it; give a path "
                         "inside an existing directory");
      }
      if (!directory_exists(dir)) {
        throw heap_error(heap_label(spec) + ": directory " + dir.string() +
                         " does not exist (needed for the heap file " + path.string() +
                         "); create it first, or give an existing directory or file");
      }
      memory->create_named(spec, path, dir);
    } else {
      throw heap_error(heap_label(spec) + ": cannot use " + path.string() + ": " + std::strerror(err) +
                       "; give an existing directory, an existing file, or a new file in an "
                       "existing directory");
    }
  }
  memory->check_alignment(spec);
  memory->describe(spec);
  if (spec.prefault) prefault(memory->base(), memory->capacity());
  return memory;
}

}  // namespace cachedarrays::detail
