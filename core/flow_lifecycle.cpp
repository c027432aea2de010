#include "core/flow_lifecycle.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/bloom_filter.hpp"
#include "core/random.hpp"
#include "core/two_choice_bloom_filter.hpp"

namespace flowsketch::core {
namespace {

constexpr std::uint64_t max_cells = std::uint64_t{1} << 36;  // 32 GiB of cells: far past any use
constexpr std::uint64_t nibble_ones = 0x1111111111111111ULL;
constexpr std::uint64_t group_salt1 = 0x6c6966652d677231ULL;  // "life-gr1"
constexpr std::uint64_t group_salt2 = 0x6c6966652d677232ULL;  // "life-gr2"
constexpr std::uint32_t stamp_cycle = 15;                      // non-zero values of a 4-bit cell

std::uint64_t mix64(std::uint64_t z) noexcept {  // SplitMix64 finaliser (a bijection)
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// ⌊x·r / 2^64⌋: x reduced to [0, r) by a multiply (Lemire), no division.
std::uint64_t reduce(std::uint64_t x, std::uint64_t r) noexcept {
    return static_cast<std::uint64_t>((static_cast<UInt128>(x) * r) >> 64);
}

bool is_prime(std::uint64_t n) noexcept {
    if (n < 2) return false;
    if (n % 2 == 0) return n == 2;
    for (std::uint64_t d = 3; d * d <= n; d += 2) {
        if (n % d == 0) return false;
    }
    return true;
}

/// Deviation t with P(X ≥ μ + t) ≤ 10⁻³ for a sum of (martingale) Bernoulli
/// indicators with mean and variance at most μ (Freedman/Bernstein):
/// exp(−t²/(2(μ + t/3))) = 10⁻³  ⇔  t = L/3 + √((L/3)² + 2μL), L = ln 1000.
double bernstein_deviation(double mu) noexcept {
    const double l = std::log(1000.0);
    return l / 3.0 + std::sqrt((l / 3.0) * (l / 3.0) + 2.0 * mu * l);
}

/// f/(1 − f): expected misses per detection when each lookup misses with
/// probability f (truth = detected + missed, missed ≈ f·truth). ∞ at f = 1.
double miss_ratio(double f) noexcept {
    if (f >= 1.0) return std::numeric_limits<double>::infinity();
    return f / (1.0 - f);
}

}  // namespace

std::string_view seen_filter_kind_name(SeenFilterKind kind) noexcept {
    switch (kind) {
        case SeenFilterKind::standard: return "standard";
        case SeenFilterKind::two_choice: return "two-choice";
    }
    return "unknown";
}

std::uint32_t FlowLifecycleConfig::probes_for(double target_fpr) {
    // BloomParams::for_rate is the DESIGN.md formula k = ⌈log2(1/δ)⌉ (it validates δ).
    return BloomParams::for_rate(1, target_fpr).k;
}

std::uint64_t FlowLifecycleConfig::cells_for(std::uint64_t max_flows, double target_fpr) {
    if (max_flows < 1) throw std::invalid_argument("max-flows must be at least 1");
    const std::uint32_t k = probes_for(target_fpr);
    const double m = std::ceil(static_cast<double>(max_flows) * k / std::numbers::ln2);
    if (!(m <= static_cast<double>(max_cells))) {
        throw std::invalid_argument("max-flows " + std::to_string(max_flows) +
                                    " at this flow-fpr needs more than 2^36 filter cells");
    }
    std::uint64_t cells = std::max<std::uint64_t>(static_cast<std::uint64_t>(m), 2);
    while (!is_prime(cells)) ++cells;  // prime gaps near 2^36 are < 1000: quick
    return cells;
}

std::int64_t FlowLifecycleConfig::generation_period_ns() const noexcept {
    if (generations == 0 || idle_timeout_ns <= 0) return 0;
    const std::int64_t g = generations;
    return idle_timeout_ns / g + (idle_timeout_ns % g != 0 ? 1 : 0);
}

FlowLifecycleSizing FlowLifecycleConfig::sizing() const {
    if (generations < 1 || generations > max_lifecycle_generations) {
        throw std::invalid_argument("generations must be in 1.." +
                                    std::to_string(max_lifecycle_generations) + ", got " +
                                    std::to_string(generations));
    }
    if (idle_timeout_ns < static_cast<std::int64_t>(generations)) {
        throw std::invalid_argument("idle timeout must be positive (at least 1 ns per generation)");
    }
    if (kind != SeenFilterKind::standard && kind != SeenFilterKind::two_choice) {
        throw std::invalid_argument("unknown seen-filter kind");
    }
    if (!(overfill_factor >= 1.0)) throw std::invalid_argument("overfill factor must be >= 1");
    FlowLifecycleSizing s;
    s.cells = cells_for(max_flows, target_fpr);
    s.k = probes_for(target_fpr);
    const double n = static_cast<double>(max_flows);
    const double m = static_cast<double>(s.cells);
    if (kind == SeenFilterKind::standard) {
        s.design_fill = -std::expm1(n * std::log1p(-static_cast<double>(s.k) / m));
        s.design_fpr = std::pow(s.design_fill, static_cast<double>(s.k));
    } else {
        // Same memory; the k that minimises the online-greedy prediction. The
        // optimum lies a little above the standard k (Lumetta–Mitzenmacher
        // Table 2); 100 Runge–Kutta steps are accurate to ~10⁻⁸ here.
        const std::uint32_t k_min = std::max<std::uint32_t>(1, s.k - std::min(s.k - 1, 2u));
        const std::uint32_t k_max = std::min<std::uint32_t>(max_probes, 2 * s.k + 2);
        s.design_fpr = 2.0;
        for (std::uint32_t k = k_min; k <= k_max; ++k) {
            const double z = two_choice_fill_prediction(m / n, k, 2, 100);
            const double f = two_choice_false_positive_rate(z, k, 2);
            if (f < s.design_fpr) {
                s.design_fpr = f;
                s.design_fill = z;
                s.k = k;
            }
        }
    }
    s.table_bytes = static_cast<std::size_t>((s.cells + 15) / 16 + (s.cells + 63) / 64) *
                    sizeof(std::uint64_t);
    return s;
}

FlowLifecycle::FlowLifecycle(const FlowLifecycleConfig& config)
    : config_(config), sizing_(config.sizing()) {
    m_ = sizing_.cells;
    k_ = sizing_.k;
    live_ = config.generations + 1;
    period_ns_ = config.generation_period_ns();
    seed1_ = config.seed == 0 ? 0 : mix64(config.seed ^ group_salt1);
    seed2_ = config.seed == 0 ? 0 : mix64(config.seed ^ group_salt2);
    cells_.assign(static_cast<std::size_t>((m_ + 15) / 16), 0);
    ended_bits_.assign(static_cast<std::size_t>((m_ + 63) / 64), 0);
    recent_.assign(config_.recent_flow_table ? recent_slots : 1, Recent{});
    recent_mask_ = recent_.size() - 1;
    for (std::uint32_t age = 0; age < 16; ++age) {
        // stamp(age) = cur − age on the cycle 1..15.
        stamp_at_age_[age] = static_cast<std::uint8_t>(
            (cur_stamp_ - 1 + stamp_cycle - age % stamp_cycle) % stamp_cycle + 1);
    }
    age_of_.fill(dead);
    for (std::uint32_t age = 0; age < live_; ++age) {
        age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
    }
}

std::size_t FlowLifecycle::memory_bytes() const noexcept {
    return sizeof(*this) + (cells_.capacity() + ended_bits_.capacity()) * sizeof(std::uint64_t) +
           recent_.capacity() * sizeof(Recent);
}

// Double hashing modulo the prime m without division: a = ⌊h1·m/2^64⌋,
// b = 1 + ⌊h2·(m−1)/2^64⌋ ∈ [1, m), g_i = a + i·b mod m. Every b is a unit mod
// the prime m, so the k < m probes are distinct and P(cell j is probed) = k/m.
FlowLifecycle::Probes FlowLifecycle::locate(const Hash128& hash) const noexcept {
    return Probes{reduce(hash.h1 ^ seed1_, m_), 1 + reduce(hash.h2 ^ seed2_, m_ - 1)};
}

void FlowLifecycle::generate(const Probes& probes, std::uint64_t* out) const noexcept {
    std::uint64_t g = probes.first;
    for (std::uint32_t i = 0; i < k_; ++i) {
        out[i] = g;
        g += probes.step;  // < 2m ≤ 2^37: no overflow
        if (g >= m_) g -= m_;
    }
}

void FlowLifecycle::generate(const Hash128& hash, std::uint64_t* out) const noexcept {
    generate(locate(hash), out);
}

// The second group's (h1, h2): both words remixed by a bijection with salts,
// so its probes are independent of the first group's for all practical purposes.
Hash128 FlowLifecycle::second_group(const Hash128& hash) const noexcept {
    return Hash128{mix64(hash.h1 + group_salt1), mix64(hash.h2 + group_salt2)};
}

FlowLifecycle::Scan FlowLifecycle::scan(const std::uint64_t* pos) const noexcept {
    Scan s;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint32_t c = cell(pos[i]);
        s.zeros += c == 0 ? 1u : 0u;
        s.max_age = std::max<std::uint32_t>(s.max_age, age_of_[c]);
    }
    return s;
}

void FlowLifecycle::touch(const std::uint64_t* pos, const Scan& s) noexcept {
    if (s.max_age == 0) return;  // every cell already carries the current stamp
    if (s.max_age == dead) {  // not covered: a new flow
        ++new_flows_;
        ++seg_new_;
        nonzero_ += s.zeros;
    } else {  // covered: its token moves from its oldest cell's generation to now
        ++seg_moves_;
        --tokens_[stamp_at_age_[s.max_age]];
    }
    ++tokens_[cur_stamp_];
    const std::uint64_t stamp = cur_stamp_;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint32_t shift = static_cast<std::uint32_t>((pos[i] & 15) << 2);
        std::uint64_t& word = cells_[pos[i] >> 4];
        word = (word & ~(std::uint64_t{15} << shift)) | (stamp << shift);
    }
}

