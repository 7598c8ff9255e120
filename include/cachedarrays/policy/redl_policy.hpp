// ReDL as a policy (ReDL §III): the iteration's program is
// planned once by ReDL's planner (plan/schedule/redl.hpp: liveness, idle migration
// of short-lived objects, dynamic migration by periods, the period size
// searched, DSMA), and the plan is executed by AutoTM's executor
// (autotm_policy.hpp), which follows any plan of AutoTM's form:
//   - copies in for the next period are asynchronous moves started when
//     the kernel the planner chose begins; write-backs under tension are
//     moves out after the object's last use in the period;
//   - DSMA: where the planner has a read find its object still on the way
//     (in_fast false for that argument), the kernel reads the slow copy in
//     place; the copy goes on, and a later use promotes it. A plan that
//     moves out an object whose copy in no use promoted drops that copy.
// The plan is fitted to the fast heap by fit_to_heap_by_kernel (AutoTM's
// §4.2 loop, the limit lowered only at the kernels where the heap
// overflows): the first plan searches the period size, the retries keep it.
// Given a judge (AutotmPolicyOptions::judge, e.g. sim/replay_judge.hpp),
// the 16 sizes the search's model rates best (its choice first) are each
// planned and fitted so, then the 3 judged fastest with their copies in
// issued up to 2..24 periods ahead, then the 3 plans judged fastest with
// objects of up to 2..12 layers held as short-lived — all of it once with
// the room of a tight period given by first use and once by slow-tier cost;
// the plan the judge times fastest is kept, and the plan's status and
// `judged` say so.
#pragma once

#include "cachedarrays/config.hpp"

#include <optional>
#include <string_view>

#include "cachedarrays/policy/autotm_policy.hpp"

namespace cachedarrays::policy {

/// The planner of "redl" for AutotmPolicyOptions::planner: ReDL's planner,
/// its period size searched (and weighed by AutotmPolicyOptions::judge when
/// one is set), fitted to the fast heap by fit_to_heap_by_kernel; nullopt for
/// any other name.
[[nodiscard]] std::optional<PlannerHook> redl_planner(std::string_view policy_name);

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/redl_policy-inl.hpp"
#endif
