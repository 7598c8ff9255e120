#include "cachedarrays/nn/context.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cachedarrays/nn/dnnl_signature.hpp"
#include "cachedarrays/runtime/kernel.hpp"
#include "cachedarrays/runtime/pinned_kernel.hpp"

namespace cachedarrays::nn {

Context::Context(Runtime* runtime, bool run_kernels)
    : runtime_(runtime),
      run_kernels_(run_kernels && runtime != nullptr),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
}

Context::~Context() = default;

dnnl::primitive_attr Context::attr_with(const dnnl::post_ops& post_ops) const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(post_ops);
  return attr;
}

std::string key_of(const dnnl::memory::desc& desc) {
  // The C descriptor is plain data: its bytes identify dims, type and layout.
  const auto* bytes = reinterpret_cast<const unsigned char*>(&desc.data);
  static constexpr char hex[] = "0123456789abcdef";
  std::string key;
  key.reserve(2 * sizeof(desc.data));
  for (std::size_t i = 0; i < sizeof(desc.data); ++i) {
    key.push_back(hex[bytes[i] >> 4]);
    key.push_back(hex[bytes[i] & 15]);
  }
  return key;
}

void Context::execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                      std::initializer_list<KernelArg> args) {
  execute(name, primitive, scratchpad, std::span<const KernelArg>(args.begin(), args.size()));
}

namespace {

// One kernel's arguments (and the scratchpad, if any) in the shape a
// PinnedKernel scope pins them.
struct KernelObjects {
  KernelObjects(std::span<const KernelArg> args, Object* scratchpad) {
    for (const KernelArg& arg : args) {
      objects.push_back(&arg.tensor->array()->object());
      accesses.push_back(arg.access);
    }
    if (scratchpad != nullptr) {
      objects.push_back(scratchpad);
      accesses.push_back(Access::write);
    }
    data.resize(objects.size());
  }
  std::vector<Object*> objects;
  std::vector<Access> accesses;
  std::vector<std::byte*> data;
};

}  // namespace

void Context::execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                      std::span<const KernelArg> args) {
  execute(name, primitive, scratchpad, args, {});
}

void Context::execute(const std::string& name, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                      std::span<const KernelArg> args, const std::function<void(std::span<float* const>)>& after) {
  const std::string signature = kernel_signature(name, args);
  for (const KernelArg& arg : args) {
    // A view larger than the storage would let the primitive run off its end.
    if (arg.view != nullptr && arg.view->get_size() > arg.tensor->bytes()) {
      throw invalid_argument("cachedarrays::nn: kernel '" + name + "' views a tensor of " +
                             std::to_string(arg.tensor->bytes()) + " bytes through a descriptor of " +
                             std::to_string(arg.view->get_size()) + " bytes");
    }
  }
  if (observer_ != nullptr) observer_->on_kernel(signature, args);
  if (runtime_ == nullptr) return;
  // The scratchpad is this kernel's own object, of the size this primitive
  // asks for, made just before it and retired just after: scratch values are
  // dead once the kernel ends, so no policy ever writes them back, and a
  // kernel pins only the scratch it uses. (One scratchpad shared by every
  // kernel, grown to the largest need, would make each kernel with any
  // scratch at all write the largest one whole: the large requests of a few
  // backward convolutions would dominate the bytes written per iteration,
  // and no fast tier smaller than that scratchpad could hold them.)
  const std::size_t scratch_bytes = scratchpad.get_size();
  std::optional<CachedArray<std::byte>> scratch;
  if (scratch_bytes > 0) scratch.emplace(runtime_->array<std::byte>(scratch_bytes));
  KernelObjects k(args, scratch ? &scratch->object() : nullptr);
  PinnedKernel kernel(*runtime_, signature.c_str(), k.objects, k.accesses, k.data);
  if (!dry_run()) {  // a dry run emits the hints and pins, and runs nothing
    std::unordered_map<int, dnnl::memory> memories;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const dnnl::memory::desc& desc = args[i].view != nullptr ? *args[i].view : args[i].tensor->desc();
      memories.emplace(args[i].dnnl_arg, dnnl::memory(desc, engine_, k.data[i]));
    }
    if (scratch_bytes > 0) {
      memories.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, engine_, k.data[args.size()]));
    }
    primitive.execute(stream_, memories);
    stream_.wait();
    if (after) {
      std::vector<float*> pointers(args.size());
      for (std::size_t i = 0; i < args.size(); ++i) pointers[i] = reinterpret_cast<float*>(k.data[i]);
      after(pointers);
    }
  }
  kernel.finish();
  // `scratch` is retired when it goes out of scope, after `kernel` unpins it.
}

