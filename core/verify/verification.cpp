#include "core/verify/verification.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace flowsketch::core {
namespace {

// The K-th largest of `values` (0 when there are fewer): a key belongs to the
// exact top K when its truth is at least this and above 0.
template <class Value>
Value kth_largest(std::vector<Value> values, std::uint32_t k) {
    if (values.size() < k || k == 0) return Value{};
    std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), std::greater<>());
    return values[k - 1];
}

template <class Check>
void set_recall(Check& check, std::uint64_t hits, std::uint64_t keys, std::uint32_t top_k) {
    check.exact_top = std::min<std::uint64_t>(top_k, keys);
    hits = std::min(hits, check.exact_top);
    check.recall = check.exact_top == 0 ? 1.0 : static_cast<double>(hits) / static_cast<double>(check.exact_top);
    check.precision = check.checked == 0 ? 1.0 : static_cast<double>(hits) / static_cast<double>(check.checked);
}

ListCheck check_list(const TopList& list, const ExactKeyCounts& exact, double epsilon, std::uint32_t top_k) {
    const bool bytes = list.weight == Weight::bytes;
    const auto truth_of = [&](const FlowKey& key) -> std::uint64_t {
        const auto it = exact.counts.find(key);
        if (it == exact.counts.end()) return 0;
        return bytes ? it->second.bytes : it->second.packets;
    };
    std::vector<std::uint64_t> truths;
    truths.reserve(exact.counts.size());
    for (const auto& [key, count] : exact.counts) truths.push_back(bytes ? count.bytes : count.packets);
    const std::uint64_t kth = kth_largest(std::move(truths), top_k);
    ListCheck check;
    check.bound = epsilon * static_cast<double>(list.total);
    std::uint64_t hits = 0;
    bool first = true;
    for (const HeavyHitter& row : list) {
        const std::uint64_t truth = truth_of(row.key);
        const std::int64_t error = static_cast<std::int64_t>(row.estimate) - static_cast<std::int64_t>(truth);
        check.max_error = first ? error : std::max(check.max_error, error);
        first = false;
        ++check.checked;
        if (truth < row.lower) ++check.below_lower;
        if (truth > 0 && truth >= kth) ++hits;
    }
    set_recall(check, hits, exact.counts.size(), top_k);
    return check;
}

DistinctListCheck check_distinct(const DistinctTopList& list, const ExactKeyCounts& exact, std::uint32_t top_k) {
    const auto truth_of = [&](const FlowKey& key) -> std::uint64_t {
        const auto it = exact.distinct.find(key);
        return it == exact.distinct.end() ? 0 : it->second.size();
    };
    std::vector<std::uint64_t> truths;
    truths.reserve(exact.distinct.size());
    for (const auto& [key, items] : exact.distinct) truths.push_back(items.size());
    const std::uint64_t kth = kth_largest(std::move(truths), top_k);
    DistinctListCheck check;
    std::uint64_t hits = 0;
    for (std::size_t i = 0; i < list.list.size() && i < list.distinct.size(); ++i) {
        const std::uint64_t truth = truth_of(list.list[i].key);
        const DistinctBounds& bounds = list.distinct[i];
        const double error = bounds.estimate - static_cast<double>(truth);
        if (std::fabs(error) > std::fabs(check.max_error)) check.max_error = error;
        ++check.checked;
        const auto t = static_cast<double>(truth);
        if (t < bounds.lower || t > bounds.upper) ++check.outside;
        if (truth > 0 && truth >= kth) ++hits;
    }
    set_recall(check, hits, exact.distinct.size(), top_k);
    return check;
}

// Counts are whole and estimates are not: half a flow of slack either side.
FlowCheck flow_check(double estimate, std::uint64_t exact, double lower, double upper) {
    FlowCheck check{estimate, exact, lower, upper, true};
    const auto truth = static_cast<double>(exact);
    check.within = truth >= lower - 0.5 && truth <= upper + 0.5;
    return check;
}

