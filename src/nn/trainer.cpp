#include "cachedarrays/nn/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>

namespace cachedarrays::nn {

namespace {

// The largest step count a float holds exactly (the checkpoint's).
constexpr float max_exact_steps = 16777216.0f;

// Archives a tensor's array: it is not needed for a while (paper III-E).
void archive(const Tensor& t) {
  if (t && t.array() != nullptr) t.array()->archive();
}

}  // namespace

Liveness Liveness::of(const Graph& graph) {
  const std::size_t n = graph.value_count();
  Liveness l;
  l.last_forward_use.assign(n, -1);
  l.last_backward_use.assign(n, -1);
  l.first_backward_use.assign(n, -1);
  l.needs_grad.assign(n, false);
  l.recompute.assign(n, false);
  l.read_by_backward.assign(n, false);
  const auto& nodes = graph.nodes();
  for (std::size_t v = 0; v < n; ++v) {
    l.needs_grad[v] = graph.value(static_cast<ValueId>(v)).role == ValueRole::parameter;
  }
  // Backward runs nodes in reverse, so the smallest reader is the last use
  // and the largest the first.
  const auto note = [&](ValueId id, int k) {
    const auto v = static_cast<std::size_t>(id);
    int& last = l.last_backward_use[v];
    last = last < 0 ? k : std::min(last, k);
    l.first_backward_use[v] = std::max(l.first_backward_use[v], k);
  };
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& node = nodes[k];
    bool any = false;
    for (ValueId v : node.inputs) {
      l.last_forward_use[static_cast<std::size_t>(v)] = static_cast<int>(k);
      any = any || l.needs_grad[static_cast<std::size_t>(v)];
    }
    for (ValueId v : node.outputs) {
      l.needs_grad[static_cast<std::size_t>(v)] = any;
      l.recompute[static_cast<std::size_t>(v)] = node.recompute;
    }
    if (!any) continue;  // this node's backward never runs
    const auto reads_in = node.op->backward_reads_inputs(node.inputs.size());
    const auto reads_out = node.op->backward_reads_outputs(node.outputs.size());
    const auto read = [&](ValueId v) {
      note(v, static_cast<int>(k));
      l.read_by_backward[static_cast<std::size_t>(v)] = true;
    };
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      if (reads_in[i]) read(node.inputs[i]);
    for (std::size_t j = 0; j < node.outputs.size(); ++j)
      if (reads_out[j]) read(node.outputs[j]);
  }
  // A recomputed node runs again at the first backward use of its outputs
  // and reads its inputs there. Its inputs come from earlier nodes, so one
  // pass from the last node back settles chains of recomputations (a
  // DenseNet layer's ReLU needs its batch norm, which needs the concat).
  for (std::size_t k = nodes.size(); k-- > 0;) {
    if (!nodes[k].recompute) continue;
    int when = -1;
    for (ValueId v : nodes[k].outputs) when = std::max(when, l.first_backward_use[static_cast<std::size_t>(v)]);
    if (when < 0) continue;
    for (ValueId v : nodes[k].inputs) note(v, when);
  }
  return l;
}

Trainer::Trainer(Runtime* runtime, Graph graph, TrainerOptions options, bool run_kernels)
    : ctx_(runtime, run_kernels), graph_(std::move(graph)), options_(options), liveness_(Liveness::of(graph_)) {
  if (graph_.loss() < 0) {
    throw invalid_argument(
        "cachedarrays::nn: the graph has no loss; call Graph::set_loss on the output of "
        "softmax_cross_entropy");
  }
  if (graph_.values_with_role(ValueRole::input).size() != 1 || graph_.values_with_role(ValueRole::label).size() != 1) {
    throw invalid_argument(
        "cachedarrays::nn: the trainer needs a graph with exactly one input (images) and one "
        "label value");
  }
  values_.resize(graph_.value_count());
  grads_.resize(graph_.value_count());
  momentum_.resize(graph_.value_count());
  second_moment_.resize(graph_.value_count());
  saved_.resize(graph_.nodes().size());
  dies_in_backward_.resize(graph_.nodes().size());
  for (std::size_t v = 0; v < graph_.value_count(); ++v) {
    const int last = liveness_.last_backward_use[v];
    const bool parameter = graph_.value(static_cast<ValueId>(v)).role == ValueRole::parameter;
    if (last >= 0 && !parameter) dies_in_backward_[static_cast<std::size_t>(last)].push_back(static_cast<ValueId>(v));
  }
  parameters_ = graph_.values_with_role(ValueRole::parameter);
  initialise_parameters(options_.seed, parameter_layouts());
  communicator_ = options_.data_parallel.communicator;
  data_parallel_ = options_.data_parallel.ranks() > 1;
  find_final_gradients();
  if (data_parallel_) {
    plan_gradient_buckets();
    broadcast_state(0);
  }
}

Trainer::~Trainer() = default;

