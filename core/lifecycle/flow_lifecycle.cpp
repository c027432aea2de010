#include "core/lifecycle/flow_lifecycle.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/lifecycle/miss_bounds.hpp"
#include "core/sketch/probes.hpp"

namespace flowsketch::core {

using lifecycle::BlockedSeenFilter;
using lifecycle::miss_bound;
using lifecycle::miss_ratio;
using lifecycle::SeenFilter;
using lifecycle::SeenRefresh;
using lifecycle::segment_flows;
using lifecycle::StandardSeenFilter;
using lifecycle::TwoChoiceSeenFilter;

namespace {

// What the ended filter's rate needs from the seen filter (see EndedFilter).
template <SeenFilter F>
const lifecycle::FillPowers* block_powers(const F& filter) noexcept {
    if constexpr (std::is_same_v<F, BlockedSeenFilter>) {
        return &filter.fill_powers();
    } else {
        return nullptr;
    }
}

}  // namespace

FlowLifecycle::SeenFilters FlowLifecycle::make_filter(const FlowLifecycleConfig& config,
                                                      const FlowLifecycleSizing& sizing) {
    const std::uint64_t seed1 =
        config.seed == 0 ? 0 : lifecycle::mix64(config.seed ^ lifecycle::group_salt1);
    const std::uint64_t seed2 =
        config.seed == 0 ? 0 : lifecycle::mix64(config.seed ^ lifecycle::group_salt2);
    switch (config.kind) {
        case SeenFilterKind::standard:
            return SeenFilters(std::in_place_type<StandardSeenFilter>, sizing, seed1, seed2);
        case SeenFilterKind::two_choice:
            return SeenFilters(std::in_place_type<TwoChoiceSeenFilter>, sizing, seed1, seed2);
        case SeenFilterKind::blocked:
            break;
    }
    return SeenFilters(std::in_place_type<BlockedSeenFilter>, sizing, seed1, seed2);
}

FlowLifecycle::FlowLifecycle(const FlowLifecycleConfig& config)
    : config_(config),
      sizing_(config.sizing()),
      period_ns_(config.generation_period_ns()),
      clock_(config.generations),
      filter_(make_filter(config, sizing_)),
      ended_(sizing_.cells, sizing_.k,
             config.kind == SeenFilterKind::blocked ? sizing_.cells / lifecycle_block_cells : 0),
      recent_(config.recent_flow_table) {}

std::size_t FlowLifecycle::planned_bytes(const FlowLifecycleConfig& config) {
    return sizeof(FlowLifecycle) + config.sizing().table_bytes +
           lifecycle::RecentFlowTable::planned_bytes(config.recent_flow_table);
}

std::size_t FlowLifecycle::memory_bytes() const noexcept {
    return sizeof(*this) + with_filter([](const auto& filter) { return filter.memory_bytes(); }) +
           ended_.memory_bytes() + recent_.memory_bytes();
}

template <SeenFilter F>
bool FlowLifecycle::observe_slow(F& filter, const Hash128& hash, std::int64_t timestamp_ns,
                                 std::uint8_t tcp_flags) noexcept {
    // observe() found the flow not recent, or the packet ends it or passes a
    // boundary (which empties the recent table): no need to look again.
    if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
    ++packets_;
    clock_.note_write();  // what follows may write the current stamp
    const bool ends = (tcp_flags & (tcp_fin | tcp_rst)) != 0;
    std::uint64_t positions[max_probes];
    const SeenRefresh refresh = filter.refresh(hash, clock_, ends, positions);
    if (!refresh.current) count_refresh(filter, refresh);
    if (ends) ended_.note(positions, block_powers(filter));
    // A flow enters the table at its second packet in a generation, the first
    // that finds its cells current: the single packets of a flood (or of any
    // short flow) do not push the busy flows out.
    if (refresh.current && config_.recent_flow_table) recent_.insert(hash);
    return refresh.is_new;
}

template bool FlowLifecycle::observe_slow(StandardSeenFilter&, const Hash128&, std::int64_t,
                                          std::uint8_t) noexcept;
template bool FlowLifecycle::observe_slow(TwoChoiceSeenFilter&, const Hash128&, std::int64_t,
                                          std::uint8_t) noexcept;
template bool FlowLifecycle::observe_slow(BlockedSeenFilter&, const Hash128&, std::int64_t,
                                          std::uint8_t) noexcept;

// A flow that was not current: new, or covered and its token moved from its
// oldest cell's generation to now.
template <SeenFilter F>
void FlowLifecycle::count_refresh(const F& filter, const SeenRefresh& refresh) noexcept {
    if (refresh.is_new) {
        ++new_flows_;
        ++seg_new_;
    } else {
        ++seg_moves_;
    }
    if constexpr (F::counts_tokens) {
        if (!refresh.is_new) --tokens_[clock_.stamp_at_age(refresh.age)];
        ++tokens_[clock_.current()];
    }
    if (seg_new_ >= segment_flows) close_segment(filter.fpr());
}

FlowLifecycle::MissedFlows FlowLifecycle::segment_misses(double end_fpr) const noexcept {
    MissedFlows missed;
    if (seg_new_ == 0) return missed;
    const double seg_new = static_cast<double>(seg_new_);
    // Within a segment the fill only grows: its end has the highest fpr, which
    // the bounds use. The point estimate takes the mean of the ratio at both
    // ends (trapezoid rule): the end alone overcounts by half the ratio's rise,
    // which is large while a flood overfills the filter.
    const double r_end = miss_ratio(end_fpr);
    const double r_mean = 0.5 * (miss_ratio(seg_start_fpr_) + r_end);
    missed.bound_mean = seg_new * r_end;
    missed.mean = seg_new * r_mean;
    // Misses before each detection: geometric, variance f/(1 − f)² = r(1 + r).
    missed.variance = seg_new * r_mean * (1.0 + r_mean);
    return missed;
}

void FlowLifecycle::close_segment(double f) noexcept {
    const MissedFlows missed = segment_misses(f);
    undercount_mu_ += missed.bound_mean;
    // Token errors (two-choice): a missed new flow takes another flow's token
    // (expected seg_new·f/(1 − f)); a refresh whose cells were all renewed by
    // other flows after its last packet (probability well below f) moves a
    // token from the wrong generation. Each shifts one token until the
    // generation it came from leaves the window.
    token_errors_[clock_.current()] += TokenErrors{missed, f, static_cast<double>(seg_moves_) * f};
    max_fpr_ = std::max(max_fpr_, f);
    seg_new_ = 0;
    seg_moves_ = 0;
    seg_start_fpr_ = f;
}

void FlowLifecycle::advance_slow(std::int64_t timestamp_ns) noexcept {
    if (!started_) {
        started_ = true;
        gen_start_ns_ = timestamp_ns;
        next_boundary_ns_ = timestamp_ns > std::numeric_limits<std::int64_t>::max() - period_ns_
                                ? std::numeric_limits<std::int64_t>::max()
                                : timestamp_ns + period_ns_;
        return;
    }
    if (timestamp_ns < next_boundary_ns_) return;
    recent_.clear();  // cells change: no flow is "refreshed in this generation" any more
    // Unsigned difference: exact even if the two times are centuries apart.
    const std::uint64_t period = static_cast<std::uint64_t>(period_ns_);
    const std::uint64_t elapsed =
        static_cast<std::uint64_t>(timestamp_ns) - static_cast<std::uint64_t>(gen_start_ns_);
    const std::uint64_t boundaries = elapsed / period;
    close_segment(current_fpr());
    with_filter([&](auto& filter) {
        if (boundaries >= clock_.live()) {
            clear_window(filter, boundaries);
        } else {
            for (std::uint64_t b = 0; b < boundaries; ++b) rotate_once(filter);
        }
    });
    generations_advanced_ += boundaries;
    // gen_start + boundaries·P ≤ timestamp: computed modulo 2^64, exact in int64.
    gen_start_ns_ =
        static_cast<std::int64_t>(static_cast<std::uint64_t>(gen_start_ns_) + boundaries * period);
    next_boundary_ns_ = gen_start_ns_ > std::numeric_limits<std::int64_t>::max() - period_ns_
                            ? std::numeric_limits<std::int64_t>::max()
                            : gen_start_ns_ + period_ns_;
    seg_start_fpr_ = current_fpr();  // the boundaries emptied cells
}

// Every live generation leaves the window: one pass clears all.
template <SeenFilter F>
void FlowLifecycle::clear_window(F& filter, std::uint64_t boundaries) noexcept {
    if constexpr (!F::counts_tokens) {
        const double zeros = static_cast<double>(filter.cells() - filter.nonzero());
        expired_est_ += filter.estimate(zeros);
        expired_var_ += filter.estimate_variance(zeros);
    } else {
        for (std::uint32_t s = 1; s < 16; ++s) {
            expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[s], 0));
            expired_var_ += token_errors_[s].expiry_variance();
        }
    }
    tokens_.fill(0);
    token_errors_.fill(TokenErrors{});
    filter.clear_all();
    ++cell_passes_;
    clock_.skip(boundaries);
}

