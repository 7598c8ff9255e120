// Communicator over MPI (Debian's Open MPI, libopenmpi-dev): one rank per
// process of `mpirun -np K`. Built only with CACHEDARRAYS_WITH_MPI (the
// default when CMake finds MPI); CACHEDARRAYS_HAS_MPI is then defined for
// users of cachedarrays::nn. mpi.h stays out of this header.
//
// A rank that dies ends the job: mpirun notices and stops the others. A rank
// that hangs, or an MPI call that fails, ends it too: every wait polls with
// a deadline (`timeout`), and on a timeout or an MPI error the rank prints
// what it waited for and calls MPI_Abort, so no rank is left blocked.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "cachedarrays/nn/communicator.hpp"

namespace cachedarrays::nn {

/// Options of an MpiCommunicator.
struct MpiOptions {
  /// How long a rank waits for the others in one operation before it ends
  /// the job. Long enough for a slow rank's whole iteration (another rank may
  /// still be computing): the default is 10 minutes; the environment
  /// variable CACHEDARRAYS_MPI_TIMEOUT (seconds) overrides it.
  std::chrono::duration<double> timeout = std::chrono::minutes(10);
};

/// The Communicator over MPI (see the file comment): one rank per process
/// of `mpirun -np K`, on a duplicate of MPI_COMM_WORLD. Every wait has a
/// deadline (MpiOptions::timeout); on a timeout or an MPI error the rank
/// says what it waited for and aborts the whole job.
class MpiCommunicator final : public Communicator {
 public:
  /// Whether this process was started by an MPI launcher (mpirun, mpiexec,
  /// srun with PMI/PMIx): it has ranks to meet. Without one, train_cnn runs
  /// as one process and never initialises MPI.
  [[nodiscard]] static bool launched_by_mpi();

  /// Initialises MPI (unless the program already did; if this does, the
  /// destructor finalises it) and joins MPI_COMM_WORLD, on a duplicate of it
  /// whose errors return to this class instead of ending the job
  /// unannounced. Throws cachedarrays::error if MPI cannot start, and
  /// invalid_argument for a CACHEDARRAYS_MPI_TIMEOUT that is not a number of
  /// seconds above 0.
  explicit MpiCommunicator(MpiOptions options = {});
  ~MpiCommunicator() override;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  /// Ranks on this machine (to share its cores among them).
  [[nodiscard]] int local_size() const noexcept { return local_size_; }
  /// This machine's name as MPI gives it (MPI_Get_processor_name), for
  /// messages.
  [[nodiscard]] const std::string& processor_name() const noexcept { return processor_; }

  Request start_sum(std::span<float> data, const std::string& what) override;
  Request start_sum(std::span<double> data, const std::string& what) override;
  void progress() override;
  void wait(Request request) override;
  void broadcast(std::span<std::byte> data, int root, const std::string& what) override;
  [[noreturn]] void abort(const std::string& message) override;

 private:
  // What needs mpi.h: the communicator, the requests under way, and the
  // operations on them (mpi_communicator.cpp).
  struct Impl;
  [[noreturn]] void fail(const std::string& what, int mpi_error);

  std::unique_ptr<Impl> impl_;
  MpiOptions options_;
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  std::string processor_;
  bool finalize_ = false;
  Request next_ = 1;
};

}  // namespace cachedarrays::nn