void FlowLifecycle::note_end(const std::uint64_t* pos) noexcept {
    std::uint32_t fresh = 0;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint64_t bit = std::uint64_t{1} << (pos[i] & 63);
        std::uint64_t& word = ended_bits_[pos[i] >> 6];
        fresh += (word & bit) == 0 ? 1u : 0u;
        word |= bit;
    }
    ended_ones_ += fresh;
    ended_ += fresh != 0 ? 1u : 0u;
}

bool FlowLifecycle::observe(const Hash128& hash, const Probes& probes, std::int64_t timestamp_ns,
                            std::uint8_t tcp_flags) noexcept {
    if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
    ++packets_;
    const bool ends = (tcp_flags & (tcp_fin | tcp_rst)) != 0;
    if (!ends && is_recent(hash)) return false;
    std::uint64_t pos[max_probes];
    generate(probes, pos);
    const Scan first = scan(pos);
    bool is_new = false;
    if (first.max_age != 0) {  // age 0 everywhere: refreshed this generation already
        if (config_.kind == SeenFilterKind::standard) {
            is_new = first.max_age == dead;
            touch(pos, first);
        } else {
            std::uint64_t pos2[max_probes];
            generate(second_group(hash), pos2);
            const Scan second = scan(pos2);
            const bool covered1 = first.max_age != dead;
            const bool covered2 = second.max_age != dead;
            bool use_second = false;
            if (covered1 || covered2) {
                // Refresh the covering group whose oldest cell is newest: the
                // flow's own group has every cell at least as new as its last packet.
                use_second = covered2 && (!covered1 || second.max_age < first.max_age);
            } else {
                // Online greedy (Lumetta–Mitzenmacher §3.1): fewer new cells;
                // ties by a hash bit not used by the probes' reduction.
                is_new = true;
                use_second = second.zeros < first.zeros ||
                             (second.zeros == first.zeros && (hash.h2 & 1) != 0);
            }
            touch(use_second ? pos2 : pos, use_second ? second : first);
        }
    }
    if (ends) note_end(pos);
    if (config_.recent_flow_table) recent_[hash.h1 & recent_mask_] = Recent{hash.h1, hash.h2, epoch_};
    return is_new;
}

