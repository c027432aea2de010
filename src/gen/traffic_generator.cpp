#include "src/gen/traffic_generator.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "core/key/hash.hpp"

namespace flowsketch::gen {

namespace {

// SplitMix64's finaliser: derives independent stream seeds from the user's seed.
std::uint64_t splitmix_mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Independent random streams per concern, derived from the one user seed.
enum class Stream : std::uint64_t {
    flows = 1,
    popularity = 2,
    sizes = 3,
    arrivals = 4,
    // Lifetime mode only: none of these is read by the stationary mode.
    budgets = 5,
    arrival_order = 6,
    flow_arrivals = 7,
    durations = 8,
    pauses = 9,
    endings = 10,
    spacing = 11,
    // --syn-flood only.
    flood_sources = 12,
    flood_times = 13,
    flood_headers = 14,
};

Rng stream_rng(std::uint64_t seed, Stream stream) noexcept {
    // Mixing (not adding) keeps the streams' SplitMix sequences from overlapping.
    return Rng(splitmix_mix(seed ^ splitmix_mix(static_cast<std::uint64_t>(stream))));
}

void put16(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

void put32(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    p[1] = static_cast<std::uint8_t>(v >> 16);
    p[2] = static_cast<std::uint8_t>(v >> 8);
    p[3] = static_cast<std::uint8_t>(v);
}

void put32_le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
}

void put16_le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
}

/// Ones'-complement sum of big-endian 16-bit words (even length), not yet folded.
std::uint32_t sum16(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < n; i += 2) {
        sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
    }
    return sum;
}

std::uint16_t fold_checksum(std::uint32_t sum) noexcept {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum & 0xffff);
}

constexpr std::uint8_t proto_tcp = 6;
constexpr std::uint8_t proto_udp = 17;

// Locally administered unicast MACs: the link layer is not part of any key.
constexpr std::array<std::uint8_t, 12> ethernet_macs = {0x02, 0x66, 0x73, 0x00, 0x00, 0x02,
                                                        0x02, 0x66, 0x73, 0x00, 0x00, 0x01};

// Common service ports, so half the flows look like real services.
constexpr std::array<std::uint16_t, 12> service_ports = {80,  443, 53,   22,   25,   123,
                                                         161, 993, 3306, 5432, 6379, 8080};

std::uint32_t draw_ipv4(Rng& rng) {
    // Uniform over 10.0.0.0/8 and 198.18.0.0/15 (benchmarking range, RFC 2544),
    // skipping each prefix's all-zeros and all-ones host.
    constexpr std::uint64_t ten_size = std::uint64_t{1} << 24;
    constexpr std::uint64_t bench_size = std::uint64_t{1} << 17;
    for (;;) {
        const std::uint64_t i = rng.below(ten_size + bench_size);
        const bool ten = i < ten_size;
        const std::uint64_t host = ten ? i : i - ten_size;
        const std::uint64_t size = ten ? ten_size : bench_size;
        if (host == 0 || host == size - 1) continue;
        const std::uint32_t base = ten ? 0x0a000000U : 0xc6120000U;
        return base | static_cast<std::uint32_t>(host);
    }
}

std::array<std::uint8_t, 16> draw_ipv6(Rng& rng) {
    std::array<std::uint8_t, 16> a = {0x20, 0x01, 0x0d, 0xb8};  // 2001:db8::/32 (RFC 3849)
    const std::uint64_t hi = rng.next();
    const std::uint64_t lo = rng.next();
    for (std::size_t i = 0; i < 4; ++i) a[4 + i] = static_cast<std::uint8_t>(hi >> (8 * i));
    for (std::size_t i = 0; i < 8; ++i) a[8 + i] = static_cast<std::uint8_t>(lo >> (8 * i));
    return a;
}

core::FlowKey draw_key(Rng& rng, bool ipv6, std::uint8_t proto) {
    const auto sport = static_cast<std::uint16_t>(49152 + rng.below(16384));  // ephemeral
    const bool service = rng.chance(0.5);
    const std::uint64_t pick = rng.below(service ? service_ports.size() : 65535);
    const std::uint16_t dport =
        service ? service_ports[pick] : static_cast<std::uint16_t>(1 + pick);
    if (ipv6) {
        const auto src = draw_ipv6(rng);
        auto dst = draw_ipv6(rng);
        while (dst == src) dst = draw_ipv6(rng);
        return core::FlowKey::ipv6(src, dst, sport, dport, proto);
    }
    const std::uint32_t src = draw_ipv4(rng);
    std::uint32_t dst = draw_ipv4(rng);
    while (dst == src) dst = draw_ipv4(rng);
    return core::FlowKey::ipv4(src, dst, sport, dport, proto);
}

/// Open-addressing set of flow indices keyed by FlowKey: 8 bytes per flow where
/// a node-based set would cost ~70, which matters at tens of millions of flows.
class KeySet {
  public:
    KeySet(const std::vector<Flow>& flows, std::size_t expected) : flows_(flows) {
        std::size_t capacity = 16;
        while (capacity < 2 * expected) capacity *= 2;
        slots_.assign(capacity, 0);
    }
    /// Inserts flows_[index]'s key; false if an equal key is already present.
    bool insert(std::uint32_t index) {
        const core::FlowKey& key = flows_[index].key;
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = static_cast<std::size_t>(core::hash64(&key, sizeof key, 0)) & mask;
        for (;; i = (i + 1) & mask) {
            if (slots_[i] == 0) {
                slots_[i] = index + 1;
                return true;
            }
            if (flows_[slots_[i] - 1].key == key) return false;
        }
    }

  private:
    const std::vector<Flow>& flows_;
    std::vector<std::uint32_t> slots_;  // flow index + 1; 0 is empty
};

}  // namespace

// ---------------------------------------------------------------------------- AliasTable

