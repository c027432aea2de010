#include "core/measure/flow_measurement.hpp"

#include <algorithm>
#include <array>
#include <cmath>
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

bool counts_distinct(const MeasurementConfig& config) {
    return std::any_of(config.extra_keys.begin(), config.extra_keys.end(),
                       [](const KeySpec& spec) { return spec.counts_distinct(); });
}

bool any_keeps_tunnel(const MeasurementConfig& config) {
    return std::any_of(config.extra_keys.begin(), config.extra_keys.end(),
                       [](const KeySpec& spec) { return spec.keeps_tunnel(); });
}

bool any_keeps_vlan(const MeasurementConfig& config) {
    return std::any_of(config.extra_keys.begin(), config.extra_keys.end(),
                       [](const KeySpec& spec) { return spec.keeps_vlan(); });
}

}  // namespace

std::vector<AggregationConfig> FlowMeasurement::aggregation_configs(const MeasurementConfig& config) {
    std::vector<AggregationConfig> configs;
    for (std::size_t i = 0; i <= config.extra_keys.size(); ++i) {
        AggregationConfig aggregation;
        aggregation.spec = i == 0 ? KeySpec::five_tuple() : config.extra_keys[i - 1];
        aggregation.sketch = config.sketch;
        aggregation.candidates = candidate_capacity(config);
        aggregation.cache_slots = config.aggregation_slots;
        aggregation.hash_seed = config.hash_seed;
        aggregation.distinct = config.distinct;
        configs.push_back(aggregation);
    }
    return configs;
}

FlowMeasurement::FlowMeasurement(const MeasurementConfig& config) : config_(config) {
    const std::vector<AggregationConfig> configs = aggregation_configs(config);
    aggregations_.reserve(configs.size());
    for (const AggregationConfig& aggregation : configs) aggregations_.emplace_back(aggregation);
    config_.sketch = sketch_params();
    vector_hash_ = simd::level() == simd::Level::avx512;
    if (config.track_flows) lifecycle_ = std::make_unique<FlowLifecycle>(config.lifecycle);
    // add_batch prepares at most chunk_packets at a time: no allocation after this.
    chunk_.hashes.reserve(chunk_packets);
    observed_.resize(chunk_packets);
    if (!config.extra_keys.empty()) {
        masked_.resize(chunk_packets);
        masked_hashes_.resize(chunk_packets);
    }
    keys_vlan_ = any_keeps_vlan(config);
    if (keys_vlan_) {
        without_vlan_.resize(chunk_packets);
        chunk_.keys.reserve(chunk_packets);
    }
    keys_tunnel_ = any_keeps_tunnel(config);
    if (keys_tunnel_) tunnelled_.resize(chunk_packets);
    if (counts_distinct(config)) {
        interval_totals_ = std::make_unique<DistinctTotalsSketch>();
        closed_totals_ = std::make_unique<DistinctTotalsSketch>();
    }
}

void FlowMeasurement::add(const PacketRecord& packet) noexcept {
    add_batch(std::span<const PacketRecord>(&packet, 1));
}

void FlowMeasurement::flush_pending() noexcept {
    for (Aggregation& aggregation : aggregations_) aggregation.flush_pending();
}

// Counts n hashed packets (n ≤ chunk_packets). Where a generation boundary
// falls inside them, the packets before it go first, then the aggregation
// cache is drained and the generation turns: the cache holds only flows the
// lifecycle has refreshed in the current generation (see update_generation).
void FlowMeasurement::update_hashed(const PacketRecord* packets, const Hash128* hashes,
                                    std::size_t n, const TunnelTag* tags) noexcept {
    update_extra_keys(packets, hashes, n, tags);
    if (keys_vlan_) {
        // Only the +vlan specs keep the VLAN id: the 5-tuple's lists and the
        // lifecycle key the packet without it, as when it is not decoded.
        for (std::size_t i = 0; i < n; ++i) {
            without_vlan_[i] = packets[i];
            without_vlan_[i].key.vlan = 0;
        }
        packets = without_vlan_.data();
    }
    if (lifecycle_) {
        std::size_t begin = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (packets[i].timestamp_ns < lifecycle_->next_boundary_ns()) continue;
            update_generation(packets + begin, hashes + begin, i - begin);
            aggregations_.front().flush_pending();
            lifecycle_->advance_to(packets[i].timestamp_ns);
            begin = i;
        }
        packets += begin;
        hashes += begin;
        n -= begin;
    }
    update_generation(packets, hashes, n);
}