void FlowLifecycle::prefetch(const Hash128& hash, const Probes& probes) const noexcept {
    if (is_recent(hash)) return;
    std::uint64_t g = probes.first;
    for (std::uint32_t i = 0; i < k_; ++i) {
        __builtin_prefetch(&cells_[g >> 4], 1, 3);
        g += probes.step;
        if (g >= m_) g -= m_;
    }
}

bool FlowLifecycle::contains(const Hash128& hash) const noexcept {
    std::uint64_t pos[max_probes];
    generate(hash, pos);
    if (scan(pos).max_age != dead) return true;
    if (config_.kind == SeenFilterKind::standard) return false;
    generate(second_group(hash), pos);
    return scan(pos).max_age != dead;
}

void FlowLifecycle::advance_to(std::int64_t timestamp_ns) noexcept {
    if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
}

double FlowLifecycle::current_fpr() const noexcept {
    const double fill = static_cast<double>(nonzero_) / static_cast<double>(m_);
    if (config_.kind == SeenFilterKind::standard) return std::pow(fill, static_cast<double>(k_));
    return two_choice_false_positive_rate(fill, k_, 2);
}

// n̂ = ln(Z/m) / ln(1 − k/m): each flow's k distinct probes spare a given cell
// with probability 1 − k/m. Z = 0 is read as Z = 1/2 (a finite "at least").
double FlowLifecycle::estimate(double zeros) const noexcept {
    const double m = static_cast<double>(m_);
    const double z = std::max(zeros, 0.5);
    return std::log(z / m) / std::log1p(-static_cast<double>(k_) / m);
}

