// Windows of any probes summed into report buckets: what `flowsketch merge`
// does with snapshot files and `flowsketch query` with what ClickHouse
// returns, so both print the same numbers for the same windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "reports/snapshot.hpp"

namespace flowsketch::app {

/// A window that cannot join the others; the message says which and why.
class MergeRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What makes two windows' sketches not add up ("" when they do): seed, key
/// specs, Count-Min variant, width, depth, seed, update rule, distinct
/// dimensions, flow tracking.
std::string merge_difference(const core::WindowValue& a, const core::WindowValue& b);

/// One report's worth of windows: each probe's windows merged in time.
struct MergeBucket {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::map<std::string, reports::Snapshot> probes;  // by name: a stable order
    std::size_t windows = 0;                          // windows merged into it, of every probe
};

/// Windows sorted into buckets of `interval_ns` (0: one bucket), refusing a
/// window of another configuration than the first, one crossing a bucket
/// boundary, or one that overlaps an earlier window of its probe.
class MergeBuckets {
public:
    explicit MergeBuckets(std::int64_t interval_ns) : interval_ns_(interval_ns) {}

    /// Adds a window; `source` names it in messages (a file, a row). Throws
    /// MergeRefused.
    void add(reports::Snapshot snapshot, const std::string& source);

    std::map<std::int64_t, MergeBucket>& buckets() noexcept { return buckets_; }
    /// The first window added (its configuration is every window's), if any.
    bool empty() const noexcept { return first_source_.empty(); }
    const core::WindowValue& first() const noexcept { return first_; }
    const std::string& first_source() const noexcept { return first_source_; }

private:
    struct Seen {
        std::int64_t start_ns;
        std::int64_t end_ns;
        std::string source;
    };
    std::int64_t interval_ns_;
    std::map<std::int64_t, MergeBucket> buckets_;  // by start: reports in time order
    std::map<std::string, std::vector<Seen>> windows_;
    std::string first_source_;
    core::WindowValue first_;
};

/// The bucket's probes summed (concurrent probes: flow counts add, standard
/// errors in quadrature); the probe names comma-separated, warnings prefixed
/// with their probe's name when there are several.
reports::Snapshot merge_bucket(MergeBucket& bucket);

/// The report of a merged bucket: `top` heavy hitters (0: as measured), the
/// bucket's nominal span for interval reports, only the extra key specs in
/// `shown` (all when empty).
reports::Report merged_report(reports::Snapshot total, const MergeBucket& bucket, bool intervals, std::uint32_t top,
                              const std::vector<core::KeySpec>& shown);

}  // namespace flowsketch::app