AliasTable::AliasTable(std::span<const double> weights) {
    const std::size_t n = weights.size();
    if (n == 0 || n > std::numeric_limits<std::uint32_t>::max()) {
        throw std::invalid_argument("alias table needs 1 to 2^32-1 weights");
    }
    double total = 0;
    for (const double w : weights) {
        if (!std::isfinite(w) || w < 0) throw std::invalid_argument("alias weight not finite >= 0");
        total += w;
    }
    if (!(total > 0)) throw std::invalid_argument("alias weights sum to zero");

    // Vose's method: scaled probabilities n*p_i, paired small with large.
    constexpr double one = 0x1.0p53;
    std::vector<double> scaled(n);
    for (std::size_t i = 0; i < n; ++i) scaled[i] = weights[i] * static_cast<double>(n) / total;
    threshold_.assign(n, static_cast<std::uint64_t>(one));
    alias_.resize(n);
    std::vector<std::uint32_t> small;
    std::vector<std::uint32_t> large;
    for (std::size_t i = 0; i < n; ++i) {
        alias_[i] = static_cast<std::uint32_t>(i);
        (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
        const std::uint32_t s = small.back();
        small.pop_back();
        const std::uint32_t l = large.back();
        threshold_[s] = static_cast<std::uint64_t>(scaled[s] * one);
        alias_[s] = l;
        scaled[l] = (scaled[l] + scaled[s]) - 1.0;
        if (scaled[l] < 1.0) {
            large.pop_back();
            small.push_back(l);
        }
    }
    // Leftovers are 1 up to rounding error: they keep threshold "always".
}

std::uint32_t AliasTable::sample(Rng& rng) const noexcept {
    const auto i = static_cast<std::size_t>(rng.below(alias_.size()));
    return (rng.next() >> 11) < threshold_[i] ? static_cast<std::uint32_t>(i) : alias_[i];
}

std::vector<double> zipf_weights(std::uint64_t n, double s) {
    std::vector<double> w(static_cast<std::size_t>(n));
    for (std::size_t r = 0; r < w.size(); ++r) {
        w[r] = s == 0 ? 1.0 : std::pow(static_cast<double>(r + 1), -s);
    }
    return w;
}

// ---------------------------------------------------------------------------- size mix

std::vector<SizeBin> default_size_mix() { return {{64, 7}, {576, 4}, {1500, 1}}; }

std::vector<SizeBin> parse_size_mix(std::string_view text) {
    std::vector<SizeBin> mix;
    double total = 0;
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view entry = text.substr(0, comma);
        const std::size_t colon = entry.find(':');
        if (colon == std::string_view::npos) {
            throw std::invalid_argument(
                fmt::format("entry '{}' is not SIZE:WEIGHT (e.g. 64:0.5,1500:0.5)", entry));
        }
        const std::string_view size_text = entry.substr(0, colon);
        const std::string_view weight_text = entry.substr(colon + 1);
        SizeBin bin;
        const auto* size_end = size_text.data() + size_text.size();
        const auto [sp, se] = std::from_chars(size_text.data(), size_end, bin.size);
        if (se != std::errc{} || sp != size_end || bin.size < min_frame_size ||
            bin.size > max_frame_size) {
            throw std::invalid_argument(
                fmt::format("size '{}' in '{}' is not an integer in [{}, {}]", size_text, entry,
                            min_frame_size, max_frame_size));
        }
        const auto* weight_end = weight_text.data() + weight_text.size();
        const auto [wp, we] = std::from_chars(weight_text.data(), weight_end, bin.weight);
        if (we != std::errc{} || wp != weight_end || !std::isfinite(bin.weight) || bin.weight < 0) {
            throw std::invalid_argument(
                fmt::format("weight '{}' in '{}' is not a finite number >= 0", weight_text, entry));
        }
        total += bin.weight;
        mix.push_back(bin);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    if (!(total > 0)) throw std::invalid_argument("the weights sum to zero");
    return mix;
}

std::string format_size_mix(const std::vector<SizeBin>& mix) {
    std::string out;
    for (const SizeBin& bin : mix) {
        if (!out.empty()) out += ',';
        out += fmt::format("{}:{}", bin.size, bin.weight);
    }
    return out;
}

// ---------------------------------------------------------------------------- flows

std::vector<Flow> make_flows(const GenConfig& config) {
    Rng rng = stream_rng(config.seed, Stream::flows);
    std::vector<Flow> flows(static_cast<std::size_t>(config.flows));
    KeySet seen(flows, flows.size());
    for (std::size_t i = 0; i < flows.size(); ++i) {
        Flow& flow = flows[i];
        // Every flow draws every attribute, so one option's value does not shift
        // the random stream that the others read.
        const bool ipv6 = rng.chance(config.ipv6_fraction);
        const bool vlan = rng.chance(config.vlan_fraction);
        const bool tcp = rng.chance(config.tcp_fraction);
        const auto vlan_id = static_cast<std::uint16_t>(1 + rng.below(4094));
        flow.vlan_id = vlan ? vlan_id : 0;
        flow.ipv6_flow_label = static_cast<std::uint32_t>(rng.next() & 0xfffff);
        flow.tcp_seq = static_cast<std::uint32_t>(rng.next());
        flow.ipv4_id = static_cast<std::uint16_t>(rng.next());
        do {
            flow.key = draw_key(rng, ipv6, tcp ? proto_tcp : proto_udp);
        } while (!seen.insert(static_cast<std::uint32_t>(i)));
    }
    return flows;
}

// ---------------------------------------------------------------------------- scheduler

namespace {
std::vector<double> size_weights(const std::vector<SizeBin>& mix) {
    std::vector<double> w;
    for (const SizeBin& bin : mix) w.push_back(bin.weight);
    return w;
}
}  // namespace

PacketScheduler::PacketScheduler(const GenConfig& config)
    : popularity_(zipf_weights(config.flows, config.zipf)),
      sizes_(size_weights(config.sizes)),
      flow_rng_(stream_rng(config.seed, Stream::popularity)),
      size_rng_(stream_rng(config.seed, Stream::sizes)),
      time_rng_(stream_rng(config.seed, Stream::arrivals)),
      mean_gap_us_(1e6 / config.rate) {
    for (const SizeBin& bin : config.sizes) size_values_.push_back(bin.size);
}

PacketEvent PacketScheduler::next() noexcept {
    PacketEvent event;
    event.flow = popularity_.sample(flow_rng_);
    event.wire_size = size_values_[sizes_.sample(size_rng_)];
    event.time_us = static_cast<std::uint64_t>(time_us_);
    // Exponential gap by inversion; 1 - u is in (0, 1], so the log is finite.
    time_us_ -= std::log1p(-time_rng_.uniform()) * mean_gap_us_;
    return event;
}

std::uint64_t stationary_last_time_us(const GenConfig& config) noexcept {
    // The same stream and the same arithmetic as PacketScheduler::next().
    Rng time_rng = stream_rng(config.seed, Stream::arrivals);
    const double mean_gap_us = 1e6 / config.rate;
    double time_us = 0;
    for (std::uint64_t i = 1; i < config.packets; ++i) {
        time_us -= std::log1p(-time_rng.uniform()) * mean_gap_us;
    }
    return static_cast<std::uint64_t>(time_us);
}

// ---------------------------------------------------------------------------- lifetimes

LifetimeConfig resolved_lifetimes(const GenConfig& config) {
    LifetimeConfig life = config.life;
    if (!(life.flow_rate > 0)) {
        life.flow_rate =
            config.rate * static_cast<double>(config.flows) / static_cast<double>(config.packets);
    }
    if (life.gap_min < 0) life.gap_min = life.idle_gap / 4;
    return life;
}

namespace {
/// Exponential with the given mean by inversion; 1 - u is in (0, 1], so the log is finite.
double exponential(Rng& rng, double mean) noexcept { return -std::log1p(-rng.uniform()) * mean; }
}  // namespace

LifetimeScheduler::LifetimeScheduler(const GenConfig& config, const std::vector<Flow>& flows)
    : lives_(flows.size()),
      order_(flows.size()),
      mean_arrival_gap_us_(1e6 / resolved_lifetimes(config).flow_rate),
      sizes_(size_weights(config.sizes)),
      size_rng_(stream_rng(config.seed, Stream::sizes)),
      arrival_rng_(stream_rng(config.seed, Stream::flow_arrivals)),
      spacing_rng_(stream_rng(config.seed, Stream::spacing)) {
    const LifetimeConfig life = resolved_lifetimes(config);
    for (const SizeBin& bin : config.sizes) size_values_.push_back(bin.size);
    // Whole microseconds, as timestamps are: a silence is listed iff its
    // microsecond length times 1000 exceeds round(gap_min * 1e9) ns.
    gap_min_us_ = static_cast<std::uint64_t>(std::llround(life.gap_min * 1e9)) / 1000;

    // Budgets: one packet each, the rest multinomial over Zipf ranks, so the
    // totals are exactly --packets and --flows and every flow exists.
    for (Life& l : lives_) l.budget = 1;
    {
        const AliasTable popularity(zipf_weights(config.flows, config.zipf));
        Rng rng = stream_rng(config.seed, Stream::budgets);
        for (std::uint64_t i = config.flows; i < config.packets; ++i) {
            ++lives_[popularity.sample(rng)].budget;
        }
    }
    // Arrival order: a uniform permutation (Fisher-Yates), so popularity rank
    // and arrival time are independent.
    {
        Rng rng = stream_rng(config.seed, Stream::arrival_order);
        for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<std::uint32_t>(i);
        for (std::size_t i = order_.size(); i > 1; --i) {
            std::swap(order_[i - 1], order_[static_cast<std::size_t>(rng.below(i))]);
        }
    }
    // Every flow draws every attribute from its concern's stream, so changing
    // one option does not shift what the others draw.
    Rng durations = stream_rng(config.seed, Stream::durations);
    Rng pauses = stream_rng(config.seed, Stream::pauses);
    Rng endings = stream_rng(config.seed, Stream::endings);
    const double idle_gap_us = life.idle_gap * 1e6;
    for (std::size_t i = 0; i < lives_.size(); ++i) {
        Life& l = lives_[i];
        l.duration_us = exponential(durations, life.duration_mean * 1e6);
        const bool pause = pauses.chance(life.idle_gap_fraction);
        const double length = (0.5 + pauses.uniform()) * idle_gap_us;
        const double where = pauses.uniform();
        if (pause && l.budget >= 2) {
            l.pause_us = length;
            // After packet 1..budget-1, uniformly.
            l.pause_after =
                1 + std::min(l.budget - 2,
                             static_cast<std::uint32_t>(where * static_cast<double>(l.budget - 1)));
        }
        const double e = endings.uniform();
        if (flows[i].key.protocol == proto_tcp) {
            if (e < life.fin_fraction) {
                l.end = FlowEnd::fin;
            } else if (e < life.fin_fraction + life.rst_fraction) {
                l.end = FlowEnd::rst;
            }
        }
    }
    heap_.reserve(1024);
}

double LifetimeScheduler::next_time_us(std::uint32_t flow, std::uint64_t packet_number) noexcept {
    // Time of packet `packet_number` (1-based), given that the previous one was sent.
    Life& l = lives_[flow];
    const double previous = l.position * l.duration_us;  // planned offset of the packet before
    double offset = 0;
    if (packet_number == l.budget && packet_number > 1) {
        offset = l.duration_us;
    } else if (packet_number > 1) {
        // The next of the budget - 2 interior points, uniform order statistics
        // drawn in sequence: with r points left above x, the lowest is
        // 1 - (1 - x) V^(1/r) for V uniform in (0, 1].
        const auto left = static_cast<double>(l.budget - packet_number);
        const double v = 1 - spacing_rng_.uniform();
        l.position = 1 - (1 - l.position) * std::exp(std::log(v) / left);
        offset = l.position * l.duration_us;
    }
    // The pause replaces the planned spacing after packet pause_after, whose
    // planned offset was `previous` (never the last packet, so position held it).
    if (packet_number == l.pause_after + 1) l.shift_us = l.pause_us - (offset - previous);
    if (l.pause_after != 0 && packet_number > l.pause_after) offset += l.shift_us;
    return l.start_us + offset;
}

PacketEvent LifetimeScheduler::next() {
    // Arrivals enter the heap only when due, so it holds the active flows only.
    while (next_arrival_ < order_.size() && (heap_.empty() || arrival_us_ <= heap_.front().time_us)) {
        const std::uint32_t flow = order_[next_arrival_++];
        lives_[flow].start_us = arrival_us_;
        heap_.push_back({arrival_us_, flow});
        std::push_heap(heap_.begin(), heap_.end());
        arrival_us_ += exponential(arrival_rng_, mean_arrival_gap_us_);
    }
    std::pop_heap(heap_.begin(), heap_.end());
    const Event event = heap_.back();
    heap_.pop_back();

    PacketEvent out;
    out.flow = event.flow;
    out.time_us = static_cast<std::uint64_t>(event.time_us);
    out.wire_size = size_values_[sizes_.sample(size_rng_)];
    // The scheduler counts packets itself: the caller's Flow counters are truth.
    Life& l = lives_[event.flow];
    const std::uint32_t sent = ++l.sent;
    if (sent < l.budget) {
        heap_.push_back({next_time_us(event.flow, sent + 1), event.flow});
        std::push_heap(heap_.begin(), heap_.end());
    }
    return out;
}

std::uint8_t LifetimeScheduler::tcp_flags(const PacketEvent& event,
                                          std::uint64_t packet_number) const noexcept {
    const Life& l = lives_[event.flow];
    if (packet_number != l.budget) return tcp_flags_psh_ack;
    switch (l.end) {
        case FlowEnd::fin: return tcp_flags_fin_ack;
        case FlowEnd::rst: return tcp_flags_rst_ack;
        case FlowEnd::none: break;
    }
    return tcp_flags_psh_ack;
}

void LifetimeScheduler::record(const PacketEvent& event, std::uint64_t packet_number) {
    Life& l = lives_[event.flow];
    if (packet_number > 1) {
        const std::uint64_t silence = event.time_us - l.last_us;
        if (silence > gap_min_us_) gaps_.push_back({event.flow, l.last_us, event.time_us});
        // Flooring both ends to microseconds makes it differ from pause_us by < 1 us.
        if (packet_number == l.pause_after + 1) l.pause_silence_us = silence;
    }
    l.last_us = event.time_us;
}

void LifetimeScheduler::finish() {
    // Emitted in time order; (flow, start) is unique, so no stable sort is needed.
    std::sort(gaps_.begin(), gaps_.end(), [](const Gap& a, const Gap& b) {
        return a.flow != b.flow ? a.flow < b.flow : a.start_us < b.start_us;
    });
}

std::span<const LifetimeScheduler::Gap> LifetimeScheduler::gaps_of(
    std::uint32_t flow) const noexcept {
    // A binary search instead of a per-flow index keeps 12 bytes per flow off the record.
    const auto first = std::lower_bound(gaps_.begin(), gaps_.end(), flow,
                                        [](const Gap& g, std::uint32_t f) { return g.flow < f; });
    auto last = first;
    while (last != gaps_.end() && last->flow == flow) ++last;
    return {first, last};
}

// ---------------------------------------------------------------------------- SYN flood

SynFlood::SynFlood(const GenConfig& config, std::uint64_t span_us)
    : time_rng_(stream_rng(config.seed, Stream::flood_times)),
      header_rng_(stream_rng(config.seed, Stream::flood_headers)),
      count_(config.syn_flood),
      span_us_(static_cast<double>(span_us)) {
    Rng keys = stream_rng(config.seed, Stream::flood_sources);
    for (std::uint64_t& k : round_keys_) k = keys.next();
    if (count_ == 0) return;
    // First pass: the sum of all n + 1 exponentials, so the second pass can
    // place each partial sum in [0, span] as it goes.
    Rng pass = time_rng_;
    for (std::uint64_t i = 0; i <= count_; ++i) total_ += exponential(pass, 1.0);
    draw_time();
}

void SynFlood::draw_time() noexcept {
    // Partial sums only grow and never exceed the total (the first pass added the
    // same numbers in the same order), so times are non-decreasing and <= span.
    cumulative_ += exponential(time_rng_, 1.0);
    const double t = total_ > 0 ? cumulative_ / total_ * span_us_ : 0;
    next_time_us_ = std::min(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(span_us_));
}

std::uint64_t SynFlood::permute(std::uint64_t x) const noexcept {
    // Balanced Feistel network on two 24-bit halves: a bijection of [0, 2^48)
    // whatever the round function.
    constexpr std::uint64_t half = (std::uint64_t{1} << 24) - 1;
    std::uint64_t left = x >> 24;
    std::uint64_t right = x & half;
    for (const std::uint64_t k : round_keys_) {
        const std::uint64_t mixed = left ^ (splitmix_mix(right ^ k) & half);
        left = right;
        right = mixed;
    }
    return left << 24 | right;
}

bool SynFlood::usable_source(std::uint64_t source) noexcept {
    const auto address = static_cast<std::uint32_t>(source >> 16);
    const auto port = static_cast<std::uint16_t>(source);
    const std::uint32_t first = address >> 24;
    return port >= 1024 && first != 0 && first != 127 && first < 224 &&
           (address >> 8) != (victim >> 8);
}

core::FlowKey SynFlood::key(std::uint64_t source) noexcept {
    return core::FlowKey::ipv4(static_cast<std::uint32_t>(source >> 16), victim,
                               static_cast<std::uint16_t>(source), victim_port, proto_tcp);
}

SynFlood::Packet SynFlood::next(std::span<std::uint8_t, frame_size> frame) noexcept {
    Packet packet;
    packet.time_us = next_time_us_;
    // About 15% of P(k) are skipped; k < 2^48 always holds for any allowed count.
    do {
        packet.source = permute(walk_++);
    } while (!usable_source(packet.source));
    ++emitted_;
    if (!done()) draw_time();

    const std::uint64_t bits = header_rng_.next();
    const auto source_address = static_cast<std::uint32_t>(packet.source >> 16);
    std::uint8_t* p = frame.data();
    std::memset(p, 0, frame.size());  // the last 6 bytes are Ethernet padding
    std::memcpy(p, ethernet_macs.data(), ethernet_macs.size());
    put16(p + 12, 0x0800);
    std::uint8_t* ip = p + 14;
    ip[0] = 0x45;
    put16(ip + 2, 40);  // IPv4 + TCP headers, no payload
    put16(ip + 4, static_cast<std::uint32_t>(bits >> 32) & 0xffff);  // IPv4 ID
    put16(ip + 6, 0x4000);                                           // DF
    ip[8] = 64;
    ip[9] = proto_tcp;
    put32(ip + 12, source_address);
    put32(ip + 16, victim);
    put16(ip + 10, fold_checksum(sum16(ip, 20)));
    std::uint8_t* tcp = ip + 20;
    put16(tcp, static_cast<std::uint16_t>(packet.source));
    put16(tcp + 2, victim_port);
    put32(tcp + 4, static_cast<std::uint32_t>(bits));  // initial sequence number
    // Acknowledgment number 0: ACK is not set.
    tcp[12] = 0x50;  // data offset 5 words, no options
    tcp[13] = tcp_flags_syn;
    put16(tcp + 14, 64240);  // window
    const std::uint32_t pseudo_sum = sum16(ip + 12, 8) + proto_tcp + 20;
    put16(tcp + 16, fold_checksum(pseudo_sum + sum16(tcp, 20)));
    return packet;
}

// ---------------------------------------------------------------------------- frames

std::uint32_t FrameBuilder::min_size(const Flow& flow) noexcept {
    const std::uint32_t link = flow.vlan_id != 0 ? 18 : 14;
    const std::uint32_t ip = flow.key.family == core::AddressFamily::ipv6 ? 40 : 20;
    const std::uint32_t l4 = flow.key.protocol == proto_tcp ? 20 : 8;
    return std::max(min_frame_size, link + ip + l4);
}

std::size_t FrameBuilder::build(Flow& flow, std::uint32_t wire_size,
                                std::span<std::uint8_t, max_header_size> out,
                                std::uint8_t tcp_flags) noexcept {
    std::uint8_t* p = out.data();
    const core::FlowKey& key = flow.key;
    const bool ipv6 = key.family == core::AddressFamily::ipv6;
    const bool tcp = key.protocol == proto_tcp;

    std::memcpy(p, ethernet_macs.data(), ethernet_macs.size());
    std::size_t off = 12;
    if (flow.vlan_id != 0) {
        put16(p + off, 0x8100);
        put16(p + off + 2, flow.vlan_id);  // PCP 0, DEI 0
        off += 4;
    }
    put16(p + off, ipv6 ? 0x86dd : 0x0800);
    off += 2;

    const auto ip_length = static_cast<std::uint32_t>(wire_size - off);
    const std::size_t ip_offset = off;
    std::uint32_t pseudo_sum = 0;
    std::uint32_t l4_length = 0;
    if (ipv6) {
        l4_length = ip_length - 40;
        put32(p + off, 0x60000000U | flow.ipv6_flow_label);
        put16(p + off + 4, l4_length);
        p[off + 6] = key.protocol;
        p[off + 7] = 64;  // hop limit
        std::memcpy(p + off + 8, key.src.data(), 16);
        std::memcpy(p + off + 24, key.dst.data(), 16);
        off += 40;
        // Pseudo-header (RFC 8200 §8.1): addresses, 32-bit length, next header.
        pseudo_sum =
            sum16(p + ip_offset + 8, 32) + (l4_length >> 16) + (l4_length & 0xffff) + key.protocol;
    } else {
        l4_length = ip_length - 20;
        p[off] = 0x45;
        p[off + 1] = 0;
        put16(p + off + 2, ip_length);
        put16(p + off + 4, flow.ipv4_id++);
        put16(p + off + 6, 0x4000);  // DF, offset 0
        p[off + 8] = 64;             // TTL
        p[off + 9] = key.protocol;
        put16(p + off + 10, 0);
        std::memcpy(p + off + 12, key.src.data(), 4);
        std::memcpy(p + off + 16, key.dst.data(), 4);
        put16(p + off + 10, fold_checksum(sum16(p + off, 20)));
        off += 20;
        pseudo_sum = sum16(p + ip_offset + 12, 8) + key.protocol + l4_length;
    }

    const std::size_t l4_offset = off;
    put16(p + off, key.src_port);
    put16(p + off + 2, key.dst_port);
    if (tcp) {
        put32(p + off + 4, flow.tcp_seq);
        put32(p + off + 8, 1);  // ack number: the connection is mid-stream
        p[off + 12] = 0x50;     // data offset 5 words, no options
        p[off + 13] = tcp_flags;  // PSH | ACK unless this packet ends the flow
        put16(p + off + 14, 0xffff);
        put16(p + off + 16, 0);
        put16(p + off + 18, 0);
        off += 20;
        flow.tcp_seq += l4_length - 20;
    } else {
        put16(p + off + 4, l4_length);
        put16(p + off + 6, 0);
        off += 8;
    }
    // The payload is zeros, which add nothing to the ones'-complement sum.
    std::uint16_t checksum = fold_checksum(pseudo_sum + sum16(p + l4_offset, off - l4_offset));
    if (!tcp && checksum == 0) checksum = 0xffff;  // UDP: 0 means "no checksum"
    put16(p + l4_offset + (tcp ? 16 : 6), checksum);
    return off;
}

// ---------------------------------------------------------------------------- files

BufferedFile::BufferedFile(std::string path) : path_(std::move(path)), buffer_(buffer_size) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw std::runtime_error(
            fmt::format("cannot create '{}': {}", path_, std::strerror(errno)));
    }
}