void FlowLifecycle::close_segment() noexcept {
    // Within a segment the fill only grows, so its end has the highest fpr.
    const double f = current_fpr();
    const double r = miss_ratio(f);
    const double seg_new = static_cast<double>(seg_new_);
    if (seg_new_ != 0) undercount_mu_ += seg_new * r;
    // Token errors (two-choice): a missed new flow takes another flow's token
    // (expected seg_new·f/(1 − f)); a refresh whose cells were all renewed by
    // other flows after its last packet (probability well below f) moves a
    // token from the wrong generation. Each shifts one token until the
    // generation it came from leaves the window.
    if (seg_new_ != 0) hidden_[cur_stamp_] += seg_new * r;
    if (seg_moves_ != 0) misplaced_[cur_stamp_] += static_cast<double>(seg_moves_) * f;
    max_fpr_ = std::max(max_fpr_, f);
    seg_new_ = 0;
    seg_moves_ = 0;
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
    ++epoch_;  // cells change: no flow is "refreshed in this generation" any more
    // Unsigned difference: exact even if the two times are centuries apart.
    const std::uint64_t period = static_cast<std::uint64_t>(period_ns_);
    const std::uint64_t elapsed =
        static_cast<std::uint64_t>(timestamp_ns) - static_cast<std::uint64_t>(gen_start_ns_);
    const std::uint64_t boundaries = elapsed / period;
    close_segment();
    if (boundaries >= live_) {
        // Every live generation leaves the window: one pass clears all.
        const double zeros = static_cast<double>(m_ - nonzero_);
        const double m = static_cast<double>(m_);
        const double all = estimate(zeros);
        if (config_.kind == SeenFilterKind::standard) {
            expired_est_ += all;
            const double zb = std::max(zeros, 0.5);
            expired_var_ += m / (static_cast<double>(k_) * k_) * (m / zb - 1.0 - std::log(m / zb));
        } else {
            for (std::uint32_t s = 1; s < 16; ++s) {
                expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[s], 0));
                expired_var_ += hidden_[s] + misplaced_[s];
            }
        }
        tokens_.fill(0);
        hidden_.fill(0.0);
        misplaced_.fill(0.0);
        std::fill(cells_.begin(), cells_.end(), 0);
        nonzero_ = 0;
        ++cell_passes_;
        // Keep the stamp sequence as if each boundary had been crossed.
        const std::uint32_t steps = static_cast<std::uint32_t>(boundaries % stamp_cycle);
        cur_stamp_ = (cur_stamp_ - 1 + steps) % stamp_cycle + 1;
        for (std::uint32_t age = 0; age < 16; ++age) {
            stamp_at_age_[age] = static_cast<std::uint8_t>(
                (cur_stamp_ - 1 + stamp_cycle - age % stamp_cycle) % stamp_cycle + 1);
        }
        age_of_.fill(dead);
        for (std::uint32_t age = 0; age < live_; ++age) {
            age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
        }
    } else {
        for (std::uint64_t b = 0; b < boundaries; ++b) rotate_once();
    }
    generations_advanced_ += boundaries;
    // gen_start + boundaries·P ≤ timestamp: computed modulo 2^64, exact in int64.
    gen_start_ns_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(gen_start_ns_) +
                                              boundaries * period);
    next_boundary_ns_ = gen_start_ns_ > std::numeric_limits<std::int64_t>::max() - period_ns_
                            ? std::numeric_limits<std::int64_t>::max()
                            : gen_start_ns_ + period_ns_;
}

