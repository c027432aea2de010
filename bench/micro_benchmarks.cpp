// Micro-benchmarks of each per-packet piece of flowsketch (Google Benchmark).
//
// Every benchmark reports packets: one iteration is one packet (so the Time
// column is ns per packet and items_per_second is packets per second), except
// BM_AddBatch*, where one iteration is a batch of 1,024 packets and the
// ns_per_packet counter gives the (CPU) time per packet.
//
// Inputs are pre-built before timing and walked in order, wrapping around: a
// stream of 2^18 packets drawn from 100,000 flows with Zipf(1.1) popularity
// (the shape `flowsketch gen` writes by default: 80% IPv4, 20% IPv6, 80% TCP),
// so keys, hashes and frames are spread over megabytes, not sitting in L1;
// about 32,000 distinct flows occur in it (the distinct_flows counter). The
// lifecycle's working-set benchmark walks the first 2^21 packets of the same
// stream (hashes only), which reach most of the 100,000.
// Structures are sized as the CLI sizes them by default (src/measure_command.cpp:
// Count-Min ε = δ = 0.001 Kirsch–Mitzenmacher with 4 lanes, lifecycle for
// 1,000,000 flows at fpr 0.001, idle timeout 60 s, top 10 → 64 candidates).
// Packet time advances 10 µs per packet (gen's default 100,000 pps), so the
// lifecycle crosses generation boundaries as in a real replay.
//
// How to build, run and read these: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "capture/decode/decode.hpp"
#include "core/sketch/count_min.hpp"
#include "core/key/flow_key.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"
#include "core/measure/flow_measurement.hpp"
#include "core/key/hash.hpp"
#include "core/sketch/heavy_hitters.hpp"
#include "core/sketch/random.hpp"
#include "core/platform/simd.hpp"

