// What an op needs to run: the runtime, a oneDNN engine and stream, a cache
// of primitives keyed by their descriptors (each created once), and
// `execute`, which runs a primitive as a cachedarrays kernel: will_read on
// inputs, will_write on outputs, pins, hands oneDNN the primary pointers via
// set_data_handle (paper III-C: one indirection per kernel), runs, unpins.
//
// The oneDNN scratchpad is in user mode and comes from the runtime too: each
// kernel that needs one gets its own, made before it and retired after. In a
// dry run (`dry_run()`) no kernel runs: execute() only reports the kernel to
// the observer. A dry run without a runtime has shape-only tensors; one with
// a runtime (typically on virtual, unprefaulted heaps) allocates every
// tensor as a real iteration would, which measures the footprint.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cachedarrays/nn/tensor.hpp"
#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays::nn {

/// One argument of a kernel: its oneDNN argument id, the tensor, whether
/// the kernel reads or writes it, and optionally the descriptor the
/// primitive sees the tensor's storage through. Made with in() and out().
struct KernelArg {
  int dnnl_arg;          ///< DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, ...: its role in the primitive and the signature
  const Tensor* tensor;  ///< the tensor; not owned, must outlive the call it is passed to
  Access access;         ///< Access::read or Access::write: which hint the runtime gets
  /// A view of the tensor's storage the primitive reads or writes instead of
  /// the tensor's own descriptor (null: none): a reshape (a token tensor
  /// [N, T, D] as the [N T, D] matrix an inner product takes) or a transpose
  /// by strides (matmul's b read as b^T where it lies). Its size may not
  /// exceed the tensor's bytes. The signature still names the tensor's own
  /// dims and layout, the object the runtime moves. Not owned, must outlive
  /// the call.
  const dnnl::memory::desc* view;
};

/// An argument the kernel reads (will_read), in role `dnnl_arg`.
inline KernelArg in(int dnnl_arg, const Tensor& t) { return {dnnl_arg, &t, Access::read, nullptr}; }
/// An argument the kernel writes (will_write), in role `dnnl_arg`.
inline KernelArg out(int dnnl_arg, const Tensor& t) { return {dnnl_arg, &t, Access::write, nullptr}; }
/// An argument the kernel reads through the descriptor `view` of the same
/// storage (KernelArg::view).
inline KernelArg in(int dnnl_arg, const Tensor& t, const dnnl::memory::desc& view) {
  return {dnnl_arg, &t, Access::read, &view};
}
/// An argument the kernel writes through the descriptor `view` of the same
/// storage (KernelArg::view).
inline KernelArg out(int dnnl_arg, const Tensor& t, const dnnl::memory::desc& view) {
  return {dnnl_arg, &t, Access::write, &view};
}

/// Observes every kernel (for traces and the dry run); see
/// Context::set_observer.
struct KernelObserver {
  virtual ~KernelObserver() = default;
  /// Called before each kernel runs (also in a dry run). `signature` is the
  /// kernel's signature (nn/dnnl_signature.hpp), the name a trace records
  /// it under; plan::kernel_kind(signature) is its op kind.
  virtual void on_kernel(const std::string& signature, std::span<const KernelArg> args) = 0;
};

/// What an op needs to run (see the file comment): the runtime, a oneDNN
/// engine and stream, a cache of primitives, and execute(), which runs a
/// primitive as a cachedarrays kernel with the hints, pins and scratchpad
/// that takes.
class Context {
 public:
  /// A context on the CPU engine. `runtime` nullptr: a shape-only dry run.
  /// `run_kernels` false: a dry run that still allocates tensors from the
  /// runtime.
  explicit Context(Runtime* runtime, bool run_kernels = true);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Whether kernels are skipped: no runtime, or `run_kernels` false. The
  /// hints and pins are still emitted when there is a runtime.
  [[nodiscard]] bool dry_run() const noexcept { return !run_kernels_; }

  /// What the forward kernels are run for: training (batch norm normalises
  /// with the batch's statistics and updates its running ones), a
  /// recomputation in the backward pass (the same values again, running
  /// statistics left alone), or evaluation (batch norm normalises with its
  /// running statistics). The trainer sets it.
  enum class Phase { train, recompute, evaluate };
  /// What the forward kernels are run for now (Phase::train at first).
  [[nodiscard]] Phase phase() const noexcept { return phase_; }
  /// Sets what the forward kernels are run for (the trainer's call).
  void set_phase(Phase phase) noexcept { phase_ = phase; }
  /// The runtime tensors come from; null in a shape-only run (or while a
  /// ShapeOnly lives).
  [[nodiscard]] Runtime* runtime() const noexcept { return runtime_; }
  /// The oneDNN CPU engine primitives are created on.
  [[nodiscard]] const dnnl::engine& engine() const noexcept { return engine_; }
  /// The oneDNN stream kernels run on.
  [[nodiscard]] dnnl::stream& stream() noexcept { return stream_; }

  /// A new tensor of this layout (storage from the runtime unless there is
  /// none: shape only).
  [[nodiscard]] Tensor make(const dnnl::memory::desc& desc) const { return Tensor(runtime_, desc); }
  /// A new tensor of these dims in the plain row-major layout (plain_desc).
  [[nodiscard]] Tensor make_plain(const Dims& dims) const { return make(plain_desc(dims)); }

  /// Attributes every primitive descriptor must be created with (user-mode
  /// scratchpad, so that scratch memory comes from the runtime).
  [[nodiscard]] const dnnl::primitive_attr& attr() const noexcept { return attr_; }
  /// Those attributes with `post_ops` (a ReLU fused into a convolution): a
  /// new attribute object, since primitive_attr is a handle whose copies
  /// share one.
  [[nodiscard]] dnnl::primitive_attr attr_with(const dnnl::post_ops& post_ops) const;