namespace {

// The initial values of one parameter, drawn from its own stream so that
// they do not depend on the order parameters are visited in.
std::vector<float> draw_initial_values(const ValueInfo& info, std::int64_t elements, std::uint64_t seed, ValueId id) {
  std::vector<float> values(static_cast<std::size_t>(elements));
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(id));
  const double fan_in = static_cast<double>(std::max<std::int64_t>(info.fan_in, 1));
  switch (info.init) {
    case Init::zeros: std::fill(values.begin(), values.end(), 0.0f); break;
    case Init::ones: std::fill(values.begin(), values.end(), 1.0f); break;
    case Init::kaiming_normal: {
      std::normal_distribution<float> d(0.0f, static_cast<float>(std::sqrt(2.0 / fan_in)));
      for (float& x : values) x = d(rng);
      break;
    }
    case Init::small_normal: {
      std::normal_distribution<float> d(0.0f, 0.02f);
      for (float& x : values) x = d(rng);
      break;
    }
    case Init::uniform_fan_in: {
      const auto bound = static_cast<float>(1.0 / std::sqrt(fan_in));
      std::uniform_real_distribution<float> d(-bound, bound);
      for (float& x : values) x = d(rng);
      break;
    }
  }
  return values;
}

}  // namespace

std::vector<dnnl::memory::desc> Trainer::parameter_layouts() {
  std::vector<dnnl::memory::desc> layouts(graph_.value_count());
  for (ValueId p : parameters_) layouts[static_cast<std::size_t>(p)] = plain_desc(graph_.value(p).dims);
  if (!options_.parameters_in_primitive_layout) return layouts;
  // The forward pass once, shape-only: each op sees its inputs in the
  // layouts a real pass hands it (the previous ops' outputs, the layouts
  // already chosen for parameters), and its first consumer chooses a
  // parameter's layout (a shared parameter suits that op; the others
  // reorder it as they would a plain one).
  Context::ShapeOnly shape_only(ctx_);
  std::vector<Tensor> shapes(graph_.value_count());
  std::vector<bool> chosen(graph_.value_count(), false);
  for (std::size_t v = 0; v < shapes.size(); ++v) {
    const ValueInfo& info = graph_.value(static_cast<ValueId>(v));
    if (info.role != ValueRole::activation) shapes[v] = ctx_.make_plain(info.dims);
  }
  for (Node& node : graph_.nodes()) {
    std::vector<Tensor> ins;
    ins.reserve(node.inputs.size());
    for (ValueId v : node.inputs) ins.push_back(shapes[static_cast<std::size_t>(v)]);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const auto v = static_cast<std::size_t>(node.inputs[i]);
      if (graph_.value(node.inputs[i]).role != ValueRole::parameter || chosen[v]) continue;
      layouts[v] = node.op->parameter_desc(ctx_, ins, i);
      chosen[v] = true;
      ins[i] = shapes[v] = ctx_.make(layouts[v]);
    }
    std::vector<Tensor> outs(node.outputs.size());
    std::vector<Tensor> saved;
    node.op->forward(ctx_, ins, outs, saved);
    for (std::size_t j = 0; j < outs.size(); ++j) shapes[static_cast<std::size_t>(node.outputs[j])] = outs[j];
  }
  return layouts;
}

void Trainer::initialise_parameters(std::uint64_t seed, const std::vector<dnnl::memory::desc>& layouts) {
  for (ValueId p : parameters_) {
    const ValueInfo& info = graph_.value(p);
    const dnnl::memory::desc& layout = layouts[static_cast<std::size_t>(p)];
    Tensor w = ctx_.make(layout);
    // A dry run keeps no values: it emits the same hints and kernels but
    // skips drawing the numbers, otherwise most of a large model's dry run.
    // The values are drawn in plain order (write reorders them), so a
    // parameter starts the same whatever layout it is kept in.
    const std::vector<float> values =
        ctx_.dry_run() ? std::vector<float>{} : draw_initial_values(info, w.elements(), seed, p);
    ctx_.write(w, values);
    values_[static_cast<std::size_t>(p)] = std::move(w);
    Tensor m = ctx_.make(layout);
    ctx_.fill(m, 0.0f);  // the whole buffer, padding too if a layout had any
    momentum_[static_cast<std::size_t>(p)] = std::move(m);
    if (options_.optimizer == Optimizer::adamw) {
      Tensor v = ctx_.make(layout);
      ctx_.fill(v, 0.0f);
      second_moment_[static_cast<std::size_t>(p)] = std::move(v);
    }
  }
}

void Trainer::find_final_gradients() {
  // A parameter's gradient is final after the backward of its first
  // consumer, the last to run.
  const auto& nodes = graph_.nodes();
  grad_final_at_.assign(nodes.size(), {});
  for (std::size_t k = nodes.size(); k-- > 0;) {
    for (ValueId v : nodes[k].inputs) {
      const ValueInfo& info = graph_.value(v);
      if (info.role != ValueRole::parameter || info.consumers.empty()) continue;
      const int first = *std::min_element(info.consumers.begin(), info.consumers.end());
      auto& here = grad_final_at_[k];
      if (first != static_cast<int>(k) || std::find(here.begin(), here.end(), v) != here.end()) continue;
      here.push_back(v);
    }
  }
}

