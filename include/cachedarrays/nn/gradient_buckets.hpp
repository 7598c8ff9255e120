// The gradient averaging of data-parallel training (nn/data_parallel.hpp),
// bucketed and overlapped with the backward pass as PyTorch DDP does (Li et
// al., VLDB 2020, §3.2.3 "Gradient Bucketing" and §3.2.4 "Overlap
// Computation with Communication"):
//  - the parameters are grouped into buckets of about `bucket_bytes`, in
//    the order the backward pass makes their gradients final (the last
//    layers' first), so that the same buckets fill in the same order on
//    every rank;
//  - when a bucket's last gradient is final, a runtime kernel packs its
//    gradients into one tensor (reading them where they are, on whichever
//    tier: will_read hints), the gradients are retired (the bucket holds
//    them now), and a non-blocking sum over the ranks starts on the bucket,
//    which stays pinned while MPI owns it;
//  - the trainer lets the started sums progress between backward kernels;
//  - finish() waits for the sums, in order, and a second kernel unpacks
//    each bucket divided by the rank count into new gradient tensors
//    (will_write hints), which the SGD update then reads.
// In a dry run the kernels and hints are the same and nothing is sent.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cachedarrays/nn/communicator.hpp"
#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn {

/// The bucketed, overlapped gradient averaging of data-parallel training
/// (see the file comment): the trainer hands each parameter's gradient over
/// with ready() as the backward pass makes it final, calls progress() between
/// backward kernels, and collects the averages with finish().
class GradientBuckets {
 public:
  /// One parameter whose gradient is averaged, and its size.
  struct Member {
    ValueId parameter;      ///< the parameter's value in the graph
    std::int64_t elements;  ///< its gradient's logical elements
  };
  /// What the buckets did, summed over the steps so far.
  struct Counters {
    std::uint64_t steps = 0;     ///< finish() calls
    std::uint64_t buckets = 0;   ///< sums started
    std::uint64_t bytes = 0;     ///< bytes summed (each rank's share of the message)
    double seconds_waiting = 0;  ///< blocked in finish(): the sums' part that did not overlap the backward pass
  };

  /// Groups `ready_order` into buckets of about `bucket_bytes` each.
  /// `ready_order`: the parameters in the order their gradients become
  /// final (Trainer: backward order). `ctx` runs the packing kernels and
  /// `communicator` the sums; both must outlive this. Throws
  /// invalid_argument for a zero bucket size.
  GradientBuckets(Context& ctx, Communicator& communicator, std::vector<Member> ready_order,
                  std::uint64_t bucket_bytes);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// The gradient of `parameter` (grads[parameter], taken from there) is
  /// final; a bucket whose gradients are all final starts its sum. The
  /// parameters must come in ready order: throws invalid_operation for one
  /// out of order or without a gradient.
  void ready(ValueId parameter, std::vector<Tensor>& grads);
  /// Moves the started sums on (between backward kernels).
  void progress();
  /// Waits for every sum and puts each parameter's averaged gradient into
  /// grads[parameter]. Throws invalid_operation if a bucket never started
  /// (a gradient was not made this step).
  void finish(std::vector<Tensor>& grads);

  /// The number of buckets.
  [[nodiscard]] std::size_t bucket_count() const noexcept { return buckets_.size(); }
  /// The parameters of bucket i, in packing order (std::out_of_range for a
  /// bucket that does not exist).
  [[nodiscard]] std::vector<ValueId> bucket_members(std::size_t i) const;
  /// What the buckets did so far (Counters).
  [[nodiscard]] const Counters& counters() const noexcept { return counters_; }

 private:
  struct Bucket {
    std::vector<std::size_t> members;       // indices into members_
    std::int64_t elements = 0;              // planned (the layouts' padding may add some)
    std::size_t ready = 0;                  // members final so far this step
    Tensor tensor;                          // the packed gradients, from the start of the sum to finish()
    std::vector<dnnl::memory::desc> descs;  // of the packed gradients
    std::optional<WriteAccess<float>> pin;  // held while MPI owns the data
    Communicator::Request request = 0;
  };
  // Packs the bucket's gradients (taken from grads) and starts their sum.
  void start(Bucket& bucket, std::vector<Tensor>& grads);

  Context& ctx_;
  Communicator& communicator_;
  std::vector<Member> members_;
  std::vector<std::size_t> bucket_of_;  // by member index
  std::vector<Bucket> buckets_;
  std::size_t next_member_ = 0;  // the member expected next
  Counters counters_;
};

}  // namespace cachedarrays::nn