void Context::run(const std::string& name, std::span<const KernelArg> args,
                  const std::function<void(std::span<float* const>)>& body) {
  const std::string signature = kernel_signature(name, args);
  if (observer_ != nullptr) observer_->on_kernel(signature, args);
  if (runtime_ == nullptr) return;
  KernelObjects k(args, nullptr);
  PinnedKernel kernel(*runtime_, signature.c_str(), k.objects, k.accesses, k.data);
  if (!dry_run()) {
    std::vector<float*> pointers(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) pointers[i] = reinterpret_cast<float*>(k.data[i]);
    body(pointers);
  }
  kernel.finish();
}

void Context::copy(const Tensor& src, Tensor& dst) {
  if (src.dims() != dst.dims()) {
    throw invalid_argument("cachedarrays::nn: cannot copy between tensors of different shapes");
  }
  const std::string key = "reorder:" + key_of(src.desc()) + ">" + key_of(dst.desc());
  auto [pd, prim] = cached<dnnl::reorder::primitive_desc, dnnl::reorder>(
      key, [&] { return dnnl::reorder::primitive_desc(engine_, src.desc(), engine_, dst.desc(), attr_); });
  execute("reorder", *prim, pd->scratchpad_desc(), {in(DNNL_ARG_FROM, src), out(DNNL_ARG_TO, dst)});
}

Tensor Context::reorder(const Tensor& src, const dnnl::memory::desc& desc) {
  if (src.desc() == desc) return src;
  Tensor dst = make(desc);
  copy(src, dst);
  return dst;
}

std::vector<float> Context::read(const Tensor& t) {
  const Tensor plain = reorder(t, plain_desc(t.dims()));
  std::vector<float> values(static_cast<std::size_t>(t.elements()));  // zeros in a dry run
  const KernelArg args[] = {in(DNNL_ARG_SRC, plain)};
  run("read", args,
      [&](std::span<float* const> p) { std::memcpy(values.data(), p[0], values.size() * sizeof(float)); });
  return values;
}

void Context::write(Tensor& t, std::span<const float> values) {
  if (!dry_run() && values.size() != static_cast<std::size_t>(t.elements())) {
    throw invalid_argument("cachedarrays::nn: write of " + std::to_string(values.size()) + " values into a tensor of " +
                           std::to_string(t.elements()) + " elements");
  }
  const bool is_plain = t.desc() == plain_desc(t.dims());
  Tensor plain = is_plain ? t : make_plain(t.dims());
  const KernelArg args[] = {out(DNNL_ARG_DST, plain)};
  run("write", args,
      [&](std::span<float* const> p) { std::memcpy(p[0], values.data(), values.size() * sizeof(float)); });
  if (!is_plain) copy(plain, t);
}

void Context::accumulate(Tensor& into, const Tensor& addend) {
  const Tensor b = reorder(addend, into.desc());
  const std::string key = "accumulate:" + key_of(into.desc());
  auto [pd, prim] = cached<dnnl::sum::primitive_desc, dnnl::sum>(key, [&] {
    return dnnl::sum::primitive_desc(into.desc(), {1.0f, 1.0f}, {into.desc(), into.desc()}, engine_, attr_);
  });
  // In place: dst aliases the first source, which oneDNN's sum allows.
  const KernelArg args[] = {out(DNNL_ARG_MULTIPLE_SRC + 0, into), in(DNNL_ARG_MULTIPLE_SRC + 1, b),
                            out(DNNL_ARG_DST, into)};
  execute("accumulate", *prim, pd->scratchpad_desc(), std::span<const KernelArg>(args));
}

void Context::fill(Tensor& t, float value) {
  const KernelArg args[] = {out(DNNL_ARG_DST, t)};
  const std::size_t count = t.bytes() / sizeof(float);
  run("fill", args, [&](std::span<float* const> p) { std::fill(p[0], p[0] + count, value); });
}

}  // namespace cachedarrays::nn
