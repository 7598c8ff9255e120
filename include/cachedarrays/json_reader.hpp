// Reads a JSON document of the library field by field, naming the field
// in every error ("kernel profiles JSON: machine.cores: must be an unsigned
// integer, not \"two\""), so that a person can fix a hand-edited or
// truncated file. Private to the library's -inl files (the plan layer's,
// and the runtime's memory snapshots).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays::detail {

class JsonReader {
 public:
  // `document` names the kind of file in messages ("kernel profiles JSON").
  explicit JsonReader(std::string document) : document_(std::move(document)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw invalid_argument("cachedarrays: " + document_ + ": " + path + ": " + what);
  }
  // The document itself; a parse error names the byte where it stopped.
  // Every error of the parser counts: a number too large for a double is
  // out_of_range, not parse_error (found by fuzz/fuzz_json_readers).
  [[nodiscard]] nlohmann::json parse(std::string_view text) const {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail("(document)", std::string("is not JSON: ") + e.what());
    }
  }
  // j[key] of the object at `path`.
  [[nodiscard]] const nlohmann::json& field(const nlohmann::json& j, const std::string& path, const char* key) const {
    if (!j.is_object()) fail(path, std::string("must be an object, not ") + j.type_name());
    const auto it = j.find(key);
    if (it == j.end()) fail(path + "." + key, "is missing");
    return *it;
  }
  [[nodiscard]] const nlohmann::json& object(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, std::string("must be an object, not ") + j.type_name());
    return j;
  }
  [[nodiscard]] std::uint64_t unsigned_int(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_number_unsigned()) fail(path, "must be an unsigned integer, not " + j.dump());
    return j.get<std::uint64_t>();
  }
  [[nodiscard]] double non_negative(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_number() || j.get<double>() < 0) fail(path, "must be a number >= 0, not " + j.dump());
    return j.get<double>();
  }
  [[nodiscard]] const nlohmann::json& array(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, std::string("must be an array, not ") + j.type_name());
    return j;
  }
  // An unsigned integer that fits an index of 32 bits.
  [[nodiscard]] std::uint32_t index(const nlohmann::json& j, const std::string& path) const {
    const std::uint64_t v = unsigned_int(j, path);
    if (v > 0xffffffffULL) fail(path, "index " + std::to_string(v) + " is too large");
    return static_cast<std::uint32_t>(v);
  }
  [[nodiscard]] bool boolean(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_boolean()) fail(path, "must be true or false, not " + j.dump());
    return j.get<bool>();
  }
  [[nodiscard]] std::string string(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "must be a string, not " + j.dump());
    return j.get<std::string>();
  }

 private:
  std::string document_;
};

// The JSON files of plan/ (programs, kernel profiles): `what` names the
// contents in errors ("the program", "kernel profiles").
inline void write_json_file(const std::string& path, const std::string& json, const std::string& what) {
  std::ofstream out(path);
  if (!out) throw heap_error("cachedarrays: cannot write " + what + " to '" + path + "'; check the directory exists");
  out << json << '\n';
  if (!out) throw heap_error("cachedarrays: writing " + what + " to '" + path + "' failed (disk full?)");
}

// Parses the file with `parse` (a from_json), adding the path to its errors.
template <typename Parse>
auto read_json_file(const std::string& path, const std::string& what, Parse&& parse) {
  std::ifstream in(path);
  if (!in) throw heap_error("cachedarrays: cannot read the " + what + " file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse(text.str());
  } catch (const invalid_argument& e) {
    throw invalid_argument(std::string(e.what()) + " (in '" + path + "')");
  }
}

}  // namespace cachedarrays::detail