void FlowLifecycle::rotate_once() noexcept {
    constexpr std::uint64_t byte_low_nibbles = 0x0f0f0f0f0f0f0f0fULL;
    constexpr std::uint64_t byte_ones = 0x0101010101010101ULL;
    // The generation at age G leaves the window: clear its stamp (SWAR: a
    // nibble equals the stamp iff the nibble of word ^ pattern is zero).
    const std::uint32_t leaving = stamp_at_age_[live_ - 1];
    const std::uint64_t pattern = nibble_ones * leaving;
    std::uint64_t cleared = 0;
    for (std::uint64_t& word : cells_) {
        const std::uint64_t x = word ^ pattern;
        const std::uint64_t nonzero_nibbles = (x | x >> 1 | x >> 2 | x >> 3) & nibble_ones;
        const std::uint64_t equal = ~nonzero_nibbles & nibble_ones;
        // Count the one bit per nibble by bytes: std::popcount without the
        // POPCNT instruction (not in the x86-64 baseline) is a library call.
        const std::uint64_t per_byte = (equal & byte_low_nibbles) + (equal >> 4 & byte_low_nibbles);
        cleared += (per_byte * byte_ones) >> 56;
        word &= ~(equal * 15);
    }
    ++cell_passes_;
    const double zeros_before = static_cast<double>(m_ - nonzero_);
    nonzero_ -= cleared;
    const double zeros_after = static_cast<double>(m_ - nonzero_);
    if (config_.kind == SeenFilterKind::standard) {
        if (cleared != 0) {
            const double m = static_cast<double>(m_);
            const double zb = std::max(zeros_before, 0.5);
            expired_est_ += estimate(zeros_before) - estimate(zeros_after);
            // Var of n̂(Z_b) − n̂(Z_a) given the flows that stay (docs, "expired").
            expired_var_ += m / (static_cast<double>(k_) * k_) *
                            std::max(0.0, m / zb - m / zeros_after - std::log(zeros_after / zb));
        }
    } else {
        expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[leaving], 0));
        expired_var_ += hidden_[leaving] + misplaced_[leaving];
    }
    tokens_[leaving] = 0;
    hidden_[leaving] = 0.0;
    misplaced_[leaving] = 0.0;
    // Everything ages by one; the new current stamp is free (cleared when it left).
    cur_stamp_ = cur_stamp_ % stamp_cycle + 1;
    for (std::uint32_t age = 15; age > 0; --age) stamp_at_age_[age] = stamp_at_age_[age - 1];
    stamp_at_age_[0] = static_cast<std::uint8_t>(cur_stamp_);
    age_of_.fill(dead);
    for (std::uint32_t age = 0; age < live_; ++age) {
        age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
    }
}

