#include "core/measure/flow_measurement.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <cstddef>
#include <stdexcept>

#include "core/platform/simd.hpp"

namespace flowsketch::core {
namespace {

std::uint32_t candidate_capacity(const MeasurementConfig& config) {
    if (config.top_k == 0) throw std::invalid_argument("top-k must be at least 1");
    if (config.candidates != 0) {
        if (config.candidates < config.top_k) {
            throw std::invalid_argument("candidate set smaller than top-k");
        }
        return config.candidates;
    }
    return std::max<std::uint32_t>(4 * config.top_k, 64);
}

CountMinParams with_lanes(CountMinParams params, std::uint32_t lanes) {
    params.lanes = lanes;
    return params;
}

}  // namespace

FlowMeasurement::FlowMeasurement(const MeasurementConfig& config)
    : config_(config),
      sketch_(with_lanes(config.sketch, Lane::lanes)),
      cache_(config.aggregation_slots),
      interval_by_packets_(candidate_capacity(config)),
      interval_by_bytes_(candidate_capacity(config)),
      total_by_packets_(candidate_capacity(config)),
      total_by_bytes_(candidate_capacity(config)) {
    config_.sketch = sketch_.params();
    vector_hash_ = simd::level() == simd::Level::avx512;
    if (config.track_flows) lifecycle_ = std::make_unique<FlowLifecycle>(config.lifecycle);
    // add_batch prepares at most chunk_packets at a time: no allocation after this.
    chunk_.hashes.reserve(chunk_packets);
    evicted_.resize(chunk_packets);
    evicted_columns_.resize(chunk_packets * sketch_.params().depth);
    observed_.resize(chunk_packets);
}

void FlowMeasurement::add(const PacketRecord& packet) noexcept {
    add_batch(std::span<const PacketRecord>(&packet, 1));
}

// Locates the sketch columns of the first n entries of evicted_ (n ≤
// chunk_packets) and starts loading the cells of the first few.
void FlowMeasurement::locate_entries(std::size_t n) noexcept {
    std::uint32_t* columns = evicted_columns_.data();
    sketch_.columns_of(reinterpret_cast<const std::byte*>(evicted_.data()) + offsetof(AggregationCache::Entry, hash),
                       sizeof(AggregationCache::Entry), n, columns);
    const std::uint32_t depth = sketch_.params().depth;
    for (std::size_t i = 0; i < std::min(sketch_lookahead, n); ++i) sketch_.prefetch_at(columns + i * depth);
}

// Entry i of those located: into the sketch, its flow offered to the
// candidates, with the cells of the entry sketch_lookahead places ahead
// already on their way into the cache.
void FlowMeasurement::sketch_entry(std::size_t i, std::size_t n) noexcept {
    const std::uint32_t depth = sketch_.params().depth;
    const std::uint32_t* columns = evicted_columns_.data();
    if (i + sketch_lookahead < n) sketch_.prefetch_at(columns + (i + sketch_lookahead) * depth);
    const AggregationCache::Entry& e = evicted_[i];
    const std::array<std::uint64_t, Lane::lanes> weights = {e.packets, e.bytes, e.packets, e.bytes};
    std::array<std::uint64_t, Lane::lanes> estimates;
    sketch_.update_and_estimate_at(columns + i * depth, weights, estimates);
    interval_by_packets_.offer(e.key, e.hash, estimates[Lane::interval_packets]);
    interval_by_bytes_.offer(e.key, e.hash, estimates[Lane::interval_bytes]);
    total_by_packets_.offer(e.key, e.hash, estimates[Lane::total_packets]);
    total_by_bytes_.offer(e.key, e.hash, estimates[Lane::total_bytes]);
}

// Adds the first n entries of evicted_ (n ≤ chunk_packets) to the sketch and
// offers their flows.
void FlowMeasurement::flush_entries(std::size_t n) noexcept {
    locate_entries(n);
    for (std::size_t i = 0; i < n; ++i) sketch_entry(i, n);
}

void FlowMeasurement::flush_pending() noexcept {
    std::size_t n = 0;
    cache_.drain([&](const AggregationCache::Entry& entry) {
        evicted_[n++] = entry;
        if (n == chunk_packets) {
            flush_entries(n);
            n = 0;
        }
    });
    flush_entries(n);
}

// Counts n hashed packets (n ≤ chunk_packets). Where a generation boundary
// falls inside them, the packets before it go first, then the aggregation
// cache is drained and the generation turns: the cache holds only flows the
// lifecycle has refreshed in the current generation (see update_generation).
void FlowMeasurement::update_hashed(const PacketRecord* packets, const Hash128* hashes,
                                    std::size_t n) noexcept {
    if (lifecycle_) {
        std::size_t begin = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (packets[i].timestamp_ns < lifecycle_->next_boundary_ns()) continue;
            update_generation(packets + begin, hashes + begin, i - begin);
            flush_pending();
            lifecycle_->advance_to(packets[i].timestamp_ns);
            begin = i;
        }
        packets += begin;
        hashes += begin;
        n -= begin;
    }
    update_generation(packets, hashes, n);
}