namespace {

using flowsketch::core::CountMinParams;
using flowsketch::core::CountMinSketch;
using flowsketch::core::CountMinVariant;
using flowsketch::core::FlowKey;
using flowsketch::core::FlowLifecycle;
using flowsketch::core::FlowLifecycleConfig;
using flowsketch::core::FlowMeasurement;
using flowsketch::core::Hash128;
using flowsketch::core::HeavyHitterCandidates;
using flowsketch::core::MeasurementConfig;
using flowsketch::core::SeenFilterKind;
using flowsketch::core::PacketRecord;
using flowsketch::core::Xoshiro256;
namespace simd = flowsketch::core::simd;

// Structures read simd::level() when built: a benchmark that names a level
// builds its structures at that level (the CPU's support caps it; the
// counter `avx512` says which code ran) and leaves the process's as it was.
class BuiltAt {
public:
    explicit BuiltAt(simd::Level level) : saved_(simd::level()), used_(simd::set_level(level)) {}
    ~BuiltAt() { simd::set_level(saved_); }
    BuiltAt(const BuiltAt&) = delete;
    BuiltAt& operator=(const BuiltAt&) = delete;
    void report(benchmark::State& state) const {
        state.counters["avx512"] = used_ == simd::Level::avx512 ? 1 : 0;
    }

private:
    simd::Level saved_;
    simd::Level used_;
};

constexpr std::size_t stream_length = std::size_t{1} << 18;  // packets; a power of two
constexpr std::size_t stream_mask = stream_length - 1;
// The lifecycle's working set needs a longer stream to reach most of the
// 100,000 flows (Zipf's tail is rare); it takes hashes only (32 MiB).
constexpr std::size_t long_stream_length = std::size_t{1} << 21;
constexpr std::size_t long_stream_mask = long_stream_length - 1;
constexpr std::size_t universe_flows = 100'000;  // trace a of bench/replay_benchmark.sh
constexpr double zipf_exponent = 1.1;            // gen's default
constexpr std::int64_t packet_spacing_ns = 10'000;  // 100,000 pps, gen's default rate
constexpr std::int64_t start_ns = 1'700'000'000'000'000'000;  // gen's default --start
constexpr std::size_t batch_size = FlowMeasurement::chunk_packets;  // the pipeline's batch

// The CLI's defaults (src/measure_command.cpp MeasureOptions).
constexpr double cli_epsilon = 0.001;
constexpr double cli_delta = 0.001;
constexpr std::uint32_t measurement_lanes = 4;  // FlowMeasurement's lane count
constexpr std::uint32_t cli_candidates = 64;    // max(4 · top 10, 64)

CountMinParams cli_sketch_params() {
    return CountMinParams::for_error(cli_epsilon, cli_delta, CountMinVariant::kirsch_mitzenmacher);
}

MeasurementConfig cli_measurement_config(SeenFilterKind kind) {
    MeasurementConfig config;  // top 10, lifecycle defaults (1M flows, fpr 0.001, 60 s, G = 8)
    config.sketch = cli_sketch_params();
    config.lifecycle.kind = kind;
    return config;
}

FlowLifecycleConfig lifecycle_config(SeenFilterKind kind) {
    FlowLifecycleConfig config;  // 1M flows, fpr 0.001, 60 s, G = 8
    config.kind = kind;
    return config;
}

struct Flow {
    FlowKey key;
    std::uint32_t frame_bytes = 0;  // wire length of its packets
};

FlowKey random_key(Xoshiro256& rng) {
    const bool tcp = rng.chance(0.8);
    const auto protocol = static_cast<std::uint8_t>(tcp ? 6 : 17);
    const auto sport = static_cast<std::uint16_t>(1024 + rng.below(64512));
    const auto dport = static_cast<std::uint16_t>(tcp ? (rng.chance(0.5) ? 443 : 80) : 53);
    if (rng.chance(0.8)) {
        return FlowKey::ipv4(static_cast<std::uint32_t>(rng.next()), static_cast<std::uint32_t>(rng.next()),
                             sport, dport, protocol);
    }
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    for (auto& byte : src) byte = static_cast<std::uint8_t>(rng.next());
    for (auto& byte : dst) byte = static_cast<std::uint8_t>(rng.next());
    return FlowKey::ipv6(src, dst, sport, dport, protocol);
}

std::uint32_t random_frame_bytes(Xoshiro256& rng) {
    // gen's default mix 64:7,576:4,1500:1.
    const std::uint64_t pick = rng.below(12);
    return pick < 7 ? 64u : pick < 11 ? 576u : 1500u;
}

// The pre-built stream every benchmark walks.
struct Stream {
    std::vector<Flow> flows;                // the universe
    std::vector<std::uint32_t> flow_of;     // stream position → flow index
    std::vector<FlowKey> keys;              // stream position → key
    std::vector<Hash128> hashes;            // hash_key(key, measurement seed)
    std::vector<PacketRecord> records;      // timestamps 10 µs apart from start_ns
    // Heavy-hitter estimates as a sketch would return them (the exact count,
    // which a sketch at this size matches closely): on pass p over the stream,
    // position i's flow has count seen_before[i] + 1 + p · per_pass[i].
    std::vector<std::uint32_t> seen_before;
    std::vector<std::uint32_t> per_pass;
    std::size_t distinct_flows = 0;
    // The first long_stream_length packets of the same stream (the above are its
    // first stream_length), hashes only.
    std::vector<Hash128> long_hashes;
    std::size_t long_distinct_flows = 0;

