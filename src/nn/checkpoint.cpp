// Checkpoints: the file layout of checkpoint.hpp, written into a temporary
// file (checkpoint_temporary.hpp) that is made durable before it replaces
// the old checkpoint, and read back with every length checked before it is
// used.
#include "cachedarrays/nn/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <system_error>

#include "cachedarrays/error.hpp"
#include "checkpoint_temporary.hpp"

namespace cachedarrays::nn {

namespace {

namespace fs = std::filesystem;
using detail::quoted_path;

// The file holds host memory as it is: integers and floats little-endian.
static_assert(std::endian::native == std::endian::little,
              "the checkpoint format is little-endian; a big-endian host needs byte swaps in Writer and Reader");
static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4, "values are stored as IEEE-754 binary32");

constexpr char magic[8] = {'C', 'A', 'C', 'K', 'P', 'T', '\0', '\1'};
constexpr std::uint32_t format_version = 1;
constexpr std::size_t header_bytes = 24;  // magic, version, reserved, size
constexpr std::size_t checksum_bytes = 4;
// Header, empty model string, epoch, batch, seed, two zero counts, checksum.
constexpr std::uint64_t smallest_file = header_bytes + 8 + 3 * 8 + 2 * 8 + checksum_bytes;

std::string dims_text(const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return "(scalar)";
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i == 0 ? "" : "x") + std::to_string(dims[i]);
  return s;
}