// Packets of one generation: first into the aggregation cache, whose
// displaced entries then go to the sketch in the order they were displaced
// (so the sketch and the candidates see the same sequence however the stream
// is cut into batches); then into the lifecycle, in their order, with the
// filter cells of the packet a few places ahead already on their way.
//
// Only a packet that starts a pending entry (or ends its flow) reaches the
// lifecycle. One summed into an entry belongs to a flow whose entry's first
// packet was observed in this generation, so the flow's cells already hold the
// current stamp and observing it would change nothing: the lifecycle's counts
// are exactly those of observing every packet, with 2.2 million calls instead
// of 10 million on trace a (its recent-flow table still answers the flows that
// come back after a displacement).
void FlowMeasurement::update_generation(const PacketRecord* packets, const Hash128* hashes,
                                        std::size_t n) noexcept {
    // Cache lines are prefetched a few packets ahead in this loop rather than
    // a whole chunk's worth at a time before it: b ran 1-3.5% faster at the
    // quartile, a 0-3.5% (8 and 32 ahead: no better than 16).
    constexpr std::size_t cache_lookahead = 16;
    for (std::size_t i = 0; i < std::min(cache_lookahead, n); ++i) cache_.prefetch(hashes[i]);
    FlowLifecycle* lifecycle = lifecycle_.get();
    std::size_t displaced = 0;
    std::size_t to_observe = 0;
    std::uint32_t* observed = observed_.data();
    const bool recent_early = lifecycle != nullptr && lifecycle->prefetch_reads_recent();
    for (std::size_t i = 0; i < n; ++i) {
        if (i + cache_lookahead < n) cache_.prefetch(hashes[i + cache_lookahead]);
        const AggregationCache::Added added =
            cache_.add(packets[i].key, hashes[i], packets[i].wire_length, evicted_[displaced]);
        displaced += added == AggregationCache::Added::displaced ? 1 : 0;
        // The list is written branch-free: which packets are kept is as
        // unpredictable as the cache's hits. The blocked filter's prefetch()
        // loads their recent-table slots with their blocks; a branch on it
        // here to load them earlier cost b 1.5% and a 0.8%.
        observed[to_observe] = static_cast<std::uint32_t>(i);
        const bool ends =
            packets[i].key.protocol == 6 && (packets[i].tcp_flags & (tcp_fin | tcp_rst)) != 0;
        const bool kept = added != AggregationCache::Added::summed || ends;
        if (recent_early && kept) lifecycle->prefetch_recent(hashes[i]);
        to_observe += kept ? 1 : 0;
    }
    if (lifecycle == nullptr) {
        flush_entries(displaced);
        return;
    }
    // The displaced entries' sketch updates and the kept packets' lifecycle
    // observations in one loop: two independent sequences, each still in its
    // own order (the same cells and reports), whose cache misses now overlap:
    // b 1.5% faster at the lower quartile than one loop after the other, a 0.5%.
    //
    // prefetch() and observe() each locate a flow's cells from its hash (a
    // multiply or two), cheaper than carrying the probes between them.
    locate_entries(displaced);
    const std::size_t lookahead = lifecycle->prefetch_lookahead();
    for (std::size_t j = 0; j < std::min(lookahead, to_observe); ++j) {
        lifecycle->prefetch(hashes[observed[j]]);
    }
    const std::size_t rounds = std::max(displaced, to_observe);
    for (std::size_t j = 0; j < rounds; ++j) {
        if (j < displaced) sketch_entry(j, displaced);
        if (j < to_observe) {
            if (j + lookahead < to_observe) lifecycle->prefetch(hashes[observed[j + lookahead]]);
            const std::uint32_t i = observed[j];
            const std::uint8_t flags = packets[i].key.protocol == 6 ? packets[i].tcp_flags : 0;
            lifecycle->observe(hashes[i], packets[i].timestamp_ns, flags);
        }
    }
}