void Trainer::plan_gradient_buckets() {
  // The backward pass visits nodes from the last: the order the gradients
  // become final.
  std::vector<GradientBuckets::Member> order;
  for (std::size_t k = grad_final_at_.size(); k-- > 0;) {
    for (ValueId v : grad_final_at_[k]) order.push_back({v, element_count(graph_.value(v).dims)});
  }
  buckets_ =
      std::make_unique<GradientBuckets>(ctx_, *communicator_, std::move(order), options_.data_parallel.bucket_bytes);
}

void Trainer::broadcast_state(int root) {
  if (!data_parallel_) return;
  Communicator& comm = *communicator_;
  if (root < 0 || root >= comm.size()) {
    throw invalid_argument("cachedarrays::nn: broadcast_state from rank " + std::to_string(root) + " of " +
                           std::to_string(comm.size()) + "; the root must be a rank of the world");
  }
  // A kernel per tensor: the root reads its values where they lie, the
  // others write theirs (will_read / will_write, pinned while MPI copies).
  const auto broadcast = [&](Tensor& t, const std::string& what) {
    const KernelArg args[] = {comm.rank() == root ? in(DNNL_ARG_SRC, t) : out(DNNL_ARG_DST, t)};
    ctx_.run("broadcast", args, [&](std::span<float* const> p) {
      comm.broadcast(std::as_writable_bytes(std::span<float>(p[0], t.bytes() / sizeof(float))), root, what);
    });
  };
  for (ValueId p : parameters_) {
    const auto v = static_cast<std::size_t>(p);
    broadcast(values_[v], "parameter '" + graph_.value(p).name + "'");
    broadcast(momentum_[v], "the momentum of '" + graph_.value(p).name + "'");
    if (second_moment_[v]) broadcast(second_moment_[v], "the second moment of '" + graph_.value(p).name + "'");
  }
  if (ctx_.dry_run()) return;
  for (const auto& [name, values] : buffers()) {
    comm.broadcast(std::as_writable_bytes(std::span<float>(*values)), root, "buffer '" + name + "'");
  }
}

double Trainer::seconds_waiting() const noexcept {
  return seconds_waiting_ + (buckets_ ? buckets_->counters().seconds_waiting : 0.0);
}

void Trainer::start_step_sums(float loss) {
  if (ctx_.dry_run()) return;
  step_sums_.assign(1, loss);
  for (const auto& [name, values] : buffers()) step_sums_.insert(step_sums_.end(), values->begin(), values->end());
  step_sums_request_ = communicator_->start_sum(std::span<double>(step_sums_), "the loss and running statistics");
}

float Trainer::finish_step_sums() {
  if (ctx_.dry_run()) return 0.0f;
  const auto t0 = std::chrono::steady_clock::now();
  communicator_->wait(step_sums_request_);
  seconds_waiting_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ranks = communicator_->size();
  std::size_t i = 1;
  for (const auto& [name, values] : buffers()) {
    for (float& x : *values) x = static_cast<float>(step_sums_[i++] / ranks);
  }
  return static_cast<float>(step_sums_[0] / ranks);
}

void Trainer::set_inputs(std::span<const float> images, std::span<const float> labels) {
  const ValueId image_id = graph_.values_with_role(ValueRole::input).front();
  const ValueId label_id = graph_.values_with_role(ValueRole::label).front();
  Tensor x = ctx_.make_plain(graph_.value(image_id).dims);
  Tensor y = ctx_.make_plain(graph_.value(label_id).dims);
  // In a dry run these kernels emit their hints but copy nothing.
  ctx_.write(x, images);
  ctx_.write(y, labels);
  values_[static_cast<std::size_t>(image_id)] = std::move(x);
  values_[static_cast<std::size_t>(label_id)] = std::move(y);
}

float Trainer::step(std::span<const float> images, std::span<const float> labels) {
  if (Runtime* rt = ctx_.runtime()) rt->begin_iteration();
  ctx_.set_phase(Context::Phase::train);
  if (options_.optimizer == Optimizer::adamw) ++optimizer_steps_;
  if (!ctx_.dry_run()) ++state_traffic_.steps;
  set_inputs(images, labels);
  forward();
  float loss = ctx_.read(values_[static_cast<std::size_t>(graph_.loss())]).at(0);
  if (data_parallel_) start_step_sums(loss);  // travels while the backward pass runs
  backward();
  if (data_parallel_) {
    buckets_->finish(grads_);
    loss = finish_step_sums();
  }
  update();
  return loss;
}

