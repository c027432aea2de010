// The sketches' answers for a window checked against the exact counts of the
// same window (docs/verify.md): per ranked list, how far the listed estimates
// lie above the truth and how often a truth falls below its stated lower
// bound, and how much of the exact top K the list found; per flow count,
// whether the truth lies within the stated bound.
#pragma once

#include <cstdint>
#include <vector>

#include "core/measure/window_value.hpp"
#include "core/verify/exact_counter.hpp"

namespace flowsketch::core {

/// One ranked list (top by packets or bytes) against the exact counts.
struct ListCheck {
    std::uint64_t checked = 0;    // rows listed
    std::int64_t max_error = 0;   // largest estimate − truth among them (0 when none)
    double bound = 0;             // ε·N
    std::uint64_t below_lower = 0;  // rows whose truth lies below their lower bound
    /// Share of the exact top K that is listed, and of the listed that belongs
    /// to it. Keys tied with the K-th largest true count all belong to it.
    double recall = 1;
    double precision = 1;
    std::uint64_t exact_top = 0;  // the exact top K's size: min(K, keys in the window)
};

/// A list ranked by distinct count against the exact distinct sets.
struct DistinctListCheck {
    std::uint64_t checked = 0;
    double max_error = 0;          // estimate − truth of largest magnitude among the rows
    std::uint64_t outside = 0;     // rows whose truth lies outside [lower, upper]
    double recall = 1;
    double precision = 1;
    std::uint64_t exact_top = 0;
};

struct KeyCheck {
    ListCheck top_packets;
    ListCheck top_bytes;
    bool has_distinct = false;
    DistinctListCheck top_distinct;
    std::uint64_t exact_keys = 0;            // distinct keys of the window
    std::uint64_t exact_distinct_pairs = 0;  // (key, item) pairs, for distinct specs
    double distinct_pairs_estimate = 0;
};

/// A flow count beside its exact value and the bound it is stated with.
struct FlowCheck {
    double estimate = 0;
    std::uint64_t exact = 0;
    double lower = 0;  // the truth should lie in [lower, upper]
    double upper = 0;
    bool within = true;
};

struct FlowChecks {
    FlowCheck new_flows;
    FlowCheck active;
    FlowCheck expired;
    FlowCheck ended;
};

/// Breaks of one kind of bound against what its failure probability allows.
struct BreakTally {
    std::uint64_t checks = 0;
    std::uint64_t breaks = 0;
    double probability = 0;    // a check's stated failure probability
    std::uint64_t allowed = 0;  // the (1 − 10⁻⁶) quantile of Binomial(checks, probability)
    bool broken() const noexcept { return breaks > allowed; }
};

struct VerifySection {
    std::uint64_t memory_bytes = 0;  // the exact tables
    std::uint64_t max_flows = 0;     // their limit (entries per table)
    std::uint64_t packets = 0;       // exact packets and bytes of the window
    std::uint64_t bytes = 0;
    std::uint64_t exact_keys = 0;    // distinct 5-tuples of the window
    ListCheck top_packets;           // the 5-tuple's lists
    ListCheck top_bytes;
    std::vector<KeyCheck> keys;      // one per extra key spec, in order
    bool has_flows = false;
    FlowChecks flows;
    BreakTally rows;        // listed rows below their lower bound, each allowed δ
    BreakTally flow_bounds;  // flow counts outside their bound, each allowed flow_bound_probability
    bool broken() const noexcept { return rows.broken() || flow_bounds.broken(); }
};

/// The strict test over a run: each report's verdict, and the tallies of all
/// its reports summed (a run of many reports tests its bounds far more
/// strongly than any one report can).
struct VerifyVerdict {
    std::uint64_t reports = 0;
    std::uint64_t broken_reports = 0;
    BreakTally rows;
    BreakTally flow_bounds;
    void add(const VerifySection& section);
    bool broken() const noexcept { return broken_reports > 0 || rows.broken() || flow_bounds.broken(); }
};

/// The probability with which a flow count may lie outside its stated bound:
/// the largest of the bounds' (new and ended 10⁻³, active and expired three
/// standard errors of a normal, 0.27%).
inline constexpr double flow_bound_probability = 0.0027;
/// The tail the strict test allows: breaks above the (1 − 10⁻⁶) quantile.
inline constexpr double strict_tail = 1e-6;

/// The smallest k with P(X > k) ≤ tail for X ~ Binomial(n, p).
std::uint64_t binomial_upper_quantile(std::uint64_t n, double p, double tail);

/// Checks a window's summary against its exact counts. `epsilon` and `delta`
/// are the sketch's stated guarantee; `top_k` the lists' length.
VerifySection verify_window(const WindowSummary& summary, const ExactWindow& exact, double epsilon, double delta,
                            std::uint32_t top_k);

}  // namespace flowsketch::core