BufferedFile::~BufferedFile() {
    if (fd_ >= 0) ::close(fd_);  // only on an error path: close() reports errors
}

std::uint8_t* BufferedFile::append(std::size_t n) {
    if (buffer_.size() - used_ < n) flush();
    std::uint8_t* p = buffer_.data() + used_;
    used_ += n;
    return p;
}

void BufferedFile::append(std::string_view bytes) {
    while (!bytes.empty()) {
        const std::size_t n = std::min(bytes.size(), buffer_size);
        std::memcpy(append(n), bytes.data(), n);
        bytes.remove_prefix(n);
    }
}

void BufferedFile::flush() {
    std::size_t done = 0;
    while (done < used_) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, used_ - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw std::runtime_error(
                fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
        }
        done += static_cast<std::size_t>(n);
    }
    used_ = 0;
}

void BufferedFile::close() {
    if (fd_ < 0) return;
    flush();
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
        throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
    }
}

PcapWriter::PcapWriter(std::string path, std::uint32_t snaplen, std::uint32_t linktype, bool pcapng)
    : file_(std::move(path)), pcapng_(pcapng) {
    if (pcapng_) {
        std::uint8_t* h = file_.append(28 + 20);
        put32_le(h, 0x0a0d0d0a);  // section header block
        put32_le(h + 4, 28);
        put32_le(h + 8, 0x1a2b3c4d);  // byte-order magic
        put16_le(h + 12, 1);          // version 1.0
        put16_le(h + 14, 0);
        put32_le(h + 16, 0xffffffff);  // section length: not given
        put32_le(h + 20, 0xffffffff);
        put32_le(h + 24, 28);
        std::uint8_t* i = h + 28;  // interface description block, no options: microseconds
        put32_le(i, 1);
        put32_le(i + 4, 20);
        put16_le(i + 8, static_cast<std::uint16_t>(linktype));
        put16_le(i + 10, 0);
        put32_le(i + 12, snaplen);
        put32_le(i + 16, 20);
        return;
    }
    std::uint8_t* h = file_.append(24);
    put32_le(h, 0xa1b2c3d4);  // microsecond timestamps
    put16_le(h + 4, 2);       // version 2.4
    put16_le(h + 6, 4);
    put32_le(h + 8, 0);   // thiszone
    put32_le(h + 12, 0);  // sigfigs
    put32_le(h + 16, snaplen);
    put32_le(h + 20, linktype);
}

