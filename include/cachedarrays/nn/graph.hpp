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

/// A value's index in its Graph, in the order values were added (-1: none).
using ValueId = std::int32_t;

/// What a value is: a batch input, the labels, a trained parameter, or an
/// activation some node computes.
enum class ValueRole { input, label, parameter, activation };

/// How a parameter starts (as PyTorch initialises the same layers).
enum class Init {
  zeros,           ///< all 0 (batch-norm shifts)
  ones,            ///< all 1 (batch-norm scales)
  kaiming_normal,  ///< N(0, 2 / fan_in): convolutions
  uniform_fan_in,  ///< U(-1/sqrt(fan_in), 1/sqrt(fan_in)): linear weights and biases
  /// N(0, 0.02^2): a transformer's linear weights and position embedding,
  /// as timm's trunc_normal_(std=0.02), whose bounds at +-2 lie 100 standard
  /// deviations out (so it is a normal in effect).
  small_normal,
};

/// One value of a Graph: its name, shape, role and, for a parameter, how it
/// starts; and which nodes make and read it.
struct ValueInfo {
  std::string name;                        ///< for messages; a parameter's is its name in checkpoints ("conv1.weight")
  Dims dims;                               ///< its shape, every dimension positive
  ValueRole role = ValueRole::activation;  ///< what the value is
  Init init = Init::zeros;                 ///< parameters only: how it starts
  std::int64_t fan_in = 0;                 ///< parameters only: the fan-in `init` scales by
  /// Parameters only: whether AdamW's decoupled weight decay shrinks it.
  /// Weights decay; biases, normalisation scales and shifts, and embeddings
  /// do not (timm's rule: parameters of rank 1 and no_weight_decay()).
  /// Graph::parameter sets it by rank; Graph::exclude_from_weight_decay
  /// clears it. SGD's L2 penalty applies to every parameter, as in PyTorch.
  bool weight_decay = false;
  int producer = -1;           ///< node index, -1 for inputs/labels/parameters
  std::vector<int> consumers;  ///< node indices, in forward order
};

/// One node of a Graph: an op applied to values, making new ones.
struct Node {
  std::string name;              ///< the layer's name ("layer1.0.conv1"); its outputs are named after it
  std::unique_ptr<Op> op;        ///< what it computes
  std::vector<ValueId> inputs;   ///< in the order the op takes them (parameters included)
  std::vector<ValueId> outputs;  ///< values it makes, in the op's order
  /// The outputs are not kept for the backward pass: the trainer drops them
  /// after their last forward use and runs this node's forward again when a
  /// backward op needs them. For cheap ops with large outputs, such as the
  /// concatenation, batch norm and ReLU that open a DenseNet layer
  /// (memory-efficient DenseNet, Pleiss et al. 2017, section 4).
  bool recompute = false;
};

/// A training graph (see the file comment): values and the nodes that make
/// them, in forward order. Built by the layer builders (layers.hpp) and
/// build_model(); shapes only, no memory. Move-only, as its nodes own their
/// ops.
class Graph {
 public:
  /// Adds a batch input (the images) of shape `dims`. Throws
  /// invalid_argument for a dimension below 1, as every adder does.
  ValueId input(std::string name, Dims dims);
  /// Adds the labels (class indices as floats) of shape `dims`.
  ValueId label(std::string name, Dims dims);
  /// Adds a trained parameter of shape `dims`, started by `init` (with
  /// `fan_in` for the fan-in scaled ones).
  ValueId parameter(std::string name, Dims dims, Init init, std::int64_t fan_in = 0);
  /// Appends a node applying `op` to `inputs`; output shapes come from
  /// op->output_dims, and outputs are named `name` (one) or "name.0",
  /// "name.1", ... Returns the outputs. Throws invalid_argument for an input
  /// the graph does not have or shapes the op refuses.
  std::vector<ValueId> add(std::string name, std::unique_ptr<Op> op, std::vector<ValueId> inputs);
  /// add() for an op with one output: returns that output.
  ValueId add1(std::string name, std::unique_ptr<Op> op, std::vector<ValueId> inputs) {
    return add(std::move(name), std::move(op), std::move(inputs)).at(0);
  }
  /// Sets the scalar the trainer minimises (output of softmax_cross_entropy).
  /// Throws invalid_argument unless `loss` is a value of shape [1].
  void set_loss(ValueId loss);
  /// Keeps parameter `p` out of AdamW's weight decay (an embedding).
  /// Throws invalid_argument for a value that is not a parameter.
  void exclude_from_weight_decay(ValueId p);
  /// Marks the node that produces `v` as recomputed in the backward pass
  /// (Node::recompute). Throws invalid_argument for a value no node produces.
  void recompute_in_backward(ValueId v);

  /// The value `id`. Throws invalid_argument for an id this graph does not have.
  [[nodiscard]] const ValueInfo& value(ValueId id) const;
  /// The number of values; their ids are 0 to value_count() - 1.
  [[nodiscard]] std::size_t value_count() const noexcept { return values_.size(); }
  /// The nodes in forward order: the autodiff tape.
  [[nodiscard]] const std::vector<Node>& nodes() const noexcept { return nodes_; }
  /// The nodes in forward order, to change (Node::recompute).
  [[nodiscard]] std::vector<Node>& nodes() noexcept { return nodes_; }
  /// The value set_loss() set (-1: none yet).
  [[nodiscard]] ValueId loss() const noexcept { return loss_; }
  /// The ids of the values of this role, ascending.
  [[nodiscard]] std::vector<ValueId> values_with_role(ValueRole role) const;
  /// Number of trainable scalars (the figure papers publish).
  [[nodiscard]] std::int64_t parameter_count() const;

 private:
  ValueId new_value(ValueInfo info);
  std::vector<ValueInfo> values_;
  std::vector<Node> nodes_;
  ValueId loss_ = -1;
};

}  // namespace cachedarrays::nn
