// Running a helper script (the PyTorch baseline, the plot scripts) from the
// command-line tools and the benchmarks.
#pragma once

#include <string>
#include <utility>

namespace cachedarrays::tools {

// `s` as one /bin/sh word.
std::string shell_quote(const std::string& s);

// Runs `command`, returning its standard output and exit status (-1 when it
// could not be run or did not exit normally).
std::pair<std::string, int> capture(const std::string& command);

}  // namespace cachedarrays::tools
