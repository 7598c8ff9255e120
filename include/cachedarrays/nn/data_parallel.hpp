// Data-parallel training: K ranks (processes, each with its own Runtime and
// memory tiers) train one model on a global batch split evenly among them,
// as PyTorch's DistributedDataParallel does (Li et al., VLDB 2020):
//  - parameters, momentum and batch-norm running statistics start the same
//    on every rank: rank 0's are broadcast when the trainer is made (and
//    after a checkpoint is resumed);
//  - each rank runs forward and backward on its shard of the batch; the
//    parameter gradients are summed over the ranks and divided by K in
//    buckets (nn/gradient_buckets.hpp) that start while the backward pass
//    is still running, so the sums overlap the later layers' backward
//    kernels; every rank then makes the same SGD update, so the parameters
//    stay bit-identical;
//  - the loss each step reports is the mean over the ranks, which is the
//    global batch's mean loss;
//  - batch norm normalises each shard with that shard's statistics, as DDP
//    does without SyncBatchNorm; the running statistics are averaged over
//    the ranks every step (for the running mean that is exactly the global
//    batch's; for the variance the mean of the shards' variances).
// Which memory tier a gradient is on stays each rank's business: packing
// and unpacking the buckets are runtime kernels with will_read / will_write
// hints, and a bucket is pinned while MPI sums it.
#pragma once

#include <cstdint>

#include "cachedarrays/nn/communicator.hpp"

namespace cachedarrays::nn {

/// How a Trainer trains data-parallel (see the file comment): over which
/// ranks, and in what size of gradient buckets. The default is a single
/// process.
struct DataParallelOptions {
  /// The world of ranks (null, or one rank: an ordinary single-process run).
  /// Not owned; must outlive the trainer.
  Communicator* communicator = nullptr;
  /// Gradients are summed in buckets of about this many bytes, filled in
  /// the order the backward pass makes them final. Smaller buckets start
  /// sooner (more overlap), larger ones cost fewer messages.
  std::uint64_t bucket_bytes = std::uint64_t{4} << 20;

  /// The number of ranks: the communicator's size, or 1 without one.
  [[nodiscard]] int ranks() const noexcept { return communicator != nullptr ? communicator->size() : 1; }
};

/// Each rank's share of a global batch of `global_batch` samples over
/// `ranks` ranks. Throws invalid_argument unless it splits evenly: a rank
/// with one sample more would weigh its samples less in the average.
[[nodiscard]] std::int64_t shard_batch(std::int64_t global_batch, int ranks);

}  // namespace cachedarrays::nn
