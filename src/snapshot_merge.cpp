#include "src/snapshot_merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace flowsketch::app {
namespace {

// Flow counts of probes measuring at the same time: every count and its
// bound add (a flow two probes saw counts once per probe), standard errors
// add in quadrature, the worst false-positive rate is kept.
void add_concurrent_flows(core::FlowCounts& sum, const core::FlowCounts& other) {
    sum.new_flows += other.new_flows;
    sum.new_undercount_bound += other.new_undercount_bound;
    sum.active += other.active;
    sum.active_stderr = std::hypot(sum.active_stderr, other.active_stderr);
    sum.active_lower += other.active_lower;
    sum.active_upper += other.active_upper;
    sum.expired += other.expired;
    sum.expired_stderr = std::hypot(sum.expired_stderr, other.expired_stderr);
    sum.ended += other.ended;
    sum.ended_undercount_bound += other.ended_undercount_bound;
    sum.fpr = std::max(sum.fpr, other.fpr);
    sum.max_fpr = std::max(sum.max_fpr, other.max_fpr);
    sum.target_fpr = std::max(sum.target_fpr, other.target_fpr);
    sum.overfilled = sum.overfilled || other.overfilled;
}

}  // namespace

std::string merge_difference(const core::WindowValue& a, const core::WindowValue& b) {
    if (a.hash_seed != b.hash_seed) return fmt::format("seed {:#018x} vs {:#018x}", a.hash_seed, b.hash_seed);
    const auto names = [](const core::WindowValue& value) {
        std::string text;
        for (const core::KeyWindow& key : value.keys) {
            if (!text.empty()) text.push_back(' ');
            text += key.spec.name();
        }
        return text;
    };
    if (names(a) != names(b)) return fmt::format("key specs '{}' vs '{}'", names(a), names(b));
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
        const core::CountMinParams& p = a.keys[k].sketch.params();
        const core::CountMinParams& q = b.keys[k].sketch.params();
        const std::string spec = a.keys[k].spec.name();
        if (p.variant != q.variant) {
            return fmt::format("{} Count-Min variant {} vs {}", spec, core::variant_name(p.variant),
                               core::variant_name(q.variant));
        }
        if (p.width != q.width) return fmt::format("{} Count-Min width {} vs {}", spec, p.width, q.width);
        if (p.depth != q.depth) return fmt::format("{} Count-Min depth {} vs {}", spec, p.depth, q.depth);
        if (p.seed != q.seed) return fmt::format("{} Count-Min seed {:#x} vs {:#x}", spec, p.seed, q.seed);
        if (p.conservative_update != q.conservative_update) {
            return fmt::format("{} Count-Min update {} vs {}", spec, p.conservative_update ? "conservative" : "standard",
                               q.conservative_update ? "conservative" : "standard");
        }
        const auto& da = a.keys[k].distinct;
        const auto& db = b.keys[k].distinct;
        if (da && db && (da->params().width != db->params().width || da->params().depth != db->params().depth ||
                         da->params().register_bits != db->params().register_bits)) {
            return fmt::format("{} distinct sketch dimensions", spec);
        }
    }
    if (a.has_flows != b.has_flows) return "flow tracking on vs off";
    return {};
}

