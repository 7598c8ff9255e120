// A table a person can read, for the command-line tools and the benchmarks
// (docs/benchmarks.md): column widths written once, for the header and the
// rows alike. Cells are formatted by the caller and padded, never cut.
#pragma once

#include <string>
#include <vector>

namespace cachedarrays::tools {

enum class Align { left, right };

struct Column {
  std::string title;
  int width = 0;
  Align align = Align::right;
  int gap = 1;  // spaces before the column; the first column has the table's indent instead
};

class Table {
 public:
  explicit Table(std::vector<Column> columns, std::string indent = {});

  void print_header() const;
  // A row of dashes as wide as each column.
  void print_rule() const;
  // The first cells.size() columns (a row may stop early).
  void print_row(const std::vector<std::string>& cells) const;

 private:
  std::vector<Column> columns_;
  std::string indent_;
};

}  // namespace cachedarrays::tools
