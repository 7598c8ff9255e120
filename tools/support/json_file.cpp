#include "support/json_file.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

namespace cachedarrays::tools {

bool write_json(const std::string& path, const nlohmann::json& value, std::string_view program) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  if (!out) {
    fmt::print(stderr, "{}: cannot write {}\n", program, path);
    return false;
  }
  return true;
}

}  // namespace cachedarrays::tools