// The extra key specs see the same packets in the same order, each keyed by
// its own mask and hashed once; they play no part in the lifecycle.
//
// A spec that keeps the tunnel id or endpoints keys each packet with its tag
// (a packet without one: not tunnelled, id 0); the `tunnel` spec keys only
// the packets keyed through a tunnel, so its N is theirs.
void FlowMeasurement::update_extra_keys(const PacketRecord* packets, const Hash128* hashes, std::size_t n,
                                        const TunnelTag* tags) noexcept {
    if (interval_totals_) {
        for (std::size_t i = 0; i < n; ++i) interval_totals_->add(hashes[i], packets[i].key, config_.hash_seed);
    }
    static constexpr TunnelTag untagged{};
    for (std::size_t a = 1; a < aggregations_.size(); ++a) {
        Aggregation& aggregation = aggregations_[a];
        const KeySpec& spec = aggregation.spec();
        std::size_t keyed = n;
        const std::uint32_t* picked = nullptr;  // packet of each key, when not every packet has one
        if (!spec.keeps_tunnel()) {
            for (std::size_t i = 0; i < n; ++i) masked_[i] = spec.apply(packets[i].key);
        } else if (!spec.is_tunnel()) {
            for (std::size_t i = 0; i < n; ++i) {
                masked_[i] = spec.key_of(packets[i].key, tags != nullptr ? tags[i] : untagged);
            }
        } else {
            keyed = 0;
            for (std::size_t i = 0; tags != nullptr && i < n; ++i) {
                if (tags[i].type == 0) continue;
                masked_[keyed] = spec.key_of(packets[i].key, tags[i]);
                tunnelled_[keyed++] = static_cast<std::uint32_t>(i);
            }
            picked = tunnelled_.data();
        }
        hash_keys(reinterpret_cast<const std::byte*>(masked_.data()), sizeof(FlowKey), keyed, config_.hash_seed,
                  masked_hashes_.data(), vector_hash_);
        std::size_t displaced = 0;
        for (std::size_t j = 0; j < keyed; ++j) {
            const std::size_t i = picked != nullptr ? picked[j] : j;
            aggregation.add(masked_[j], masked_hashes_[j], packets[i].wire_length, displaced);
        }
        aggregation.flush_displaced(displaced);
        if (DistinctCounts* distinct = aggregation.distinct()) {
            for (std::size_t j = 0; j < keyed; ++j) {
                const std::size_t i = picked != nullptr ? picked[j] : j;
                distinct->add(masked_[j], masked_hashes_[j], packets[i].key);
            }
        }
    }
}