  /// The primitive descriptor and primitive cached under `key`, created by
  /// `make_pd` (a callable returning a `PrimitiveDesc`) on first use; the
  /// pointers stay valid for the context's life. Build `key` with key_of()
  /// from every descriptor the primitive depends on.
  template <typename PrimitiveDesc, typename Primitive, typename MakePd>
  std::pair<const PrimitiveDesc*, const Primitive*> cached(const std::string& key, MakePd&& make_pd) {
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      auto entry = std::make_shared<Entry<PrimitiveDesc, Primitive>>(make_pd());
      it = cache_.emplace(key, std::move(entry)).first;
      ++primitives_created_;
    }
    auto* entry = static_cast<Entry<PrimitiveDesc, Primitive>*>(it->second.get());
    return {&entry->pd, &entry->primitive};
  }
  /// Primitives created so far: the cache's misses.
  [[nodiscard]] std::uint64_t primitives_created() const noexcept { return primitives_created_; }

  /// Runs `primitive` as one kernel over `args`: reports it to the observer,
  /// then (with a runtime) makes its scratchpad, hints will_read on inputs and
  /// will_write on outputs, pins them, hands oneDNN their primary pointers,
  /// runs it unless dry run, unpins and retires the scratchpad. The kernel
  /// runs under the signature kernel_signature(name, args): `name` is the op
  /// kind and whatever else the primitive depends on that the arguments do
  /// not show ("conv s2p1"). `scratchpad` is the primitive descriptor's
  /// scratchpad_desc().
  void execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
               std::initializer_list<KernelArg> args);
  /// execute() over a span of arguments.
  void execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
               std::span<const KernelArg> args);
  /// The same, then `after` on the arguments' data (in order, as `run` hands
  /// them) inside the same kernel, while they are still pinned: batch norm
  /// folds the batch statistics into its running ones there, so the update
  /// is not a kernel of its own and the iteration's program keeps its shape.
  void execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
               std::span<const KernelArg> args, const std::function<void(std::span<float* const>)>& after);
  /// A hand-written kernel, with the same hints and pins as execute():
  /// `body` gets each argument's float pointer, in order (dnnl_arg names the
  /// argument's role in the signature only). Nothing runs in a dry run.
  void run(const std::string& name, std::span<const KernelArg> args,
           const std::function<void(std::span<float* const>)>& body);

  /// `src` in layout `desc`: the tensor itself if it already has it, else a
  /// new tensor filled by a reorder kernel.
  [[nodiscard]] Tensor reorder(const Tensor& src, const dnnl::memory::desc& desc);
  /// dst = src, converting the layout, as a reorder kernel. Throws
  /// invalid_argument unless both tensors have the same dims.
  void copy(const Tensor& src, Tensor& dst);
  /// The tensor's values in plain row-major order (tests, losses, tools);
  /// zeros in a dry run.
  [[nodiscard]] std::vector<float> read(const Tensor& t);
  /// Sets the tensor from values in plain row-major order. Throws
  /// invalid_argument (unless dry run) when there are not t.elements() of them.
  void write(Tensor& t, std::span<const float> values);
  /// into += addend (reordered to into's layout first if needed).
  void accumulate(Tensor& into, const Tensor& addend);
  /// Sets every element to `value`.
  void fill(Tensor& t, float value);

  /// Reports every later kernel to `observer` (null: none); not owned.
  void set_observer(KernelObserver* observer) noexcept { observer_ = observer; }

  /// While one lives, the context is shape-only: make() gives tensors
  /// without storage, and no kernel runs, allocates or reaches the observer;
  /// primitives are still created and cached. The trainer walks its graph
  /// this way once, before it makes any tensor, to learn the layouts the
  /// primitives choose (Op::parameter_desc) without a kernel in any program
  /// or a byte on any heap, and the real passes find the primitives made.
  class ShapeOnly {
   public:
    /// Makes `ctx` shape-only until this is destroyed, which restores its
    /// runtime, kernels and observer.
    explicit ShapeOnly(Context& ctx) noexcept
        : ctx_(ctx), runtime_(ctx.runtime_), run_kernels_(ctx.run_kernels_), observer_(ctx.observer_) {
      ctx.runtime_ = nullptr;
      ctx.run_kernels_ = false;
      ctx.observer_ = nullptr;
    }
    ~ShapeOnly() {
      ctx_.runtime_ = runtime_;
      ctx_.run_kernels_ = run_kernels_;
      ctx_.observer_ = observer_;
    }
    ShapeOnly(const ShapeOnly&) = delete;
    ShapeOnly& operator=(const ShapeOnly&) = delete;

   private:
    Context& ctx_;
    Runtime* runtime_;
    bool run_kernels_;
    KernelObserver* observer_;
  };

 private:
  struct EntryBase {
    virtual ~EntryBase() = default;
  };
  template <typename PrimitiveDesc, typename Primitive>
  struct Entry : EntryBase {
    explicit Entry(PrimitiveDesc p) : pd(std::move(p)), primitive(pd) {}
    PrimitiveDesc pd;
    Primitive primitive;
  };

  Runtime* runtime_;
  bool run_kernels_;
  Phase phase_ = Phase::train;
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive_attr attr_;
  std::map<std::string, std::shared_ptr<EntryBase>> cache_;
  std::uint64_t primitives_created_ = 0;
  KernelObserver* observer_ = nullptr;
};

/// A cache key component for a descriptor (Context::cached): dims, data type
/// and layout, as text.
[[nodiscard]] std::string key_of(const dnnl::memory::desc& desc);

}  // namespace cachedarrays::nn
