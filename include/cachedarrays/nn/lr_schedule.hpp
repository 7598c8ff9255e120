// The learning rate over a training run: constant, stepped down every few
// epochs, or cosine-annealed to zero (Loshchilov & Hutter's SGDR without
// restarts, as torch.optim.lr_scheduler.CosineAnnealingLR per iteration),
// optionally after a linear warm-up (Goyal et al. 2017, section 2.2; the
// schedule transformers are trained with, ViT's included).
// The rate is a function of where training is (epoch, batch), not of how it
// got there, so a resumed run follows the same curve.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cachedarrays::nn {

/// The learning rate over a training run (see the file comment): a function
/// of where training is, so that a resumed run follows the same curve. Made
/// by parse(); a default-constructed schedule is constant at 0.01.
class LearningRateSchedule {
 public:
  /// The shape of the curve: `constant` (base() throughout), `step` (base()
  /// times GAMMA after every EPOCHS epochs), `cosine` (annealed from base()
  /// to 0 over the run, per batch) or `warmup_cosine` (rising linearly to
  /// base() over the first epochs, then annealed to 0 as cosine, per batch).
  enum class Kind { constant, step, cosine, warmup_cosine };

  /// The schedule `spec` names, starting at `base`: "constant";
  /// "step:EPOCHS:GAMMA" (the rate times GAMMA after every EPOCHS epochs,
  /// such as step:30:0.1); "cosine"; "warmup-cosine:EPOCHS" (with s the
  /// step from 0 and W = EPOCHS * batches per epoch warm-up steps: base *
  /// (s + 1) / W while s < W, then base * (1 + cos(pi (s - W) / (total -
  /// W))) / 2). Throws invalid_argument saying which forms are allowed;
  /// `base` must be finite and > 0.
  static LearningRateSchedule parse(std::string_view spec, float base);

  /// The rate for batch `batch` (0-based) of epoch `epoch` (0-based), in a
  /// run of `epochs` epochs of `batches_per_epoch` batches each.
  [[nodiscard]] float at(std::int64_t epoch, std::int64_t batch, std::int64_t batches_per_epoch,
                         std::int64_t epochs) const;

  /// Which curve this is.
  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// The rate at the start of the run.
  [[nodiscard]] float base() const noexcept { return base_; }
  /// The schedule for logs: "cosine from 0.05 to 0", "0.05, times 0.1 every
  /// 30 epochs", "constant 0.05".
  [[nodiscard]] std::string describe() const;

 private:
  Kind kind_ = Kind::constant;
  float base_ = 0.01f;
  std::int64_t step_epochs_ = 0;  // step: epochs per step down; warmup_cosine: warm-up epochs
  double gamma_ = 1;
};

}  // namespace cachedarrays::nn