FlowCounts FlowLifecycle::interval_counts() const {
    FlowCounts c;
    const double m = static_cast<double>(m_);
    const double k2 = static_cast<double>(k_) * k_;
    const double f = current_fpr();
    const double r = miss_ratio(f);
    c.packets = packets_;
    c.new_flows = new_flows_;
    c.new_undercount_expected = undercount_mu_ + (seg_new_ != 0 ? static_cast<double>(seg_new_) * r : 0.0);
    c.new_undercount_bound = c.new_undercount_expected + bernstein_deviation(c.new_undercount_expected);

    const double zeros = static_cast<double>(m_ - nonzero_);
    if (config_.kind == SeenFilterKind::standard) {
        c.active = nonzero_ == 0 ? 0.0 : estimate(zeros);
        const double z = std::max(zeros, 0.5);
        const double t = std::log(m / z);
        c.active_stderr = std::sqrt(std::max(0.0, m / k2 * std::expm1(t) - m / k2 * t));
        c.active_lower = std::max(0.0, c.active - 3.0 * c.active_stderr);
        c.active_upper = c.active + 3.0 * c.active_stderr;
    } else {
        double tokens = 0.0;
        double hidden = seg_new_ != 0 ? static_cast<double>(seg_new_) * r : 0.0;
        double misplaced = static_cast<double>(seg_moves_) * f;
        for (std::uint32_t s = 1; s < 16; ++s) {
            tokens += static_cast<double>(tokens_[s]);
            hidden += hidden_[s];
            misplaced += misplaced_[s];
        }
        tokens = std::max(tokens, 0.0);
        // Missed new flows are missing tokens: add their expectation; its
        // Poisson spread is the standard error. Misplaced tokens only widen
        // the upper bound (their real rate is far below f).
        c.active = tokens + hidden;
        c.active_stderr = std::sqrt(hidden);
        c.active_lower = tokens;
        c.active_upper = tokens + hidden + misplaced + bernstein_deviation(hidden + misplaced);
    }
    c.expired = expired_est_;
    c.expired_stderr = std::sqrt(expired_var_);

    c.ended = ended_;
    const double fe = std::pow(static_cast<double>(ended_ones_) / m, static_cast<double>(k_));
    const double ended_mu = ended_ == 0 ? 0.0 : static_cast<double>(ended_) * miss_ratio(fe);
    c.ended_undercount_bound = ended_mu + bernstein_deviation(ended_mu);

    c.fill = static_cast<double>(nonzero_) / m;
    c.fpr = f;
    c.max_fpr = std::max(max_fpr_, f);
    c.target_fpr = config_.target_fpr;
    c.overfilled = c.max_fpr > config_.overfill_factor * config_.target_fpr;
    c.generations_advanced = generations_advanced_;
    return c;
}

void FlowLifecycle::start_new_interval() noexcept {
    close_segment();  // folds the segment into the token error expectations
    packets_ = 0;
    new_flows_ = 0;
    ended_ = 0;
    undercount_mu_ = 0.0;
    expired_est_ = 0.0;
    expired_var_ = 0.0;
    max_fpr_ = 0.0;
    generations_advanced_ = 0;
    std::fill(ended_bits_.begin(), ended_bits_.end(), 0);
    ended_ones_ = 0;
}

}  // namespace flowsketch::core
