// Flow lifecycle: which flows are new, how many are active, how many expired
// and how many ended, in memory fixed by (max_flows, target_fpr), with the
// error of every answer. Full design, proofs and sizing: docs/flow-lifecycle.md.
//
// Structure: a timestamp Bloom filter, the seen filter (seen_filter.hpp). m
// cells of 4 bits; a cell holds the stamp (1..15, cycling) of the newest
// generation in which some flow probed it, 0 for "no flow in the last G + 1
// generations" (stamps.hpp). Time is cut into generations of P = ⌈T/G⌉ (T the
// idle timeout); the live window is the current generation and the G before
// it. A packet writes the current stamp into its flow's k cells. At each
// generation boundary the cells holding the stamp that leaves the window are
// cleared (one SWAR pass over m/16 words). This is the counting filter of
// DESIGN.md ("G generations of bitsets plus a counter of generations per
// position") with the counter replaced by the newest generation: counter(i) ≠
// 0 ⇔ cell(i) ≠ 0, so the set of flows it answers "active" for is identical,
// in 4 bits per position instead of G + 4, and a packet touches k positions
// instead of 2k.
//
// Guarantees (m cells, k probes, ρ = fraction of non-zero cells):
//  - no false negatives: a flow with a packet less than G·P ≥ T ago is active;
//  - a flow expires at the first generation boundary more than G·P after its
//    last packet: between G·P and (G + 1)·P after it (T < delay ≤ T + P when
//    G divides T);
//  - a packet is reported new only if its flow is not active (never an
//    overcount); a new flow is missed with probability ≤ the false-positive
//    rate f of the seen filter at that moment;
//  - active and expired: estimated from the zero cells (standard, blocked) or
//    counted by tokens (two-choice), each with its error (the filters' headers
//    and the doc).
//
// Here: the generations, the interval's counts and their errors, and the two
// tables beside the seen filter: the recent-flow table (recent_flow_table.hpp)
// and the ended filter (ended_filter.hpp). Sizing: sizing.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <variant>

#include "core/key/hash.hpp"
#include "core/lifecycle/block_layout.hpp"
#include "core/lifecycle/blocked_seen_filter.hpp"
#include "core/lifecycle/ended_filter.hpp"
#include "core/lifecycle/recent_flow_table.hpp"
#include "core/lifecycle/seen_filter.hpp"
#include "core/lifecycle/sizing.hpp"
#include "core/lifecycle/stamps.hpp"
#include "core/lifecycle/standard_seen_filter.hpp"
#include "core/lifecycle/two_choice_seen_filter.hpp"

namespace flowsketch::core {

/// TCP flag bits that end a flow.
inline constexpr std::uint8_t tcp_fin = 0x01;
inline constexpr std::uint8_t tcp_rst = 0x04;

/// One interval's answers. Counts are since the last start_new_interval();
/// active, fill and fpr are as of the last observe()/advance_to().
struct FlowCounts {
    std::uint64_t packets = 0;    ///< observe() calls
    std::uint64_t new_flows = 0;  ///< packets whose flow was not active: ≤ the true count
    /// Expected number of new flows hidden by false positives:
    /// μ = Σ over generation segments (at most 256 new flows each) of
    /// new_in_segment · f/(1 − f), f the segment's end-of-segment (= highest)
    /// false-positive rate.
    double new_undercount_expected = 0;
    /// truth − new_flows ≤ μ + (1 + f/(1 − f))·(L/3 + √((L/3)² + 2μL)), L = ln 1000,
    /// f = max_fpr (Freedman/Bernstein over the arrivals, probability ≈ 0.999).
    double new_undercount_bound = 0;

    double active = 0;  ///< estimated active flows (G·P window)
    double active_stderr = 0;
    double active_lower = 0;  ///< standard: active − 3·stderr; two-choice: tokens
    double active_upper = 0;  ///< standard: active + 3·stderr; two-choice: tokens + bound