std::uint8_t* PcapWriter::begin_record(std::uint32_t ts_sec, std::uint32_t ts_usec,
                                       std::uint32_t captured, std::uint32_t wire) {
    if (pcapng_) {  // enhanced packet block: header, data padded to 4 bytes, trailing length
        const std::uint32_t padded = (captured + 3) & ~std::uint32_t{3};
        const std::uint32_t length = 32 + padded;
        std::uint8_t* b = file_.append(length);
        const std::uint64_t time = std::uint64_t{ts_sec} * 1'000'000 + ts_usec;  // µs
        put32_le(b, 6);
        put32_le(b + 4, length);
        put32_le(b + 8, 0);  // interface 0
        put32_le(b + 12, static_cast<std::uint32_t>(time >> 32));
        put32_le(b + 16, static_cast<std::uint32_t>(time));
        put32_le(b + 20, captured);
        put32_le(b + 24, wire);
        std::memset(b + 28 + captured, 0, padded - captured);
        put32_le(b + 28 + padded, length);
        return b + 28;
    }
    std::uint8_t* r = file_.append(16 + std::size_t{captured});
    put32_le(r, ts_sec);
    put32_le(r + 4, ts_usec);
    put32_le(r + 8, captured);
    put32_le(r + 12, wire);
    return r + 16;
}

