// A training graph: values (inputs, labels, parameters, activations) and
// nodes (ops) in the order the forward pass runs them. The node list is the
// autodiff tape: backward walks it in reverse. Because the graph is known
// before it runs, every value's last use is known too, which is where the
// trainer's archive and retire hints come from (paper III-E).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/nn/op.hpp"

namespace cachedarrays::nn {

using ValueId = std::int32_t;

enum class ValueRole { input, label, parameter, activation };

// How a parameter starts (as PyTorch initialises the same layers).
enum class Init {
  zeros,
  ones,
  kaiming_normal,  // N(0, 2 / fan_in): convolutions
  uniform_fan_in,  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): linear weights and biases
};

struct ValueInfo {
  std::string name;
  Dims dims;
  ValueRole role = ValueRole::activation;
  Init init = Init::zeros;
  std::int64_t fan_in = 0;
  int producer = -1;           // node index, -1 for inputs/labels/parameters
  std::vector<int> consumers;  // node indices, in forward order
};

struct Node {
  std::string name;
  std::unique_ptr<Op> op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // The outputs are not kept for the backward pass: the trainer drops them
  // after their last forward use and runs this node's forward again when a
  // backward op needs them. For cheap ops with large outputs, such as the
  // concatenation, batch norm and ReLU that open a DenseNet layer
  // (memory-efficient DenseNet, Pleiss et al. 2017, section 4).
  bool recompute = false;
};

class Graph {
 public:
  ValueId input(std::string name, Dims dims);
  ValueId label(std::string name, Dims dims);
  ValueId parameter(std::string name, Dims dims, Init init, std::int64_t fan_in = 0);
  // Appends a node; output shapes come from op->output_dims.
  std::vector<ValueId> add(std::string name, std::unique_ptr<Op> op, std::vector<ValueId> inputs);
  ValueId add1(std::string name, std::unique_ptr<Op> op, std::vector<ValueId> inputs) {
    return add(std::move(name), std::move(op), std::move(inputs)).at(0);
  }
  // The scalar the trainer minimises (output of softmax_cross_entropy).
  void set_loss(ValueId loss);
  // Marks the node that produces `v` as recomputed in the backward pass
  // (Node::recompute). Throws invalid_argument for a value no node produces.
  void recompute_in_backward(ValueId v);

  // Throws invalid_argument for an id this graph does not have.
  [[nodiscard]] const ValueInfo& value(ValueId id) const;
  [[nodiscard]] std::size_t value_count() const noexcept { return values_.size(); }
  [[nodiscard]] const std::vector<Node>& nodes() const noexcept { return nodes_; }
  [[nodiscard]] std::vector<Node>& nodes() noexcept { return nodes_; }
  [[nodiscard]] ValueId loss() const noexcept { return loss_; }
  [[nodiscard]] std::vector<ValueId> values_with_role(ValueRole role) const;
  // Number of trainable scalars (the figure papers publish).
  [[nodiscard]] std::int64_t parameter_count() const;

 private:
  ValueId new_value(ValueInfo info);
  std::vector<ValueInfo> values_;
  std::vector<Node> nodes_;
  ValueId loss_ = -1;
};

}  // namespace cachedarrays::nn
