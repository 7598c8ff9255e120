// gzip through zlib's inflate with windowBits 15 + 16 (gzip header and
// trailer, CRC-32 and length checked), one member after another.
#include "nn/data/gzip.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <new>

#include "cachedarrays/error.hpp"

namespace cachedarrays::nn::detail {

namespace {

constexpr int gzip_window_bits = 15 + 16;  // 32 KiB window, gzip wrapper only
// Above the ratios the data sets read here compress at, and low enough that
// a bogus length cannot make a huge first allocation.
constexpr std::size_t trusted_ratio = 8;

// Ends the inflate stream on every exit.
class Inflater {
 public:
  explicit Inflater(const std::string& file) {
    if (inflateInit2(&stream_, gzip_window_bits) != Z_OK) {
      throw invalid_argument(file + " is gzip-compressed but zlib could not start inflating it" +
                             (stream_.msg != nullptr ? std::string(": ") + stream_.msg : std::string()));
    }
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

}  // namespace

bool is_gzip(std::span<const std::uint8_t> bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& file) {
  Inflater inflater(file);
  z_stream& z = inflater.stream();
  // The trailer's ISIZE (the length mod 2^32) as a first guess, trusted only
  // up to trusted_ratio times the compressed size; past the guess the output
  // doubles as inflate fills it, so memory follows what the stream holds.
  // The last 4 bytes of a truncated or corrupt file are not a length: bounded
  // by deflate's best ratio (about 1032:1) instead, a guess would let a
  // file cut short allocate and zero up to a thousand times its size before
  // it is found truncated (fuzz_nn_data_files exercises this).
  std::size_t guess = compressed.size() * 4;
  if (compressed.size() >= 4) {
    const std::uint8_t* t = compressed.data() + compressed.size() - 4;
    const std::size_t isize =
        std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 | std::size_t{t[3]} << 24;
    guess = std::min(isize, compressed.size() * trusted_ratio);
  }
  std::vector<std::uint8_t> out(std::max<std::size_t>(guess, 1024));
  std::size_t in_done = 0;   // consumed input bytes
  std::size_t out_done = 0;  // produced output bytes
  while (true) {
    if (out_done == out.size()) out.resize(out.size() * 2);
    // zlib counts in uInt: feed and drain at most UINT_MAX bytes at a time.
    const std::size_t in_chunk = std::min<std::size_t>(compressed.size() - in_done, UINT_MAX);
    const std::size_t out_chunk = std::min<std::size_t>(out.size() - out_done, UINT_MAX);
    z.next_in = const_cast<Bytef*>(compressed.data() + in_done);  // zlib's API is not const
    z.avail_in = static_cast<uInt>(in_chunk);
    z.next_out = out.data() + out_done;
    z.avail_out = static_cast<uInt>(out_chunk);
    const int status = inflate(&z, Z_NO_FLUSH);
    in_done += in_chunk - z.avail_in;
    out_done += out_chunk - z.avail_out;
    if (status == Z_STREAM_END) {
      if (in_done == compressed.size()) break;
      // gzip allows several members one after another (`cat a.gz b.gz`).
      if (!is_gzip(compressed.subspan(in_done))) {
        throw invalid_argument(file + " is gzip-compressed but has " + std::to_string(compressed.size() - in_done) +
                               " bytes after its gzip stream that are not another gzip member (trailing data)");
      }
      inflateReset(&z);
      continue;
    }
    if (status == Z_MEM_ERROR) throw std::bad_alloc();
    if (status == Z_NEED_DICT || status == Z_DATA_ERROR || status == Z_STREAM_ERROR) {
      throw invalid_argument(file + " is gzip-compressed but corrupt at byte " + std::to_string(in_done) + " of " +
                             std::to_string(compressed.size()) +
                             " (zlib: " + (z.msg != nullptr ? z.msg : "invalid data") + "); download it again");
    }
    // Z_OK or Z_BUF_ERROR: progress is possible only with more output room
    // or more input; with all the input given, the file ended too soon.
    if (in_done == compressed.size() && out_done < out.size()) {
      throw invalid_argument(file + " is gzip-compressed but ends before its gzip stream does (truncated?): " +
                             std::to_string(compressed.size()) + " bytes inflate to " + std::to_string(out_done) +
                             " bytes without reaching the stream's end; download it again");
    }
  }
  out.resize(out_done);
  return out;
}

}  // namespace cachedarrays::nn::detail
