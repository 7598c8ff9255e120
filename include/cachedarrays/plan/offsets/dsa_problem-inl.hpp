// Implementation of dsa_problem.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

namespace detail {

// Sums of aligned sizes stay below this, so that an offset plus a size, or a
// planner's running top, never wraps.
inline constexpr std::uint64_t dsa_size_limit = std::uint64_t{1} << 63;

CACHEDARRAYS_INLINE std::string dsa_describe(const DsaProblem& problem, std::size_t i) {
  const DsaBuffer& b = problem.buffers()[i];
  return "buffer " + std::to_string(i) + " (" + std::to_string(b.size) + " bytes, alive [" + std::to_string(b.start) +
         ", " + std::to_string(b.end) + "))";
}

}  // namespace detail

CACHEDARRAYS_INLINE DsaProblem::DsaProblem(std::vector<DsaBuffer> buffers, std::uint64_t alignment)
    : buffers_(std::move(buffers)), alignment_(alignment) {
  const auto fail = [](const std::string& what) { throw invalid_argument("cachedarrays: DSA problem: " + what); };
  if (alignment_ == 0) fail("alignment 0; offsets are multiples of the alignment, so it is at least 1");
  if (alignment_ >= detail::dsa_size_limit) fail("alignment " + std::to_string(alignment_) + " is too large");
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const DsaBuffer& b = buffers_[i];
    if (b.size == 0) fail("buffer " + std::to_string(i) + " has size 0; every buffer holds at least 1 byte");
    if (b.start >= b.end) {
      fail("buffer " + std::to_string(i) + " starts at " + std::to_string(b.start) + " and ends at " +
           std::to_string(b.end) + "; it is alive during [start, end), so start must be before end");
    }
    if (b.size >= detail::dsa_size_limit - total) {
      fail("buffer " + std::to_string(i) + " of " + std::to_string(b.size) +
           " bytes takes the total size of the buffers past 2^63 bytes");
    }
    total += aligned_size(i);
    if (total >= detail::dsa_size_limit) {
      fail("buffer " + std::to_string(i) + " aligned to " + std::to_string(alignment_) +
           " takes the total size of the buffers past 2^63 bytes");
    }
  }
  // The peak of the bytes alive: a sweep over starts and ends, an end before
  // a start at the same time (lifetimes are half-open).
  std::vector<std::pair<std::uint32_t, std::int64_t>> events;  // (time, +size at a start / -size at an end)
  events.reserve(2 * buffers_.size());
  for (const DsaBuffer& b : buffers_) {
    events.emplace_back(b.start, static_cast<std::int64_t>(b.size));
    events.emplace_back(b.end, -static_cast<std::int64_t>(b.size));
  }
  std::sort(events.begin(), events.end());  // at equal times the negative (end) sorts first
  std::int64_t live = 0;
  for (const auto& [time, delta] : events) {
    live += delta;
    max_live_ = std::max(max_live_, static_cast<std::uint64_t>(live));
  }
}

CACHEDARRAYS_INLINE std::uint64_t DsaProblem::aligned_size(std::size_t buffer) const noexcept {
  const std::uint64_t size = buffers_[buffer].size;
  return (size + alignment_ - 1) / alignment_ * alignment_;
}

CACHEDARRAYS_INLINE DsaProblem DsaProblem::from_program(const Program& program, std::uint64_t alignment) {
  const std::vector<ProgramStep>& steps = program.steps();
  if (steps.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw invalid_argument("cachedarrays: DSA problem from a program: " + std::to_string(steps.size()) +
                           " steps; times are 32-bit, so a program has fewer than 2^32 - 1");
  }
  const auto iteration_end = static_cast<std::uint32_t>(steps.size() + 1);
  std::vector<DsaBuffer> buffers;
  buffers.reserve(program.objects().size());
  // Persistent objects are alive from the start; created ones get their
  // start from their create step below. Neither is retired until a retire
  // step says so.
  for (const ProgramObject& o : program.objects()) buffers.push_back({o.bytes, 0, iteration_end});
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const auto after = static_cast<std::uint32_t>(s + 1);
    if (steps[s].kind == StepKind::create) buffers[steps[s].index].start = after;
    if (steps[s].kind == StepKind::retire) buffers[steps[s].index].end = after;
  }
  return DsaProblem(std::move(buffers), alignment);
}

// ---- CSV ---------------------------------------------------------------------

namespace detail {

// The columns of MiniMalloc's CSV this reader takes, in the order
// DsaProblem::to_csv writes them.
inline constexpr std::array<const char*, 4> dsa_csv_columns = {"buffer", "start", "end", "size"};

CACHEDARRAYS_INLINE std::vector<std::string_view> dsa_split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = line.find(',', from);
    fields.push_back(line.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (comma == std::string_view::npos) return fields;
    from = comma + 1;
  }
}

CACHEDARRAYS_INLINE std::string_view dsa_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

inline constexpr const char* dsa_csv_header_line = "buffer,start,end,size";

