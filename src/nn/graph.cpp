#include "cachedarrays/nn/graph.hpp"

#include <functional>
#include <numeric>

namespace cachedarrays::nn {

ValueId Graph::new_value(ValueInfo info) {
  for (std::int64_t d : info.dims) {
    if (d <= 0) {
      throw invalid_argument("cachedarrays::nn: value '" + info.name + "' would have a dimension of " +
                             std::to_string(d) +
                             "; every dimension must be positive (is the image too small "
                             "for this many downsampling layers?)");
    }
  }
  values_.push_back(std::move(info));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::input(std::string name, Dims dims) {
  return new_value({std::move(name), std::move(dims), ValueRole::input, Init::zeros, 0, false, -1, {}});
}

ValueId Graph::label(std::string name, Dims dims) {
  return new_value({std::move(name), std::move(dims), ValueRole::label, Init::zeros, 0, false, -1, {}});
}

ValueId Graph::parameter(std::string name, Dims dims, Init init, std::int64_t fan_in) {
  const bool decays = dims.size() >= 2;
  return new_value({std::move(name), std::move(dims), ValueRole::parameter, init, fan_in, decays, -1, {}});
}

std::vector<ValueId> Graph::add(std::string name, std::unique_ptr<Op> op, std::vector<ValueId> inputs) {
  std::vector<Dims> in_dims;
  for (ValueId v : inputs) {
    if (v < 0 || static_cast<std::size_t>(v) >= values_.size()) {
      throw invalid_argument("cachedarrays::nn: node '" + name + "' names value " + std::to_string(v) +
                             ", which this graph does not have");
    }
    in_dims.push_back(values_[static_cast<std::size_t>(v)].dims);
  }
  const std::vector<Dims> out_dims = op->output_dims(in_dims);
  const int index = static_cast<int>(nodes_.size());
  std::vector<ValueId> outputs;
  for (std::size_t i = 0; i < out_dims.size(); ++i) {
    const std::string value_name = out_dims.size() == 1 ? name : name + "." + std::to_string(i);
    outputs.push_back(new_value({value_name, out_dims[i], ValueRole::activation, Init::zeros, 0, false, index, {}}));
  }
  for (ValueId v : inputs) values_[static_cast<std::size_t>(v)].consumers.push_back(index);
  nodes_.push_back({std::move(name), std::move(op), std::move(inputs), outputs, false});
  return outputs;
}

const ValueInfo& Graph::value(ValueId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= values_.size()) {
    throw invalid_argument("cachedarrays::nn: value " + std::to_string(id) + " does not exist; this graph has " +
                           std::to_string(values_.size()) + " values (ids 0.." +
                           std::to_string(static_cast<long long>(values_.size()) - 1) + ")");
  }
  return values_[static_cast<std::size_t>(id)];
}

void Graph::set_loss(ValueId loss) {
  if (loss < 0 || static_cast<std::size_t>(loss) >= values_.size() || value(loss).dims != Dims{1}) {
    throw invalid_argument("cachedarrays::nn: the loss must be a value of shape [1] of this graph");
  }
  loss_ = loss;
}

void Graph::exclude_from_weight_decay(ValueId p) {
  const ValueInfo& info = value(p);
  if (info.role != ValueRole::parameter) {
    throw invalid_argument("cachedarrays::nn: '" + info.name + "' is not a parameter; only parameters decay");
  }
  values_[static_cast<std::size_t>(p)].weight_decay = false;
}

void Graph::recompute_in_backward(ValueId v) {
  const ValueInfo& info = value(v);
  if (info.producer < 0) {
    throw invalid_argument("cachedarrays::nn: '" + info.name +
                           "' is not the output of a node (an input, label or "
                           "parameter), so there is nothing to recompute");
  }
  nodes_[static_cast<std::size_t>(info.producer)].recompute = true;
}

std::vector<ValueId> Graph::values_with_role(ValueRole role) const {
  std::vector<ValueId> ids;
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (values_[i].role == role) ids.push_back(static_cast<ValueId>(i));
  return ids;
}

std::int64_t Graph::parameter_count() const {
  std::int64_t total = 0;
  for (const ValueInfo& v : values_) {
    if (v.role != ValueRole::parameter) continue;
    total += std::accumulate(v.dims.begin(), v.dims.end(), std::int64_t{1}, std::multiplies<>());
  }
  return total;
}

}  // namespace cachedarrays::nn
