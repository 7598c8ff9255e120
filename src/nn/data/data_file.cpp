// Reading a data set's files: the whole file at once, inflated when it is
// gzipped, with errors that name the file and say what is wrong.
#include <fstream>
#include <string>
#include <system_error>

#include "cachedarrays/error.hpp"
#include "nn/data/dataset_support.hpp"
#include "nn/data/gzip.hpp"

namespace cachedarrays::nn::detail {

std::vector<std::uint8_t> read_data_file(const std::filesystem::path& path, std::string_view what) {
  const std::string prefix = "cachedarrays::nn: " + std::string(what) + " " + quoted(path);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw invalid_argument(prefix + " cannot be accessed: " + ec.message());
  }
  if (!std::filesystem::exists(status)) throw invalid_argument(prefix + " does not exist");
  if (!std::filesystem::is_regular_file(status)) throw invalid_argument(prefix + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw invalid_argument(prefix + " cannot be read (permissions?)");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size())) {
    throw invalid_argument(prefix + ": read " + std::to_string(in.gcount()) + " of its " + std::to_string(size) +
                           " bytes");
  }
  return is_gzip(bytes) ? gunzip(bytes, prefix) : bytes;
}

std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& dir, std::string_view name) {
  std::error_code ec;
  for (const std::string& candidate : {std::string(name) + ".gz", std::string(name)}) {
    if (std::filesystem::exists(dir / candidate, ec)) return dir / candidate;
  }
  return std::nullopt;
}

}  // namespace cachedarrays::nn::detail
