// JSON a script can compare (docs/benchmarks.md), written by the
// command-line tools and the benchmarks alike.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace cachedarrays::tools {

// Writes `value` to `path` as indented JSON; says on stderr, as `program`,
// when it cannot.
bool write_json(const std::string& path, const nlohmann::json& value, std::string_view program);

}  // namespace cachedarrays::tools
