// The files a file-reading fuzz target hands its reader: a directory of
// this process's own (mkdtemp, so that several fuzzing processes never
// share one) under /dev/shm, else $TMPDIR, else /tmp. It is emptied after
// every input and removed when the process exits normally; a crash leaves
// it, holding the crashing input's files, for a look.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <system_error>

namespace fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (base() / "cachedarrays-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror(("cachedarrays fuzz: cannot create a scratch directory " + pattern).c_str());
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  std::filesystem::path write(const std::string& name, std::span<const std::uint8_t> bytes) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::perror(("cachedarrays fuzz: cannot write " + file.string()).c_str());
      std::abort();
    }
    return file;
  }

  // Everything in the directory removed; the directory stays.
  void clear() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) std::filesystem::remove_all(entry, ec);
  }

 private:
  static std::filesystem::path base() {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec)) return "/dev/shm";
    const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once, one thread
    return tmp != nullptr && *tmp != '\0' ? std::filesystem::path(tmp) : std::filesystem::path("/tmp");
  }

  std::filesystem::path path_;
};

// The process's scratch directory, created on first use, removed at exit.
inline const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

// Empties the scratch directory when an input is done, however it ends.
class ClearScratch {
 public:
  ClearScratch() = default;
  ~ClearScratch() { scratch().clear(); }
  ClearScratch(const ClearScratch&) = delete;
  ClearScratch& operator=(const ClearScratch&) = delete;
};

}  // namespace fuzz