void FlowMeasurement::add_batch(std::span<const PacketRecord> packets) noexcept {
    // Chunk by chunk, so the scratch stays small (see chunk_packets).
    for (std::size_t begin = 0; begin < packets.size(); begin += chunk_packets) {
        const auto chunk = packets.subspan(begin, std::min(chunk_packets, packets.size() - begin));
        prepare(chunk, chunk_);
        add_prepared(chunk, chunk_);
    }
}

void FlowMeasurement::prepare(std::span<const PacketRecord> packets, PreparedBatch& out) const {
    out.hashes.resize(packets.size());
    static_assert(offsetof(PacketRecord, key) == 0);
    hash_keys(reinterpret_cast<const std::byte*>(packets.data()), sizeof(PacketRecord),
              packets.size(), config_.hash_seed, out.hashes.data(), vector_hash_);
}

void FlowMeasurement::add_prepared(std::span<const PacketRecord> packets,
                                   const PreparedBatch& prepared) noexcept {
    for (std::size_t begin = 0; begin < packets.size(); begin += chunk_packets) {
        const std::size_t n = std::min(chunk_packets, packets.size() - begin);
        update_hashed(&packets[begin], &prepared.hashes[begin], n);
    }
}

std::vector<HeavyHitter> FlowMeasurement::rank(const HeavyHitterCandidates& candidates,
                                               Lane lane) const {
    std::vector<HeavyHitter> ranked;
    // Column signature per candidate: equal signatures share every counter.
    std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> signatures;
    for (const auto& entry : candidates.entries()) {
        // Re-query: a candidate's stored estimate may be stale (it only
        // refreshes when the flow beats the smallest candidate).
        const Hash128 hash = hash_key(entry.key, config_.hash_seed);
        const std::uint64_t estimate = sketch_.estimate(hash, lane);
        std::vector<std::uint32_t> columns(sketch_.params().depth);
        for (std::uint32_t row = 0; row < columns.size(); ++row) columns[row] = sketch_.column(hash, row);
        signatures.emplace_back(std::move(columns), ranked.size());
        ranked.push_back(HeavyHitter{entry.key, estimate, sketch_.lower_bound(estimate, lane)});
    }
    std::sort(signatures.begin(), signatures.end());
    for (std::size_t i = 0; i + 1 < signatures.size(); ++i) {
        if (signatures[i].first != signatures[i + 1].first) continue;
        for (const std::size_t at : {signatures[i].second, signatures[i + 1].second}) {
            ranked[at].shares_cells = true;
            ranked[at].lower = 0;
        }
    }
    std::sort(ranked.begin(), ranked.end(), [](const HeavyHitter& a, const HeavyHitter& b) {
        if (a.estimate != b.estimate) return a.estimate > b.estimate;
        return compare_keys(a.key, b.key) < 0;  // deterministic order on ties
    });
    if (ranked.size() > config_.top_k) ranked.resize(config_.top_k);
    return ranked;
}

WindowSummary FlowMeasurement::summarize(Lane packets_lane, Lane bytes_lane,
                                         const HeavyHitterCandidates& by_packets,
                                         const HeavyHitterCandidates& by_bytes) const {
    WindowSummary summary;
    summary.packets = sketch_.total(packets_lane);
    summary.bytes = sketch_.total(bytes_lane);
    summary.top_packets = rank(by_packets, packets_lane);
    summary.top_bytes = rank(by_bytes, bytes_lane);
    return summary;
}

namespace {

FlowSummary to_summary(const FlowCounts& c) {
    FlowSummary f;
    f.new_flows = c.new_flows;
    f.new_undercount_bound = c.new_undercount_bound;
    f.active = c.active;
    f.active_stderr = c.active_stderr;
    f.active_lower = c.active_lower;
    f.active_upper = c.active_upper;
    f.expired = c.expired;
    f.expired_stderr = c.expired_stderr;
    f.ended = c.ended;
    f.ended_undercount_bound = c.ended_undercount_bound;
    f.fpr = c.fpr;
    f.max_fpr = c.max_fpr;
    f.target_fpr = c.target_fpr;
    f.overfilled = c.overfilled;
    return f;
}

}  // namespace

