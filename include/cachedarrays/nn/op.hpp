// One operator of the trainer: shape inference, forward, and backward, the
// latter two through oneDNN primitives run by Context::execute. Reverse-mode
// autodiff walks the graph's nodes backwards calling `backward`; no model
// has a hand-written backward pass.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn {

/// One operator of the trainer (see the file comment): shape inference,
/// forward and backward. Ops are made by the layer builders (layers.hpp) and
/// owned by the graph's nodes.
class Op {
 public:
  virtual ~Op();
  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  /// The op's kind, "conv", "batch_norm", "relu", ... (trace and error messages).
  [[nodiscard]] virtual std::string kind() const = 0;
  /// Output shapes for these input shapes; throws invalid_argument naming
  /// the op and the offending shape when they do not fit.
  [[nodiscard]] virtual std::vector<Dims> output_dims(std::span<const Dims> inputs) const = 0;
  /// Which of its `inputs` forward inputs `backward` reads, a flag for each.
  /// The trainer keeps exactly those alive until the op's backward has
  /// run (and archives them meanwhile); the others are retired after their
  /// last forward use.
  [[nodiscard]] virtual std::vector<bool> backward_reads_inputs(std::size_t inputs) const = 0;
  /// Which of its `outputs` forward outputs `backward` reads, a flag for
  /// each; kept and retired as for backward_reads_inputs().
  [[nodiscard]] virtual std::vector<bool> backward_reads_outputs(std::size_t outputs) const = 0;

  /// The input whose storage output 0 may take, computing in place (-1:
  /// none, the default). The trainer offers it only when nothing reads that
  /// input's storage after this op's forward kernel, neither a later forward
  /// op nor a backward op (one may read a recomputed copy), as nGraph and
  /// PyTorch's inplace=True do for ReLU and residual adds.
  [[nodiscard]] virtual int in_place_input() const { return -1; }

  /// State the op keeps across iterations that is no parameter and gets no
  /// gradient (batch norm's running mean and variance), which the trainer
  /// saves in and restores from checkpoints. It lives on the host, not in the
  /// runtime: it is a few floats per channel, and a tensor of its own would
  /// add an object to every iteration's program.
  struct Buffer {
    std::string name;            ///< unique within the op ("running_mean")
    std::vector<float>* values;  ///< the op's own values, read and written in place
  };
  /// The op's buffers (Buffer), in a fixed order; none by default.
  [[nodiscard]] virtual std::vector<Buffer> buffers() { return {}; }

  /// The layout the trainer keeps parameter input `input` in (its values,
  /// momentum and gradient), given every input as the forward pass hands it
  /// over (shape-only tensors: only their descriptors count). An op whose
  /// primitives want the parameter in a layout of their own returns the one
  /// most of them use, so that the fewest reorders run each iteration
  /// (convolution: the forward and weight-gradient primitives share oneDNN's
  /// blocked layout, and only backward-data still reorders). Default: plain,
  /// what an element-wise op reads.
  [[nodiscard]] virtual dnnl::memory::desc parameter_desc(Context& ctx, std::span<const Tensor> inputs,
                                                          std::size_t input) const;

  /// Creates each outputs[i] (ctx.make with the layout the primitive chose)
  /// and computes it. Op-private tensors backward needs (batch-norm mean and
  /// variance, pooling workspace) go into `saved`. When outputs[0] is not
  /// empty on entry, it is the input in_place_input() names, offered for
  /// the result: the op writes there if the layouts agree and otherwise
  /// makes a new output (detail::writes_in_place). The trainer may also run
  /// forward a second time, in the backward pass, to recompute an output it
  /// did not keep (Node::recompute): it must give the same values again.
  virtual void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                       std::vector<Tensor>& saved) = 0;
  /// For every input i with need_grad[i], creates grad_inputs[i] (any layout)
  /// holding dLoss/dInput. grad_outputs[j] holds dLoss/dOutput j. Inputs and
  /// outputs that backward_reads_inputs() / backward_reads_outputs() did not
  /// ask for may be empty handles; `saved` is what forward put there. A
  /// grad_outputs[j] whose use_count() is 1 is the op's alone (the trainer
  /// hands its gradients over): the op may overwrite it, computing in place;
  /// one the op hands to an input as it is (add's) is shared and is not.
  virtual void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                        std::span<const Tensor> grad_outputs, std::vector<Tensor>& saved,
                        std::span<const bool> need_grad, std::span<Tensor> grad_inputs) = 0;
};

}  // namespace cachedarrays::nn