bool Trainer::may_overwrite(std::size_t k, std::size_t input, bool recomputing) const {
  const Node& node = graph_.nodes()[k];
  const ValueId id = node.inputs.at(input);
  const auto v = static_cast<std::size_t>(id);
  const ValueInfo& info = graph_.value(id);
  // Another handle on the storage (the same value in two input slots, a
  // value this one was computed in place over) would see it change.
  if (info.role != ValueRole::activation || id == graph_.loss() || values_[v].use_count() != 1 ||
      std::count(node.inputs.begin(), node.inputs.end(), id) != 1) {
    return false;
  }
  if (recomputing) {
    // In the backward pass: only this recomputation reads the value.
    return info.consumers.size() == 1 && !liveness_.read_by_backward[v];
  }
  // In the forward pass: no later forward op reads it, and the backward pass
  // either does not read it or recomputes it into storage of its own.
  return liveness_.last_forward_use[v] == static_cast<int>(k) &&
         (liveness_.last_backward_use[v] < 0 || liveness_.recompute[v]);
}

void Trainer::run_forward(std::size_t k, int recompute_step) {
  Node& node = graph_.nodes()[k];
  const bool recomputing = recompute_step >= 0;
  std::vector<Tensor> outs(node.outputs.size());
  const int overwritten = node.op->in_place_input();
  const bool in_place = overwritten >= 0 && may_overwrite(k, static_cast<std::size_t>(overwritten), recomputing);
  std::vector<Tensor> ins;
  ins.reserve(node.inputs.size());
  for (ValueId v : node.inputs) {
    const Tensor& t = values_[static_cast<std::size_t>(v)];
    if (!t) {
      throw retired_error("cachedarrays::nn: node '" + node.name + "' reads '" + graph_.value(v).name +
                          "' after it was retired (a liveness bug)");
    }
    ins.push_back(t);
  }
  if (in_place) outs[0] = values_[static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(overwritten)])];
  // A recomputation remakes the outputs only: what it would save (batch
  // norm statistics, identical) is dropped, the first forward's is kept.
  std::vector<Tensor> scratch;
  const Context::Phase phase = ctx_.phase();
  if (recomputing) ctx_.set_phase(Context::Phase::recompute);
  try {
    node.op->forward(ctx_, ins, outs, recomputing ? scratch : saved_[k]);
  } catch (...) {
    ctx_.set_phase(phase);
    throw;
  }
  ctx_.set_phase(phase);
  ins.clear();
  // The overwritten input is dead (may_overwrite): drop its handle now.
  if (in_place) values_[static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(overwritten)])].reset();
  for (std::size_t j = 0; j < outs.size(); ++j) {
    const auto v = static_cast<std::size_t>(node.outputs[j]);
    const int last_backward = liveness_.last_backward_use[v];
    const bool used =
        recomputing ? last_backward >= 0 && last_backward <= recompute_step
                    : liveness_.last_forward_use[v] >= 0 || last_backward >= 0 || node.outputs[j] == graph_.loss();
    if (used) values_[v] = std::move(outs[j]);  // else retired right here
  }
}

void Trainer::make_present(ValueId id, int step) {
  const auto v = static_cast<std::size_t>(id);
  if (values_[v]) return;
  const ValueInfo& info = graph_.value(id);
  if (!liveness_.recompute[v]) {
    throw retired_error("cachedarrays::nn: the backward pass reads '" + info.name +
                        "' after it was retired (a liveness bug)");
  }
  const auto producer = static_cast<std::size_t>(info.producer);
  for (ValueId input : graph_.nodes()[producer].inputs) make_present(input, step);
  run_forward(producer, step);
}

void Trainer::forward() {
  auto& nodes = graph_.nodes();
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    Node& node = nodes[k];
    run_forward(k, -1);
    // Hints after the forward kernel (paper III-E).
    for (ValueId id : node.inputs) {
      const auto v = static_cast<std::size_t>(id);
      if (graph_.value(id).role == ValueRole::parameter) {
        archive(values_[v]);
      } else if (liveness_.last_forward_use[v] == static_cast<int>(k)) {
        if (liveness_.last_backward_use[v] >= 0 && !liveness_.recompute[v])
          archive(values_[v]);
        else
          values_[v].reset();
      }
    }
    for (const Tensor& t : saved_[k]) archive(t);
  }
}

void Trainer::backward() {
  auto& nodes = graph_.nodes();
  const auto loss = static_cast<std::size_t>(graph_.loss());
  grads_[loss] = ctx_.make_plain({1});
  ctx_.fill(grads_[loss], 1.0f);

  for (std::size_t kk = nodes.size(); kk-- > 0;) {
    const Node& node = nodes[kk];
    bool runs = false;
    for (ValueId v : node.inputs) runs = runs || liveness_.needs_grad[static_cast<std::size_t>(v)];
    // The outputs' gradients are handed over, not shared: nothing needs
    // them after this step, so an op holding the only handle (use_count 1)
    // may compute in place over one (a ReLU's backward).
    std::vector<Tensor> grad_outs;
    for (ValueId v : node.outputs) grad_outs.push_back(std::move(grads_[static_cast<std::size_t>(v)]));
    runs = runs && std::any_of(grad_outs.begin(), grad_outs.end(), [](const Tensor& t) { return bool(t); });
    if (runs) backward_step(kk, grad_outs);
    end_backward_step(kk);
  }
  // Whatever is left besides parameters (inputs whose backward never ran,
  // the loss) dies with the iteration.
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (graph_.value(static_cast<ValueId>(v)).role != ValueRole::parameter) {
      values_[v].reset();
      grads_[v].reset();
    }
  }
}