// ---------------------------------------------------------------------------- generate

std::string canonical_command(const GenConfig& c) {
    // Only a flood or pcapng adds words, so the command of a run without them is unchanged.
    const std::string extra =
        (c.syn_flood > 0 ? fmt::format(" --syn-flood {}", c.syn_flood) : std::string{}) +
        (c.pcapng ? " --format pcapng" : "");
    if (c.life.enabled) {
        // --rate only sets the default --flow-rate, which is written resolved instead.
        const LifetimeConfig life = resolved_lifetimes(c);
        return fmt::format(
            "flowsketch gen --lifetimes --packets {} --flows {} --zipf {} --sizes {} "
            "--flow-rate {} --duration-mean {} --idle-gap-fraction {} --idle-gap {} "
            "--fin-fraction {} --rst-fraction {} --gap-min {} --ipv6 {} --vlan {} --tcp {} "
            "--snaplen {} --start {} --seed {}{}",
            c.packets, c.flows, c.zipf, format_size_mix(c.sizes), life.flow_rate,
            life.duration_mean, life.idle_gap_fraction, life.idle_gap, life.fin_fraction,
            life.rst_fraction, life.gap_min, c.ipv6_fraction, c.vlan_fraction, c.tcp_fraction,
            c.snaplen, c.start, c.seed, extra);
    }
    return fmt::format(
        "flowsketch gen --packets {} --flows {} --zipf {} --sizes {} --rate {} --ipv6 {} "
        "--vlan {} --tcp {} --snaplen {} --start {} --seed {}{}",
        c.packets, c.flows, c.zipf, format_size_mix(c.sizes), c.rate, c.ipv6_fraction,
        c.vlan_fraction, c.tcp_fraction, c.snaplen, c.start, c.seed, extra);
}