WindowSummary FlowMeasurement::interval_summary() {
    flush_pending();
    WindowSummary summary = summarize(Lane::interval_packets, Lane::interval_bytes,
                                      interval_by_packets_, interval_by_bytes_);
    if (lifecycle_) {
        summary.has_flows = true;
        summary.flows = to_summary(lifecycle_->interval_counts());
    }
    return summary;
}

// The run's flow answers: counts summed over intervals (bounds add up: a
// union bound), active as of now, the worst fpr seen.
WindowSummary FlowMeasurement::total_summary() {
    flush_pending();
    WindowSummary summary =
        summarize(Lane::total_packets, Lane::total_bytes, total_by_packets_, total_by_bytes_);
    if (lifecycle_) {
        const FlowSummary now = to_summary(lifecycle_->interval_counts());
        FlowSummary run = now;
        const FlowSummary& closed = closed_intervals_flows_;
        run.new_flows += closed.new_flows;
        run.new_undercount_bound += closed.new_undercount_bound;
        run.expired += closed.expired;
        run.expired_stderr =
            std::sqrt(now.expired_stderr * now.expired_stderr + closed_expired_variance_);
        run.ended += closed.ended;
        run.ended_undercount_bound += closed.ended_undercount_bound;
        run.max_fpr = std::max(now.max_fpr, closed.max_fpr);
        run.overfilled = now.overfilled || closed.overfilled;
        summary.has_flows = true;
        summary.flows = run;
    }
    return summary;
}

void FlowMeasurement::advance_to(std::int64_t timestamp_ns) noexcept {
    if (!lifecycle_ || timestamp_ns < lifecycle_->next_boundary_ns()) return;
    flush_pending();  // the cache holds only flows refreshed in this generation (update_hashed)
    lifecycle_->advance_to(timestamp_ns);
}

void FlowMeasurement::start_new_interval() noexcept {
    flush_pending();  // the pending counts belong to the interval that ends
    if (lifecycle_) {
        const FlowSummary closed = to_summary(lifecycle_->interval_counts());
        FlowSummary& run = closed_intervals_flows_;
        run.new_flows += closed.new_flows;
        run.new_undercount_bound += closed.new_undercount_bound;
        run.expired += closed.expired;
        closed_expired_variance_ += closed.expired_stderr * closed.expired_stderr;
        run.ended += closed.ended;
        run.ended_undercount_bound += closed.ended_undercount_bound;
        run.max_fpr = std::max(run.max_fpr, closed.max_fpr);
        run.overfilled = run.overfilled || closed.overfilled;
        lifecycle_->start_new_interval();
    }
    static_assert(Lane::interval_bytes == Lane::interval_packets + 1);
    sketch_.clear_lanes(Lane::interval_packets, 2);
    interval_by_packets_.clear();
    interval_by_bytes_.clear();
}

FlowMeasurement::Footprint FlowMeasurement::footprint(const MeasurementConfig& config) {
    Footprint f;
    const CountMinParams sketch = with_lanes(config.sketch, Lane::lanes);
    f.sketch_bytes = sketch.counter_bytes();
    if (config.track_flows) f.lifecycle_bytes = FlowLifecycle::planned_bytes(config.lifecycle);
    f.candidate_bytes = 4 * std::uint64_t{HeavyHitterCandidates::planned_bytes(candidate_capacity(config))};
    f.fixed_bytes = sizeof(FlowMeasurement) +
                    std::uint64_t{config.aggregation_slots} * sizeof(AggregationCache::Entry) +
                    scratch_bytes(sketch.depth);
    return f;
}

std::size_t FlowMeasurement::scratch_bytes(std::uint32_t depth) noexcept {
    return chunk_packets * (sizeof(Hash128) +
                            sizeof(AggregationCache::Entry) + (depth + 1) * sizeof(std::uint32_t));
}

std::size_t FlowMeasurement::memory_bytes() const noexcept {
    return sizeof(*this) + sketch_.memory_bytes() + cache_.memory_bytes() +
           chunk_.hashes.capacity() * sizeof(Hash128) +
           evicted_.capacity() * sizeof(AggregationCache::Entry) +
           evicted_columns_.capacity() * sizeof(std::uint32_t) +
           observed_.capacity() * sizeof(std::uint32_t) +
           (lifecycle_ ? lifecycle_->memory_bytes() : 0) + interval_by_packets_.memory_bytes() +
           interval_by_bytes_.memory_bytes() + total_by_packets_.memory_bytes() +
           total_by_bytes_.memory_bytes();
}

}  // namespace flowsketch::core