void Trainer::backward_step(std::size_t kk, std::vector<Tensor>& grad_outs) {
  Node& node = graph_.nodes()[kk];
  const int k = static_cast<int>(kk);
  // Remake what this backward reads and was not kept (Node::recompute).
  const auto reads_in = node.op->backward_reads_inputs(node.inputs.size());
  const auto reads_out = node.op->backward_reads_outputs(node.outputs.size());
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    if (reads_in[i]) make_present(node.inputs[i], k);
  for (std::size_t j = 0; j < node.outputs.size(); ++j)
    if (reads_out[j]) make_present(node.outputs[j], k);
  for (std::size_t j = 0; j < grad_outs.size(); ++j) {
    if (!grad_outs[j]) {  // an output that does not reach the loss: zero gradient
      grad_outs[j] = ctx_.make(values_[static_cast<std::size_t>(node.outputs[j])].desc());
      ctx_.fill(grad_outs[j], 0.0f);
    }
  }
  std::vector<Tensor> ins;
  std::vector<Tensor> outs;
  for (ValueId v : node.inputs) ins.push_back(values_[static_cast<std::size_t>(v)]);
  for (ValueId v : node.outputs) outs.push_back(values_[static_cast<std::size_t>(v)]);
  const std::size_t n_in = node.inputs.size();
  auto need = std::make_unique<bool[]>(n_in);
  for (std::size_t i = 0; i < n_in; ++i) need[i] = liveness_.needs_grad[static_cast<std::size_t>(node.inputs[i])];
  std::vector<Tensor> grad_ins(n_in);
  node.op->backward(ctx_, ins, outs, grad_outs, saved_[kk], std::span<const bool>(need.get(), n_in), grad_ins);
  ins.clear();
  outs.clear();
  grad_outs.clear();
  for (std::size_t i = 0; i < n_in; ++i) {
    if (!need[i]) continue;
    if (!grad_ins[i]) {
      throw invalid_operation("cachedarrays::nn: backward of '" + node.name + "' (" + node.op->kind() +
                              ") produced no gradient for input " + std::to_string(i));
    }
    add_gradient(node.inputs[i], grad_ins[i]);
    grad_ins[i].reset();
  }
}

void Trainer::add_gradient(ValueId v, Tensor& grad) {
  Tensor& into = grads_[static_cast<std::size_t>(v)];
  if (!into) {
    into = std::move(grad);
    return;
  }
  // Where a tensor feeds several ops its gradients add up. A shared handle
  // (an op may hand one tensor to two inputs) is copied first so that the
  // in-place sum changes nobody else's gradient.
  if (into.use_count() > 1) {
    Tensor own = ctx_.make(into.desc());
    ctx_.copy(into, own);
    into = std::move(own);
  }
  ctx_.accumulate(into, grad);
}

void Trainer::end_backward_step(std::size_t kk) {
  const Node& node = graph_.nodes()[kk];
  // Retire what this step was the last to need: the outputs' gradients,
  // and every value whose last backward use (this node's backward, or a
  // recomputation run for it) was here. Parameters live on: the optimizer
  // and the next iteration need them.
  for (ValueId v : node.outputs) grads_[static_cast<std::size_t>(v)].reset();
  saved_[kk].clear();
  for (ValueId v : dies_in_backward_[kk]) values_[static_cast<std::size_t>(v)].reset();
  if (buckets_) {
    // Data parallel: the gradients this step completed go to their
    // buckets; a full bucket starts its sum, and those under way advance.
    for (ValueId p : grad_final_at_[kk]) buckets_->ready(p, grads_);
    buckets_->progress();
  } else if (options_.update_in_backward) {
    // One process (data parallel has buckets and updates at the end). No
    // backward step left reads these parameters (a recomputation for a
    // later step remakes values of earlier nodes only).
    for (ValueId p : grad_final_at_[kk]) update_parameter(p);
  }
}

void Trainer::update() {
  for (ValueId p : parameters_) update_parameter(p);
}

void Trainer::update_parameter(ValueId p) {
  const auto v = static_cast<std::size_t>(p);
  if (!grads_[v]) return;
  const Tensor g = ctx_.reorder(grads_[v], values_[v].desc());
  grads_[v].reset();
  if (options_.optimizer == Optimizer::adamw) {
    adamw_update(p, g);
  } else {
    sgd_update(p, g);
  }
}

