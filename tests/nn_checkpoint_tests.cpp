// nn checkpoints: a checkpoint reads back bit for bit in the documented
// layout; a failed save leaves the previous checkpoint and no temporary
// file; every truncation, every flipped bit, a corrupt length (with its
// checksum made to match), another model or another format is refused with
// a message naming the file; check_tensors names the first mismatch.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/checkpoint.hpp"
#include "nn_data_files.hpp"
#include "test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace fs = std::filesystem;
using test::Bytes, test::check_contains, test::invalid_argument_of, test::TempDir;

// ---- files ------------------------------------------------------------------

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

fs::path temporary_of(const fs::path& path) { return nn::checkpoint_temporary_path(path); }

// ---- checkpoints ------------------------------------------------------------

nn::Checkpoint small_checkpoint() {
  nn::Checkpoint c;
  c.model = "tiny";
  c.epoch = 3;
  c.batch = 7;
  c.seed = 42;
  c.metadata = {{"lr", "0.1"}};
  c.tensors = {{"w", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b", {3}, {-1, -2, -3}}};
  return c;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (float v : values) bits.push_back(std::bit_cast<std::uint32_t>(v));
  return bits;
}

// Equal field by field, the floats bit by bit (NaN payloads included).
void check_same(const nn::Checkpoint& got, const nn::Checkpoint& want) {
  CHECK(got.model == want.model);
  CHECK(got.epoch == want.epoch);
  CHECK(got.batch == want.batch);
  CHECK(got.seed == want.seed);
  CHECK(got.metadata == want.metadata);
  REQUIRE(got.tensors.size() == want.tensors.size());
  for (std::size_t i = 0; i < got.tensors.size(); ++i) {
    CAPTURE(i);
    CHECK(got.tensors[i].name == want.tensors[i].name);
    CHECK(got.tensors[i].dims == want.tensors[i].dims);
    CHECK(bits_of(got.tensors[i].values) == bits_of(want.tensors[i].values));
  }
}

// ---- the documented layout, written independently of the library ------------

// The standard CRC-32 (reflected, polynomial 0xEDB88320), as zlib computes it.
std::uint32_t crc32(const Bytes& bytes, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= bytes[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Bytes in the layout of checkpoint.hpp, recording where each field starts.
struct Image {
  Bytes bytes;
  std::map<std::string, std::size_t> at;

  void le(std::uint64_t v, int n, const std::string& field = "") {
    if (!field.empty()) at[field] = bytes.size();
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void string(const std::string& s, const std::string& field) {
    le(s.size(), 8, field);
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void set(const std::string& field, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[at.at(field) + i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  // The size field and the checksum made to match the bytes as they are.
  Bytes sealed() {
    for (int i = 0; i < 8; ++i) bytes[16 + i] = static_cast<std::uint8_t>(bytes.size() >> (8 * i));
    Bytes out = bytes;
    const std::uint32_t crc = crc32(out, out.size() - 4);
    for (int i = 0; i < 4; ++i) out[out.size() - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    return out;
  }
};

Image checkpoint_image(const nn::Checkpoint& c) {
  Image m;
  for (char ch : std::string("CACKPT\0\1", 8)) m.bytes.push_back(static_cast<std::uint8_t>(ch));
  m.le(1, 4, "version");
  m.le(0, 4);
  m.le(0, 8, "size");
  m.string(c.model, "model");
  m.le(static_cast<std::uint64_t>(c.epoch), 8, "epoch");
  m.le(static_cast<std::uint64_t>(c.batch), 8);
  m.le(c.seed, 8);
  m.le(c.metadata.size(), 8, "metadata count");
  for (std::size_t i = 0; i < c.metadata.size(); ++i) {
    m.string(c.metadata[i].first, "key " + std::to_string(i));
    m.string(c.metadata[i].second, "value " + std::to_string(i));
  }
  m.le(c.tensors.size(), 8, "tensor count");
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const std::string t = "tensor " + std::to_string(i) + " ";
    m.string(c.tensors[i].name, t + "name");
    m.le(c.tensors[i].dims.size(), 8, t + "rank");
    for (std::size_t d = 0; d < c.tensors[i].dims.size(); ++d) {
      m.le(static_cast<std::uint64_t>(c.tensors[i].dims[d]), 8, t + "dim " + std::to_string(d));
    }
    m.le(c.tensors[i].values.size(), 8, t + "value count");
    for (float v : c.tensors[i].values) m.le(std::bit_cast<std::uint32_t>(v), 4);
  }
  m.le(0, 4, "checksum");
  return m;
}

// Lowers this process's file size limit (SIGXFSZ ignored, so writing past
// it fails with EFBIG instead of killing the test) until the end of scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace

// ---- round trip and layout ---------------------------------------------------

TEST_CASE("nn checkpoint: a checkpoint reads back bit for bit (signed zeros, denormals, infinities, NaN payloads)") {
  nn::Checkpoint c;
  c.model = "resnet-18 width 0.5 1x28x28 10 classes \xce\xbb";
  c.epoch = 12;
  c.batch = 345;
  c.seed = 0xFEDCBA9876543210ull;
  c.metadata = {{"lr", "0.1 step 30 0.1"}, {"", ""}, {std::string("nul\0inside", 10), "v"}};
  std::vector<float> special;
  for (std::uint32_t b : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u,
                          0xFF800000u, 0x7FC00000u, 0x7FC12345u, 0xFFABCDEFu, 0x7F800001u, 0x3F800000u}) {
    special.push_back(std::bit_cast<float>(b));
  }
  std::vector<float> large(100'003);
  for (std::size_t i = 0; i < large.size(); ++i) {
    large[i] = std::bit_cast<float>(static_cast<std::uint32_t>(i * 2654435761u));  // every kind of float
  }
  c.tensors = {
      {"special", {13}, special}, {"scalar", {}, {0.5f}}, {"empty", {4, 0, 2}, {}}, {"large", {100'003, 1}, large}};
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::save_checkpoint(file, c);
  check_same(nn::load_checkpoint(file), c);
  check_same(nn::load_checkpoint(file, c.model), c);
  CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
}

TEST_CASE("nn checkpoint: the file has the layout checkpoint.hpp documents") {
  TempDir dir;
  const fs::path file = dir.path() / "small.ckpt";
  const nn::Checkpoint c = small_checkpoint();
  nn::save_checkpoint(file, c);
  CHECK(read_bytes(file) == checkpoint_image(c).sealed());
}

TEST_CASE("nn checkpoint: saving again replaces the checkpoint and leaves no temporary file") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::Checkpoint c = small_checkpoint();
  nn::save_checkpoint(file, c);
  c.epoch = 4;
  c.tensors[1].values = {7, 8, 9};
  nn::save_checkpoint(file, c);
  check_same(nn::load_checkpoint(file), c);
  CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
}

TEST_CASE("nn checkpoint: a temporary file a dead save with this process id left behind is replaced") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  dir.write(temporary_of(file).filename().string(), {'h', 'a', 'l', 'f'});
  nn::save_checkpoint(file, small_checkpoint());
  check_same(nn::load_checkpoint(file), small_checkpoint());
  CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
}

TEST_CASE("nn checkpoint: the save is unnamed until it is complete where the file system allows it, named otherwise") {
  // The temporary name taken by a directory shows which file the save
  // wrote: an unnamed file is written whole and fails only when it is
  // given the name; a named file fails as it is created.
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  fs::create_directories(temporary_of(file) / "inside");
  const auto failure = [&](nn::CheckpointTemporary kind) {
    return test::message_of<ca::error>([&] { nn::save_checkpoint(file, small_checkpoint(), kind); });
  };
  check_contains(failure(nn::CheckpointTemporary::unnamed_where_possible),
                 "naming the temporary file '" + temporary_of(file).string() + "' failed: File exists");
  check_contains(failure(nn::CheckpointTemporary::named),
                 "creating the temporary file '" + temporary_of(file).string() + "'");
  CHECK(entries(dir.path()) == std::set<std::string>{temporary_of(file).filename().string()});
  fs::remove_all(temporary_of(file));
  for (const auto kind : {nn::CheckpointTemporary::unnamed_where_possible, nn::CheckpointTemporary::named}) {
    nn::Checkpoint c = small_checkpoint();
    c.epoch = kind == nn::CheckpointTemporary::named ? 11 : 12;
    nn::save_checkpoint(file, c, kind);
    check_same(nn::load_checkpoint(file), c);
    CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
  }
}

TEST_CASE("nn checkpoint: the temporary file is named after the checkpoint, this host and this process") {
  const std::string name = nn::checkpoint_temporary_path("/x/run.ckpt").string();
  CHECK(name.starts_with("/x/run.ckpt.tmp-"));
  CHECK(name.ends_with("." + std::to_string(::getpid())));
  CHECK(name.size() > std::string("/x/run.ckpt.tmp-.").size() + std::to_string(::getpid()).size());  // a host name
}

namespace {

// The id of a process that has ended (and been reaped).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("nn checkpoint: only the temporary files of dead processes of this host are removed as stale") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::save_checkpoint(file, small_checkpoint());
  const std::string ours = temporary_of(file).filename().string();      // run.ckpt.tmp-<host>.<our pid>
  const std::string host_prefix = ours.substr(0, ours.rfind('.') + 1);  // run.ckpt.tmp-<host>.
  const std::string dead = std::to_string(dead_pid());
  const std::string alive = std::to_string(::getppid());
  const std::set<std::string> stale = {host_prefix + dead, "run.ckpt.tmp-" + dead, ours};
  const std::set<std::string> kept = {host_prefix + alive,                  // a live process may be saving
                                      "run.ckpt.tmp-another-host." + dead,  // its process is not ours to know
                                      "run.ckpt.tmp-" + dead + "x",         // not a process id
                                      "other.ckpt.tmp-" + dead,             // another checkpoint's
                                      "run.ckpt"};
  for (const std::string& name : stale) dir.write(name, {'h', 'a', 'l', 'f'});
  for (const std::string& name : kept) {
    if (name != "run.ckpt") dir.write(name, {'k'});
  }
  const std::string dead_directory = "run.ckpt.tmp-" + std::to_string(dead_pid());
  fs::create_directories(dir.path() / dead_directory);  // not a regular file
  std::vector<fs::path> want;
  for (const std::string& name : stale) want.push_back(dir.path() / name);
  std::sort(want.begin(), want.end());
  CHECK(nn::remove_stale_checkpoint_temporaries(file) == want);
  const std::set<std::string> now = entries(dir.path());
  for (const std::string& name : kept) CHECK(now.count(name) == 1);
  for (const std::string& name : stale) CHECK(now.count(name) == 0);
  CHECK(now.count(dead_directory) == 1);
  CHECK(now.size() == kept.size() + 1);
  check_same(nn::load_checkpoint(file), small_checkpoint());
  CHECK(nn::remove_stale_checkpoint_temporaries(dir.path() / "missing" / "run.ckpt").empty());
}

TEST_CASE("nn checkpoint: with no save in progress, removing the temporary now removes nothing") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::save_checkpoint(file, small_checkpoint(), nn::CheckpointTemporary::named);
  dir.write(temporary_of(file).filename().string(), {'x'});  // not a save's: the last one was published
  nn::remove_checkpoint_temporary_now();
  CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt", temporary_of(file).filename().string()});
}

// ---- failed saves -------------------------------------------------------------

TEST_CASE("nn checkpoint: a failed save leaves the previous checkpoint as it was and no temporary file") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::save_checkpoint(file, small_checkpoint());
  const Bytes before = read_bytes(file);
  nn::Checkpoint next = small_checkpoint();
  next.epoch = 9;

  SUBCASE("the temporary file's name is taken by a directory") {
    fs::create_directories(temporary_of(file) / "inside");
    const std::string message = test::message_of<ca::error>([&] { nn::save_checkpoint(file, next); });
    check_contains(message, "cannot save checkpoint '" + file.string() + "'");
    check_contains(message, "'" + temporary_of(file).string() + "'");
    check_contains(message, "File exists");
    check_contains(message, "remove what is there or give another path");
    CHECK(fs::is_directory(temporary_of(file) / "inside"));  // not ours: left alone
    fs::remove_all(temporary_of(file));
  }
  SUBCASE("the disk fills up (the file size limit) while the temporary file is made") {
    std::string message;
    {
      const FileSizeLimit limit(64);
      message = test::message_of<ca::error>([&] { nn::save_checkpoint(file, next); });
    }
    check_contains(message, "cannot save checkpoint '" + file.string() + "'");
    check_contains(message, "File too large");
    check_contains(message, "free space there");
  }
  CHECK(read_bytes(file) == before);
  CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
  check_same(nn::load_checkpoint(file), small_checkpoint());
}

TEST_CASE("nn checkpoint: a save over a directory or into a missing directory fails naming it, leaving nothing") {
  TempDir dir;
  SUBCASE("the path is a directory: the rename fails, the temporary file is removed") {
    const fs::path target = dir.path() / "run.ckpt";
    fs::create_directories(target / "keep");
    const std::string message = test::message_of<ca::error>([&] { nn::save_checkpoint(target, small_checkpoint()); });
    check_contains(message, "renaming '" + temporary_of(target).string() + "' over it failed");
    check_contains(message, "is a directory: give a file name");
    CHECK(fs::is_directory(target / "keep"));
    CHECK(entries(dir.path()) == std::set<std::string>{"run.ckpt"});
  }
  SUBCASE("the directory does not exist") {
    const fs::path target = dir.path() / "missing" / "run.ckpt";
    const std::string message = test::message_of<ca::error>([&] { nn::save_checkpoint(target, small_checkpoint()); });
    check_contains(message, "cannot save checkpoint '" + target.string() + "'");
    check_contains(message, "No such file or directory");
    check_contains(message, "does the directory '" + (dir.path() / "missing").string() + "' exist?");
    CHECK(entries(dir.path()).empty());
  }
}

TEST_CASE("nn checkpoint: save refuses what load would refuse, writing nothing") {
  TempDir dir;
  fs::path file = dir.path() / "run.ckpt";
  nn::Checkpoint c = small_checkpoint();
  std::string want;
  SUBCASE("fewer values than the dims' product") {
    c.tensors[1].values.pop_back();
    want = "tensor 1 ('b') has dims 3 (3 values) but holds 2 values";
  }
  SUBCASE("a negative dim") {
    c.tensors[0].dims = {-2, -3};
    want = "tensor 0 ('w') has dims -2x-3; dims must be >= 0";
  }
  SUBCASE("dims whose product overflows") {
    c.tensors[0].dims = {1ll << 32, 1ll << 32};
    want = "tensor 0 ('w') has dims 4294967296x4294967296; dims must be >= 0 and their product fit in 64 bits";
  }
  SUBCASE("a negative epoch") {
    c.epoch = -1;
    want = "epoch -1, batch 7; both count what is done and must be >= 0";
  }
  SUBCASE("a path that names no file") {
    file = dir.path() / "";
    want = "the path names no file; give one such as run.ckpt";
  }
  check_contains(invalid_argument_of([&] { nn::save_checkpoint(file, c); }), want);
  CHECK(entries(dir.path()).empty());
}

// ---- refused files --------------------------------------------------------------

TEST_CASE("nn checkpoint: every truncation of a checkpoint is refused as truncated") {
  TempDir dir;
  const Bytes whole = checkpoint_image(small_checkpoint()).sealed();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    CAPTURE(n);
    const fs::path file = dir.write("cut.ckpt", Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n)));
    const std::string message = invalid_argument_of([&] { (void)nn::load_checkpoint(file); });
    check_contains(message, "checkpoint '" + file.string() + "' is " + std::to_string(n) + " bytes");
    check_contains(message, "(truncated?)");
    if (n >= 24) check_contains(message, "its header says " + std::to_string(whole.size()));
  }
}

TEST_CASE("nn checkpoint: every flipped bit is refused (magic, version, size or checksum)") {
  TempDir dir;
  const Bytes whole = checkpoint_image(small_checkpoint()).sealed();
  for (std::size_t i = 0; i < whole.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      CAPTURE(i);
      CAPTURE(bit);
      Bytes flipped = whole;
      flipped[i] ^= static_cast<std::uint8_t>(1u << bit);
      const fs::path file = dir.write("flipped.ckpt", flipped);
      const std::string message = invalid_argument_of([&] { (void)nn::load_checkpoint(file); });
      check_contains(message, "'" + file.string() + "'");
      if (i < 8) {
        check_contains(message, "is not a cachedarrays checkpoint");
      } else if (i < 12) {
        check_contains(message, "was written by format version");
      } else if (i >= 16 && i < 24) {
        check_contains(message, "its header says");
      } else {
        check_contains(message, "checksum mismatch: the file is corrupt");
      }
    }
  }
}

TEST_CASE("nn checkpoint: a checkpoint of another model is refused naming both") {
  TempDir dir;
  const fs::path file = dir.path() / "run.ckpt";
  nn::save_checkpoint(file, small_checkpoint());
  check_contains(invalid_argument_of([&] { (void)nn::load_checkpoint(file, "vgg-16"); }),
                 "'" + file.string() +
                     "' is a checkpoint of \"tiny\", not of \"vgg-16\"; start without --resume or pass the checkpoint "
                     "of this model");
}

TEST_CASE("nn checkpoint: another format, another version, appended bytes, no file: each refused naming the file") {
  TempDir dir;
  Image image = checkpoint_image(small_checkpoint());
  fs::path file;
  std::string want;
  SUBCASE("another format") {
    file = dir.write("other", Bytes{'P', 'K', 3, 4, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    want = "is not a cachedarrays checkpoint (it does not start with \"CACKPT\\0\\1\")";
  }
  SUBCASE("a later format version") {
    image.bytes[8] = 2;
    file = dir.write("v2.ckpt", image.sealed());
    want = "was written by format version 2; this build reads version 1";
  }
  SUBCASE("bytes appended") {
    Bytes bytes = image.sealed();
    bytes.push_back(0);
    file = dir.write("long.ckpt", bytes);
    want = "is " + std::to_string(bytes.size()) + " bytes, its header says " + std::to_string(bytes.size() - 1) +
           " (bytes appended to it?)";
  }
  SUBCASE("a missing file") {
    file = dir.path() / "none.ckpt";
    want = "does not exist";
  }
  SUBCASE("a directory") {
    file = dir.path();
    want = "is not a regular file";
  }
  const std::string message = invalid_argument_of([&] { (void)nn::load_checkpoint(file); });
  check_contains(message, "'" + file.string() + "'");
  check_contains(message, want);
}

TEST_CASE(
    "nn checkpoint: a corrupt length with a matching checksum is refused, allocating and reading nothing for it") {
  TempDir dir;
  Image image = checkpoint_image(small_checkpoint());
  constexpr std::uint64_t huge = std::numeric_limits<std::uint64_t>::max();
  std::string field;
  std::uint64_t value = 0;
  std::string want;
  SUBCASE("the model name's length") {
    field = "model";
    value = huge;
    want = "the model name's length is";
  }
  SUBCASE("the model name's length, one byte too long") {
    field = "model";
    value = image.bytes.size() - image.at["model"] - 8 - 4 + 1;
    want = "the model name's length is";
  }
  SUBCASE("the metadata count") {
    field = "metadata count";
    value = huge / 2;
    want = "the metadata count is";
  }
  SUBCASE("a metadata value's length") {
    field = "value 0";
    value = 1ull << 40;
    want = "metadata value 0's length is";
  }
  SUBCASE("the tensor count") {
    field = "tensor count";
    value = 1ull << 62;
    want = "the tensor count is";
  }
  SUBCASE("a tensor's name length") {
    field = "tensor 1 name";
    value = huge;
    want = "tensor 1's name's length is";
  }
  SUBCASE("a tensor's rank") {
    field = "tensor 0 rank";
    value = 1ull << 61;
    want = "tensor 0's rank is";
  }
  SUBCASE("a tensor's value count") {
    field = "tensor 1 value count";
    value = 1ull << 62;
    want = "tensor 1's value count is";
  }
  SUBCASE("a value count other than the dims' product") {
    field = "tensor 0 value count";
    value = 5;
    want = "tensor 0 ('w') has dims 2x3 (6 values) but a value count of 5";
  }
  SUBCASE("a negative dim") {
    field = "tensor 0 dim 0";
    value = static_cast<std::uint64_t>(-2);
    want = "tensor 0 ('w') has dims -2x3; dims must be >= 0";
  }
  SUBCASE("dims whose product wraps around to the value count") {
    // 18 * 3074457345618258603 = 3 * 2^64 + 6: 6 in 64-bit arithmetic, the
    // value count, so only a checked product sees it.
    image.set("tensor 0 dim 0", 18);
    field = "tensor 0 dim 1";
    value = 3074457345618258603ull;
    want = "dims must be >= 0 and their product fit in 64 bits";
  }
  SUBCASE("bytes after the last tensor") {
    image.bytes.insert(image.bytes.end() - 4, {0, 0});
    want = "2 bytes follow the last tensor";
  }
  if (!field.empty()) image.set(field, value);
  const fs::path file = dir.write("bad.ckpt", image.sealed());
  const std::string message = invalid_argument_of([&] { (void)nn::load_checkpoint(file); });
  check_contains(message, "checkpoint '" + file.string() + "' is corrupt at byte ");
  check_contains(message, want);
}

// ---- check_tensors ----------------------------------------------------------------

TEST_CASE("nn checkpoint: check_tensors names the first tensor that does not fit") {
  const nn::Checkpoint c = small_checkpoint();
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected = {{"w", {2, 3}}, {"b", {3}}};
  std::string want;
  SUBCASE("the same tensors pass") { CHECK_NOTHROW(nn::check_tensors(c, expected)); }
  SUBCASE("other dims") {
    expected[1].second = {4};
    want = "tensor 1 is 'b' 3, the model expects 'b' 4";
  }
  SUBCASE("another name") {
    expected[0].first = "conv.weight";
    want = "tensor 0 is 'w' 2x3, the model expects 'conv.weight' 2x3";
  }
  SUBCASE("a tensor missing") {
    expected.push_back({"fc.bias", {10}});
    want = "it holds 2 tensors, the model expects 3 (the first missing is 'fc.bias' 10)";
  }
  SUBCASE("a tensor too many") {
    expected.pop_back();
    want = "it holds 2 tensors, the model expects 1 (the first extra is 'b' 3)";
  }
  if (!want.empty()) {
    const std::string message = invalid_argument_of([&] { nn::check_tensors(c, expected); });
    check_contains(message, "the checkpoint of \"tiny\" does not fit: " + want);
    check_contains(message, "start without --resume");
  }
}