bool truth_order(const Flow& a, const Flow& b) noexcept {
    if (a.packets != b.packets) return a.packets > b.packets;
    const core::FlowKey& x = a.key;
    const core::FlowKey& y = b.key;
    if (x.protocol != y.protocol) return x.protocol < y.protocol;
    if (x.family != y.family) return x.family < y.family;
    // IPv4 addresses sit in the first 4 bytes, rest zero: bytewise is numeric.
    if (const int c = std::memcmp(x.src.data(), y.src.data(), 16); c != 0) return c < 0;
    if (const int c = std::memcmp(x.dst.data(), y.dst.data(), 16); c != 0) return c < 0;
    if (x.src_port != y.src_port) return x.src_port < y.src_port;
    return x.dst_port < y.dst_port;
}

namespace {

using FloodLog = std::vector<SynFlood::Packet>;

/// Background flows with a packet, as indices in truth order.
std::vector<std::uint32_t> truth_sorted_flows(const std::vector<Flow>& flows,
                                              std::uint64_t active) {
    std::vector<std::uint32_t> order;
    order.reserve(static_cast<std::size_t>(active));
    for (std::size_t i = 0; i < flows.size(); ++i) {
        if (flows[i].packets > 0) order.push_back(static_cast<std::uint32_t>(i));
    }
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return truth_order(flows[a], flows[b]); });
    return order;
}

/// Calls on_flow(index) for the background flows `order` (in truth order) and
/// on_flood(packet) for the flood flows, merged in truth order. `flood` must be
/// sorted by source: that is their truth order, as they share packets (1),
/// proto, family, dst and dport, and source = src << 16 | sport.
template <typename OnFlow, typename OnFlood>
void for_each_in_truth_order(const std::vector<Flow>& flows,
                             const std::vector<std::uint32_t>& order, const FloodLog& flood,
                             OnFlow on_flow, OnFlood on_flood) {
    std::size_t next = 0;
    Flow probe;
    probe.packets = 1;
    for (const std::uint32_t i : order) {
        // Flows with more packets come before every flood flow.
        while (flows[i].packets == 1 && next < flood.size()) {
            probe.key = SynFlood::key(flood[next].source);
            if (!truth_order(probe, flows[i])) break;
            on_flood(flood[next++]);
        }
        on_flow(i);
    }
    while (next < flood.size()) on_flood(flood[next++]);
}

/// "# name value" lines that only a run with --syn-flood has.
std::string flood_comment_lines(const GenConfig& config) {
    if (config.syn_flood == 0) return {};
    return fmt::format(
        "# syn_flood_flows {}\n"
        "# syn_flood_victim {}:{}\n"
        "# background_packets {}\n",
        config.syn_flood, core::format_address(SynFlood::key(0), false), SynFlood::victim_port,
        config.packets);
}

void spill(BufferedFile& file, fmt::memory_buffer& out) {
    if (out.size() >= BufferedFile::buffer_size / 2) {
        file.append(std::string_view(out.data(), out.size()));
        out.clear();
    }
}

void write_truth(BufferedFile& file, const GenConfig& config, const std::vector<Flow>& flows,
                 const FloodLog& flood, const GenSummary& summary) {
    const std::vector<std::uint32_t> order =
        truth_sorted_flows(flows, summary.active_flows - summary.flood_packets);

    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out),
                   "# ground truth generated by flowsketch gen\n"
                   "# command (output paths omitted): {}\n"
                   "# seed {}\n"
                   "# frames {}\n"
                   "# ip_packets {}\n"
                   "# ip_bytes {}\n"
                   "# flows {}\n"
                   "# configured_flows {}\n"
                   "{}"
                   "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\n",
                   canonical_command(config), config.seed, summary.packets, summary.packets,
                   summary.bytes, summary.active_flows, config.flows, flood_comment_lines(config));
    const auto line = [&](const core::FlowKey& key, std::uint64_t packets, std::uint64_t bytes) {
        fmt::format_to(std::back_inserter(out), "{}\t{}\t{}\t{}\t{}\t{}\t{}\n", key.protocol,
                       core::format_address(key, true), core::format_address(key, false),
                       key.src_port, key.dst_port, packets, bytes);
        spill(file, out);
    };
    for_each_in_truth_order(
        flows, order, flood,
        [&](std::uint32_t i) { line(flows[i].key, flows[i].packets, flows[i].bytes); },
        [&](const SynFlood::Packet& p) { line(SynFlood::key(p.source), 1, SynFlood::frame_size); });
    file.append(std::string_view(out.data(), out.size()));
}