void Trainer::count_state_traffic(std::initializer_list<const Tensor*> state) {
  Runtime* rt = ctx_.runtime();
  if (rt == nullptr) return;
  // Called inside the update kernel, while the tensors are pinned: their
  // primaries cannot move, so the device read is the one the kernel uses.
  const DataManager& manager = rt->manager();
  for (const Tensor* t : state) {
    const Region* primary = manager.getprimary(t->array()->object());
    if (primary == nullptr) continue;
    const DeviceId device = manager.device(*primary);
    if (state_traffic_.bytes_by_device.size() <= device) state_traffic_.bytes_by_device.resize(device + 1u, 0);
    state_traffic_.bytes_by_device[device] += t->bytes();
  }
}

void Trainer::sgd_update(ValueId p, const Tensor& g) {
  const SgdOptions& o = options_.sgd;
  const auto v = static_cast<std::size_t>(p);
  // Every float of the buffer, not the logical elements: a layout that pads
  // (none is kept today, detail::most_used_weights_desc) would hold zeros
  // there in all three, which stay zero.
  const std::size_t count = values_[v].bytes() / sizeof(float);
  const KernelArg args[] = {in(DNNL_ARG_DIFF_WEIGHTS, g), out(DNNL_ARG_WEIGHTS, values_[v]),
                            out(DNNL_ARG_DST, momentum_[v])};
  // SGD with momentum and weight decay, as torch.optim.SGD:
  // m = momentum * m + (g + weight_decay * w); w -= lr * m.
  ctx_.run("sgd", args, [&](std::span<float* const> ptr) {
    count_state_traffic({&momentum_[v]});
    const float* grad = ptr[0];
    float* w = ptr[1];
    float* m = ptr[2];
    for (std::size_t i = 0; i < count; ++i) {
      m[i] = o.momentum * m[i] + (grad[i] + o.weight_decay * w[i]);
      w[i] -= o.learning_rate * m[i];
    }
  });
}

void Trainer::adamw_update(ValueId p, const Tensor& g) {
  const AdamWOptions& o = options_.adamw;
  const auto v = static_cast<std::size_t>(p);
  const std::size_t count = values_[v].bytes() / sizeof(float);
  // torch.optim.AdamW's single-tensor arithmetic, in its order: the bias
  // corrections in double, then each element in float.
  const double t = static_cast<double>(optimizer_steps_);
  const double correction1 = 1.0 - std::pow(static_cast<double>(o.beta1), t);
  const double correction2 = 1.0 - std::pow(static_cast<double>(o.beta2), t);
  const auto step_size = static_cast<float>(static_cast<double>(o.learning_rate) / correction1);
  const auto correction2_sqrt = static_cast<float>(std::sqrt(correction2));
  const float decay =
      graph_.value(p).weight_decay
          ? static_cast<float>(1.0 - static_cast<double>(o.learning_rate) * static_cast<double>(o.weight_decay))
          : 1.0f;
  const float one_minus_beta1 = 1.0f - o.beta1;
  const float one_minus_beta2 = 1.0f - o.beta2;
  const KernelArg args[] = {in(DNNL_ARG_DIFF_WEIGHTS, g), out(DNNL_ARG_WEIGHTS, values_[v]),
                            out(DNNL_ARG_DST, momentum_[v]), out(DNNL_ARG_DST_1, second_moment_[v])};
  ctx_.run("adamw", args, [&](std::span<float* const> ptr) {
    count_state_traffic({&momentum_[v], &second_moment_[v]});
    const float* grad = ptr[0];
    float* w = ptr[1];
    float* m = ptr[2];
    float* s2 = ptr[3];
    for (std::size_t i = 0; i < count; ++i) {
      w[i] *= decay;
      m[i] += one_minus_beta1 * (grad[i] - m[i]);  // torch's lerp_(grad, 1 - beta1)
      s2[i] = s2[i] * o.beta2 + one_minus_beta2 * grad[i] * grad[i];
      const float denom = std::sqrt(s2[i]) / correction2_sqrt + o.epsilon;
      w[i] -= step_size * (m[i] / denom);
    }
  });
  // Not needed again until this parameter's next update, an iteration away:
  // the moments are what a policy may leave on the slow tier (paper III-E).
  archive(momentum_[v]);
  archive(second_moment_[v]);
}