// Packets of one generation: first into the 5-tuple's aggregation cache,
// whose displaced entries then go to the sketch in the order they were
// displaced (so the sketch and the candidates see the same sequence however
// the stream is cut into batches); then into the lifecycle, in their order,
// with the filter cells of the packet a few places ahead on their way.
//
// Only a packet that starts a pending entry (or ends its flow) reaches the
// lifecycle. One summed into an entry belongs to a flow whose entry's first
// packet was observed in this generation, so the flow's cells already hold the
// current stamp and observing it would change nothing: the lifecycle's counts
// are exactly those of observing every packet (its recent-flow table still
// answers the flows that come back after a displacement).
void FlowMeasurement::update_generation(const PacketRecord* packets, const Hash128* hashes,
                                        std::size_t n) noexcept {
    // Cache lines are prefetched a few packets ahead inside the loop, not a
    // chunk ahead: a chunk's worth would evict lines before their use.
    constexpr std::size_t cache_lookahead = 16;
    Aggregation& flows = aggregations_.front();
    for (std::size_t i = 0; i < std::min(cache_lookahead, n); ++i) flows.prefetch(hashes[i]);
    FlowLifecycle* lifecycle = lifecycle_.get();
    std::size_t displaced = 0;
    std::size_t to_observe = 0;
    std::uint32_t* observed = observed_.data();
    const bool recent_early = lifecycle != nullptr && lifecycle->prefetch_reads_recent();
    for (std::size_t i = 0; i < n; ++i) {
        if (i + cache_lookahead < n) flows.prefetch(hashes[i + cache_lookahead]);
        const bool started = flows.add(packets[i].key, hashes[i], packets[i].wire_length, displaced);
        // The list is written branch-free: which packets are kept is as
        // unpredictable as the cache's hits.
        observed[to_observe] = static_cast<std::uint32_t>(i);
        const bool ends =
            packets[i].key.protocol == 6 && (packets[i].tcp_flags & (tcp_fin | tcp_rst)) != 0;
        const bool kept = started || ends;
        if (recent_early && kept) lifecycle->prefetch_recent(hashes[i]);
        to_observe += kept ? 1 : 0;
    }
    if (lifecycle == nullptr) {
        flows.flush_displaced(displaced);
        return;
    }
    // The displaced entries' sketch updates and the kept packets' lifecycle
    // observations in one loop: two independent sequences, each still in its
    // own order (the same cells and reports), whose cache misses overlap.
    //
    // prefetch() and observe() each locate a flow's cells from its hash (a
    // multiply or two), cheaper than carrying the probes between them.
    //
    // The loop is compiled once per seen filter kind (FlowLifecycle::batch):
    // the kind is chosen here, once per chunk, not per packet.
    flows.locate_displaced(displaced);
    lifecycle->batch([&](auto seen) {
        constexpr std::size_t lookahead = decltype(seen)::prefetch_lookahead;
        for (std::size_t j = 0; j < std::min(lookahead, to_observe); ++j) seen.prefetch(hashes[observed[j]]);
        const std::size_t rounds = std::max(displaced, to_observe);
        for (std::size_t j = 0; j < rounds; ++j) {
            if (j < displaced) flows.sketch_displaced(j, displaced);
            if (j < to_observe) {
                if (j + lookahead < to_observe) seen.prefetch(hashes[observed[j + lookahead]]);
                const std::uint32_t i = observed[j];
                const std::uint8_t flags = packets[i].key.protocol == 6 ? packets[i].tcp_flags : 0;
                seen.observe(hashes[i], packets[i].timestamp_ns, flags);
            }
        }
    });
}

void FlowMeasurement::add_batch(std::span<const PacketRecord> packets, std::span<const TunnelTag> tags) noexcept {
    // Chunk by chunk, so the scratch stays small (see chunk_packets).
    for (std::size_t begin = 0; begin < packets.size(); begin += chunk_packets) {
        const std::size_t n = std::min(chunk_packets, packets.size() - begin);
        const auto chunk = packets.subspan(begin, n);
        prepare(chunk, chunk_);
        add_prepared(chunk, chunk_, tags.size() == packets.size() ? tags.subspan(begin, n) : tags.first(0));
    }
}

void FlowMeasurement::prepare(std::span<const PacketRecord> packets, PreparedBatch& out) const {
    out.hashes.resize(packets.size());
    if (keys_vlan_) {
        // The 5-tuple hash, which the lifecycle shares, is of the key without its VLAN id.
        out.keys.resize(packets.size());
        for (std::size_t i = 0; i < packets.size(); ++i) {
            out.keys[i] = packets[i].key;
            out.keys[i].vlan = 0;
        }
        hash_keys(reinterpret_cast<const std::byte*>(out.keys.data()), sizeof(FlowKey), packets.size(),
                  config_.hash_seed, out.hashes.data(), vector_hash_);
        return;
    }
    static_assert(offsetof(PacketRecord, key) == 0);
    hash_keys(reinterpret_cast<const std::byte*>(packets.data()), sizeof(PacketRecord),
              packets.size(), config_.hash_seed, out.hashes.data(), vector_hash_);
}

void FlowMeasurement::add_prepared(std::span<const PacketRecord> packets, const PreparedBatch& prepared,
                                   std::span<const TunnelTag> tags) noexcept {
    // Tags that do not match the packets one to one are none (every packet untagged).
    const bool tagged = !tags.empty() && tags.size() == packets.size();
    for (std::size_t begin = 0; begin < packets.size(); begin += chunk_packets) {
        const std::size_t n = std::min(chunk_packets, packets.size() - begin);
        update_hashed(&packets[begin], &prepared.hashes[begin], n, tagged ? &tags[begin] : nullptr);
    }
}

