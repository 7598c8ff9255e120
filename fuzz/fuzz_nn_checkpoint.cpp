// libFuzzer target: nn::load_checkpoint (checkpoint.hpp) on a
// file in a scratch directory. Byte 0 says how the rest becomes the file:
//   bit 0 clear: as it is, so the envelope (magic, version, size, CRC-32)
//                is what gets fuzzed;
//   bit 0 set:   as the body (from the model name on) of a file the fuzzer
//                wraps in a valid header and checksum, so that mutations
//                reach the field-by-field reader behind the checksum;
//   bit 1 set:   the load expects the model "tiny" (a checkpoint of another
//                model must be refused naming both).
// Bad input must end in invalid_argument, never in a crash, a hang or a
// huge allocation. What loads must survive save_checkpoint: saved and
// loaded again it is the same checkpoint, bit for bit, and a wrapped body
// (whose header is the writer's own) is saved as exactly the same file.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string_view>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/checkpoint.hpp"
#include "fuzz_scratch.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

using Bytes = std::vector<std::uint8_t>;

template <typename T>
void put(Bytes& out, T value) {  // little-endian on every host the format builds on
  const auto* p = reinterpret_cast<const std::uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

// Header (magic "CACKPT\0\1", version 1, reserved 0, file size), `body`,
// then the CRC-32 of everything before it: checkpoint.hpp's layout.
Bytes wrap(std::span<const std::uint8_t> body) {
  Bytes file = {'C', 'A', 'C', 'K', 'P', 'T', 0, 1};
  put<std::uint32_t>(file, 1);
  put<std::uint32_t>(file, 0);
  put<std::uint64_t>(file, 24 + body.size() + 4);
  file.insert(file.end(), body.begin(), body.end());
  put(file, static_cast<std::uint32_t>(crc32_z(0, file.data(), file.size())));
  return file;
}

Bytes read_back(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool same(const nn::Checkpoint& a, const nn::Checkpoint& b) {
  if (a.model != b.model || a.epoch != b.epoch || a.batch != b.batch || a.seed != b.seed || a.metadata != b.metadata ||
      a.tensors.size() != b.tensors.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const nn::CheckpointTensor& s = a.tensors[i];
    const nn::CheckpointTensor& t = b.tensors[i];
    // Bit for bit: NaN payloads and signed zeros included.
    if (s.name != t.name || s.dims != t.dims || s.values.size() != t.values.size() ||
        (!s.values.empty() && std::memcmp(s.values.data(), t.values.data(), s.values.size() * sizeof(float)) != 0)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const fuzz::ClearScratch clear;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  const bool wrapped = (data[0] & 1) != 0;
  const std::string_view expected_model = (data[0] & 2) != 0 ? "tiny" : "";
  const Bytes file = wrapped ? wrap(rest) : Bytes(rest.begin(), rest.end());
  const std::filesystem::path path = fuzz::scratch().write("run.ckpt", file);
  nn::Checkpoint loaded;
  try {
    loaded = nn::load_checkpoint(path, expected_model);
  } catch (const ca::invalid_argument&) {
    return 0;  // refused, naming the file and what is wrong
  }
  if (!expected_model.empty() && loaded.model != expected_model) __builtin_trap();
  const std::filesystem::path again = fuzz::scratch().path() / "again.ckpt";
  nn::save_checkpoint(again, loaded);
  if (!same(nn::load_checkpoint(again), loaded)) __builtin_trap();
  if (wrapped && read_back(again) != file) __builtin_trap();
  return 0;
}
