// Kernel profiles measured while a program runs (docs/design.md "What is known
// ahead"): a Runtime with a program times the kernels of its first
// iterations (Runtime::set_profile_iterations) and hands the program back with
// their profiles (Program::profiles). A user's kernels have no signature a
// profile cache or the roofline knows, so their profiles are keyed here:
//
//   - a kernel the user named (Runtime::kernel("stencil", ...)) by its name,
//     so every run of it shares one profile — a name stands for one kernel
//     of one shape;
//   - an unnamed one (the name "kernel") by its place in the program and its
//     arguments' sizes and roles, "kernel#3(4096r,4096w)": unique within the
//     program, the same in every recording of it, and never the key of a
//     kernel of another program shape.
//
// The names in the program and in the trace stay what the runtime recorded
// (a lookahead compares them with the running kernel's); a planner prices the
// kernels of profile_keyed(program), whose names are the keys, through
// online_time_model.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays::plan {

/// The name the runtime records a kernel under when its caller gave none
/// (Runtime::kernel without a name).
inline constexpr std::string_view unnamed_kernel = "kernel";

/// The key of kernel `kernel`'s online profile (see the file comment): its
/// name when the user gave one, else "kernel#<index>(<bytes><r|w>,...)".
/// Throws invalid_argument for a kernel out of range.
[[nodiscard]] std::string profile_key(const Program& program, std::uint32_t kernel);

/// A copy of `program` whose kernels are named by their profile_key (objects,
/// steps and arguments unchanged, no profiles): what a planner prices with
/// online_time_model. The program itself keeps the recorded names.
[[nodiscard]] Program profile_keyed(const Program& program);

/// The kernel time model of online profiles: plan::ProfiledTime over them
/// (the all-fast and all-slow times interpolated by the share of memory time
/// in the slow tier), with plan::MemoryBound for kernels they lack (scoped
/// read()/write() accesses, kernels that never ran while profiled). The
/// bandwidths are those the profiles' slow-tier costs were derived with.
/// Throws invalid_argument for a bandwidth not > 0.
[[nodiscard]] std::shared_ptr<const KernelTimeModel> online_time_model(KernelProfiles profiles,
                                                                       emulation::Bandwidth fast_tier,
                                                                       emulation::Bandwidth slow_tier);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/online_profile-inl.hpp"
#endif
