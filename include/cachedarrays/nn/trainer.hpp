// Trains a Graph with SGD, running every kernel through the runtime and
// emitting the paper's hints by itself (III-E). What it keeps for the
// backward pass is only what each backward op reads (Op::backward_reads_*);
// an op may compute in place over an input nothing reads afterwards
// (Op::in_place_input); outputs of Node::recompute nodes are not kept but
// recomputed in the backward pass. The hints:
//  - before each kernel: will_read on inputs, will_write on outputs (done by
//    Context::execute, which pins them for the kernel's duration);
//  - after each forward kernel: archive on its parameters and on the
//    activations only the backward pass still needs;
//  - retire on every tensor right after its last use — forward-only values
//    after their last forward consumer, the others after the last backward
//    op that reads them, gradients as soon as they have been consumed, and
//    parameter gradients after the optimizer step. The last uses are
//    computed from the graph (the tape), so ResNet and DenseNet need no
//    hand-written annotation.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/checkpoint.hpp"
#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/data_parallel.hpp"
#include "cachedarrays/nn/gradient_buckets.hpp"
#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::nn {

/// The SGD update, as PyTorch's torch.optim.SGD with momentum and weight
/// decay: `m = momentum * m + (g + weight_decay * w); w -= learning_rate * m`.
struct SgdOptions {
  float learning_rate = 0.01f;  ///< the step size (Trainer::set_learning_rate changes it)
  float momentum = 0.9f;        ///< the momentum buffer's decay per step
  float weight_decay = 1e-4f;   ///< L2 penalty, added to the gradient as weight_decay * w
};

/// The AdamW update (Loshchilov & Hutter, "Decoupled Weight Decay
/// Regularization", algorithm 2), as torch.optim.AdamW computes it: with t
/// the step (from 1), w *= 1 - lr * weight_decay; m = beta1 m + (1 - beta1) g;
/// v = beta2 v + (1 - beta2) g^2; w -= lr / (1 - beta1^t) * m /
/// (sqrt(v) / sqrt(1 - beta2^t) + epsilon). The decay is decoupled from the
/// gradient and applies only to the parameters whose ValueInfo::weight_decay
/// is set (weights, not biases, normalisation or embeddings).
struct AdamWOptions {
  float learning_rate = 1e-3f;  ///< the step size (Trainer::set_learning_rate changes it)
  float beta1 = 0.9f;           ///< decay of the first moment (the gradients' mean) per step
  float beta2 = 0.999f;         ///< decay of the second moment (the squared gradients' mean) per step
  float epsilon = 1e-8f;        ///< added to the denominator
  float weight_decay = 0.05f;   ///< decoupled: w shrinks by lr * weight_decay each step
};

/// Which update a Trainer applies after the backward pass.
enum class Optimizer {
  sgd,    ///< SgdOptions: one momentum tensor per parameter
  adamw,  ///< AdamWOptions: two moment tensors per parameter, archived after each update
};

/// The optimizer's name on command lines and in logs: "sgd", "adamw".
[[nodiscard]] std::string optimizer_name(Optimizer optimizer);
/// The optimizer named `name` ("sgd" or "adamw"). Throws invalid_argument
/// naming the allowed names.
[[nodiscard]] Optimizer parse_optimizer(std::string_view name);

/// How a Trainer trains: the optimizer, the seed of the parameters, data
/// parallelism, and where parameters are updated and kept.
struct TrainerOptions {
  Optimizer optimizer = Optimizer::sgd;  ///< which update runs; its options are `sgd` or `adamw`
  SgdOptions sgd;                        ///< the SGD update's settings
  AdamWOptions adamw;                    ///< the AdamW update's settings
  std::uint64_t seed = 1;                ///< parameter initialisation
  /// Data-parallel training over the communicator's ranks (data_parallel.hpp):
  /// the graph is built for one rank's shard of the global batch, and every
  /// rank constructs its trainer, steps and resumes in the same order.
  DataParallelOptions data_parallel;
  /// Each parameter's SGD update runs right after the backward step that
  /// makes its gradient final (the backward of its first consumer), not all
  /// together after the backward pass: a gradient then lives one layer, from
  /// its making to its update, instead of to the iteration's end, and the
  /// update finds the weight where its backward just used it (PyTorch's
  /// optimizer-in-backward, torch.distributed.optim._apply_optimizer_in_backward).
  /// The same arithmetic on the same values: the losses are bit-identical
  /// either way. Data-parallel training updates at the end whatever this
  /// says: its gradients are summed over the ranks first.
  bool update_in_backward = true;
  /// Each parameter (with its momentum and gradient) is kept in the layout
  /// most of its op's primitives use (Op::parameter_desc: oneDNN's blocked
  /// layouts for convolution weights), chosen once before it is made, not
  /// plain: the primitives that share it read and write it as it is, with
  /// no reorder each iteration (kept plain, VGG-16's large classifier weight
  /// would be reordered three times an iteration). Checkpoints, parameter()
  /// and load_state() see plain values either way, and the losses are
  /// bit-identical (reorders only move values).
  bool parameters_in_primitive_layout = true;
};

