// The temporary file of a checkpoint save (checkpoint_temporary.hpp), the
// names such files have, and their removal: by a later run for those of
// dead processes, by a signal handler for the one a save has right now.
#include "checkpoint_temporary.hpp"

#include <fcntl.h>
#include <libpmem.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "cachedarrays/error.hpp"

namespace cachedarrays::nn {

namespace {

namespace fs = std::filesystem;
using detail::quoted_path;

// The temporary name a save has on disk right now, for
// remove_checkpoint_temporary_now() in a signal handler: a fixed buffer (a
// handler may not allocate), published by a lock-free flag.
char registered_name[PATH_MAX];
std::atomic<bool> name_registered{false};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler reads the flag");

void register_name(const std::string& name) noexcept {
  name_registered.store(false);
  // A name too long to register stays for the next run to remove.
  if (name.size() >= sizeof registered_name) return;
  std::memcpy(registered_name, name.c_str(), name.size() + 1);
  name_registered.store(true);
}

void unregister_name() noexcept { name_registered.store(false); }

fs::path directory_of(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }

// This machine's name as it goes into a temporary file's name: a file of
// another machine sharing the directory is never taken for a dead one's.
std::string host_name() {
  char buffer[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0') return "localhost";
  std::string host(buffer);
  std::replace(host.begin(), host.end(), '/', '_');
  return host;
}

std::string save_prefix(const fs::path& target) {
  return "cachedarrays::nn: cannot save checkpoint " + quoted_path(target) + ": ";
}

// What to do about a failed system call on the way to `path`.
std::string advice(int err, const fs::path& path) {
  switch (err) {
    case ENOENT:
      return "; does the directory " + quoted_path(directory_of(path)) + " exist? Create it or give another path";
    case EACCES:
    case EPERM:
    case EROFS: return "; the directory " + quoted_path(directory_of(path)) + " must be writable";
    case ENOSPC:
    case EDQUOT:
    case EFBIG: return "; free space there (the checkpoint must fit beside the previous one until the rename)";
    default: return "";
  }
}

// A rename is durable once the directory holding the name is synced.
void sync_directory(const fs::path& path) {
  const fs::path dir = directory_of(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // EINVAL: a file system that cannot sync directories (some FUSE mounts);
  // nothing more can be done there.
  const bool synced = fd >= 0 && (::fsync(fd) == 0 || errno == EINVAL);
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!synced) {
    throw error("cachedarrays::nn: checkpoint " + quoted_path(path) + " was written, but syncing its directory " +
                quoted_path(dir) + " failed: " + std::strerror(err) +
                "; after a power loss the previous checkpoint may be found there instead");
  }
}

std::string proc_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

}  // namespace

namespace detail {

std::string quoted_path(const fs::path& path) { return "'" + path.string() + "'"; }

CheckpointTemporaryFile::CheckpointTemporaryFile(const fs::path& target, std::size_t size, CheckpointTemporary kind)
    : target_(target), name_(checkpoint_temporary_path(target).string()) {
  if (kind == CheckpointTemporary::unnamed_where_possible && create_unnamed(size)) return;
  create_named(size);
}

CheckpointTemporaryFile::~CheckpointTemporaryFile() {
  unmap();
  if (fd_ >= 0) ::close(fd_);
  if (has_name_) {
    unregister_name();
    ::unlink(name_.c_str());
  }
}

bool CheckpointTemporaryFile::create_unnamed(std::size_t size) {
  const fs::path dir = directory_of(target_);
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    // EOPNOTSUPP: the file system has no O_TMPFILE; EISDIR: the kernel has none.
    if (err == EOPNOTSUPP || err == EISDIR) return false;
    throw error(save_prefix(target_) + "creating an unnamed temporary file in " + quoted_path(dir) +
                " failed: " + std::strerror(err) + advice(err, target_));
  }
  // The blocks are allocated now, so a full disk is an error here rather
  // than a SIGBUS while writing the mapping.
  if (const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(size)); err != 0) {
    throw error(save_prefix(target_) + "allocating " + std::to_string(size) +
                " bytes for an unnamed temporary file in " + quoted_path(dir) + " failed: " + std::strerror(err) +
                advice(err, target_));
  }
  // Through /proc, so that libpmem maps it as it maps any file (MAP_SYNC on
  // a DAX mount). Without /proc the file could not be linked either.
  data_ = pmem_map_file(proc_path(fd_).c_str(), 0, 0, 0, &mapped_, &is_pmem_);
  if (data_ == nullptr) {
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

void CheckpointTemporaryFile::create_named(std::size_t size) {
  // PMEM_FILE_EXCL: never write through a file (or symlink) someone put
  // there. Not PMEM_FILE_SPARSE: the blocks are allocated now, so a full
  // disk is an error here rather than a SIGBUS while writing the mapping.
  int err = 0;
  const auto map = [&] {
    data_ = pmem_map_file(name_.c_str(), size, PMEM_FILE_CREATE | PMEM_FILE_EXCL, 0666, &mapped_, &is_pmem_);
    err = errno;
  };
  map();
  if (data_ == nullptr && err == EEXIST && is_regular_file(name_)) {
    // Left by a save of a dead process that had our host and id (after a
    // restart, in a container, the id is often the same): nothing else
    // writes it.
    ::unlink(name_.c_str());
    map();
  }
  if (data_ == nullptr) {
    // With O_EXCL, anything at name_ now (but for EEXIST) is this call's
    // half-made file; libpmem usually removes it already.
    if (err != EEXIST) ::unlink(name_.c_str());
    throw error(save_prefix(target_) + "creating the temporary file " + quoted_path(name_) + " of " +
                std::to_string(size) + " bytes failed: " + std::strerror(err) +
                (err == EEXIST ? "; remove what is there or give another path" : advice(err, target_)));
  }
  has_name_ = true;
  register_name(name_);
}

// Written bytes durable: on persistent memory flushing the CPU caches is
// enough (libpmem maps it with MAP_SYNC, so the file's blocks are already
// durable); elsewhere msync writes the pages, and fdatasync the size the
// allocation gave the file.
void CheckpointTemporaryFile::persist() {
  if (is_pmem_ != 0) {
    pmem_persist(data_, mapped_);
    return;
  }
  if (pmem_msync(data_, mapped_) != 0 || (fd_ >= 0 && ::fdatasync(fd_) != 0)) {
    const int err = errno;
    throw error(save_prefix(target_) + "syncing the temporary file " +
                (unnamed() ? "(unnamed, in " + quoted_path(directory_of(target_)) + ")" : quoted_path(name_)) +
                " to storage failed: " + std::strerror(err) + advice(err, target_));
  }
}

void CheckpointTemporaryFile::unmap() {
  if (data_ != nullptr) pmem_unmap(data_, mapped_);
  data_ = nullptr;
}

// The unnamed file gets the temporary name: a name is what rename() moves.
void CheckpointTemporaryFile::link_name() {
  register_name(name_);
  const std::string from = proc_path(fd_);
  const auto link = [&] { return ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, name_.c_str(), AT_SYMLINK_FOLLOW) == 0; };
  bool linked = link();
  int err = errno;
  if (!linked && err == EEXIST && is_regular_file(name_)) {
    ::unlink(name_.c_str());  // as in create_named: a dead process's with our host and id
    linked = link();
    err = errno;
  }
  if (!linked) {
    unregister_name();
    throw error(save_prefix(target_) + "naming the temporary file " + quoted_path(name_) +
                " failed: " + std::strerror(err) +
                (err == EEXIST ? "; remove what is there or give another path" : advice(err, target_)));
  }
  has_name_ = true;
  ::close(fd_);
  fd_ = -1;
}

void CheckpointTemporaryFile::publish() {
  persist();
  unmap();
  if (!has_name_) link_name();
  if (::rename(name_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    throw error(
        save_prefix(target_) + "renaming " + quoted_path(name_) + " over it failed: " + std::strerror(err) +
        (err == EISDIR ? "; " + quoted_path(target_) + " is a directory: give a file name" : advice(err, target_)));
  }
  unregister_name();
  has_name_ = false;  // it is the checkpoint now: no longer ours to remove
  sync_directory(target_);
}

}  // namespace detail

fs::path checkpoint_temporary_path(const fs::path& checkpoint) {
  return checkpoint.string() + ".tmp-" + host_name() + "." + std::to_string(::getpid());
}

std::vector<fs::path> remove_stale_checkpoint_temporaries(const fs::path& checkpoint) {
  std::vector<fs::path> removed;
  if (!checkpoint.has_filename()) return removed;
  const std::string prefix = checkpoint.filename().string() + ".tmp-";
  const std::string host = host_name();
  std::error_code ec;
  for (fs::directory_iterator it(directory_of(checkpoint), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    // <host>.<pid>, or <pid> alone as saves before host names wrote it.
    const std::string owner = name.substr(prefix.size());
    const std::size_t dot = owner.rfind('.');
    const std::string pid_text = dot == std::string::npos ? owner : owner.substr(dot + 1);
    if ((dot != std::string::npos && owner.substr(0, dot) != host) || pid_text.empty() || pid_text.size() > 9 ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    // Our own id: not a save in progress (saves are not concurrent with
    // this call), so a dead process's that had it. Any other live process
    // (or one we may not signal: EPERM) may be saving.
    const bool dead = pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH);
    if (dead && is_regular_file(it->path().string()) && ::unlink(it->path().c_str()) == 0) {
      removed.push_back(it->path());
    }
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

void remove_checkpoint_temporary_now() noexcept {
  if (name_registered.exchange(false)) ::unlink(registered_name);
}

}  // namespace cachedarrays::nn