// The lifecycle's answers for a window: the run's are the closed intervals'
// sums plus the current interval's.
FlowCounts FlowMeasurement::flow_counts(Window window) const {
    FlowCounts counts = lifecycle_->interval_counts();
    if (window == Window::run) {
        double expired_variance = counts.expired_stderr * counts.expired_stderr + closed_expired_variance_;
        add_flow_counts(counts, closed_intervals_flows_, expired_variance);
        counts.expired_stderr = std::sqrt(expired_variance);
    }
    return counts;
}

WindowSummary FlowMeasurement::summary(Window window) {
    flush_pending();
    WindowSummary summary;
    const Aggregation& flows = five_tuple();
    summary.packets = flows.total(window, Weight::packets);
    summary.bytes = flows.total(window, Weight::bytes);
    summary.top_packets = flows.top(window, Weight::packets, config_.top_k);
    summary.top_bytes = flows.top(window, Weight::bytes, config_.top_k);
    const bool interval = window == Window::interval;
    if (interval) {
        summary.changes_packets = flows.changes(Weight::packets, config_.top_k);
        summary.changes_bytes = flows.changes(Weight::bytes, config_.top_k);
    }
    for (std::size_t a = 1; a < aggregations_.size(); ++a) {
        const Aggregation& aggregation = aggregations_[a];
        KeyTops key;
        key.top_packets = aggregation.top(window, Weight::packets, config_.top_k);
        key.top_bytes = aggregation.top(window, Weight::bytes, config_.top_k);
        key.memory_bytes = sizeof(Aggregation) + aggregation.memory_bytes();
        if (interval) {
            key.changes_packets = aggregation.changes(Weight::packets, config_.top_k);
            key.changes_bytes = aggregation.changes(Weight::bytes, config_.top_k);
        }
        if (DistinctCounts* distinct = aggregations_[a].distinct()) {
            const DistinctSketch& sketch = distinct->sketch(window);
            key.distinct_packets = distinct_counts(key.top_packets, sketch, aggregation.sketch(), lane_of(window, Weight::packets), config_.hash_seed);
            key.distinct_bytes = distinct_counts(key.top_bytes, sketch, aggregation.sketch(), lane_of(window, Weight::packets), config_.hash_seed);
            const std::vector<FlowKey> keys = distinct->candidate_keys(window);
            key.has_distinct = true;
            key.top_distinct = rank_by_distinct(aggregation.sketch(), lane_of(window, Weight::packets), keys, sketch,
                                                aggregation.spec(), config_.top_k, config_.hash_seed);
            key.distinct_pairs = sketch.total();
        }
        summary.keys.push_back(std::move(key));
    }
    if (interval_totals_) {
        summary.has_distinct_totals = true;
        summary.distinct_totals = distinct_totals(window).totals();
    }
    if (lifecycle_) {
        summary.has_flows = true;
        summary.flows = flow_counts(window);
    }
    return summary;
}

WindowValue FlowMeasurement::window_value(Window window) { return window_value(window, WindowValue{}); }

WindowValue FlowMeasurement::window_value(Window window, WindowValue&& recycled) {
    flush_pending();
    WindowValue value;
    value.window = window;
    value.top_k = config_.top_k;
    value.hash_seed = config_.hash_seed;
    value.keys.reserve(aggregations_.size());
    for (std::size_t k = 0; k < aggregations_.size(); ++k) {
        Aggregation& aggregation = aggregations_[k];
        value.keys.push_back(k < recycled.keys.size() ? aggregation.window_part(window, std::move(recycled.keys[k].sketch))
                                                      : aggregation.window_part(window));
        if (DistinctCounts* distinct = aggregation.distinct()) {
            value.keys.back().distinct = distinct->sketch(window);
            value.keys.back().distinct_candidates = distinct->candidate_keys(window);
        }
    }
    if (interval_totals_) {
        const DistinctTotalsSketch totals = distinct_totals(window);
        for (std::size_t i = 0; i < DistinctTotalsSketch::counters; ++i) {
            const auto registers = totals.counter(i).register_values();
            value.distinct_totals.emplace_back(registers.begin(), registers.end());
        }
    }
    if (lifecycle_) {
        value.has_flows = true;
        value.flows = flow_counts(window);
    }
    return value;
}

