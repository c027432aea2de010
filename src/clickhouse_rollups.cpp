#include "src/clickhouse_rollups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "src/clickhouse_tsv.hpp"
#include "src/sinks/clickhouse_http.hpp"

namespace flowsketch::app {
namespace {

constexpr std::uint64_t lanes = 2;  // packets and bytes: every exported sketch has both

// The whole windows of one probe in one bucket.
struct WholeWindows {
    std::uint64_t count = 0;
    std::vector<std::string> key_specs;  // sorted
    bool mixed = false;                  // windows of different key specs
};

bool inside(const std::vector<ProbeSpan>& spans, const std::string& probe, std::int64_t from_ns, std::int64_t to_ns) {
    return std::any_of(spans.begin(), spans.end(), [&](const ProbeSpan& span) {
        return span.probe == probe && span.from_ns <= from_ns && to_ns <= span.to_ns;
    });
}

bool holds_exactly(const WholeWindows& whole, const std::vector<const RollupSummary*>& summaries) {
    if (whole.mixed || summaries.size() != whole.key_specs.size()) return false;
    return std::all_of(summaries.begin(), summaries.end(), [&](const RollupSummary* summary) {
        return std::binary_search(whole.key_specs.begin(), whole.key_specs.end(), summary->key_spec) &&
               summary->configurations == 1 && summary->depth > 0 && summary->groups == lanes * summary->depth &&
               summary->fewest_windows == whole.count && summary->most_windows == whole.count;
    });
}

}  // namespace

bool rollup_fits_reports(const Rollup& rollup, std::int64_t report_ns) noexcept {
    return report_ns == 0 || report_ns % rollup.bucket_ns == 0;
}

std::string rollup_summary_sql(const Rollup& rollup, const std::string& table, std::int64_t from_ns,
                               std::int64_t to_ns, std::string_view filter) {
    // Buckets [b, b + size) inside [from, to), of windows after 1970 (where
    // intDiv's rounding toward zero is the floor).
    const std::int64_t first = std::max<std::int64_t>(from_ns, 0);
    const std::int64_t last = to_ns < rollup.bucket_ns ? -1 : to_ns - rollup.bucket_ns;
    std::string where = fmt::format("bucket_ns >= {} AND bucket_ns <= {}", first, last);
    if (!filter.empty()) where += fmt::format(" AND {}", filter);
    return fmt::format(
        "SELECT probe, bucket_ns, key_spec, count(), uniqExact({0}), max(depth), min(windows), max(windows) FROM (\n"
        "  SELECT probe, bucket_ns, {1}, row, countMerge(windows) AS windows FROM {2} WHERE {3}\n"
        "  GROUP BY probe, bucket_ns, {1}, row)\n"
        "GROUP BY probe, bucket_ns, key_spec ORDER BY probe, bucket_ns, key_spec FORMAT TabSeparated",
        sketch_parameter_columns, sketch_config_columns, table, where);
}

RollupSummary parse_rollup_summary(std::string_view line) {
    const std::vector<std::string_view> f = tsv::fields(line);
    if (f.size() != 8) {
        throw std::runtime_error(fmt::format("ClickHouse returned {} columns of a rollup, not 8", f.size()));
    }
    return RollupSummary{tsv::text(f[0]), tsv::i64(f[1]), tsv::text(f[2]), tsv::u64(f[3]),
                         tsv::u64(f[4]),  tsv::u64(f[5]), tsv::u64(f[6]),  tsv::u64(f[7])};
}

std::vector<ProbeSpan> exact_rollup_spans(const Rollup& rollup, const std::vector<WindowIdentity>& windows,
                                          const std::vector<RollupSummary>& summaries,
                                          const std::vector<ProbeSpan>& taken) {
    const std::int64_t size = rollup.bucket_ns;
    std::map<std::pair<std::string, std::int64_t>, WholeWindows> whole;
    for (const WindowIdentity& window : windows) {
        if (window.start_ns < 0) continue;
        std::vector<std::string> specs = window.key_specs;
        std::sort(specs.begin(), specs.end());
        WholeWindows& bucket = whole[{window.probe, window.start_ns / size * size}];
        if (bucket.count == 0) {
            bucket.key_specs = std::move(specs);
        } else if (bucket.key_specs != specs) {
            bucket.mixed = true;
        }
        ++bucket.count;
    }
    std::map<std::pair<std::string, std::int64_t>, std::vector<const RollupSummary*>> held;
    for (const RollupSummary& summary : summaries) held[{summary.probe, summary.bucket_ns}].push_back(&summary);

    std::vector<ProbeSpan> spans;
    for (const auto& [at, of_bucket] : held) {  // by probe, then bucket
        const auto& [probe, start] = at;
        const auto found = whole.find(at);
        if (found == whole.end() || !holds_exactly(found->second, of_bucket)) continue;
        if (inside(taken, probe, start, start + size)) continue;
        if (!spans.empty() && spans.back().probe == probe && spans.back().to_ns == start) {
            spans.back().to_ns += size;
        } else {
            spans.push_back(ProbeSpan{probe, start, start + size});
        }
    }
    return spans;
}

std::string spans_condition(const std::vector<ProbeSpan>& spans, std::string_view column) {
    if (spans.empty()) return "0";
    std::string condition;
    for (const ProbeSpan& span : spans) {
        condition += fmt::format("{}(probe = {} AND {} >= {} AND {} < {})", condition.empty() ? "" : " OR ",
                                 quote_literal(span.probe), column, span.from_ns, column, span.to_ns);
    }
    return "(" + condition + ")";
}

}  // namespace flowsketch::app
