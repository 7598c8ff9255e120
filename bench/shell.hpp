// Running a helper script from a benchmark (the PyTorch baseline, the plot
// scripts): quoting for /bin/sh and capturing the output.
#pragma once

#include <cstdio>
#include <string>
#include <utility>

#include <sys/wait.h>

namespace cachedarrays::bench {

// `s` as one /bin/sh word.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command`, returning its standard output and exit status (-1 when it
// could not be run or did not exit normally).
inline std::pair<std::string, int> capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {out, -1};
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace cachedarrays::bench