Trainer::Evaluation Trainer::evaluate(std::span<const float> images, std::span<const float> labels,
                                      std::int64_t valid) {
  const ValueId label_id = graph_.values_with_role(ValueRole::label).front();
  const std::int64_t batch = graph_.value(label_id).dims.at(0);
  if (valid < 0) valid = batch;
  if (valid > batch) {
    throw invalid_argument("cachedarrays::nn: evaluate: " + std::to_string(valid) + " valid samples in a batch of " +
                           std::to_string(batch) + "; at most the batch size");
  }
  // Not the training iteration a planning policy follows: it places this
  // one by its fallback, without calling it a departure from its plan.
  if (Runtime* rt = ctx_.runtime()) rt->begin_unplanned_iteration();
  ctx_.set_phase(Context::Phase::evaluate);
  set_inputs(images, labels);
  const Node& loss_node = graph_.nodes().at(static_cast<std::size_t>(graph_.value(graph_.loss()).producer));
  const auto logits_id = static_cast<std::size_t>(loss_node.inputs.at(0));
  const int logits_producer = graph_.value(static_cast<ValueId>(logits_id)).producer;
  std::vector<float> logits;
  auto& nodes = graph_.nodes();
  try {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      run_forward(k, -1);
      // The logits, as soon as they are made.
      if (static_cast<int>(k) == logits_producer) logits = ctx_.read(values_[logits_id]);
      // No backward pass: each value dies after its last forward use.
      for (ValueId id : nodes[k].inputs) {
        const auto v = static_cast<std::size_t>(id);
        if (graph_.value(id).role != ValueRole::parameter && liveness_.last_forward_use[v] == static_cast<int>(k)) {
          values_[v].reset();
        }
      }
      saved_[k].clear();
    }
  } catch (...) {
    ctx_.set_phase(Context::Phase::train);
    throw;
  }
  ctx_.set_phase(Context::Phase::train);
  for (std::size_t v = 0; v < values_.size(); ++v) {
    if (graph_.value(static_cast<ValueId>(v)).role != ValueRole::parameter) values_[v].reset();
  }
  Evaluation e;
  e.samples = valid;
  if (ctx_.dry_run()) return e;
  const auto classes = static_cast<std::size_t>(graph_.value(static_cast<ValueId>(logits_id)).dims.at(1));
  for (std::int64_t i = 0; i < valid; ++i) {
    const float* row = logits.data() + static_cast<std::size_t>(i) * classes;
    const auto label = static_cast<std::size_t>(labels[static_cast<std::size_t>(i)]);
    const std::size_t best = static_cast<std::size_t>(std::max_element(row, row + classes) - row);
    double top = row[best];
    double sum = 0;
    for (std::size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - top);
    e.loss_sum += top + std::log(sum) - static_cast<double>(row[label]);
    if (best == label) ++e.correct;
  }
  return e;
}

void Trainer::set_learning_rate(float learning_rate) {
  if (!(learning_rate >= 0) || !std::isfinite(learning_rate)) {
    throw invalid_argument("cachedarrays::nn: learning rate " + std::to_string(learning_rate) +
                           "; it must be finite and at least 0");
  }
  (options_.optimizer == Optimizer::adamw ? options_.adamw.learning_rate : options_.sgd.learning_rate) = learning_rate;
}

std::string optimizer_name(Optimizer optimizer) { return optimizer == Optimizer::adamw ? "adamw" : "sgd"; }

Optimizer parse_optimizer(std::string_view name) {
  if (name == "sgd") return Optimizer::sgd;
  if (name == "adamw") return Optimizer::adamw;
  throw invalid_argument("cachedarrays::nn: unknown optimizer \"" + std::string(name) + "\"; use sgd or adamw");
}

std::vector<std::pair<std::string, std::vector<float>*>> Trainer::buffers() {
  std::vector<std::pair<std::string, std::vector<float>*>> all;
  for (Node& node : graph_.nodes()) {
    for (const Op::Buffer& b : node.op->buffers()) all.emplace_back(node.name + "." + b.name, b.values);
  }
  return all;
}

std::vector<CheckpointTensor> Trainer::state() {
  // state_shapes() is the one enumeration of the state; this fills in the values in its order.
  std::vector<CheckpointTensor> all = state_shapes();
  std::size_t i = 0;
  for (ValueId p : parameters_) {
    const auto v = static_cast<std::size_t>(p);
    all[i++].values = ctx_.read(values_[v]);
    all[i++].values = ctx_.read(momentum_[v]);
    if (second_moment_[v]) all[i++].values = ctx_.read(second_moment_[v]);
  }
  for (const auto& [name, values] : buffers()) all[i++].values = *values;
  if (options_.optimizer == Optimizer::adamw) all[i++].values = {static_cast<float>(optimizer_steps_)};
  return all;
}