std::vector<CountMinParams> FlowMeasurement::window_value_params() const {
    std::vector<CountMinParams> params;
    params.reserve(aggregations_.size());
    for (const Aggregation& aggregation : aggregations_) params.push_back(aggregation.window_part_params());
    return params;
}

void FlowMeasurement::advance_to(std::int64_t timestamp_ns) noexcept {
    if (!lifecycle_ || timestamp_ns < lifecycle_->next_boundary_ns()) return;
    // The 5-tuple cache holds only flows refreshed in this generation (update_hashed).
    aggregations_.front().flush_pending();
    lifecycle_->advance_to(timestamp_ns);
}

void FlowMeasurement::start_new_interval() noexcept {
    flush_pending();  // the pending counts belong to the interval that ends
    if (lifecycle_) {
        add_flow_counts(closed_intervals_flows_, lifecycle_->interval_counts(), closed_expired_variance_);
        lifecycle_->start_new_interval();
    }
    for (Aggregation& aggregation : aggregations_) aggregation.clear_interval();
    if (interval_totals_) {
        closed_totals_->merge(*interval_totals_);
        interval_totals_->clear();
    }
}

DistinctTotalsSketch FlowMeasurement::distinct_totals(Window window) const {
    DistinctTotalsSketch totals = *interval_totals_;
    if (window == Window::run) totals.merge(*closed_totals_);
    return totals;
}

FlowMeasurement::Footprint FlowMeasurement::footprint(const MeasurementConfig& config) {
    Footprint f;
    if (config.track_flows) f.lifecycle_bytes = FlowLifecycle::planned_bytes(config.lifecycle);
    f.fixed_bytes = sizeof(FlowMeasurement) + chunk_packets * (sizeof(Hash128) + sizeof(std::uint32_t));
    if (!config.extra_keys.empty()) f.fixed_bytes += chunk_packets * (sizeof(FlowKey) + sizeof(Hash128));
    if (any_keeps_vlan(config)) f.fixed_bytes += chunk_packets * (sizeof(PacketRecord) + sizeof(FlowKey));
    if (any_keeps_tunnel(config)) f.fixed_bytes += chunk_packets * sizeof(std::uint32_t);
    if (counts_distinct(config)) f.distinct_bytes += 2 * DistinctTotalsSketch::planned_bytes();
    for (const AggregationConfig& aggregation : aggregation_configs(config)) {
        const Aggregation::Footprint part = Aggregation::footprint(aggregation);
        f.sketch_bytes += part.sketch_bytes;
        f.candidate_bytes += part.candidate_bytes;
        f.distinct_bytes += part.distinct_bytes;
        f.fixed_bytes += sizeof(Aggregation) + part.cache_bytes;
    }
    return f;
}

std::size_t FlowMeasurement::sketch_memory_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const Aggregation& aggregation : aggregations_) bytes += aggregation.sketch_memory_bytes();
    return bytes;
}

std::size_t FlowMeasurement::memory_bytes() const noexcept {
    std::size_t bytes = sizeof(*this) + chunk_.hashes.capacity() * sizeof(Hash128) +
                        observed_.capacity() * sizeof(std::uint32_t) + masked_.capacity() * sizeof(FlowKey) +
                        masked_hashes_.capacity() * sizeof(Hash128) +
                        without_vlan_.capacity() * sizeof(PacketRecord) + chunk_.keys.capacity() * sizeof(FlowKey) +
                        tunnelled_.capacity() * sizeof(std::uint32_t) +
                        (lifecycle_ ? lifecycle_->memory_bytes() : 0) +
                        (interval_totals_ ? interval_totals_->memory_bytes() + closed_totals_->memory_bytes() : 0);
    for (const Aggregation& aggregation : aggregations_) bytes += sizeof(Aggregation) + aggregation.memory_bytes();
    return bytes;
}

}  // namespace flowsketch::core
