// The collective operations data-parallel training needs (nn/
// data_parallel.hpp): a world of `size()` ranks, each a process with its own
// Runtime and tiers, that sum gradients, agree on a starting state and stop
// together. The trainer sees only this interface, so cachedarrays::nn
// builds and runs without MPI; MpiCommunicator (nn/mpi_communicator.hpp,
// built with CACHEDARRAYS_WITH_MPI) is the implementation over MPI.
//
// Every operation is collective: every rank calls it, in the same order,
// with the same sizes. A rank that stops calling (it died, or hangs) must
// not leave the others waiting for ever: an implementation ends the job
// with a message saying which operation waited, instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace cachedarrays::nn {

/// The collective operations of data-parallel training over a world of
/// size() ranks (see the file comment): the trainer's only view of the other
/// ranks, so that cachedarrays::nn needs no MPI. Every operation is
/// collective: every rank calls it, in the same order, with the same sizes;
/// an implementation ends the job, saying which operation waited, rather than
/// hang when a rank stops calling. MpiCommunicator implements it over MPI.
class Communicator {
 public:
  /// A started operation (start_sum), to pass to wait().
  using Request = std::uint64_t;

  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This process's rank, 0 to size() - 1.
  [[nodiscard]] virtual int rank() const noexcept = 0;
  /// The number of ranks in the world (1: a single-process run).
  [[nodiscard]] virtual int size() const noexcept = 0;

  /// Starts summing `data` element-wise over all ranks, in place; the sum is
  /// there (the same on every rank) once wait() returns. `data` must stay
  /// valid and unmoved until then. `what` names the operation in a timeout
  /// message ("gradient bucket 2 of 5").
  virtual Request start_sum(std::span<float> data, const std::string& what) = 0;
  /// The same as start_sum(std::span<float>, const std::string&), for doubles
  /// (the loss and the batch-norm running statistics).
  virtual Request start_sum(std::span<double> data, const std::string& what) = 0;
  /// Lets started operations advance. MPI moves a non-blocking collective
  /// on only inside MPI calls, so the trainer calls this between kernels:
  /// that is what overlaps the sums with the backward pass.
  virtual void progress() = 0;
  /// Waits until the operation `request` (from start_sum) is complete.
  virtual void wait(Request request) = 0;

  /// Copies the bytes `data` holds on rank `root` into `data` on every rank
  /// (blocking); `what` names the operation in a timeout message.
  virtual void broadcast(std::span<std::byte> data, int root, const std::string& what) = 0;

  /// Ends every rank of the job with `message` (naming this rank), as when a
  /// rank cannot go on: the others would otherwise wait for it for ever.
  /// Does not return.
  [[noreturn]] virtual void abort(const std::string& message) = 0;
};

}  // namespace cachedarrays::nn
