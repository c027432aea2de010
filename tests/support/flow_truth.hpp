// Exact flow-lifecycle truth for `flowsketch gen --lifetimes` output: reads the
// lifetime truth TSV and computes, for any interval boundaries and idle timeout
// T >= the file's gap_min_ns, what an ideal tracker with idle timeout T sees in
// every interval: new flows, active flows, expired flows, FIN/RST-ended flows.
//
// Semantics (docs/gen.md, "Lifecycle semantics"). Intervals are [start, end),
// like the pipeline's packet-time intervals (a packet at exactly `end` belongs
// to the next one). For a flow with packets p_1 <= ... <= p_c:
//  - a *session* is a maximal run of packets in which consecutive packets are
//    at most T apart (a silence of exactly T keeps the flow active);
//  - the flow is active at instant t iff it has a packet p with p <= t <= p + T;
//    for the state at an interval's end only the packets before it count, so
//    "active at end" means a packet in [end - T, end);
//  - new in [start, end): sessions whose first packet is in it (the flow's first
//    packet, or a packet after a silence longer than T: a returning flow is new
//    again, as a sketch with idle timeout T sees it);
//  - expired in [start, end): sessions whose last packet + T is in it (after
//    that instant no packet is within T; a session that ends at last + T >= end
//    is still active at end);
//  - ended in [start, end): flows whose last packet (the one carrying FIN or RST)
//    is in it.
// These give, for every interval, active_at_end = active_at_start + new - expired.
//
// Exactness: the truth lists every silence longer than gap_min_ns, so for
// T >= gap_min_ns every silence longer than T is known and everything above is
// exact. For T < gap_min_ns lifecycle_counts() throws.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace flowsketch::testing {

enum class FlowEndFlag : std::uint8_t { none, fin, rst };

/// One line of a lifetime truth file.
struct LifetimeFlow {
    std::string key;  // "proto\tsrc\tdst\tsport\tdport", as in the file
    int proto = 0;
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::int64_t first_ns = 0;  // first packet, Unix ns
    std::int64_t last_ns = 0;   // last packet, Unix ns
    FlowEndFlag end = FlowEndFlag::none;
    std::int64_t pause_ns = 0;  // scheduled pause as emitted, 0 if none
    /// Every silence longer than gap_min_ns: (packet before, packet after), in time order.
    std::vector<std::pair<std::int64_t, std::int64_t>> gaps;
};

struct LifetimeTruth {
    std::map<std::string, std::string> comments;  // "# name value" lines
    std::int64_t gap_min_ns = 0;
    std::vector<LifetimeFlow> flows;  // file order (packets descending)
};

namespace flow_truth_detail {

inline std::int64_t parse_int(std::string_view text, std::string_view what) {
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end) {
        throw std::runtime_error("lifetime truth: bad " + std::string(what) + " '" +
                                 std::string(text) + "'");
    }
    return value;
}

inline std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t at = text.find(separator);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return parts;
        text.remove_prefix(at + 1);
    }
}

}  // namespace flow_truth_detail

inline constexpr std::string_view lifetime_truth_header =
    "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tfirst_ns\tlast_ns\tend_flag\tpause_ns\tgaps";

/// Parses a lifetime truth file's text. Throws std::runtime_error on anything
/// malformed, including gaps that are not in order within [first_ns, last_ns].
inline LifetimeTruth parse_lifetime_truth(std::string_view text) {
    using flow_truth_detail::parse_int;
    LifetimeTruth truth;
    bool header_seen = false;
    for (const std::string_view line : flow_truth_detail::split(text, '\n')) {
        if (line.empty()) continue;
        if (line.starts_with("# ")) {
            const std::string_view rest = line.substr(2);
            const std::size_t space = rest.find(' ');
            truth.comments[std::string(rest.substr(0, space))] =
                space == std::string_view::npos ? "" : std::string(rest.substr(space + 1));
            continue;
        }
        if (!header_seen) {
            if (line != lifetime_truth_header) {
                throw std::runtime_error("lifetime truth: unexpected header '" +
                                         std::string(line) + "'");
            }
            header_seen = true;
            continue;
        }
        const auto cols = flow_truth_detail::split(line, '\t');
        if (cols.size() != 12) {
            throw std::runtime_error("lifetime truth: not 12 columns: '" + std::string(line) + "'");
        }
        LifetimeFlow flow;
        flow.key = std::string(cols[0]) + "\t" + std::string(cols[1]) + "\t" +
                   std::string(cols[2]) + "\t" + std::string(cols[3]) + "\t" +
                   std::string(cols[4]);
        flow.proto = static_cast<int>(parse_int(cols[0], "proto"));
        flow.packets = static_cast<std::uint64_t>(parse_int(cols[5], "packets"));
        flow.bytes = static_cast<std::uint64_t>(parse_int(cols[6], "bytes"));
        flow.first_ns = parse_int(cols[7], "first_ns");
        flow.last_ns = parse_int(cols[8], "last_ns");
        if (cols[9] == "fin") {
            flow.end = FlowEndFlag::fin;
        } else if (cols[9] == "rst") {
            flow.end = FlowEndFlag::rst;
        } else if (cols[9] != "-") {
            throw std::runtime_error("lifetime truth: bad end_flag '" + std::string(cols[9]) + "'");
        }
        flow.pause_ns = parse_int(cols[10], "pause_ns");
        if (cols[11] != "-") {
            std::int64_t previous = flow.first_ns;
            for (const std::string_view gap : flow_truth_detail::split(cols[11], ',')) {
                const std::size_t colon = gap.find(':');
                if (colon == std::string_view::npos) {
                    throw std::runtime_error("lifetime truth: bad gap '" + std::string(gap) + "'");
                }
                const std::int64_t before = parse_int(gap.substr(0, colon), "gap start");
                const std::int64_t after = parse_int(gap.substr(colon + 1), "gap end");
                if (before < previous || after <= before || after > flow.last_ns) {
                    throw std::runtime_error("lifetime truth: gap out of order: '" +
                                             std::string(line) + "'");
                }
                flow.gaps.emplace_back(before, after);
                previous = after;
            }
        }
        if (flow.first_ns > flow.last_ns || flow.packets == 0) {
            throw std::runtime_error("lifetime truth: bad times: '" + std::string(line) + "'");
        }
        truth.flows.push_back(std::move(flow));
    }
    if (!header_seen) throw std::runtime_error("lifetime truth: no header line");
    const auto gap_min = truth.comments.find("gap_min_ns");
    if (gap_min == truth.comments.end()) {
        throw std::runtime_error("lifetime truth: no '# gap_min_ns' line");
    }
    truth.gap_min_ns = parse_int(gap_min->second, "gap_min_ns");
    return truth;
}

