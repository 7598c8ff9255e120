#include "support/table.hpp"

#include <fmt/format.h>

#include <utility>

namespace cachedarrays::tools {

Table::Table(std::vector<Column> columns, std::string indent)
    : columns_(std::move(columns)), indent_(std::move(indent)) {}

void Table::print_header() const {
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  print_row(titles);
}

void Table::print_rule() const {
  std::vector<std::string> dashes;
  for (const Column& c : columns_) dashes.emplace_back(static_cast<std::size_t>(c.width), '-');
  print_row(dashes);
}

void Table::print_row(const std::vector<std::string>& cells) const {
  std::string line = indent_;
  for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    if (i > 0) line.append(static_cast<std::size_t>(c.gap), ' ');
    line +=
        c.align == Align::left ? fmt::format("{:<{}}", cells[i], c.width) : fmt::format("{:>{}}", cells[i], c.width);
  }
  fmt::print("{}\n", line);
}

}  // namespace cachedarrays::tools
