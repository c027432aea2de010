// Which heavy-hitter series a Prometheus endpoint exports, interval after
// interval. A series is labelled by its key (never by rank, which would make a
// new series at each rank change), stays while its key is in the top of a
// recent interval and for a staleness after it left, and their number is
// capped: the label sets a scraper stores stay bounded (docs/prometheus.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/measure/top_list.hpp"

namespace flowsketch::reports {

class HeavyHitterSeries {
public:
    struct Row {
        std::string labels;    // rendered: {key="..",src="..",...} (no probe)
        std::size_t list = 0;  // 0: the 5-tuple, then the extra key specs in order
        std::size_t rank = 0;  // in the last interval's top, from 1; 0: it left the top
        std::uint64_t estimate = 0;
        std::uint64_t lower = 0;
    };

    /// `per_list`: rows taken from each list; `staleness`: intervals a key
    /// stays after leaving the top; `cap`: the most rows at any time (≥ 1).
    HeavyHitterSeries(std::size_t per_list, std::uint32_t staleness, std::size_t cap);

    /// Takes one interval's lists (one ranking; the 5-tuple's first). A key
    /// in the top gets its estimate and lower bound. A key that left it is
    /// exported at the smallest estimate its list exported this interval (its
    /// count is at most that, with the sketch's probability), lower bound 0,
    /// until `staleness` intervals have passed without it. Beyond `cap` keys,
    /// those that left the top longest ago (then the lowest ranked) go first.
    void observe(const std::vector<const core::TopList*>& lists);

    /// The exported rows: by list, then the last interval's top by rank, then
    /// keys that left it (most recent first), ties by labels.
    std::vector<Row> rows() const;

    std::size_t size() const noexcept { return keys_.size(); }

private:
    struct Tracked {
        std::size_t list = 0;
        std::uint64_t last_interval = 0;  // the last interval whose top held it
        std::size_t rank = 0;             // its rank there
        std::uint64_t estimate = 0;
        std::uint64_t lower = 0;
    };
    std::size_t per_list_;
    std::uint32_t staleness_;
    std::size_t cap_;
    std::uint64_t interval_ = 0;           // intervals observed
    std::map<std::string, Tracked> keys_;  // by rendered labels
    std::vector<std::uint64_t> floor_;     // per list: its smallest exported estimate
};

/// The labels of a heavy hitter's series: `key` (the spec) for an extra key
/// spec, then the fields the spec keeps, the protocol by name.
std::string heavy_hitter_labels(const core::HeavyHitter& flow, const core::KeySpec& spec);

}  // namespace flowsketch::reports