void Trainer::load_state(const std::vector<CheckpointTensor>& state) {
  // Every tensor is checked before any is set: a refused state changes nothing.
  std::vector<CheckpointTensor> expected = state_shapes();
  std::vector<const CheckpointTensor*> given(expected.size(), nullptr);
  for (const CheckpointTensor& t : state) {
    const auto it =
        std::find_if(expected.begin(), expected.end(), [&](const CheckpointTensor& e) { return e.name == t.name; });
    if (it == expected.end()) {
      const bool sgd_state = t.name.ends_with(".momentum");
      const bool adamw_state = t.name.ends_with(".exp_avg") || t.name.ends_with(".exp_avg_sq");
      const bool adamw = options_.optimizer == Optimizer::adamw;
      if ((sgd_state && adamw) || (adamw_state && !adamw)) {
        throw invalid_argument("cachedarrays::nn: the state is another optimizer's: it has '" + t.name + "', " +
                               (sgd_state ? "SGD's momentum" : "an AdamW moment") + ", and this trainer trains with " +
                               optimizer_name(options_.optimizer) + "; resume with the optimizer that saved it");
      }
      throw invalid_argument("cachedarrays::nn: the state has a tensor '" + t.name + "' this model does not have");
    }
    const auto i = static_cast<std::size_t>(it - expected.begin());
    if (t.dims != it->dims || static_cast<std::int64_t>(t.values.size()) != element_count(it->dims)) {
      throw invalid_argument("cachedarrays::nn: the state's tensor '" + t.name + "' has shape " + to_string(t.dims) +
                             " with " + std::to_string(t.values.size()) + " values; this model's has shape " +
                             to_string(it->dims));
    }
    given[i] = &t;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (given[i] == nullptr) {
      throw invalid_argument("cachedarrays::nn: the state has no tensor '" + expected[i].name +
                             "', which this model has");
    }
  }
  if (options_.optimizer == Optimizer::adamw) {
    const float steps = given.back()->values.at(0);
    if (!(steps >= 0) || steps != std::floor(steps) || steps > max_exact_steps) {
      throw invalid_argument("cachedarrays::nn: the state's 'optimizer.step' is " + std::to_string(steps) +
                             "; it must be a whole number of steps from 0 to 2^24");
    }
  }
  std::size_t i = 0;
  for (ValueId p : parameters_) {
    const auto v = static_cast<std::size_t>(p);
    ctx_.write(values_[v], given[i++]->values);
    ctx_.write(momentum_[v], given[i++]->values);
    if (second_moment_[v]) ctx_.write(second_moment_[v], given[i++]->values);
  }
  for (const auto& [name, values] : buffers()) *values = given[i++]->values;
  if (options_.optimizer == Optimizer::adamw) optimizer_steps_ = static_cast<std::int64_t>(given[i++]->values.at(0));
}

std::vector<CheckpointTensor> Trainer::state_shapes() {
  std::vector<CheckpointTensor> all;
  for (ValueId p : parameters_) {
    const ValueInfo& info = graph_.value(p);
    all.push_back({info.name, info.dims, {}});
    if (options_.optimizer == Optimizer::adamw) {
      all.push_back({info.name + ".exp_avg", info.dims, {}});
      all.push_back({info.name + ".exp_avg_sq", info.dims, {}});
    } else {
      all.push_back({info.name + ".momentum", info.dims, {}});
    }
  }
  for (const auto& [name, values] : buffers()) all.push_back({name, {static_cast<std::int64_t>(values->size())}, {}});
  if (options_.optimizer == Optimizer::adamw) all.push_back({"optimizer.step", {1}, {}});
  return all;
}

std::vector<float> Trainer::parameter(const std::string& name) {
  for (ValueId p : parameters_) {
    if (graph_.value(p).name == name) return ctx_.read(values_[static_cast<std::size_t>(p)]);
  }
  throw invalid_argument("cachedarrays::nn: the graph has no parameter named '" + name + "'");
}

std::size_t Trainer::persistent_tensors() const noexcept {
  return (options_.optimizer == Optimizer::adamw ? 3 : 2) * parameters_.size();
}

std::uint64_t measure_footprint(const std::function<Graph()>& build, const TrainerOptions& options) {
  // A virtual heap stores nothing, so even a terabyte-sized model can be
  // measured on this machine.
  Runtime runtime({virtual_device(std::uint64_t{1} << 42)});
  {
    Trainer trainer(&runtime, build(), options, /*run_kernels=*/false);
    // The second iteration starts from the first one's heap (parameters and
    // momentum already placed), the state every later iteration starts from.
    (void)trainer.step({}, {});
    (void)trainer.step({}, {});
  }
  return runtime.stats().devices[0].peak_extent;
}

Trace dry_run_trace(const std::function<Graph()>& build, const TrainerOptions& options, std::uint32_t iterations) {
  if (iterations == 0) {
    throw invalid_argument("cachedarrays::nn: dry_run_trace needs at least 1 iteration (" +
                           std::to_string(steady_trace_iterations) + " give the replay its steady state)");
  }
  Runtime runtime({virtual_device(std::uint64_t{1} << 42)});
  runtime.start_trace();
  {
    Trainer trainer(&runtime, build(), options, /*run_kernels=*/false);
    for (std::uint32_t i = 0; i < iterations; ++i) {
      (void)trainer.step({}, {});
      runtime.collect();
    }
  }
  runtime.collect();
  return *runtime.trace();
}

plan::Program dry_run_program(const std::function<Graph()>& build, const TrainerOptions& options) {
  Runtime runtime({virtual_device(std::uint64_t{1} << 42)});
  runtime.start_trace();
  Trainer trainer(&runtime, build(), options, /*run_kernels=*/false);
  for (int i = 0; i < 2; ++i) {  // the training loop: a step, then the end-of-iteration collect
    (void)trainer.step({}, {});
    runtime.collect();
  }
  runtime.stop_trace();  // before the trainer's tensors are retired: that is not an iteration's doing
  return plan::Program::from_trace(*runtime.trace(), 2);
}

}  // namespace cachedarrays::nn
