// What the flow lifecycle's tests share: a small configuration per filter kind.
#pragma once

#include <cstdint>

#include "core/lifecycle/flow_lifecycle.hpp"

namespace flowsketch::core::testing {

inline constexpr std::int64_t sec = 1'000'000'000;

inline constexpr SeenFilterKind all_kinds[] = {SeenFilterKind::standard, SeenFilterKind::two_choice,
                                               SeenFilterKind::blocked};

inline FlowLifecycleConfig small_config(SeenFilterKind kind, std::uint64_t max_flows, double fpr) {
    FlowLifecycleConfig c;
    c.max_flows = max_flows;
    c.target_fpr = fpr;
    c.idle_timeout_ns = 60 * sec;
    c.generations = 4;
    c.kind = kind;
    c.seed = 7;
    return c;
}

}  // namespace flowsketch::core::testing