template <SeenFilter F>
void FlowLifecycle::rotate_once(F& filter) noexcept {
    // The generation at age G leaves the window: clear its stamp. A cell holds
    // the stamp only if its generation wrote some (observe_slow marks it): not
    // one that began before the first packet, as the first G of every run do,
    // nor one without traffic. Then there is nothing to clear and no pass over
    // the cells to make.
    const std::uint32_t leaving = clock_.leaving();
    const bool pass = clock_.wrote(leaving);
    const double zeros_before = static_cast<double>(filter.cells() - filter.nonzero());
    const std::uint64_t cleared = pass ? filter.clear_stamp(leaving) : 0;
    cell_passes_ += pass ? 1 : 0;
    clock_.forget(leaving);
    const double zeros_after = static_cast<double>(filter.cells() - filter.nonzero());
    if constexpr (!F::counts_tokens) {
        if (cleared != 0) {
            expired_est_ += filter.estimate(zeros_before) - filter.estimate(zeros_after);
            // Var of n̂(Z_b) − n̂(Z_a) given the flows that stay (docs, "expired").
            expired_var_ += std::max(0.0, filter.estimate_variance(zeros_before) -
                                              filter.estimate_variance(zeros_after));
        }
    } else {
        expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[leaving], 0));
        expired_var_ += token_errors_[leaving].expiry_variance();
    }
    tokens_[leaving] = 0;
    token_errors_[leaving] = TokenErrors{};
    clock_.step();
}