    double expired = 0;  ///< flows whose expiry boundary fell in the interval
    double expired_stderr = 0;

    std::uint64_t ended = 0;            ///< distinct flows with a FIN or RST packet
    double ended_undercount_bound = 0;  ///< same form as new_undercount_bound, ended filter's f

    double fill = 0;     ///< ρ
    double fpr = 0;      ///< current false-positive rate of the seen filter
    double max_fpr = 0;  ///< highest fpr at any generation end in the interval, or now
    double target_fpr = 0;
    bool overfilled = false;                 ///< max_fpr > overfill_factor · target_fpr
    std::uint64_t generations_advanced = 0;  ///< generation boundaries crossed
};

class FlowLifecycle {
    // The seen filter, one type per kind, chosen at construction. First here:
    // the inline members below return what with_filter returns.
    using SeenFilters = std::variant<lifecycle::StandardSeenFilter, lifecycle::TwoChoiceSeenFilter,
                                     lifecycle::BlockedSeenFilter>;
    static SeenFilters make_filter(const FlowLifecycleConfig& config,
                                   const FlowLifecycleSizing& sizing);

    /// visit(filter) with the filter as its own type: a switch, never a call through a pointer.
    template <class Self, class Visit>
    static decltype(auto) dispatch(Self& self, Visit&& visit) {
        switch (self.filter_.index()) {
            case 0:
                return visit(*std::get_if<0>(&self.filter_));
            case 1:
                return visit(*std::get_if<1>(&self.filter_));
            default:
                return visit(*std::get_if<2>(&self.filter_));
        }
    }
    template <class Visit>
    decltype(auto) with_filter(Visit&& visit) {
        return dispatch(*this, visit);
    }
    template <class Visit>
    decltype(auto) with_filter(Visit&& visit) const {
        return dispatch(*this, visit);
    }

public:
    /// Throws std::invalid_argument (see FlowLifecycleConfig::sizing).
    explicit FlowLifecycle(const FlowLifecycleConfig& config);

    /// One packet: advances generations if its time passed a boundary (never
    /// backwards), then refreshes its flow. Returns true if the flow was not
    /// active before this packet. FIN or RST in tcp_flags counts the flow as
    /// ended (pass 0 for non-TCP). O(k) cell touches (2k for two-choice when the
    /// flow was not refreshed in the current generation); no allocation.
    /// Inline for the most common packet, one of a flow already refreshed in
    /// this generation: it is answered before its probes are even located.
    /// A batch of packets calls it through batch() instead, which picks the
    /// filter kind once.
    bool observe(const Hash128& hash, std::int64_t timestamp_ns, std::uint8_t tcp_flags) noexcept {
        if (answered_by_recent(hash, timestamp_ns, tcp_flags)) return false;
        return with_filter(
            [&](auto& filter) { return observe_slow(filter, hash, timestamp_ns, tcp_flags); });
    }

    /// observe() and prefetch() for the seen filter kind F, without a choice of kind per packet.
    template <lifecycle::SeenFilter F>
    class Batch {
    public:
        static constexpr std::size_t prefetch_lookahead = F::prefetch_lookahead;
        Batch(FlowLifecycle& lifecycle, F& filter) noexcept
            : lifecycle_(lifecycle), filter_(filter) {}
        FLOWSKETCH_PREFETCH void prefetch(const Hash128& hash) const noexcept {
            filter_.prefetch(hash, lifecycle_.recent_);
        }
        bool observe(const Hash128& hash, std::int64_t timestamp_ns,
                     std::uint8_t tcp_flags) noexcept {
            if (lifecycle_.answered_by_recent(hash, timestamp_ns, tcp_flags)) return false;
            return lifecycle_.observe_slow(filter_, hash, timestamp_ns, tcp_flags);
        }

