// The handlers of stop_signals.hpp: they touch only lock-free atomics and
// fixed buffers, and call only async-signal-safe functions (write, open,
// dup2, close, unlink, _exit).
#include "cachedarrays/nn/stop_signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/checkpoint.hpp"

namespace cachedarrays::nn {

namespace {

constexpr int handled[] = {SIGTERM, SIGINT};

std::atomic<int> first_signal{0};
std::atomic<bool> installed{false};
std::atomic<bool> drop_output{false};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler sets it");
char program_name[64] = {};
struct sigaction previous[std::size(handled)];

void write_text(const char* text) noexcept {
  std::size_t left = 0;
  while (text[left] != '\0') ++left;
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

const char* signal_text(int signal) noexcept {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a signal";
  }
}

void on_signal(int signal) {
  const int saved_errno = errno;  // the interrupted code may be about to read it
  int expected = 0;
  if (first_signal.compare_exchange_strong(expected, signal)) {
    write_text("\n");
    write_text(program_name);
    write_text(": ");
    write_text(signal_text(signal));
    write_text(
        " received: stopping after this step, with a checkpoint if one was asked for (send it again to "
        "stop at once)\n");
    if (drop_output.load()) {
      // A write blocked on the old output is restarted (SA_RESTART) on this.
      const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::close(null);
      }
    }
    errno = saved_errno;
    return;
  }
  remove_checkpoint_temporary_now();
  write_text(program_name);
  write_text(": ");
  write_text(signal_text(signal));
  write_text(" received again: stopping now\n");
  ::_exit(128 + signal);
}

}  // namespace

StopSignals::StopSignals(const std::string& program, Output output) {
  if (installed.exchange(true)) {
    throw error("cachedarrays::nn: StopSignals: another one is alive; make one per process");
  }
  const std::size_t n = std::min(program.size(), sizeof program_name - 1);
  std::memcpy(program_name, program.data(), n);
  program_name[n] = '\0';
  first_signal.store(0);
  drop_output.store(output == Output::dropped);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // interrupted reads and writes go on
  for (std::size_t i = 0; i < std::size(handled); ++i) {
    if (::sigaction(handled[i], &action, &previous[i]) != 0) {
      const int err = errno;
      for (std::size_t j = 0; j < i; ++j) ::sigaction(handled[j], &previous[j], nullptr);
      installed.store(false);
      throw error(std::string("cachedarrays::nn: StopSignals: installing the handler of ") + signal_text(handled[i]) +
                  " failed: " + std::strerror(err));
    }
  }
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < std::size(handled); ++i) ::sigaction(handled[i], &previous[i], nullptr);
  installed.store(false);
}

int StopSignals::received() const noexcept { return first_signal.load(); }

std::function<int()> StopSignals::stop_requested() const {
  return [] { return first_signal.load(); };
}

std::string StopSignals::name(int signal) {
  if (signal == SIGTERM || signal == SIGINT) return signal_text(signal);
  return "signal " + std::to_string(signal);
}

}  // namespace cachedarrays::nn
