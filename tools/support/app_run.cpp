#include "support/app_run.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace cachedarrays::tools {

namespace {

// The last non-empty line of a file, for a failure's reason.
std::string last_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

AppRun run_app(const std::filesystem::path& exe, std::vector<std::string> args, const AppRunSettings& settings,
               const std::filesystem::path& scratch) {
  const std::filesystem::path json = scratch / "run.json", out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  std::filesystem::remove(json);
  args.insert(args.begin(), exe.string());
  args.insert(args.end(), {"--json", json.string()});
  // The parent's environment, less what the run sets.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("CACHEDARRAYS_POLICY=", 0) == 0 || var.rfind("CACHEDARRAYS_FAST_", 0) == 0 ||
        var.rfind("CACHEDARRAYS_EMULATION=", 0) == 0) {
      continue;
    }
    env.push_back(var);
  }
  env.push_back("CACHEDARRAYS_POLICY=" + settings.policy);
  env.push_back(fmt::format("CACHEDARRAYS_FAST_FRACTION={}", settings.fast_fraction));
  env.push_back("CACHEDARRAYS_EMULATION=" + settings.emulation);
  std::vector<char*> argv = pointers(args), envp = pointers(env);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return {std::nullopt, fmt::format("cannot start {}: {}", exe.string(), std::strerror(spawned))};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return {std::nullopt, fmt::format("waitpid: {}", std::strerror(errno))};
  }
  if (WIFSIGNALED(status)) return {std::nullopt, fmt::format("killed by signal {}", WTERMSIG(status))};
  if (WEXITSTATUS(status) != 0) {
    return {std::nullopt, fmt::format("exit {}: {}", WEXITSTATUS(status), last_line(err))};
  }
  try {
    std::ifstream in(json);
    nlohmann::json report = nlohmann::json::parse(in);
    if (!report.value("verified", false)) return {std::nullopt, "not verified: " + report.value("error", "")};
    return {std::move(report), ""};
  } catch (const std::exception& e) {
    return {std::nullopt, fmt::format("no report in {}: {}", json.string(), e.what())};
  }
}

}  // namespace cachedarrays::tools