    private:
        FlowLifecycle& lifecycle_;
        F& filter_;
    };
    /// Calls body(Batch<F>) once, F this lifecycle's seen filter kind: a batch
    /// of packets pays for the choice of kind once, and its loop is compiled
    /// for each kind with the kind's calls inline.
    template <class Body>
    decltype(auto) batch(Body&& body) {
        return with_filter([&]<class F>(F& filter) { return body(Batch<F>(*this, filter)); });
    }

    /// Starts loading the cells a flow's probes touch (no effect on results);
    /// issued prefetch_lookahead() packets ahead in a batch, it hides the
    /// cache misses (what each kind loads: its prefetch()).
    FLOWSKETCH_PREFETCH void prefetch(const Hash128& hash) const noexcept {
        // A switch, not with_filter: a lambda that only prefetches may be deleted.
        switch (filter_.index()) {
            case 0:
                std::get_if<0>(&filter_)->prefetch(hash, recent_);
                return;
            case 1:
                std::get_if<1>(&filter_)->prefetch(hash, recent_);
                return;
            default:
                std::get_if<2>(&filter_)->prefetch(hash, recent_);
        }
    }
    /// prefetch() reads the flow's recent-table slot (standard and two-choice
    /// filters): a batch should prefetch_recent() it earlier still.
    bool prefetch_reads_recent() const noexcept {
        return with_filter([]<class F>(const F&) { return F::prefetch_reads_recent; });
    }
    /// How many packets ahead of observe() a batch should call prefetch().
    std::size_t prefetch_lookahead() const noexcept {
        return with_filter([]<class F>(const F&) { return F::prefetch_lookahead; });
    }
    /// Starts loading what prefetch() itself reads (issue it further ahead).
    FLOWSKETCH_PREFETCH void prefetch_recent(const Hash128& hash) const noexcept {
        __builtin_prefetch(&recent_.slot(hash), 0, 3);
    }
    /// The first timestamp at which observe() or advance_to() crosses a
    /// generation boundary (the lowest value before the first packet).
    std::int64_t next_boundary_ns() const noexcept { return next_boundary_ns_; }
    /// Time passes without packets (live idle timer, end of an interval).
    /// Crossing b boundaries costs min(b, G + 1) passes over the cells.
    void advance_to(std::int64_t timestamp_ns) noexcept {
        if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
    }

    /// True if the flow is active (always for a flow with a packet in the last
    /// G·P; for others with probability fpr). Does not change anything.
    bool contains(const Hash128& hash) const noexcept {
        return with_filter([&](const auto& filter) { return filter.contains(hash, clock_); });
    }

    FlowCounts interval_counts() const;
    void start_new_interval() noexcept;

