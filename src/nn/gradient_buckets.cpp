#include "cachedarrays/nn/gradient_buckets.hpp"

#include <chrono>
#include <cstring>
#include <string>

#include "cachedarrays/error.hpp"

namespace cachedarrays::nn {

namespace {

std::string bucket_name(std::size_t i, std::size_t n) {
  return "gradient bucket " + std::to_string(i + 1) + " of " + std::to_string(n);
}

}  // namespace

GradientBuckets::GradientBuckets(Context& ctx, Communicator& communicator, std::vector<Member> ready_order,
                                 std::uint64_t bucket_bytes)
    : ctx_(ctx), communicator_(communicator), members_(std::move(ready_order)) {
  if (bucket_bytes == 0) {
    throw invalid_argument(
        "cachedarrays::nn: gradient buckets of 0 bytes; give a size above 0 (DDP's default is "
        "25 MiB, cachedarrays' 4 MiB)");
  }
  // Consecutive gradients (in ready order) fill a bucket until it holds
  // bucket_bytes; a gradient larger than that is a bucket of its own.
  bucket_of_.resize(members_.size());
  for (std::size_t m = 0; m < members_.size(); ++m) {
    const auto bytes = static_cast<std::uint64_t>(members_[m].elements) * sizeof(float);
    if (buckets_.empty() ||
        static_cast<std::uint64_t>(buckets_.back().elements) * sizeof(float) + bytes > bucket_bytes) {
      buckets_.emplace_back();
    }
    buckets_.back().members.push_back(m);
    buckets_.back().elements += members_[m].elements;
    bucket_of_[m] = buckets_.size() - 1;
  }
}

GradientBuckets::~GradientBuckets() = default;

std::vector<ValueId> GradientBuckets::bucket_members(std::size_t i) const {
  std::vector<ValueId> ids;
  for (std::size_t m : buckets_.at(i).members) ids.push_back(members_[m].parameter);
  return ids;
}

void GradientBuckets::ready(ValueId parameter, std::vector<Tensor>& grads) {
  if (next_member_ >= members_.size() || members_[next_member_].parameter != parameter) {
    throw invalid_operation("cachedarrays::nn: the gradient of value " + std::to_string(parameter) +
                            " became final out of the order the buckets were planned in");
  }
  const auto v = static_cast<std::size_t>(parameter);
  if (!grads[v]) {
    throw invalid_operation("cachedarrays::nn: the gradient of value " + std::to_string(parameter) +
                            " is final but was never made");
  }
  Bucket& bucket = buckets_[bucket_of_[next_member_]];
  ++next_member_;
  if (++bucket.ready == bucket.members.size()) start(bucket, grads);
}

void GradientBuckets::start(Bucket& bucket, std::vector<Tensor>& grads) {
  const auto i = static_cast<std::size_t>(&bucket - buckets_.data());
  // Pack: one kernel reads every gradient of the bucket where it lies and
  // writes them, raw (their layouts' padding included), one after another.
  std::vector<Tensor> packed;
  packed.reserve(bucket.members.size());
  std::int64_t elements = 0;
  for (std::size_t m : bucket.members) {
    Tensor& g = grads[static_cast<std::size_t>(members_[m].parameter)];
    bucket.descs.push_back(g.desc());
    elements += static_cast<std::int64_t>(g.desc().get_size() / sizeof(float));
    packed.push_back(std::move(g));  // the trainer's handle goes: the bucket holds the gradient now
  }
  bucket.tensor = ctx_.make_plain({elements});
  std::vector<KernelArg> args;
  for (std::size_t j = 0; j < packed.size(); ++j)
    args.push_back(in(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(j), packed[j]));
  args.push_back(out(DNNL_ARG_DST, bucket.tensor));
  ctx_.run("allreduce_pack", args, [&](std::span<float* const> p) {
    float* dst = p[packed.size()];
    for (std::size_t j = 0; j < packed.size(); ++j) {
      const std::size_t bytes = bucket.descs[j].get_size();
      std::memcpy(dst, p[j], bytes);
      dst += bytes / sizeof(float);
    }
  });
  packed.clear();  // retired: their last use was the packing
  ++counters_.buckets;
  counters_.bytes += static_cast<std::uint64_t>(elements) * sizeof(float);
  if (bucket.tensor.array() == nullptr) return;  // shape-only dry run
  // MPI owns the bucket's memory until the sum is complete: pinned, so no
  // policy moves it meanwhile.
  bucket.pin.emplace(bucket.tensor.array()->write());
  if (ctx_.dry_run()) return;
  const std::span<float> data = *bucket.pin;
  bucket.request = communicator_.start_sum(data, bucket_name(i, buckets_.size()));
}

void GradientBuckets::progress() {
  if (!ctx_.dry_run()) communicator_.progress();
}

void GradientBuckets::finish(std::vector<Tensor>& grads) {
  const float ranks = static_cast<float>(communicator_.size());
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& bucket = buckets_[i];
    if (!bucket.tensor) {
      throw invalid_operation("cachedarrays::nn: " + bucket_name(i, buckets_.size()) +
                              " was never summed: the backward pass made no gradient for some of its parameters");
    }
    if (!ctx_.dry_run() && bucket.pin) {
      const auto t0 = std::chrono::steady_clock::now();
      communicator_.wait(bucket.request);
      counters_.seconds_waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    bucket.pin.reset();
    std::vector<Tensor> averaged;
    std::vector<KernelArg> args;
    averaged.reserve(bucket.members.size());
    for (const dnnl::memory::desc& desc : bucket.descs) averaged.push_back(ctx_.make(desc));
    args.push_back(in(DNNL_ARG_SRC, bucket.tensor));
    for (std::size_t j = 0; j < averaged.size(); ++j) {
      args.push_back(out(DNNL_ARG_MULTIPLE_DST + static_cast<int>(j), averaged[j]));
    }
    ctx_.run("allreduce_unpack", args, [&](std::span<float* const> p) {
      const float* sum = p[0];
      for (std::size_t j = 0; j < averaged.size(); ++j) {
        const std::size_t n = bucket.descs[j].get_size() / sizeof(float);
        float* dst = p[j + 1];
        for (std::size_t e = 0; e < n; ++e) dst[e] = sum[e] / ranks;
        sum += n;
      }
    });
    for (std::size_t j = 0; j < averaged.size(); ++j) {
      grads[static_cast<std::size_t>(members_[bucket.members[j]].parameter)] = std::move(averaged[j]);
    }
    bucket.tensor.reset();  // retired: its last use was the unpacking
    bucket.descs.clear();
    bucket.ready = 0;
  }
  next_member_ = 0;
  ++counters_.steps;
}

}  // namespace cachedarrays::nn