    Stream() {
        Xoshiro256 rng(7);
        flows.resize(universe_flows);
        for (auto& flow : flows) {
            flow.key = random_key(rng);
            flow.frame_bytes = random_frame_bytes(rng);
        }
        std::vector<double> cdf(universe_flows);
        double sum = 0;
        for (std::size_t rank = 0; rank < universe_flows; ++rank) {
            sum += 1.0 / std::pow(static_cast<double>(rank + 1), zipf_exponent);
            cdf[rank] = sum;
        }
        const std::uint64_t seed = MeasurementConfig{}.hash_seed;
        std::vector<std::uint32_t> count(universe_flows, 0);
        flow_of.resize(stream_length);
        keys.resize(stream_length);
        hashes.resize(stream_length);
        records.resize(stream_length);
        seen_before.resize(stream_length);
        per_pass.resize(stream_length);
        long_hashes.resize(long_stream_length);
        std::vector<bool> seen(universe_flows, false);
        for (std::size_t i = 0; i < long_stream_length; ++i) {
            const double u = rng.uniform() * sum;
            const auto rank = static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
            const auto flow = static_cast<std::uint32_t>(std::min(rank, universe_flows - 1));
            long_hashes[i] = flowsketch::core::hash_key(flows[flow].key, seed);
            if (!seen[flow]) {
                seen[flow] = true;
                ++long_distinct_flows;
            }
            if (i >= stream_length) continue;
            flow_of[i] = flow;
            keys[i] = flows[flow].key;
            hashes[i] = flowsketch::core::hash_key(keys[i], seed);
            records[i].key = keys[i];
            records[i].timestamp_ns = start_ns + static_cast<std::int64_t>(i) * packet_spacing_ns;
            records[i].wire_length = flows[flow].frame_bytes;
            records[i].tcp_flags = keys[i].protocol == 6 ? 0x10 : 0;  // ACK
            seen_before[i] = count[flow]++;
        }
        for (std::size_t i = 0; i < stream_length; ++i) per_pass[i] = count[flow_of[i]];
        distinct_flows = static_cast<std::size_t>(std::count_if(count.begin(), count.end(), [](std::uint32_t c) { return c != 0; }));
    }
};

const Stream& stream() {
    static const Stream instance;
    return instance;
}

// items_per_second is then packets per second.
void report_packets(benchmark::State& state, std::size_t packets_per_iteration) {
    state.SetItemsProcessed(static_cast<std::int64_t>(packets_per_iteration) * state.iterations());
}

void report_stream(benchmark::State& state) {
    state.counters["distinct_flows"] = static_cast<double>(stream().distinct_flows);
}

// ------------------------------------------------------------------ decode

void put_be16(std::uint8_t* p, std::uint16_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

constexpr std::size_t frame_stride = 128;  // gen's default snaplen

// Ethernet II / IPv4 (20 bytes) / TCP (20 bytes, ACK), addresses and ports of `key`
// (taken as IPv4: the first 4 bytes of the address fields).
std::size_t build_ipv4_tcp(std::uint8_t* f, const FlowKey& key, std::uint32_t wire_length) {
    const std::size_t length = std::min<std::size_t>(std::max<std::uint32_t>(wire_length, 54), frame_stride);
    std::fill(f, f + frame_stride, std::uint8_t{0});
    for (std::size_t i = 0; i < 12; ++i) f[i] = static_cast<std::uint8_t>(0x10 + i);  // MACs
    put_be16(f + 12, 0x0800);
    std::uint8_t* ip = f + 14;
    ip[0] = 0x45;
    put_be16(ip + 2, static_cast<std::uint16_t>(std::max<std::uint32_t>(wire_length, 54) - 14));
    put_be16(ip + 4, 0x1234);
    put_be16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 64;
    ip[9] = 6;
    std::copy_n(key.src.begin(), 4, ip + 12);
    std::copy_n(key.dst.begin(), 4, ip + 16);
    std::uint8_t* tcp = ip + 20;
    put_be16(tcp, key.src_port);
    put_be16(tcp + 2, key.dst_port);
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;  // ACK
    put_be16(tcp + 14, 8192);
    return length;
}

// Ethernet II / IPv6 (40 bytes) / UDP (8 bytes), addresses and ports of `key`.
std::size_t build_ipv6_udp(std::uint8_t* f, const FlowKey& key, std::uint32_t wire_length) {
    const std::uint32_t wire = std::max<std::uint32_t>(wire_length, 62);
    const std::size_t length = std::min<std::size_t>(wire, frame_stride);
    std::fill(f, f + frame_stride, std::uint8_t{0});
    for (std::size_t i = 0; i < 12; ++i) f[i] = static_cast<std::uint8_t>(0x10 + i);
    put_be16(f + 12, 0x86dd);
    std::uint8_t* ip = f + 14;
    ip[0] = 0x60;
    put_be16(ip + 4, static_cast<std::uint16_t>(wire - 14 - 40));
    ip[6] = 17;
    ip[7] = 64;
    std::copy(key.src.begin(), key.src.end(), ip + 8);
    std::copy(key.dst.begin(), key.dst.end(), ip + 24);
    std::uint8_t* udp = ip + 40;
    put_be16(udp, key.src_port);
    put_be16(udp + 2, key.dst_port);
    put_be16(udp + 4, static_cast<std::uint16_t>(wire - 14 - 40));
    return length;
}

enum class FrameKind { ipv4_tcp, ipv6_udp };

// One frame per stream position, at a fixed stride of 128 bytes (32 MiB in all).
struct Frames {
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint32_t> lengths;

    explicit Frames(FrameKind kind) : bytes(stream_length * frame_stride), lengths(stream_length) {
        const Stream& s = stream();
        for (std::size_t i = 0; i < stream_length; ++i) {
            std::uint8_t* f = bytes.data() + i * frame_stride;
            const std::uint32_t wire = s.records[i].wire_length;
            lengths[i] = static_cast<std::uint32_t>(kind == FrameKind::ipv4_tcp ? build_ipv4_tcp(f, s.keys[i], wire)
                                                                               : build_ipv6_udp(f, s.keys[i], wire));
        }
    }
};

const Frames& frames_of(FrameKind kind) {
    static const Frames ipv4_tcp(FrameKind::ipv4_tcp);
    static const Frames ipv6_udp(FrameKind::ipv6_udp);
    return kind == FrameKind::ipv4_tcp ? ipv4_tcp : ipv6_udp;
}

void BM_Decode(benchmark::State& state, FrameKind kind) {
    const Frames& frames = frames_of(kind);
    flowsketch::capture::DecodedPacket out;
    // Check once, untimed, that every frame decodes (a benchmark of the skip path would be meaningless).
    for (std::size_t i = 0; i < stream_length; ++i) {
        if (flowsketch::capture::decode_frame(flowsketch::capture::link_type::ethernet,
                                              frames.bytes.data() + i * frame_stride, frames.lengths[i],
                                              out) != flowsketch::capture::SkipReason::none) {
            state.SkipWithError("a pre-built frame does not decode");
            return;
        }
    }
    std::size_t i = 0;
    for (auto _ : state) {
        const auto reason = flowsketch::capture::decode_frame(flowsketch::capture::link_type::ethernet,
                                                              frames.bytes.data() + i * frame_stride,
                                                              frames.lengths[i], out);
        benchmark::DoNotOptimize(reason);
        benchmark::DoNotOptimize(out);
        i = (i + 1) & stream_mask;
    }
    report_packets(state, 1);
    report_stream(state);
}
BENCHMARK_CAPTURE(BM_Decode, ethernet_ipv4_tcp, FrameKind::ipv4_tcp);
BENCHMARK_CAPTURE(BM_Decode, ethernet_ipv6_udp, FrameKind::ipv6_udp);

// ------------------------------------------------------------------ hash

void BM_HashKey(benchmark::State& state) {
    const Stream& s = stream();
    const std::uint64_t seed = MeasurementConfig{}.hash_seed;
    std::size_t i = 0;
    for (auto _ : state) {
        Hash128 hash = flowsketch::core::hash_key(s.keys[i], seed);
        benchmark::DoNotOptimize(hash);
        i = (i + 1) & stream_mask;
    }
    report_packets(state, 1);
    report_stream(state);
}
BENCHMARK(BM_HashKey);

// The measurement's way: the keys of 1,024 packet records at once (hash_keys,
// as FlowMeasurement::prepare hashes a chunk), eight at a time in AVX-512
// registers where the CPU has them, one by one otherwise.
void BM_HashKeys(benchmark::State& state, simd::Level level) {
    const Stream& s = stream();
    const std::uint64_t seed = MeasurementConfig{}.hash_seed;
    const BuiltAt built(level);
    built.report(state);
    const bool vector = simd::level() == simd::Level::avx512;  // as FlowMeasurement decides
    constexpr std::size_t chunk = FlowMeasurement::chunk_packets;
    std::array<Hash128, chunk> hashes{};
    std::size_t i = 0;
    for (auto _ : state) {
        flowsketch::core::hash_keys(reinterpret_cast<const std::byte*>(s.records.data() + i),
                                    sizeof(PacketRecord), chunk, seed, hashes.data(), vector);
        benchmark::DoNotOptimize(hashes.data());
        benchmark::ClobberMemory();
        i = (i + chunk) & stream_mask;
    }
    report_packets(state, chunk);
    report_stream(state);
    state.counters["ns_per_packet"] = benchmark::Counter(
        static_cast<double>(chunk), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_HashKeys, best, simd::Level::avx512);
BENCHMARK_CAPTURE(BM_HashKeys, portable, simd::Level::portable);

// ------------------------------------------------------------------ Count-Min

// One packet at a time, as FlowMeasurement::add does: no prefetch, so each of
// the `depth` rows is a likely cache miss once the sketch outgrows L2.
void BM_CountMinUpdate(benchmark::State& state) {
    const Stream& s = stream();
    CountMinParams params = cli_sketch_params();
    params.lanes = measurement_lanes;
    CountMinSketch sketch(params);
    std::array<std::uint64_t, measurement_lanes> estimates{};
    std::size_t i = 0;
    for (auto _ : state) {
        const std::uint64_t bytes = s.records[i].wire_length;
        const std::array<std::uint64_t, measurement_lanes> weights{1, bytes, 1, bytes};
        sketch.update_and_estimate(s.hashes[i], weights, estimates);
        benchmark::DoNotOptimize(estimates.data());
        benchmark::ClobberMemory();
        i = (i + 1) & stream_mask;
    }
    report_packets(state, 1);
    report_stream(state);
    state.counters["sketch_KiB"] = static_cast<double>(sketch.memory_bytes()) / 1024.0;
    state.counters["width"] = static_cast<double>(sketch.params().width);
    state.counters["depth"] = static_cast<double>(sketch.params().depth);
}
BENCHMARK(BM_CountMinUpdate);

// Close to how FlowMeasurement::add_batch drives the sketch: the cells of the
// packet six places ahead are prefetched before each update (the measurement
// prefetches its displaced entries eight ahead; six keeps this benchmark's
// figures comparable from one build to the next).
void BM_CountMinUpdatePrefetched(benchmark::State& state, simd::Level level) {
    const Stream& s = stream();
    CountMinParams params = cli_sketch_params();
    params.lanes = measurement_lanes;
    const BuiltAt built(level);
    CountMinSketch sketch(params);
    built.report(state);
    constexpr std::size_t lookahead = 6;
    std::array<std::uint64_t, measurement_lanes> estimates{};
    for (std::size_t j = 0; j < lookahead; ++j) sketch.prefetch(s.hashes[j]);
    std::size_t i = 0;
    for (auto _ : state) {
        sketch.prefetch(s.hashes[(i + lookahead) & stream_mask]);
        const std::uint64_t bytes = s.records[i].wire_length;
        const std::array<std::uint64_t, measurement_lanes> weights{1, bytes, 1, bytes};
        sketch.update_and_estimate(s.hashes[i], weights, estimates);
        benchmark::DoNotOptimize(estimates.data());
        benchmark::ClobberMemory();
        i = (i + 1) & stream_mask;
    }
    report_packets(state, 1);
    report_stream(state);
}
// The CPU's best level (the AVX-512 kernel where there is one), then the portable code.
BENCHMARK_CAPTURE(BM_CountMinUpdatePrefetched, best, simd::Level::avx512);
BENCHMARK_CAPTURE(BM_CountMinUpdatePrefetched, portable, simd::Level::portable);

// ------------------------------------------------------------------ heavy-hitter candidates

// One candidate set (FlowMeasurement keeps four) offered each packet's flow
// with its count so far, growing pass after pass as a run's totals do.
void BM_HeavyHitterOffer(benchmark::State& state) {
    const Stream& s = stream();
    HeavyHitterCandidates candidates(cli_candidates);
    std::size_t i = 0;
    std::uint64_t pass = 0;
    for (auto _ : state) {
        const std::uint64_t estimate = s.seen_before[i] + 1 + pass * s.per_pass[i];
        candidates.offer(s.keys[i], s.hashes[i], estimate);
        benchmark::ClobberMemory();
        i = (i + 1) & stream_mask;
        if (i == 0) ++pass;
    }
    report_packets(state, 1);
    report_stream(state);
    benchmark::DoNotOptimize(candidates.size());
}
BENCHMARK(BM_HeavyHitterOffer);

// ------------------------------------------------------------------ flow lifecycle

// The long stream's flows (Zipf over 100,000: the working set of trace a),
// packet time advancing, so generations turn over (and their cell passes
// count) as in a replay. distinct_flows is that of the long stream.
void BM_LifecycleObserveWorkingSet(benchmark::State& state, SeenFilterKind kind) {
    const Stream& s = stream();
    FlowLifecycle lifecycle{lifecycle_config(kind)};
    std::int64_t now = start_ns;
    std::uint64_t new_flows = 0;
    std::size_t i = 0;
    for (auto _ : state) {
        const bool is_new = lifecycle.observe(s.long_hashes[i], now, 0x10);  // ACK
        benchmark::DoNotOptimize(is_new);
        new_flows += static_cast<std::uint64_t>(is_new);
        now += packet_spacing_ns;
        i = (i + 1) & long_stream_mask;
    }
    report_packets(state, 1);
    state.counters["distinct_flows"] = static_cast<double>(s.long_distinct_flows);
    state.counters["table_MiB"] = static_cast<double>(lifecycle.memory_bytes()) / (1024.0 * 1024.0);
    state.counters["new_flows"] = static_cast<double>(new_flows);
    state.counters["cell_passes"] = static_cast<double>(lifecycle.cell_passes());
}
// The default (blocked: one cache line per flow) and the standard filter (k lines).
BENCHMARK_CAPTURE(BM_LifecycleObserveWorkingSet, blocked, SeenFilterKind::blocked);
BENCHMARK_CAPTURE(BM_LifecycleObserveWorkingSet, standard, SeenFilterKind::standard);

// A SYN flood: every packet a flow never seen before (fresh random hashes,
// generated untimed in blocks), SYN flags, packet time advancing. The filter
// is first filled (untimed) with its design load, 1,000,000 flows, so timing
// starts where a sustained flood keeps it: at or past its design fill.
void BM_LifecycleObserveFlood(benchmark::State& state, SeenFilterKind kind,
                              simd::Level level = simd::Level::avx512) {
    const BuiltAt built(level);
    FlowLifecycle lifecycle{lifecycle_config(kind)};
    built.report(state);
    std::vector<Hash128> fresh(stream_length);
    Xoshiro256 rng(11);
    const auto refill = [&] {
        for (auto& hash : fresh) hash = Hash128{rng.next(), rng.next()};
    };
    std::int64_t now = start_ns;
    for (std::uint64_t f = 0; f < lifecycle.config().max_flows; ++f) {
        lifecycle.observe(Hash128{rng.next(), rng.next()}, now, 0x02);
        now += packet_spacing_ns;
    }
    state.counters["fpr_at_start"] = lifecycle.interval_counts().fpr;
    refill();
    std::uint64_t new_flows = 0;
    std::size_t i = 0;
    for (auto _ : state) {
        const bool is_new = lifecycle.observe(fresh[i], now, 0x02);
        benchmark::DoNotOptimize(is_new);
        new_flows += static_cast<std::uint64_t>(is_new);
        now += packet_spacing_ns;
        i = (i + 1) & stream_mask;
        if (i == 0) {
            state.PauseTiming();
            refill();
            state.ResumeTiming();
        }
    }
    report_packets(state, 1);
    state.counters["new_flows"] = static_cast<double>(new_flows);
    state.counters["fpr_at_end"] = lifecycle.interval_counts().fpr;
}
BENCHMARK_CAPTURE(BM_LifecycleObserveFlood, blocked, SeenFilterKind::blocked);
BENCHMARK_CAPTURE(BM_LifecycleObserveFlood, blocked_portable, SeenFilterKind::blocked,
                  simd::Level::portable);
BENCHMARK_CAPTURE(BM_LifecycleObserveFlood, standard, SeenFilterKind::standard);

// One generation turn: the pass over the cells that clears the stamp leaving
// the window. Before each (untimed) the flows of one generation refresh their
// cells: 100,000 flows, half of them also seen the generation before, so the
// filter holds about 500,000 flows (half its design load) in steady state and
// every turn expires about 50,000 of them. Time per turn.
void BM_LifecycleGenerationTurn(benchmark::State& state, SeenFilterKind kind) {
    FlowLifecycle lifecycle{lifecycle_config(kind)};
    const std::int64_t period = lifecycle.generation_period_ns();
    Xoshiro256 rng(13);
    std::vector<Hash128> previous(50'000);
    std::int64_t now = start_ns;
    const auto one_generation = [&] {
        for (const Hash128& hash : previous) lifecycle.observe(hash, now, 0x10);
        for (Hash128& hash : previous) {
            hash = Hash128{rng.next(), rng.next()};
            lifecycle.observe(hash, now, 0x10);
        }
    };
    for (std::uint32_t g = 0; g < 2 * lifecycle.config().generations; ++g) {
        one_generation();
        now += period;
        lifecycle.advance_to(now);
    }
    for (auto _ : state) {
        state.PauseTiming();
        one_generation();
        now += period;
        state.ResumeTiming();
        lifecycle.advance_to(now);
    }
    state.counters["fill"] = lifecycle.interval_counts().fill;
    state.counters["cell_passes"] = static_cast<double>(lifecycle.cell_passes());
}
BENCHMARK_CAPTURE(BM_LifecycleGenerationTurn, blocked, SeenFilterKind::blocked)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LifecycleGenerationTurn, standard, SeenFilterKind::standard)->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------ the whole measurement

// FlowMeasurement::add_batch at the CLI's defaults on batches of 1,024 records
// (the pipeline's batch size): hash, aggregation cache, Count-Min and four
// candidate sets for the flows it displaces, lifecycle.
// Between passes over the stream its timestamps are shifted on (untimed), so
// time keeps moving as in a replay.
void BM_AddBatch(benchmark::State& state, SeenFilterKind kind, bool track_flows = true) {
    std::vector<PacketRecord> records = stream().records;
    MeasurementConfig config = cli_measurement_config(kind);
    config.track_flows = track_flows;
    FlowMeasurement measurement(config);
    const std::int64_t pass_span = static_cast<std::int64_t>(stream_length) * packet_spacing_ns;
    std::size_t begin = 0;
    for (auto _ : state) {
        measurement.add_batch(std::span<const PacketRecord>(records.data() + begin, batch_size));
        benchmark::ClobberMemory();
        begin += batch_size;
        if (begin == stream_length) {
            begin = 0;
            state.PauseTiming();
            for (auto& record : records) record.timestamp_ns += pass_span;
            state.ResumeTiming();
        }
    }
    report_packets(state, batch_size);
    report_stream(state);
    state.counters["ns_per_packet"] = benchmark::Counter(
        static_cast<double>(batch_size), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["state_MiB"] = static_cast<double>(measurement.memory_bytes()) / (1024.0 * 1024.0);
}
BENCHMARK_CAPTURE(BM_AddBatch, blocked, SeenFilterKind::blocked);
BENCHMARK_CAPTURE(BM_AddBatch, standard, SeenFilterKind::standard);
// --no-flows: the heavy hitters alone (the kind is unused).
BENCHMARK_CAPTURE(BM_AddBatch, no_flows, SeenFilterKind::blocked, false);

// The same under a flood: every record a new flow (keys rewritten untimed
// between passes with fresh source addresses and ports; SYN flags).
void BM_AddBatchFlood(benchmark::State& state, SeenFilterKind kind, bool track_flows = true,
                      simd::Level level = simd::Level::avx512) {
    std::vector<PacketRecord> records = stream().records;
    Xoshiro256 rng(13);
    const auto refresh = [&] {
        for (auto& record : records) {
            record.key = FlowKey::ipv4(static_cast<std::uint32_t>(rng.next()), 0xc6336407,
                                       static_cast<std::uint16_t>(rng.next()), 80, 6);
            record.tcp_flags = 0x02;
            record.wire_length = 64;
        }
    };
    refresh();
    MeasurementConfig config = cli_measurement_config(kind);
    config.track_flows = track_flows;
    const BuiltAt built(level);
    FlowMeasurement measurement(config);
    built.report(state);
    const std::int64_t pass_span = static_cast<std::int64_t>(stream_length) * packet_spacing_ns;
    std::size_t begin = 0;
    for (auto _ : state) {
        measurement.add_batch(std::span<const PacketRecord>(records.data() + begin, batch_size));
        benchmark::ClobberMemory();
        begin += batch_size;
        if (begin == stream_length) {
            begin = 0;
            state.PauseTiming();
            refresh();
            for (auto& record : records) record.timestamp_ns += pass_span;
            state.ResumeTiming();
        }
    }
    report_packets(state, batch_size);
    state.counters["ns_per_packet"] = benchmark::Counter(
        static_cast<double>(batch_size), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_AddBatchFlood, blocked, SeenFilterKind::blocked);
BENCHMARK_CAPTURE(BM_AddBatchFlood, blocked_portable, SeenFilterKind::blocked, true,
                  simd::Level::portable);
BENCHMARK_CAPTURE(BM_AddBatchFlood, standard, SeenFilterKind::standard);
BENCHMARK_CAPTURE(BM_AddBatchFlood, no_flows, SeenFilterKind::blocked, false);

}  // namespace

BENCHMARK_MAIN();