FlowChecks check_flows(const FlowCounts& f, const ExactFlowCounts& exact) {
    FlowChecks checks;
    // new and ended never exceed the truth and undercount by at most their bound.
    const auto new_flows = static_cast<double>(f.new_flows);
    checks.new_flows = flow_check(new_flows, exact.new_flows, new_flows, new_flows + f.new_undercount_bound);
    const auto ended = static_cast<double>(f.ended);
    checks.ended = flow_check(ended, exact.ended, ended, ended + f.ended_undercount_bound);
    checks.active = flow_check(f.active, exact.active, f.active_lower, f.active_upper);
    checks.expired = flow_check(f.expired, exact.expired, f.expired - 3 * f.expired_stderr,
                                f.expired + 3 * f.expired_stderr);
    return checks;
}

void tally(BreakTally& tally, std::uint64_t checks, std::uint64_t breaks) {
    tally.checks += checks;
    tally.breaks += breaks;
}

void tally(BreakTally& rows, const ListCheck& check) { tally(rows, check.checked, check.below_lower); }

}  // namespace

std::uint64_t binomial_upper_quantile(std::uint64_t n, double p, double tail) {
    if (n == 0 || p <= 0) return 0;
    if (p >= 1) return n;
    // P(X > k) = 1 − Σ_{i ≤ k} pmf(i), with the pmf in logs (n may be large).
    const double log_p = std::log(p);
    const double log_q = std::log1p(-p);
    const auto dn = static_cast<double>(n);
    double below = 0;  // P(X ≤ k)
    for (std::uint64_t k = 0; k < n; ++k) {
        const auto dk = static_cast<double>(k);
        below += std::exp(std::lgamma(dn + 1) - std::lgamma(dk + 1) - std::lgamma(dn - dk + 1) + dk * log_p +
                          (dn - dk) * log_q);
        if (1.0 - below <= tail) return k;
    }
    return n;
}

void VerifyVerdict::add(const VerifySection& section) {
    ++reports;
    if (section.broken()) ++broken_reports;
    for (auto [sum, part] : {std::pair{&rows, &section.rows}, std::pair{&flow_bounds, &section.flow_bounds}}) {
        sum->checks += part->checks;
        sum->breaks += part->breaks;
        sum->probability = part->probability;
        sum->allowed = binomial_upper_quantile(sum->checks, sum->probability, strict_tail);
    }
}

VerifySection verify_window(const WindowSummary& summary, const ExactWindow& exact, double epsilon, double delta,
                            std::uint32_t top_k) {
    VerifySection section;
    section.packets = exact.packets;
    section.bytes = exact.bytes;
    const ExactKeyCounts& five_tuple = *exact.keys.front();
    section.exact_keys = five_tuple.counts.size();
    section.top_packets = check_list(summary.top_packets, five_tuple, epsilon, top_k);
    section.top_bytes = check_list(summary.top_bytes, five_tuple, epsilon, top_k);
    section.rows.probability = delta;
    tally(section.rows, section.top_packets);
    tally(section.rows, section.top_bytes);
    for (std::size_t k = 0; k < summary.keys.size() && k + 1 < exact.keys.size(); ++k) {
        const KeyTops& tops = summary.keys[k];
        const ExactKeyCounts& table = *exact.keys[k + 1];
        KeyCheck key;
        key.exact_keys = table.counts.size();
        key.top_packets = check_list(tops.top_packets, table, epsilon, top_k);
        key.top_bytes = check_list(tops.top_bytes, table, epsilon, top_k);
        tally(section.rows, key.top_packets);
        tally(section.rows, key.top_bytes);
        if (tops.has_distinct) {
            key.has_distinct = true;
            key.top_distinct = check_distinct(tops.top_distinct, table, top_k);
            key.exact_distinct_pairs = table.distinct_pairs;
            key.distinct_pairs_estimate = tops.distinct_pairs.estimate;
        }
        section.keys.push_back(key);
    }
    section.flow_bounds.probability = flow_bound_probability;
    if (summary.has_flows && exact.has_flows) {
        section.has_flows = true;
        section.flows = check_flows(summary.flows, exact.flows);
        for (const FlowCheck* check : {&section.flows.new_flows, &section.flows.active, &section.flows.expired,
                                       &section.flows.ended}) {
            tally(section.flow_bounds, 1, check->within ? 0 : 1);
        }
    }
    section.rows.allowed = binomial_upper_quantile(section.rows.checks, section.rows.probability, strict_tail);
    section.flow_bounds.allowed =
        binomial_upper_quantile(section.flow_bounds.checks, section.flow_bounds.probability, strict_tail);
    return section;
}

}  // namespace flowsketch::core