void MergeBuckets::add(reports::Snapshot snapshot, const std::string& source) {
    core::WindowValue& value = snapshot.value;
    if (first_source_.empty()) {
        first_source_ = source;
        first_ = value;
    } else if (const std::string differs = merge_difference(first_, value); !differs.empty()) {
        throw MergeRefused(fmt::format("{} and {} cannot be merged: {}", first_source_, source, differs));
    }
    std::int64_t start = 0;
    std::int64_t end = 0;
    if (interval_ns_ > 0) {
        start = value.start_ns / interval_ns_ * interval_ns_;
        if (value.start_ns < 0 && value.start_ns % interval_ns_ != 0) start -= interval_ns_;
        end = start + interval_ns_;
        if (value.end_ns > end) {
            throw MergeRefused(fmt::format("{}: its window [{}, {}) s crosses a boundary of --interval {}", source,
                                           value.start_ns / 1'000'000'000, value.end_ns / 1'000'000'000,
                                           static_cast<double>(interval_ns_) / 1e9));
        }
    }
    std::vector<Seen>& seen = windows_[snapshot.context.probe];
    for (const Seen& other : seen) {
        const bool overlap = value.start_ns < std::max(other.end_ns, other.start_ns + 1) &&
                             other.start_ns < std::max(value.end_ns, value.start_ns + 1);
        if (overlap) {
            throw MergeRefused(fmt::format("{} and {} are windows of probe {} that overlap: merging them would "
                                           "count their packets twice",
                                           other.source, source, snapshot.context.probe));
        }
    }
    seen.push_back(Seen{value.start_ns, value.end_ns, source});
    MergeBucket& bucket = buckets_[start];
    bucket.start_ns = start;
    bucket.end_ns = end;
    const std::string probe = snapshot.context.probe;
    auto [at, inserted] = bucket.probes.try_emplace(probe);
    try {
        if (inserted) {
            at->second = std::move(snapshot);
        } else {
            at->second.value.merge(value);  // the same probe's windows, one after another
            at->second.context.truncated = at->second.context.truncated || snapshot.context.truncated;
        }
        ++bucket.windows;
    } catch (const std::invalid_argument& e) {  // a merge the checks above did not foresee
        throw MergeRefused(fmt::format("{}: {}", source, e.what()));
    }
}

reports::Snapshot merge_bucket(MergeBucket& bucket) {
    auto it = bucket.probes.begin();
    reports::Snapshot total = std::move(it->second);
    std::string probes = it->first;
    if (bucket.probes.size() > 1) {  // whose warning is whose
        for (std::string& warning : total.context.warnings) warning = probes + ": " + warning;
    }
    for (++it; it != bucket.probes.end(); ++it) {
        const reports::Snapshot& other = it->second;
        const core::FlowCounts flows = total.value.flows;
        total.value.merge(other.value);
        if (total.value.has_flows) {
            total.value.flows = flows;
            add_concurrent_flows(total.value.flows, other.value.flows);
        }
        total.context.memory_bytes += other.context.memory_bytes;
        total.context.flows.memory_bytes += other.context.flows.memory_bytes;
        total.context.flows.max_flows += other.context.flows.max_flows;
        total.context.truncated = total.context.truncated || other.context.truncated;
        for (const std::string& warning : other.context.warnings) {
            const std::string text = it->first + ": " + warning;
            if (std::find(total.context.warnings.begin(), total.context.warnings.end(), text) ==
                total.context.warnings.end()) {
                total.context.warnings.push_back(text);
            }
        }
        probes += "," + it->first;
    }
    total.context.probe = probes;
    return total;
}

reports::Report merged_report(reports::Snapshot total, const MergeBucket& bucket, bool intervals, std::uint32_t top,
                              const std::vector<core::KeySpec>& shown) {
    if (top != 0) total.value.top_k = top;
    if (intervals) {
        total.value.start_ns = bucket.start_ns;
        total.value.end_ns = bucket.end_ns;
    }
    reports::Report report = reports::report_from_value(
        intervals ? reports::ReportKind::interval : reports::ReportKind::final_report, total.value, total.context);
    if (!shown.empty()) {
        std::vector<core::KeyTops> kept;
        for (std::size_t k = 0; k < report.keys.size(); ++k) {
            const core::KeySpec& spec = total.value.keys[k + 1].spec;
            if (std::find(shown.begin(), shown.end(), spec) != shown.end()) kept.push_back(std::move(report.keys[k]));
        }
        report.keys = std::move(kept);
    }
    return report;
}

}  // namespace flowsketch::app