[[noreturn]] CACHEDARRAYS_INLINE void dsa_csv_fail(std::size_t line, const std::string& what) {
  throw invalid_argument("cachedarrays: DSA CSV: line " + std::to_string(line) + ": " + what);
}

// Where each of dsa_csv_columns lies among the header's `fields`: each
// column once, in any order, and no other.
CACHEDARRAYS_INLINE std::array<std::size_t, 4> dsa_csv_header(const std::vector<std::string_view>& fields,
                                                              std::size_t line) {
  const std::string expected = dsa_csv_header_line;
  std::array<std::size_t, 4> at{};
  std::array<bool, 4> seen{};
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::string_view name = dsa_trim(fields[f]);
    const auto it =
        std::find_if(dsa_csv_columns.begin(), dsa_csv_columns.end(), [&](const char* c) { return name == c; });
    const std::string where = "column " + std::to_string(f + 1) + " (\"" + std::string(name) + "\")";
    if (it == dsa_csv_columns.end()) {
      dsa_csv_fail(line, where + " is not a column of a DSA instance; the header is " + expected + " (in any order)");
    }
    const auto c = static_cast<std::size_t>(std::distance(dsa_csv_columns.begin(), it));
    if (seen[c]) dsa_csv_fail(line, where + " names a column a second time");
    seen[c] = true;
    at[c] = f;
  }
  for (std::size_t c = 0; c < seen.size(); ++c) {
    if (!seen[c]) {
      dsa_csv_fail(line, std::string("the header has no column \"") + dsa_csv_columns[c] + "\"; it is " + expected +
                             " (in any order)");
    }
  }
  return at;
}

// The unsigned integer in column `c` (of dsa_csv_columns) of a row, at most `max`.
CACHEDARRAYS_INLINE std::uint64_t dsa_csv_number(const std::vector<std::string_view>& fields,
                                                 const std::array<std::size_t, 4>& column, std::size_t c,
                                                 std::uint64_t max, std::size_t line) {
  const std::size_t f = column[c];
  const std::string_view field = dsa_trim(fields[f]);
  const std::string where =
      "column " + std::to_string(f + 1) + " (" + dsa_csv_columns[c] + "): \"" + std::string(field) + "\"";
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error == std::errc::invalid_argument || end != field.data() + field.size()) {
    dsa_csv_fail(line, where + " is not an unsigned integer");
  }
  if (error == std::errc::result_out_of_range || value > max) {
    dsa_csv_fail(line, where + " is larger than " + std::to_string(max));
  }
  return value;
}

// The buffer a row after the header describes; its fields are as many as
// the header's.
CACHEDARRAYS_INLINE DsaBuffer dsa_csv_buffer(const std::vector<std::string_view>& fields,
                                             const std::array<std::size_t, 4>& column, std::size_t line) {
  if (dsa_trim(fields[column[0]]).empty()) {
    dsa_csv_fail(line, "column " + std::to_string(column[0] + 1) + " (buffer) is empty; it names the buffer");
  }
  constexpr std::uint64_t max_time = std::numeric_limits<std::uint32_t>::max();
  DsaBuffer b;
  b.start = static_cast<std::uint32_t>(dsa_csv_number(fields, column, 1, max_time, line));
  b.end = static_cast<std::uint32_t>(dsa_csv_number(fields, column, 2, max_time, line));
  b.size = dsa_csv_number(fields, column, 3, dsa_size_limit - 1, line);
  if (b.end <= b.start) {
    dsa_csv_fail(line, "column " + std::to_string(column[2] + 1) + " (end): " + std::to_string(b.end) +
                           " is not after start " + std::to_string(b.start) +
                           "; a buffer is alive during [start, end), at least one moment");
  }
  if (b.size == 0) {
    dsa_csv_fail(line, "column " + std::to_string(column[3] + 1) + " (size): 0; a buffer holds at least 1 byte");
  }
  return b;
}

}  // namespace detail

CACHEDARRAYS_INLINE DsaProblem DsaProblem::from_csv_text(std::string_view text, std::uint64_t alignment) {
  // Column index of buffer, start, end, size; known once the header is read.
  std::optional<std::array<std::size_t, 4>> column;
  std::size_t field_count = 0;
  std::vector<DsaBuffer> buffers;
  std::size_t line_number = 0;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t newline = text.find('\n', from);
    const std::string_view line = detail::dsa_trim(
        text.substr(from, newline == std::string_view::npos ? std::string_view::npos : newline - from));
    from = newline == std::string_view::npos ? text.size() : newline + 1;
    ++line_number;
    if (line.empty()) continue;  // a blank line holds no buffer (files end with one)
    const std::vector<std::string_view> fields = detail::dsa_split_fields(line);
    if (!column) {
      column = detail::dsa_csv_header(fields, line_number);
      field_count = fields.size();
      continue;
    }
    if (fields.size() != field_count) {
      detail::dsa_csv_fail(line_number,
                           std::to_string(fields.size()) + " fields; the header names " + std::to_string(field_count));
    }
    buffers.push_back(detail::dsa_csv_buffer(fields, *column, line_number));
  }
  if (!column) {
    throw invalid_argument(std::string("cachedarrays: DSA CSV: no header; an instance starts with the line ") +
                           detail::dsa_csv_header_line);
  }
  return DsaProblem(std::move(buffers), alignment);
}

