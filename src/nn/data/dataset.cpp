// What every dataset shares: the virtual destructor, the checks of the
// spans it is handed, and the small helpers of its error messages.
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

Dataset::~Dataset() = default;

namespace detail {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

std::string_view split_name(Split split) { return split == Split::train ? "training" : "test"; }

std::int64_t checked_batch_size(std::span<const float> images, std::span<const float> labels, const Dims& image_dims,
                                std::string_view dataset) {
  const std::int64_t per_image = element_count(image_dims);
  const auto batch = static_cast<std::int64_t>(labels.size());
  if (batch < 1 || static_cast<std::int64_t>(images.size()) != batch * per_image) {
    throw invalid_argument("cachedarrays::nn: next_batch of " + std::string(dataset) + " got room for " +
                           std::to_string(images.size()) + " image floats and " + std::to_string(labels.size()) +
                           " labels; a batch of N images needs N labels (N >= 1) and N * " + std::to_string(per_image) +
                           " floats");
  }
  return batch;
}

void check_sample(std::int64_t index, std::span<const float> image, std::int64_t size, const Dims& image_dims,
                  std::string_view dataset) {
  if (index < 0 || index >= size) {
    throw invalid_argument("cachedarrays::nn: " + std::string(dataset) + " has no sample " + std::to_string(index) +
                           "; its samples are 0 to " + std::to_string(size - 1));
  }
  const std::int64_t per_image = element_count(image_dims);
  if (static_cast<std::int64_t>(image.size()) != per_image) {
    throw invalid_argument("cachedarrays::nn: sample " + std::to_string(index) + " of " + std::string(dataset) +
                           " got room for " + std::to_string(image.size()) + " floats; one " +
                           nn::to_string(image_dims) + " image is " + std::to_string(per_image) + " floats");
  }
}

}  // namespace detail

}  // namespace cachedarrays::nn
