// SIGTERM and SIGINT as a request to stop training cleanly, the way
// schedulers and people ask a job to end: `timeout`, `kill`, SLURM's
// preemption warning, `mpirun` ending a job, and Ctrl-C.
//
// The first signal only records its number (nothing unsafe runs in the
// handler) and says on stderr that the run will stop after this step;
// fit() sees it through FitOptions::stop_requested at the next step
// boundary, writes the checkpoint and returns, and the program exits with
// 128 + the signal's number, as a shell reports a process the signal ended.
// A second signal ends the process at once with that status, removing the
// temporary name of a checkpoint save in progress first, so that nothing is
// left behind (remove_checkpoint_temporary_now).
#pragma once

#include <functional>
#include <string>

namespace cachedarrays::nn {

/// Installs the handlers for SIGTERM and SIGINT while it lives (see the file
/// comment); the handlers before it are restored when it is destroyed.
/// One at a time per process.
class StopSignals {
 public:
  /// What becomes of standard output when the first signal comes.
  enum class Output {
    kept,  ///< as it is
    /// Pointed at /dev/null, a write blocked on it included: for a process
    /// whose output a launcher stops reading once it is signalled itself,
    /// as mpirun does (it then passes SIGTERM to the ranks, and a rank
    /// waiting to print would never reach its checkpoint).
    dropped,
  };

  /// `program` names the process in the lines the handlers write on stderr
  /// ("train_cnn: SIGTERM received: ..."); at most 63 bytes are used.
  /// Throws error when another StopSignals is alive, or sigaction fails.
  explicit StopSignals(const std::string& program, Output output = Output::kept);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The number of the first signal received since construction (0: none).
  [[nodiscard]] int received() const noexcept;
  /// A FitOptions::stop_requested that answers received().
  [[nodiscard]] std::function<int()> stop_requested() const;

  /// "SIGTERM", "SIGINT", or "signal N" for another number.
  [[nodiscard]] static std::string name(int signal);
};

}  // namespace cachedarrays::nn
