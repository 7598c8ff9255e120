#include "cachedarrays/nn/data_parallel.hpp"

#include <string>

#include "cachedarrays/error.hpp"

namespace cachedarrays::nn {

std::int64_t shard_batch(std::int64_t global_batch, int ranks) {
  if (ranks < 1) {
    throw invalid_argument("cachedarrays::nn: " + std::to_string(ranks) + " ranks; data parallelism needs at least 1");
  }
  if (global_batch < ranks || global_batch % ranks != 0) {
    const std::int64_t below = global_batch / ranks * ranks;
    const std::int64_t above = below + ranks;
    throw invalid_argument("cachedarrays::nn: a global batch of " + std::to_string(global_batch) +
                           " samples does not split evenly over " + std::to_string(ranks) +
                           " ranks; use a multiple of " + std::to_string(ranks) + " (" +
                           (below > 0 ? std::to_string(below) + " or " : std::string()) + std::to_string(above) + ")");
  }
  return global_batch / ranks;
}

}  // namespace cachedarrays::nn
