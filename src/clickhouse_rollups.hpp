// Which windows `flowsketch query` reads from the per-hour and per-minute
// rollups (sketch_hour, sketch_minute) instead of the sketch rows. A rollup
// sums every row ever inserted: the twin a retried insert may leave, and the
// rows of a window whose `intervals` row never arrived, are in it; the sketch
// rows are read once per whole window. So a probe's bucket is read from a
// rollup only when the rollup holds exactly its whole windows: for each of
// their key specs, every (lane, row) of one configuration, counted once per
// window. Anything else is read from the sketch rows, as without rollups.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/clickhouse_schema.hpp"

namespace flowsketch::app {

struct Rollup {
    std::string_view table;
    std::int64_t bucket_ns;
};
inline constexpr Rollup hour_rollup{sketch_hour_table, 3'600'000'000'000};
inline constexpr Rollup minute_rollup{sketch_minute_table, 60'000'000'000};

/// A whole window (its `intervals` row), once.
struct WindowIdentity {
    std::string probe;
    std::int64_t start_ns = 0;
    std::vector<std::string> key_specs;
};

/// A rollup's rows of one probe, bucket and key spec, grouped by lane, row
/// and configuration: how many groups and configurations, the deepest
/// configuration, and the fewest and most windows a group counts.
struct RollupSummary {
    std::string probe;
    std::int64_t bucket_ns = 0;
    std::string key_spec;
    std::uint64_t groups = 0;
    std::uint64_t configurations = 0;
    std::uint64_t depth = 0;
    std::uint64_t fewest_windows = 0;
    std::uint64_t most_windows = 0;
};

/// Consecutive buckets of one probe: the windows starting in [from_ns, to_ns).
struct ProbeSpan {
    std::string probe;
    std::int64_t from_ns = 0;
    std::int64_t to_ns = 0;

    friend bool operator==(const ProbeSpan&, const ProbeSpan&) = default;
};

/// Whether a rollup's buckets fit in reports of `report_ns` (0: one report
/// over all): each bucket inside one report.
bool rollup_fits_reports(const Rollup& rollup, std::int64_t report_ns) noexcept;

/// The SELECT (TabSeparated, the columns of RollupSummary) of `table`'s
/// summaries for the buckets wholly inside [from_ns, to_ns); `filter` is
/// empty or a further SQL condition (on `probe` and `bucket_ns`).
std::string rollup_summary_sql(const Rollup& rollup, const std::string& table, std::int64_t from_ns,
                               std::int64_t to_ns, std::string_view filter);
/// One line of that SELECT's answer; std::runtime_error if malformed.
RollupSummary parse_rollup_summary(std::string_view line);

/// The buckets the rollup holds exactly (above), skipping those inside
/// `taken` (read from a coarser rollup), as spans of consecutive buckets per
/// probe (by probe, then time). `summaries` must come from
/// rollup_summary_sql, so every bucket they name is inside the range.
std::vector<ProbeSpan> exact_rollup_spans(const Rollup& rollup, const std::vector<WindowIdentity>& windows,
                                          const std::vector<RollupSummary>& summaries,
                                          const std::vector<ProbeSpan>& taken);

/// "(probe = 'a' AND column >= x AND column < y) OR ...", or "0" (false)
/// when there is no span.
std::string spans_condition(const std::vector<ProbeSpan>& spans, std::string_view column);

}  // namespace flowsketch::app
