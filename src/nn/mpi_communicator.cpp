#include "cachedarrays/nn/mpi_communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/runtime/environment.hpp"

namespace cachedarrays::nn {

namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  // Started, not yet waited for: the request and what it is.
  struct Pending {
    MPI_Request request;
    std::string what;
  };
  std::map<Request, Pending> pending;

  // Both start_sum overloads: the in-place sum over the ranks of `count`
  // elements of `type` at `data`, started; `self` numbers it and ends the
  // job on an MPI error.
  Request start_sum(MpiCommunicator& self, void* data, std::size_t count, MPI_Datatype type, const std::string& what);
  // Waits for `request` with self's deadline; `what` for the messages.
  void wait_for(MpiCommunicator& self, MPI_Request& request, const std::string& what) const;
};

bool MpiCommunicator::launched_by_mpi() { return launched_by_mpi_environment(); }

MpiCommunicator::MpiCommunicator(MpiOptions options) : impl_(std::make_unique<Impl>()), options_(options) {
  // CACHEDARRAYS_MPI_TIMEOUT (seconds) over the option.
  if (const std::optional<double> seconds = mpi_timeout_from_environment()) {
    options_.timeout = std::chrono::duration<double>(*seconds);
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    // One thread calls MPI: the training loop's.
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) throw error("cachedarrays::nn: MPI_Init_thread failed: " + mpi_error_string(rc));
    finalize_ = true;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm);
  // Errors come back as codes, which fail() turns into a message and an
  // abort of the whole job.
  MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->comm, &rank_);
  MPI_Comm_size(impl_->comm, &size_);
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(impl_->comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  if (local != MPI_COMM_NULL) {
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  }
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  processor_.assign(name, static_cast<std::size_t>(length));
}

MpiCommunicator::~MpiCommunicator() {
  // Whatever is still in flight belongs to a run that is ending with an
  // exception: the job ends with it, there is nothing left to wait for.
  if (!impl_->pending.empty()) return;
  MPI_Comm_free(&impl_->comm);
  if (finalize_) MPI_Finalize();
}

void MpiCommunicator::fail(const std::string& what, int mpi_error) {
  abort(what + " failed: " + mpi_error_string(mpi_error));
}

void MpiCommunicator::abort(const std::string& message) {
  std::fprintf(stderr, "cachedarrays: rank %d of %d (%s): %s; ending the job\n", rank_, size_, processor_.c_str(),
               message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; should it, the rank still ends
}

namespace {

// MPI counts in int; the trainer's gradient buckets are megabytes.
void check_count(std::size_t elements, const std::string& what) {
  if (elements > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw invalid_argument("cachedarrays::nn: a sum of " + std::to_string(elements) + " elements (" + what +
                           ") is beyond MPI's int count; use smaller gradient buckets");
  }
}

}  // namespace

MpiCommunicator::Request MpiCommunicator::start_sum(std::span<float> data, const std::string& what) {
  return impl_->start_sum(*this, data.data(), data.size(), MPI_FLOAT, what);
}

MpiCommunicator::Request MpiCommunicator::start_sum(std::span<double> data, const std::string& what) {
  return impl_->start_sum(*this, data.data(), data.size(), MPI_DOUBLE, what);
}

MpiCommunicator::Request MpiCommunicator::Impl::start_sum(MpiCommunicator& self, void* data, std::size_t count,
                                                          MPI_Datatype type, const std::string& what) {
  check_count(count, what);
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, MPI_SUM, comm, &request);
  if (rc != MPI_SUCCESS) self.fail("starting the sum of " + what, rc);
  pending.emplace(self.next_, Pending{request, what});
  return self.next_++;
}

void MpiCommunicator::progress() {
  for (auto& [id, p] : impl_->pending) {
    if (p.request == MPI_REQUEST_NULL) continue;
    int done = 0;
    const int rc = MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail("the sum of " + p.what, rc);
  }
}

void MpiCommunicator::wait(Request request) {
  const auto it = impl_->pending.find(request);
  if (it == impl_->pending.end()) {
    throw invalid_argument("cachedarrays::nn: MpiCommunicator::wait: request " + std::to_string(request) +
                           " was never started or was waited for already");
  }
  impl_->wait_for(*this, it->second.request, "the sum of " + it->second.what);
  impl_->pending.erase(it);
}

void MpiCommunicator::Impl::wait_for(MpiCommunicator& self, MPI_Request& request, const std::string& what) const {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(self.options_.timeout);
  for (std::uint64_t polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) self.fail(what, rc);
    if (done != 0) break;
    if (Clock::now() > deadline) {
      self.abort("waited " + std::to_string(static_cast<long>(self.options_.timeout.count())) + " s for " + what +
                 " (CACHEDARRAYS_MPI_TIMEOUT); another rank has stopped or hangs");
    }
    // Spin briefly (a sum of a few megabytes completes in microseconds to
    // milliseconds), then yield the core: ranks may share the machine's cores.
    if (polls > 1000) std::this_thread::yield();
  }
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root, const std::string& what) {
  // MPI counts in int: a tensor beyond 2 GiB goes in pieces.
  constexpr std::size_t piece = std::size_t{1} << 30;
  std::size_t at = 0;
  do {  // once for an empty span too: every rank takes part
    const std::size_t n = std::min(piece, data.size() - at);
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = MPI_Ibcast(data.data() + at, static_cast<int>(n), MPI_BYTE, root, impl_->comm, &request);
    if (rc != MPI_SUCCESS) fail("broadcasting " + what, rc);
    impl_->wait_for(*this, request, "the broadcast of " + what);
    at += n;
  } while (at < data.size());
}

}  // namespace cachedarrays::nn