constexpr std::uint64_t us_per_s = 1'000'000;

/// Lifetime truth: the stationary columns, then first_ns, last_ns, end_flag,
/// pause_ns, gaps (semantics in the header lines and docs/gen.md).
void write_lifetime_truth(BufferedFile& file, const GenConfig& config,
                          const std::vector<Flow>& flows, const LifetimeScheduler& scheduler,
                          const FloodLog& flood, const GenSummary& summary) {
    const auto& lives = scheduler.lives();
    const std::vector<std::uint32_t> order =
        truth_sorted_flows(flows, summary.active_flows - summary.flood_packets);
    std::uint64_t paused = 0;
    std::uint64_t fin = 0;
    std::uint64_t rst = 0;
    for (const std::uint32_t i : order) {
        paused += lives[i].pause_after != 0 ? 1U : 0U;
        fin += lives[i].end == FlowEnd::fin ? 1U : 0U;
        rst += lives[i].end == FlowEnd::rst ? 1U : 0U;
    }

    const std::uint64_t base_us = config.start * us_per_s;
    const auto ns = [base_us](std::uint64_t us) { return (base_us + us) * 1000; };
    const LifetimeConfig life = resolved_lifetimes(config);
    fmt::memory_buffer out;
    fmt::format_to(
        std::back_inserter(out),
        "# ground truth generated by flowsketch gen\n"
        "# command (output paths omitted): {}\n"
        "# seed {}\n"
        "# frames {}\n"
        "# ip_packets {}\n"
        "# ip_bytes {}\n"
        "# flows {}\n"
        "# configured_flows {}\n"
        "{}"
        "# lifetimes 1\n"
        "# flow_rate {}\n"
        "# duration_mean {}\n"
        "# idle_gap {}\n"
        "# idle_gap_fraction {}\n"
        "# paused_flows {}\n"
        "# fin_flows {}\n"
        "# rst_flows {}\n"
        "# gap_min_ns {}\n"
        "# first_packet_ns {}\n"
        "# last_packet_ns {}\n"
        "# first_ns/last_ns: Unix time in ns of the flow's first/last packet, exactly as in "
        "the pcap (microsecond timestamps: multiples of 1000)\n"
        "# end_flag: fin (rst) if the flow's last packet, and no other, has TCP FIN|ACK "
        "(RST|ACK); - otherwise (UDP, or a TCP flow that just stops)\n"
        "# pause_ns: the silence of the flow's one scheduled pause (drawn uniform in "
        "[0.5, 1.5] * idle_gap), 0 if it has none\n"
        "# gaps: every silence longer than gap_min_ns between consecutive packets of the "
        "flow, as START_NS:END_NS (the packets before and after it), comma-separated in time "
        "order; - if none\n"
        "# timeout semantics: for an idle timeout T >= gap_min_ns, the flow is active at time "
        "t iff it has a packet p with p <= t <= p + T, and a packet after a silence longer "
        "than T makes it new again; every silence not in gaps is <= gap_min_ns <= T\n"
        "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tfirst_ns\tlast_ns\tend_flag\tpause_ns"
        "\tgaps\n",
        canonical_command(config), config.seed, summary.packets, summary.packets, summary.bytes,
        summary.active_flows, config.flows, flood_comment_lines(config), life.flow_rate,
        life.duration_mean, life.idle_gap, life.idle_gap_fraction, paused, fin, rst,
        std::llround(life.gap_min * 1e9), summary.packets > 0 ? ns(0) : 0,
        summary.packets > 0 ? ns(summary.last_time_us) : 0);
    const auto on_flow = [&](std::uint32_t i) {
        const Flow& flow = flows[i];
        const LifetimeScheduler::Life& l = lives[i];
        constexpr std::array<std::string_view, 3> end_names = {"-", "fin", "rst"};
        const std::uint64_t pause_ns = l.pause_silence_us * 1000;
        fmt::format_to(std::back_inserter(out), "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t",
                       flow.key.protocol, core::format_address(flow.key, true),
                       core::format_address(flow.key, false), flow.key.src_port, flow.key.dst_port,
                       flow.packets, flow.bytes, ns(l.first_us()), ns(l.last_us),
                       end_names[static_cast<std::size_t>(l.end)], pause_ns);
        const auto flow_gaps = scheduler.gaps_of(i);
        if (flow_gaps.empty()) out.push_back('-');
        for (std::size_t g = 0; g < flow_gaps.size(); ++g) {
            if (g != 0) out.push_back(',');
            fmt::format_to(std::back_inserter(out), "{}:{}", ns(flow_gaps[g].start_us),
                           ns(flow_gaps[g].end_us));
        }
        out.push_back('\n');
        spill(file, out);
    };
    // A flood flow is one SYN: first = last, no FIN/RST, no pause, no silences.
    const auto on_flood = [&](const SynFlood::Packet& p) {
        const core::FlowKey key = SynFlood::key(p.source);
        fmt::format_to(std::back_inserter(out), "{}\t{}\t{}\t{}\t{}\t1\t{}\t{}\t{}\t-\t0\t-\n",
                       key.protocol, core::format_address(key, true),
                       core::format_address(key, false), key.src_port, key.dst_port,
                       SynFlood::frame_size, ns(p.time_us), ns(p.time_us));
        spill(file, out);
    };
    for_each_in_truth_order(flows, order, flood, on_flow, on_flood);
    file.append(std::string_view(out.data(), out.size()));
}

/// Seconds field of a packet's pcap timestamp; throws past what classic pcap
/// holds (gen writes pcapng within the same range: flowsketch clamps at 2116).
std::uint32_t pcap_seconds(const GenConfig& config, std::uint64_t time_us, std::uint64_t index) {
    const std::uint64_t seconds = config.start + time_us / us_per_s;
    if (seconds > std::numeric_limits<std::uint32_t>::max()) {
        throw std::runtime_error(
            fmt::format("packet {} falls after 2106-02-07, past the 32-bit seconds of classic pcap "
                        "timestamps (gen keeps pcapng within them too); "
                        "lower --start or --packets, or raise --rate",
                        index + 1));
    }
    return static_cast<std::uint32_t>(seconds);
}