inline LifetimeTruth read_lifetime_truth(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open lifetime truth file " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return parse_lifetime_truth(text.str());
}

/// What an ideal tracker with idle timeout T sees in [start_ns, end_ns).
struct IntervalLifecycle {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::uint64_t new_flows = 0;        ///< sessions starting in the interval
    std::uint64_t returning_flows = 0;  ///< of those, after a silence > T (not a first packet)
    std::uint64_t active_at_start = 0;  ///< flows with a packet in [start - T, start)
    std::uint64_t active_at_end = 0;    ///< flows with a packet in [end - T, end)
    std::uint64_t expired = 0;          ///< sessions whose last packet + T is in the interval
    std::uint64_t ended = 0;            ///< FIN/RST flows whose last packet is in the interval
    friend bool operator==(const IntervalLifecycle&, const IntervalLifecycle&) = default;
};

/// Exact per-interval counts for intervals [boundaries[i], boundaries[i + 1])
/// and idle timeout T (semantics at the top of this file). Throws
/// std::invalid_argument if fewer than 2 boundaries, they are not strictly
/// increasing, T < 0, or T < truth.gap_min_ns (silences in (T, gap_min_ns]
/// are not listed, so the answer would not be exact).
/// Cost: O(sessions · log intervals + intervals).
inline std::vector<IntervalLifecycle> lifecycle_counts(const LifetimeTruth& truth,
                                                       std::span<const std::int64_t> boundaries,
                                                       std::int64_t idle_timeout_ns) {
    if (boundaries.size() < 2) throw std::invalid_argument("need at least 2 boundaries");
    for (std::size_t i = 1; i < boundaries.size(); ++i) {
        if (boundaries[i] <= boundaries[i - 1]) {
            throw std::invalid_argument("boundaries must be strictly increasing");
        }
    }
    if (idle_timeout_ns < 0) throw std::invalid_argument("idle timeout must be >= 0");
    if (idle_timeout_ns < truth.gap_min_ns) {
        throw std::invalid_argument("idle timeout below the truth's gap_min_ns: not exact");
    }
    const std::size_t n = boundaries.size() - 1;
    std::vector<IntervalLifecycle> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i].start_ns = boundaries[i];
        out[i].end_ns = boundaries[i + 1];
    }
    // Number of boundaries <= t; interval of t is that minus 1 (valid if in [0, n)).
    const auto boundaries_upto = [&](std::int64_t t) {
        return static_cast<std::size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), t) -
                                        boundaries.begin());
    };
    const auto interval_of = [&](std::int64_t t) -> std::size_t {
        const std::size_t upto = boundaries_upto(t);
        return upto == 0 ? n : upto - 1;  // n: outside (before the first boundary or after)
    };
    // active[j] = sessions with first < B_j <= last + T, through a difference array.
    std::vector<std::int64_t> active_diff(boundaries.size() + 1, 0);
    const auto add_session = [&](std::int64_t first, std::int64_t last, bool returning) {
        const std::int64_t expiry = last + idle_timeout_ns;
        if (const std::size_t i = interval_of(first); i < n) {
            ++out[i].new_flows;
            if (returning) ++out[i].returning_flows;
        }
        if (const std::size_t i = interval_of(expiry); i < n) ++out[i].expired;
        const std::size_t j_lo = boundaries_upto(first);  // first boundary > first
        const std::size_t j_end = boundaries_upto(expiry);  // past the last boundary <= expiry
        if (j_lo < j_end) {
            ++active_diff[j_lo];
            --active_diff[j_end];
        }
    };
    for (const LifetimeFlow& flow : truth.flows) {
        std::int64_t session_first = flow.first_ns;
        bool returning = false;
        for (const auto& [before, after] : flow.gaps) {
            if (after - before > idle_timeout_ns) {
                add_session(session_first, before, returning);
                session_first = after;
                returning = true;
            }
        }
        add_session(session_first, flow.last_ns, returning);
        if (flow.end != FlowEndFlag::none) {
            if (const std::size_t i = interval_of(flow.last_ns); i < n) ++out[i].ended;
        }
    }
    std::int64_t active = 0;
    for (std::size_t j = 0; j < boundaries.size(); ++j) {
        active += active_diff[j];
        if (j < n) out[j].active_at_start = static_cast<std::uint64_t>(active);
        if (j > 0) out[j - 1].active_at_end = static_cast<std::uint64_t>(active);
    }
    return out;
}

}  // namespace flowsketch::testing