// The product of `dims`; nullopt when one is negative or the product
// overflows 64 bits (neither can describe values in memory or in a file).
std::optional<std::uint64_t> checked_element_count(const std::vector<std::int64_t>& dims) {
  std::uint64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

std::uint32_t crc32_of(std::span<const std::byte> bytes, std::uint32_t crc = 0) {
  return static_cast<std::uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// A file descriptor closed when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// ---- writing ----------------------------------------------------------------

// Serialises into memory that holds exactly the encoded size, computing the
// checksum from the source bytes as it goes (so the mapping is never read).
class Writer {
 public:
  explicit Writer(std::byte* out) : out_(out) {}

  void bytes(const void* data, std::size_t n) {
    if (n == 0) return;  // an empty vector's data() may be null
    std::memcpy(out_ + position_, data, n);
    crc_ = crc32_of({static_cast<const std::byte*>(data), n}, crc_);
    position_ += n;
  }
  template <typename T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  void string(std::string_view s) {
    value<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  [[nodiscard]] std::uint32_t crc() const { return crc_; }
  [[nodiscard]] std::size_t position() const { return position_; }

 private:
  std::byte* out_;
  std::size_t position_ = 0;
  std::uint32_t crc_ = 0;
};

std::uint64_t encoded_size(const Checkpoint& c) {
  const auto string_bytes = [](const std::string& s) { return 8 + s.size(); };
  std::uint64_t size = header_bytes + string_bytes(c.model) + 3 * 8 + 8;
  for (const auto& [key, value] : c.metadata) size += string_bytes(key) + string_bytes(value);
  size += 8;
  for (const auto& t : c.tensors) size += string_bytes(t.name) + 8 + 8 * t.dims.size() + 8 + 4 * t.values.size();
  return size + checksum_bytes;
}

void encode(Writer& w, const Checkpoint& c, std::uint64_t size) {
  w.bytes(magic, sizeof magic);
  w.value(format_version);
  w.value(std::uint32_t{0});
  w.value(size);
  w.string(c.model);
  w.value(c.epoch);
  w.value(c.batch);
  w.value(c.seed);
  w.value<std::uint64_t>(c.metadata.size());
  for (const auto& [key, value] : c.metadata) {
    w.string(key);
    w.string(value);
  }
  w.value<std::uint64_t>(c.tensors.size());
  for (const auto& t : c.tensors) {
    w.string(t.name);
    w.value<std::uint64_t>(t.dims.size());
    w.bytes(t.dims.data(), t.dims.size() * sizeof(std::int64_t));
    w.value<std::uint64_t>(t.values.size());
    w.bytes(t.values.data(), t.values.size() * sizeof(float));
  }
  w.value(w.crc());
}

// What load_checkpoint would refuse is not written in the first place.
void check_savable(const fs::path& path, const Checkpoint& c) {
  const std::string prefix = "cachedarrays::nn: cannot save checkpoint " + quoted_path(path) + ": ";
  if (!path.has_filename()) throw invalid_argument(prefix + "the path names no file; give one such as run.ckpt");
  if (c.epoch < 0 || c.batch < 0) {
    throw invalid_argument(prefix + "epoch " + std::to_string(c.epoch) + ", batch " + std::to_string(c.batch) +
                           "; both count what is done and must be >= 0");
  }
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const CheckpointTensor& t = c.tensors[i];
    const std::string which = "tensor " + std::to_string(i) + " ('" + t.name + "') has dims " + dims_text(t.dims);
    const std::optional<std::uint64_t> n = checked_element_count(t.dims);
    if (!n) throw invalid_argument(prefix + which + "; dims must be >= 0 and their product fit in 64 bits");
    if (*n != t.values.size()) {
      throw invalid_argument(prefix + which + " (" + std::to_string(*n) + " values) but holds " +
                             std::to_string(t.values.size()) + " values; give as many values as the dims' product");
    }
  }
}

// ---- reading ----------------------------------------------------------------

std::vector<std::byte> read_file(const fs::path& path) {
  const std::string prefix = "cachedarrays::nn: checkpoint " + quoted_path(path);
  // O_NONBLOCK: a FIFO given by mistake is refused below, not waited on.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw invalid_argument(prefix + " does not exist; give a file save_checkpoint wrote");
    throw invalid_argument(prefix + " cannot be opened: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) throw invalid_argument(prefix + " is not a regular file");
  std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw invalid_argument(prefix + " cannot be read: " + std::strerror(errno));
    if (n == 0) break;  // shrunk while being read: the size checks below say so
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

template <typename T>
T load_value(const std::byte* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

// Magic, version, size and checksum: after these the body is what was
// written, so the reader's checks below only catch a faulty writer.
void check_envelope(const fs::path& path, std::span<const std::byte> bytes) {
  const std::string file = "cachedarrays::nn: checkpoint " + quoted_path(path);
  const std::size_t n = bytes.size();
  // What there is of the magic must match (an empty file is a truncated one).
  if (n != 0 && std::memcmp(bytes.data(), magic, std::min(n, sizeof magic)) != 0) {
    throw invalid_argument("cachedarrays::nn: " + quoted_path(path) +
                           " is not a cachedarrays checkpoint (it does not start with \"CACKPT\\0\\1\"); give a "
                           "file save_checkpoint wrote");
  }
  if (n < header_bytes) {
    throw invalid_argument(file + " is " + std::to_string(n) + " bytes, shorter than the " +
                           std::to_string(header_bytes) + "-byte header (truncated?)");
  }
  const auto version = load_value<std::uint32_t>(bytes.data() + 8);
  if (version != format_version) {
    throw invalid_argument(file + " was written by format version " + std::to_string(version) +
                           "; this build reads version " + std::to_string(format_version));
  }
  const auto size = load_value<std::uint64_t>(bytes.data() + 16);
  if (size < n) {
    throw invalid_argument(file + " is " + std::to_string(n) + " bytes, its header says " + std::to_string(size) +
                           (size < smallest_file ? " (the header is corrupt)" : " (bytes appended to it?)"));
  }
  if (size > n) {
    throw invalid_argument(file + " is " + std::to_string(n) + " bytes, its header says " + std::to_string(size) +
                           " (truncated?)");
  }
  if (n < smallest_file) {
    throw invalid_argument(file + " is " + std::to_string(n) + " bytes, its header says so, but the smallest " +
                           "checkpoint is " + std::to_string(smallest_file) + " bytes: the header is corrupt");
  }
  const auto stored = load_value<std::uint32_t>(bytes.data() + n - checksum_bytes);
  const std::uint32_t computed = crc32_of(bytes.first(n - checksum_bytes));
  if (stored != computed) {
    throw invalid_argument(file + ": checksum mismatch: the file is corrupt (CRC-32 " + std::to_string(computed) +
                           ", stored " + std::to_string(stored) +
                           "); use an earlier checkpoint or start without --resume");
  }
}

// Reads the body field by field; every length is checked against the bytes
// that remain before anything is allocated for it.
class Reader {
 public:
  Reader(const fs::path& path, std::span<const std::byte> body, std::size_t position)
      : path_(path), bytes_(body), position_(position) {}

  std::uint64_t u64(std::string_view what) {
    need(8, what);
    const auto v = load_value<std::uint64_t>(bytes_.data() + position_);
    position_ += 8;
    return v;
  }
  std::int64_t i64(std::string_view what) { return static_cast<std::int64_t>(u64(what)); }
  // A count of items of at least `item_bytes` each, all of which must fit
  // in what remains.
  std::uint64_t count(std::string_view what, std::uint64_t item_bytes) {
    const std::size_t at = position_;
    const std::uint64_t n = u64(what);
    if (n > remaining() / item_bytes) {
      corrupt(at, std::string(what) + " is " + std::to_string(n) + " (of " + std::to_string(item_bytes) +
                      " bytes or more each), but only " + std::to_string(remaining()) + " bytes follow");
    }
    return n;
  }
  std::string string(std::string_view what) {
    const std::uint64_t n = count(std::string(what) + "'s length", 1);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + position_), n);
    position_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> array(std::uint64_t n) {  // n already checked by count()
    std::vector<T> v(n);
    if (n != 0) std::memcpy(v.data(), bytes_.data() + position_, n * sizeof(T));
    position_ += n * sizeof(T);
    return v;
  }
  [[nodiscard]] std::size_t position() const { return position_; }
  [[nodiscard]] std::size_t remaining() const { return bytes_.size() - position_; }

  [[noreturn]] void corrupt(std::size_t at, const std::string& why) const {
    throw invalid_argument("cachedarrays::nn: checkpoint " + quoted_path(path_) + " is corrupt at byte " +
                           std::to_string(at) + ": " + why +
                           " (its checksum matches: it was written so, by something other than save_checkpoint)");
  }

 private:
  void need(std::uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      corrupt(position_, std::string(what) + " needs " + std::to_string(n) + " bytes, but only " +
                             std::to_string(remaining()) + " remain");
    }
  }

  const fs::path& path_;
  std::span<const std::byte> bytes_;
  std::size_t position_;
};

CheckpointTensor read_tensor(Reader& r, std::size_t index) {
  const std::string which = "tensor " + std::to_string(index);
  const std::size_t at = r.position();
  CheckpointTensor t;
  t.name = r.string(which + "'s name");
  t.dims = r.array<std::int64_t>(r.count(which + "'s rank", sizeof(std::int64_t)));
  const std::size_t count_at = r.position();
  const std::uint64_t values = r.count(which + "'s value count", sizeof(float));
  const std::optional<std::uint64_t> n = checked_element_count(t.dims);
  if (!n) {
    r.corrupt(at, which + " ('" + t.name + "') has dims " + dims_text(t.dims) +
                      "; dims must be >= 0 and their product fit in 64 bits");
  }
  if (*n != values) {
    r.corrupt(count_at, which + " ('" + t.name + "') has dims " + dims_text(t.dims) + " (" + std::to_string(*n) +
                            " values) but a value count of " + std::to_string(values));
  }
  t.values = r.array<float>(values);
  return t;
}

}  // namespace

void save_checkpoint(const fs::path& path, const Checkpoint& checkpoint, CheckpointTemporary temporary) {
  check_savable(path, checkpoint);
  const std::uint64_t size = encoded_size(checkpoint);
  detail::CheckpointTemporaryFile file(path, size, temporary);
  Writer writer(file.data());
  encode(writer, checkpoint, size);
  file.publish();
}

Checkpoint load_checkpoint(const fs::path& path, std::string_view expected_model) {
  const std::vector<std::byte> bytes = read_file(path);
  check_envelope(path, bytes);
  Reader r(path, std::span(bytes).first(bytes.size() - checksum_bytes), header_bytes);
  Checkpoint c;
  c.model = r.string("the model name");
  if (!expected_model.empty() && c.model != expected_model) {
    throw invalid_argument("cachedarrays::nn: " + quoted_path(path) + " is a checkpoint of \"" + c.model +
                           "\", not of \"" + std::string(expected_model) +
                           "\"; start without --resume or pass the checkpoint of this model");
  }
  const std::size_t progress_at = r.position();
  c.epoch = r.i64("the epoch");
  c.batch = r.i64("the batch");
  c.seed = r.u64("the seed");
  if (c.epoch < 0 || c.batch < 0) {
    r.corrupt(progress_at,
              "epoch " + std::to_string(c.epoch) + ", batch " + std::to_string(c.batch) + " (both must be >= 0)");
  }
  const std::uint64_t entries = r.count("the metadata count", 16);
  for (std::uint64_t i = 0; i < entries; ++i) {
    std::string key = r.string("metadata key " + std::to_string(i));
    c.metadata.emplace_back(std::move(key), r.string("metadata value " + std::to_string(i)));
  }
  const std::uint64_t tensors = r.count("the tensor count", 24);
  c.tensors.reserve(tensors);
  for (std::uint64_t i = 0; i < tensors; ++i) c.tensors.push_back(read_tensor(r, i));
  if (r.remaining() != 0) {
    r.corrupt(r.position(), std::to_string(r.remaining()) + " bytes follow the last tensor");
  }
  return c;
}

void check_tensors(const Checkpoint& checkpoint,
                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& expected) {
  const std::string prefix = "cachedarrays::nn: the checkpoint of \"" + checkpoint.model + "\" does not fit: ";
  const std::string action = "; resume only from a checkpoint of this model configuration, or start without --resume";
  const auto& got = checkpoint.tensors;
  const auto describe = [](const std::string& name, const std::vector<std::int64_t>& dims) {
    return "'" + name + "' " + dims_text(dims);
  };
  const std::size_t common = std::min(got.size(), expected.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (got[i].name != expected[i].first || got[i].dims != expected[i].second) {
      throw invalid_argument(prefix + "tensor " + std::to_string(i) + " is " + describe(got[i].name, got[i].dims) +
                             ", the model expects " + describe(expected[i].first, expected[i].second) + action);
    }
  }
  if (got.size() != expected.size()) {
    const std::string first = got.size() < expected.size()
                                  ? "the first missing is " + describe(expected[common].first, expected[common].second)
                                  : "the first extra is " + describe(got[common].name, got[common].dims);
    throw invalid_argument(prefix + "it holds " + std::to_string(got.size()) + " tensors, the model expects " +
                           std::to_string(expected.size()) + " (" + first + ")" + action);
  }
}

}  // namespace cachedarrays::nn