/// Builds one frame of `flow` and appends it to the pcap; returns its wire length.
std::uint32_t emit_packet(PcapWriter& pcap, const GenConfig& config, Flow& flow,
                          const PacketEvent& event, std::uint64_t index, std::uint8_t tcp_flags) {
    std::array<std::uint8_t, FrameBuilder::max_header_size> headers{};
    const std::uint32_t wire = std::max(event.wire_size, FrameBuilder::min_size(flow));
    const std::size_t header_length = FrameBuilder::build(flow, wire, headers, tcp_flags);

    const std::uint32_t seconds = pcap_seconds(config, event.time_us, index);
    const std::uint32_t captured = std::min(wire, config.snaplen);
    std::uint8_t* data = pcap.begin_record(
        seconds, static_cast<std::uint32_t>(event.time_us % us_per_s), captured, wire);
    const std::size_t copied = std::min<std::size_t>(captured, header_length);
    std::memcpy(data, headers.data(), copied);
    std::memset(data + copied, 0, captured - copied);
    return wire;
}

void count_packet(GenSummary& summary, Flow& flow, const PacketEvent& event, std::uint32_t wire) {
    if (flow.packets++ == 0) ++summary.active_flows;
    flow.bytes += wire;
    ++summary.packets;
    summary.bytes += wire;
    summary.last_time_us = event.time_us;
}

/// Writes the SynFlood's packets into the pcap between the background's, and
/// keeps each one's source and time for the truth (16 bytes per flood flow).
class FloodEmitter {
  public:
    FloodEmitter(const GenConfig& config, std::uint64_t span_us)
        : config_(config), flood_(config, span_us) {
        log_.reserve(static_cast<std::size_t>(config.syn_flood));
    }
    /// Writes the flood packets timestamped before `time_us`: at equal
    /// timestamps the background packet comes first.
    void emit_before(PcapWriter& pcap, GenSummary& summary, std::uint64_t time_us) {
        while (!flood_.done() && flood_.next_time_us() < time_us) emit(pcap, summary);
    }
    void emit_rest(PcapWriter& pcap, GenSummary& summary) {
        while (!flood_.done()) emit(pcap, summary);
    }
    /// The flood flows sorted by source (their truth order); call once, at the end.
    const FloodLog& sorted_log() {
        std::sort(log_.begin(), log_.end(),
                  [](const SynFlood::Packet& a, const SynFlood::Packet& b) {
                      return a.source < b.source;
                  });
        return log_;
    }

  private:
    void emit(PcapWriter& pcap, GenSummary& summary) {
        std::array<std::uint8_t, SynFlood::frame_size> frame{};
        const SynFlood::Packet packet = flood_.next(frame);
        const std::uint32_t seconds = pcap_seconds(config_, packet.time_us, summary.packets);
        const std::uint32_t captured = std::min(SynFlood::frame_size, config_.snaplen);
        std::uint8_t* data =
            pcap.begin_record(seconds, static_cast<std::uint32_t>(packet.time_us % us_per_s),
                              captured, SynFlood::frame_size);
        std::memcpy(data, frame.data(), captured);
        ++summary.packets;
        ++summary.flood_packets;
        ++summary.active_flows;
        summary.bytes += SynFlood::frame_size;
        summary.last_time_us = packet.time_us;
        log_.push_back(packet);
    }

    const GenConfig& config_;
    SynFlood flood_;
    FloodLog log_;
};

GenSummary generate_lifetimes(const GenConfig& config) {
    if (config.packets < config.flows) {
        throw std::runtime_error(fmt::format(
            "--lifetimes needs --packets ({}) >= --flows ({}): every flow sends at least one "
            "packet",
            config.packets, config.flows));
    }
    if (config.packets > max_lifetime_packets) {
        throw std::runtime_error(
            fmt::format("--lifetimes allows at most {} packets", max_lifetime_packets));
    }
    std::vector<Flow> flows = make_flows(config);
    PcapWriter pcap(config.out_path, config.snaplen, PcapWriter::linktype_ethernet, config.pcapng);
    BufferedFile truth(config.truth_path);
    // The flood spans the background, whose end is known only by scheduling it:
    // a dry run of the same scheduler (same seed, same draws) finds it.
    std::uint64_t span_us = 0;
    if (config.syn_flood > 0) {
        LifetimeScheduler dry_run(config, flows);
        while (!dry_run.done()) span_us = dry_run.next().time_us;
    }
    LifetimeScheduler scheduler(config, flows);
    FloodEmitter flood(config, span_us);

    GenSummary summary;
    while (!scheduler.done()) {
        const PacketEvent event = scheduler.next();
        flood.emit_before(pcap, summary, event.time_us);
        Flow& flow = flows[event.flow];
        const std::uint64_t number = flow.packets + 1;
        const std::uint32_t wire = emit_packet(pcap, config, flow, event, summary.packets,
                                               scheduler.tcp_flags(event, number));
        scheduler.record(event, number);
        count_packet(summary, flow, event, wire);
    }
    flood.emit_rest(pcap, summary);
    pcap.close();
    scheduler.finish();
    write_lifetime_truth(truth, config, flows, scheduler, flood.sorted_log(), summary);
    truth.close();
    return summary;
}

}  // namespace

GenSummary generate(const GenConfig& config) {
    if (config.life.enabled) return generate_lifetimes(config);
    std::vector<Flow> flows = make_flows(config);
    PacketScheduler scheduler(config);
    // Both files are created first, so a bad path fails before the long loop.
    PcapWriter pcap(config.out_path, config.snaplen, PcapWriter::linktype_ethernet, config.pcapng);
    BufferedFile truth(config.truth_path);
    FloodEmitter flood(config, config.syn_flood > 0 ? stationary_last_time_us(config) : 0);

    GenSummary summary;
    for (std::uint64_t i = 0; i < config.packets; ++i) {
        const PacketEvent event = scheduler.next();
        flood.emit_before(pcap, summary, event.time_us);
        Flow& flow = flows[event.flow];
        const std::uint32_t wire =
            emit_packet(pcap, config, flow, event, summary.packets, tcp_flags_psh_ack);
        count_packet(summary, flow, event, wire);
    }
    flood.emit_rest(pcap, summary);
    pcap.close();
    write_truth(truth, config, flows, flood.sorted_log(), summary);
    truth.close();
    return summary;
}

}  // namespace flowsketch::gen