    const FlowLifecycleConfig& config() const noexcept { return config_; }
    const FlowLifecycleSizing& sizing() const noexcept { return sizing_; }
    std::int64_t generation_period_ns() const noexcept { return period_ns_; }
    /// Start of the current generation (the first timestamp seen starts generation 0).
    std::int64_t generation_start_ns() const noexcept { return gen_start_ns_; }
    /// Full passes over the cell array so far (for tests and benchmarks).
    std::uint64_t cell_passes() const noexcept { return cell_passes_; }
    /// Fixed at construction: object plus its tables.
    std::size_t memory_bytes() const noexcept;
    /// What a lifecycle of this configuration allocates (sizing().table_bytes
    /// and the recent-flow table), known before building it. Throws as sizing().
    static std::size_t planned_bytes(const FlowLifecycleConfig& config);

private:
    /// A packet of a flow refreshed in this generation, not ending it and not
    /// crossing a boundary changes nothing but the packet count.
    bool answered_by_recent(const Hash128& hash, std::int64_t timestamp_ns,
                            std::uint8_t tcp_flags) noexcept {
        if (timestamp_ns < next_boundary_ns_ && (tcp_flags & (tcp_fin | tcp_rst)) == 0 &&
            recent_.contains(hash)) {
            ++packets_;
            return true;
        }
        return false;
    }
    /// Defined in the .cpp for the three kinds: out of line, as one observe
    /// in a few reaches it.
    template <lifecycle::SeenFilter F>
    bool observe_slow(F& filter, const Hash128& hash, std::int64_t timestamp_ns,
                      std::uint8_t tcp_flags) noexcept;
    template <lifecycle::SeenFilter F>
    void count_refresh(const F& filter, const lifecycle::SeenRefresh& refresh) noexcept;
    void advance_slow(std::int64_t timestamp_ns) noexcept;
    template <lifecycle::SeenFilter F>
    void rotate_once(F& filter) noexcept;
    template <lifecycle::SeenFilter F>
    void clear_window(F& filter, std::uint64_t boundaries) noexcept;
    double current_fpr() const noexcept {
        return with_filter([](const auto& filter) { return filter.fpr(); });
    }
    void close_segment(double fpr) noexcept;
    /// Missed new flows behind the open segment's detections, given the fpr
    /// at its end: the bounds' mean (at the end fpr), the estimate's mean
    /// and its variance.
    struct MissedFlows {
        double bound_mean = 0;
        double mean = 0;
        double variance = 0;
    };
    MissedFlows segment_misses(double end_fpr) const noexcept;
    /// Two-choice's token errors of a generation (or of several, summed): the
    /// new flows missed, the highest fpr they were counted at, and the bound on
    /// misplaced token moves. Each shifts one token until the generation leaves.
    struct TokenErrors {
        MissedFlows hidden;
        double fpr = 0;
        double misplaced = 0;
        TokenErrors& operator+=(const TokenErrors& other) noexcept {
            hidden.bound_mean += other.hidden.bound_mean;
            hidden.mean += other.hidden.mean;
            hidden.variance += other.hidden.variance;
            fpr = fpr > other.fpr ? fpr : other.fpr;
            misplaced += other.misplaced;
            return *this;
        }
        /// What the generation's expiry count may be off by (its variance term).
        double expiry_variance() const noexcept { return hidden.bound_mean + misplaced; }
    };
    template <lifecycle::SeenFilter F>
    void fill_active(const F& filter, FlowCounts& counts, const MissedFlows& open_segment,
                     double fpr) const;

    FlowLifecycleConfig config_;
    FlowLifecycleSizing sizing_;
    std::int64_t period_ns_ = 0;
    lifecycle::GenerationClock clock_;
    SeenFilters filter_;
    lifecycle::EndedFilter ended_;
    lifecycle::RecentFlowTable recent_;

    bool started_ = false;
    std::int64_t gen_start_ns_ = 0;
    std::int64_t next_boundary_ns_ = std::numeric_limits<std::int64_t>::min();
    // Two-choice's active flows: flows by stamp of their last packet, and the
    // errors of each generation's tokens.
    std::array<std::int64_t, 16> tokens_{};
    std::array<TokenErrors, 16> token_errors_{};

    // The seen filter's segments of at most segment_flows new flows, so its
    // fpr changes little within one (the current one ends also at a boundary
    // or the interval's start).
    std::uint64_t seg_new_ = 0;
    std::uint64_t seg_moves_ = 0;
    double seg_start_fpr_ = 0;
    // Interval.
    std::uint64_t packets_ = 0;
    std::uint64_t new_flows_ = 0;
    double undercount_mu_ = 0;
    double expired_est_ = 0;
    double expired_var_ = 0;
    double max_fpr_ = 0;
    std::uint64_t generations_advanced_ = 0;
    std::uint64_t cell_passes_ = 0;
};

extern template bool FlowLifecycle::observe_slow(lifecycle::StandardSeenFilter&, const Hash128&,
                                                 std::int64_t, std::uint8_t) noexcept;
extern template bool FlowLifecycle::observe_slow(lifecycle::TwoChoiceSeenFilter&, const Hash128&,
                                                 std::int64_t, std::uint8_t) noexcept;
extern template bool FlowLifecycle::observe_slow(lifecycle::BlockedSeenFilter&, const Hash128&,
                                                 std::int64_t, std::uint8_t) noexcept;

}  // namespace flowsketch::core