/// When each value dies and which ones the backward pass reads: computed
/// once from the graph.
struct Liveness {
  /// Node after whose forward kernel the value is no longer needed by the
  /// forward pass (-1: never used in forward).
  std::vector<int> last_forward_use;
  /// Smallest node index whose backward reads the value (-1: none); since
  /// backward runs nodes in reverse, this is the value's last backward use.
  /// A recomputation (below) reads its node's inputs at the backward step
  /// where it runs, and counts as a use there.
  std::vector<int> last_backward_use;
  /// Largest such node index (-1: none): the value's first backward use,
  /// where a recomputed value is made again.
  std::vector<int> first_backward_use;
  /// Values that need a gradient (parameters and what depends on them).
  std::vector<bool> needs_grad;
  /// Outputs of Node::recompute nodes: retired after their last forward use
  /// even when a backward op reads them, and recomputed at their first
  /// backward use.
  std::vector<bool> recompute;
  /// Read by some op's backward itself (recomputations aside).
  std::vector<bool> read_by_backward;

  /// The liveness of `graph`'s values, each vector indexed by ValueId.
  static Liveness of(const Graph& graph);
};

/// Trains a Graph with SGD (see the file comment), running every kernel
/// through the runtime and emitting the paper's hints by itself: will_read
/// and will_write before each kernel, archive on what only the backward pass
/// still needs, retire right after each tensor's last use.
class Trainer {
 public:
  /// Makes the parameters (initialised from options.seed) and, data
  /// parallel, the gradient buckets, and broadcasts rank 0's state.
  /// `runtime` nullptr: a shape-only dry run (no memory, no kernels);
  /// `run_kernels` false: a dry run that allocates (see Context). Throws
  /// invalid_argument for a graph without a loss, or without exactly one
  /// input and one label value.
  Trainer(Runtime* runtime, Graph graph, TrainerOptions options = {}, bool run_kernels = true);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Forward, backward and SGD update on one batch; returns the loss (each
  /// parameter updated in the backward pass, or after it:
  /// TrainerOptions::update_in_backward). The
  /// spans hold the batch in NCHW order and the labels as class indices.
  /// Batch norm normalises with the batch's statistics and updates its
  /// running ones. Data parallel: the batch is this rank's shard, the
  /// gradients are averaged over the ranks before the update, and the loss
  /// returned is the mean over the ranks (the global batch's).
  float step(std::span<const float> images, std::span<const float> labels);

  /// What evaluate() found on one batch; sum them over batches for a test set.
  struct Evaluation {
    double loss_sum = 0;       ///< cross-entropy summed over the counted samples (from the logits, in double)
    std::int64_t correct = 0;  ///< counted samples whose largest logit is their label's
    std::int64_t samples = 0;  ///< counted samples
  };
  /// Forward only, as a model is tested: batch norm normalises with its
  /// running statistics, no gradient is made, nothing is updated; the hints
  /// are emitted as in training (each value retired after its last use).
  /// Of the batch, the first `valid` samples count (the rest pads a last
  /// partial batch to the graph's batch size; -1: all). Throws
  /// invalid_argument for `valid` above the batch size.
  Evaluation evaluate(std::span<const float> images, std::span<const float> labels, std::int64_t valid = -1);

  /// The learning rate of the next steps, the active optimizer's
  /// (learning-rate schedules set it before each step).
  [[nodiscard]] float learning_rate() const noexcept {
    return options_.optimizer == Optimizer::adamw ? options_.adamw.learning_rate : options_.sgd.learning_rate;
  }
  /// Sets the learning rate of the next steps. Throws invalid_argument
  /// unless it is finite and at least 0.
  void set_learning_rate(float learning_rate);

  /// Everything training carries from one step to the next, by name, in the
  /// graph's order: each parameter ("conv1.weight") and its optimizer state
  /// (SGD: its momentum, "conv1.weight.momentum"; AdamW: its moments,
  /// "conv1.weight.exp_avg" and "conv1.weight.exp_avg_sq", as PyTorch names
  /// them), the ops' buffers ("bn1.running_mean"), and for AdamW the steps
  /// taken, "optimizer.step" (its bias correction depends on it; a float, so
  /// exact to 2^24 steps). Resuming from them continues training exactly
  /// where it was.
  [[nodiscard]] std::vector<CheckpointTensor> state();
  /// Sets that state back. Throws invalid_argument naming the first tensor
  /// that is missing, unknown or of another shape; then nothing has changed.
  void load_state(const std::vector<CheckpointTensor>& state);

  /// Data parallel: rank `root`'s parameters, momentum and running
  /// statistics on every rank (done when the trainer is made; fit() does it
  /// again after rank 0 resumes a checkpoint). Collective: every rank calls
  /// it. Does nothing in a single-process run; throws invalid_argument for a
  /// root that is not a rank.
  void broadcast_state(int root);
  /// Where the optimizer's state was when the updates read it: bytes of the
  /// momentum (SGD) or of both moments (AdamW) on each device, indexed as
  /// Runtime::device_names(), summed over the update kernels of all steps,
  /// and the steps counted. Zero in a dry run (no kernel runs) and without a
  /// runtime.
  struct OptimizerStateTraffic {
    std::vector<std::uint64_t> bytes_by_device;  ///< by DeviceId
    std::uint64_t steps = 0;                     ///< step() calls counted
  };
  /// The optimizer state's bytes per device so far (OptimizerStateTraffic).
  [[nodiscard]] const OptimizerStateTraffic& optimizer_state_traffic() const noexcept { return state_traffic_; }
  /// The AdamW steps taken so far (its bias correction's t); 0 for SGD.
  [[nodiscard]] std::int64_t optimizer_steps() const noexcept { return optimizer_steps_; }

  /// The data parallelism's communicator (null: one process).
  [[nodiscard]] Communicator* communicator() const noexcept { return data_parallel_ ? communicator_ : nullptr; }
  /// The data parallelism's gradient buckets (null: one process).
  [[nodiscard]] const GradientBuckets* gradient_buckets() const noexcept { return buckets_.get(); }
  /// Seconds this trainer waited on the other ranks in steps (for the
  /// gradient sums and for the loss and running statistics): communication
  /// that did not overlap computation.
  [[nodiscard]] double seconds_waiting() const noexcept;

  /// The graph it trains.
  [[nodiscard]] const Graph& graph() const noexcept { return graph_; }
  /// The context its kernels run in (its runtime, primitives, observer).
  [[nodiscard]] Context& context() noexcept { return ctx_; }
  /// When each of the graph's values dies, computed once from the graph.
  [[nodiscard]] const Liveness& liveness() const noexcept { return liveness_; }
  /// A parameter's current values (plain layout, whatever layout it is kept
  /// in), by name. Throws invalid_argument for a name that is no parameter.
  [[nodiscard]] std::vector<float> parameter(const std::string& name);
  /// Tensors the trainer holds between iterations: parameters and their
  /// optimizer state (one momentum each for SGD, two moments for AdamW).
  [[nodiscard]] std::size_t persistent_tensors() const noexcept;

 private:
  void forward();
  void backward();
  // Node kk's backward kernel, handed the gradients of its outputs (null
  // where an output does not reach the loss), adding its inputs' gradients
  // into grads_.
  void backward_step(std::size_t kk, std::vector<Tensor>& grad_outs);
  // Adds `grad` into value v's gradient (taking it over when v has none).
  void add_gradient(ValueId v, Tensor& grad);
  // After backward step kk, run or not: retires what it was the last to
  // need, and hands on the parameter gradients it completed.
  void end_backward_step(std::size_t kk);
  // Runs node k's forward kernel: in the forward pass, or (`recompute_step`
  // >= 0) to remake outputs the backward step `recompute_step` needs.
  void run_forward(std::size_t k, int recompute_step);
  // Makes value v present for backward step `step`, recomputing it (and
  // whatever its node reads) if it was not kept.
  void make_present(ValueId v, int step);
  // Whether node k may write its output over its input `input`: nothing
  // reads that input's storage afterwards.
  [[nodiscard]] bool may_overwrite(std::size_t k, std::size_t input, bool recomputing) const;
  // The SGD update of every parameter whose gradient is still held.
  void update();
  // One parameter's update by the active optimizer; drops its gradient.
  void update_parameter(ValueId p);
  // The SGD and AdamW updates of parameter p with its gradient g.
  void sgd_update(ValueId p, const Tensor& g);
  void adamw_update(ValueId p, const Tensor& g);
  // Adds where the optimizer state tensors lie now (pinned) to state_traffic_.
  void count_state_traffic(std::initializer_list<const Tensor*> state);
  // Puts the batch into the graph's input and label values.
  void set_inputs(std::span<const float> images, std::span<const float> labels);
  // The ops' buffers, named "<node>.<buffer>", in the graph's order.
  [[nodiscard]] std::vector<std::pair<std::string, std::vector<float>*>> buffers();
  // state()'s names and shapes, without values.
  [[nodiscard]] std::vector<CheckpointTensor> state_shapes();
  // The layout each parameter is kept in (by ValueId; empty for other
  // values): TrainerOptions::parameters_in_primitive_layout, found by one
  // shape-only walk of the forward pass (Context::ShapeOnly).
  [[nodiscard]] std::vector<dnnl::memory::desc> parameter_layouts();
  void initialise_parameters(std::uint64_t seed, const std::vector<dnnl::memory::desc>& layouts);
  // grad_final_at_ from the graph.
  void find_final_gradients();
  // Data parallel: the buckets, in the order the gradients become final.
  void plan_gradient_buckets();
  // Data parallel: starts the sum of the loss and the running statistics
  // (after the forward pass) / waits for it and sets their means.
  void start_step_sums(float loss);
  float finish_step_sums();

  Context ctx_;
  Graph graph_;
  TrainerOptions options_;
  Liveness liveness_;
  std::vector<Tensor> values_;         // by ValueId; empty once dead
  std::vector<Tensor> grads_;          // by ValueId; activation and parameter gradients
  std::vector<Tensor> momentum_;       // by ValueId; parameters only: SGD's momentum, AdamW's first moment
  std::vector<Tensor> second_moment_;  // by ValueId; parameters only, AdamW alone
  std::int64_t optimizer_steps_ = 0;   // AdamW's t
  OptimizerStateTraffic state_traffic_;
  std::vector<std::vector<Tensor>> saved_;              // by node
  std::vector<std::vector<ValueId>> dies_in_backward_;  // by node: values whose last backward use it is
  std::vector<ValueId> parameters_;
  // Data parallelism (more than one rank).
  Communicator* communicator_ = nullptr;
  bool data_parallel_ = false;
  std::unique_ptr<GradientBuckets> buckets_;
  std::vector<std::vector<ValueId>> grad_final_at_;  // by node: parameters whose gradient its backward completes
  std::vector<double> step_sums_;                    // the loss, then every running statistic
  Communicator::Request step_sums_request_ = 0;
  double seconds_waiting_ = 0;  // for the step sums
};

/// The fast-tier capacity that holds all of training (parameters, momentum,
/// activations, gradients, scratchpad, alignment included): found by a dry
/// run of two iterations that allocates every tensor on a virtual heap but
/// runs no kernel. It is the peak extent of the heap, not the peak of live
/// bytes, because the holes frees leave are part of what a heap must hold
/// (all-fast fits in exactly this much). `build` makes the graph (graphs are
/// move-only).
/// `options` (its data parallelism) shapes the iteration: a data-parallel
/// trainer adds the bucket kernels; nothing is sent in a dry run.
[[nodiscard]] std::uint64_t measure_footprint(const std::function<Graph()>& build, const TrainerOptions& options = {});

/// The program of one training iteration (plan/program/program.hpp) from a dry run of
/// two iterations on a virtual heap, each a step() and then Runtime::collect()
/// as a training loop runs them: the second, the steady state every later
/// iteration repeats. It equals the program a real run records
/// (Runtime::record_program) from its second iteration on; hand it to a
/// runtime with Runtime::set_program before training.
[[nodiscard]] plan::Program dry_run_program(const std::function<Graph()>& build, const TrainerOptions& options = {});

/// Training iterations as a trace for the replay simulator (sim/
/// replay.hpp, sim/capacity_plan.hpp): the application events of a dry run on
/// a virtual heap from the trainer's construction (parameters created) through
/// `iterations` step()s, each followed by collect(), to the trainer's end
/// (everything retired). The events do not depend on the policy, so one trace
/// replays under any. Five iterations give the replay its steady state (sim/
/// replay.hpp steady_window: the third and fourth, after a cold first one and
/// a second that starts from it, before a last one that nothing follows).
/// Throws invalid_argument for 0 iterations.
[[nodiscard]] Trace dry_run_trace(const std::function<Graph()>& build, const TrainerOptions& options = {},
                                  std::uint32_t iterations = 1);
/// The iterations of a dry_run_trace() whose replay models the steady
/// state: what cachedarrays-plan and bench/paper_reproduction replay and plan.
inline constexpr std::uint32_t steady_trace_iterations = 5;
/// The iteration of such a trace whose program the planning policies are
/// given (Program::from_trace's number; every iteration from the second on
/// is the same).
inline constexpr std::uint32_t steady_trace_iteration = 2;

}  // namespace cachedarrays::nn