CACHEDARRAYS_INLINE DsaProblem DsaProblem::from_csv(const std::string& path, std::uint64_t alignment) {
  std::ifstream in(path);
  if (!in) throw heap_error("cachedarrays: cannot read the DSA instance file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return from_csv_text(text.str(), alignment);
  } catch (const invalid_argument& e) {
    throw invalid_argument(std::string(e.what()) + " (in '" + path + "')");
  }
}

CACHEDARRAYS_INLINE std::string DsaProblem::to_csv() const {
  std::string out = "buffer,start,end,size\n";
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const DsaBuffer& b = buffers_[i];
    out += std::to_string(i) + "," + std::to_string(b.start) + "," + std::to_string(b.end) + "," +
           std::to_string(b.size) + "\n";
  }
  return out;
}

// ---- solutions ---------------------------------------------------------------

CACHEDARRAYS_INLINE std::uint64_t footprint_of(const DsaProblem& problem, const std::vector<std::uint64_t>& offsets) {
  if (offsets.size() != problem.size()) {
    throw invalid_argument("cachedarrays: offset plan: " + std::to_string(offsets.size()) + " offsets for " +
                           std::to_string(problem.size()) + " buffers; one offset per buffer");
  }
  std::uint64_t top = 0;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const std::uint64_t size = problem.buffers()[i].size;
    if (offsets[i] > std::numeric_limits<std::uint64_t>::max() - size) {
      throw invalid_argument("cachedarrays: offset plan: " + detail::dsa_describe(problem, i) + " at offset " +
                             std::to_string(offsets[i]) + " ends past 2^64");
    }
    top = std::max(top, offsets[i] + size);
  }
  return top;
}

CACHEDARRAYS_INLINE void check_plan(const DsaProblem& problem, const OffsetPlan& plan) {
  const auto fail = [](const std::string& what) { throw invalid_argument("cachedarrays: offset plan: " + what); };
  const std::uint64_t top = footprint_of(problem, plan.offsets);
  for (std::size_t i = 0; i < plan.offsets.size(); ++i) {
    if (plan.offsets[i] % problem.alignment() != 0) {
      fail(detail::dsa_describe(problem, i) + " is at offset " + std::to_string(plan.offsets[i]) +
           ", not a multiple of the alignment " + std::to_string(problem.alignment()));
    }
  }
  if (plan.footprint != top) {
    fail("the footprint says " + std::to_string(plan.footprint) + " bytes but the buffers reach " +
         std::to_string(top));
  }
  // A sweep in time: the buffers alive at each start, ordered by offset.
  // While they are disjoint in address, a newcomer overlaps one of them
  // exactly when it overlaps its neighbour below or above, so each start
  // costs two comparisons and the check is O(n log n).
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  std::vector<std::size_t> by_start(buffers.size());
  for (std::size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(),
            [&](std::size_t a, std::size_t b) { return buffers[a].start < buffers[b].start; });
  using Entry = std::pair<std::uint64_t, std::size_t>;  // (offset, buffer)
  std::set<Entry> alive;
  using Ending = std::pair<std::uint32_t, std::size_t>;  // (end, buffer)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> endings;
  const auto overlap = [&](std::size_t a, std::size_t b) {
    if (a > b) std::swap(a, b);
    const auto range = [&](std::size_t i) {
      return "[" + std::to_string(plan.offsets[i]) + ", " + std::to_string(plan.offsets[i] + buffers[i].size) + ")";
    };
    fail("buffers " + std::to_string(a) + " and " + std::to_string(b) + " are alive at the same time (during [" +
         std::to_string(std::max(buffers[a].start, buffers[b].start)) + ", " +
         std::to_string(std::min(buffers[a].end, buffers[b].end)) +
         ")) and overlap in address: " + detail::dsa_describe(problem, a) + " at " + range(a) + ", " +
         detail::dsa_describe(problem, b) + " at " + range(b));
  };
  for (const std::size_t i : by_start) {
    const DsaBuffer& b = buffers[i];
    while (!endings.empty() && endings.top().first <= b.start) {
      alive.erase({plan.offsets[endings.top().second], endings.top().second});
      endings.pop();
    }
    const auto it = alive.insert({plan.offsets[i], i}).first;
    if (it != alive.begin()) {
      const std::size_t below = std::prev(it)->second;
      if (plan.offsets[below] + buffers[below].size > plan.offsets[i]) overlap(below, i);
    }
    if (const auto above = std::next(it); above != alive.end()) {
      if (plan.offsets[i] + b.size > above->first) overlap(i, above->second);
    }
    endings.emplace(b.end, i);
  }
}

}  // namespace cachedarrays::plan