// Standard and blocked: n̂ from the zero cells ∓ 3 standard errors. Two-choice:
// tokens; missed new flows are missing tokens, so their expectation is added
// and their spread is the standard error. Misplaced tokens only widen the
// upper bound (their real rate is far below f).
template <SeenFilter F>
void FlowLifecycle::fill_active(const F& filter, FlowCounts& c, const MissedFlows& open_segment,
                                double f) const {
    if constexpr (!F::counts_tokens) {
        const double zeros = static_cast<double>(filter.cells() - filter.nonzero());
        c.active = filter.nonzero() == 0 ? 0.0 : filter.estimate(zeros);
        c.active_stderr = std::sqrt(filter.estimate_variance(zeros));
        c.active_lower = std::max(0.0, c.active - 3.0 * c.active_stderr);
        c.active_upper = c.active + 3.0 * c.active_stderr;
    } else {
        double tokens = 0.0;
        TokenErrors window{open_segment, f, static_cast<double>(seg_moves_) * f};
        for (std::uint32_t s = 1; s < 16; ++s) {
            tokens += static_cast<double>(tokens_[s]);
            window += token_errors_[s];
        }
        tokens = std::max(tokens, 0.0);
        c.active = tokens + window.hidden.mean;
        c.active_stderr = std::sqrt(window.hidden.variance);
        c.active_lower = tokens;
        c.active_upper =
            tokens + miss_bound(window.hidden.bound_mean + window.misplaced, window.fpr);
    }
}

FlowCounts FlowLifecycle::interval_counts() const {
    FlowCounts c;
    const double f = current_fpr();
    c.packets = packets_;
    c.new_flows = new_flows_;
    const MissedFlows open_segment = segment_misses(f);
    c.new_undercount_expected = undercount_mu_ + open_segment.bound_mean;
    const double max_fpr = std::max(max_fpr_, f);
    c.new_undercount_bound =
        lifecycle::interval_miss_bound(c.new_undercount_expected, max_fpr, packets_ - std::min(packets_, new_flows_));
    with_filter([&](const auto& filter) {
        fill_active(filter, c, open_segment, f);
        c.fill = static_cast<double>(filter.nonzero()) / static_cast<double>(filter.cells());
        c.ended_undercount_bound = ended_.undercount_bound(block_powers(filter));
    });
    c.expired = expired_est_;
    c.expired_stderr = std::sqrt(expired_var_);
    c.ended = ended_.ended();
    c.fpr = f;
    c.max_fpr = max_fpr;
    c.target_fpr = config_.target_fpr;
    c.overfilled = c.max_fpr > config_.overfill_factor * config_.target_fpr;
    c.generations_advanced = generations_advanced_;
    return c;
}

void FlowLifecycle::start_new_interval() noexcept {
    close_segment(current_fpr());  // folds the segment into the token error expectations
    packets_ = 0;
    new_flows_ = 0;
    undercount_mu_ = 0.0;
    expired_est_ = 0.0;
    expired_var_ = 0.0;
    max_fpr_ = 0.0;
    generations_advanced_ = 0;
    ended_.clear();
}

}  // namespace flowsketch::core
