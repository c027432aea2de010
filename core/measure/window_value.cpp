#include "core/measure/window_value.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/measure/distinct_totals.hpp"
#include "core/sketch/serialization.hpp"

namespace flowsketch::core {
namespace {

constexpr std::uint32_t window_value_version = 4;
// Bounds on what a serialised value may announce, checked before allocating.
constexpr std::uint32_t max_keys = 64;
constexpr std::uint32_t max_named = 1024;
constexpr std::uint32_t max_name_bytes = 4096;

std::vector<FlowKey> united(const std::vector<FlowKey>& a, const std::vector<FlowKey>& b) {
    std::vector<FlowKey> keys = a;
    keys.insert(keys.end(), b.begin(), b.end());
    const auto less = [](const FlowKey& x, const FlowKey& y) { return compare_keys(x, y) < 0; };
    std::sort(keys.begin(), keys.end(), less);
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

bool has_counts(const KeyWindow& key, std::size_t w) {
    return key.candidate_counts[w].size() == key.candidates[w].size();
}

// The union of both parts' candidates of weight w, with their counts where
// both parts know them (see KeyWindow::candidate_counts): exact counts add,
// upper bounds add where both parts hold the key. Without counts on either
// side the union carries none: an upper bound needs both parts' terms.
void unite_candidates(KeyWindow& key, const KeyWindow& other, std::size_t w) {
    const bool counted = has_counts(key, w) && has_counts(other, w);
    const auto less = [](const FlowKey& x, const FlowKey& y) { return compare_keys(x, y) < 0; };
    std::vector<std::pair<FlowKey, CandidateCount>> all;
    // A key missing from a part counted nothing there exactly and has no upper bound from it.
    const CandidateCount none{0, UINT64_MAX};
    for (const KeyWindow* part : {static_cast<const KeyWindow*>(&key), &other}) {
        for (std::size_t i = 0; i < part->candidates[w].size(); ++i) {
            all.emplace_back(part->candidates[w][i], counted ? part->candidate_counts[w][i] : none);
        }
    }
    std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return less(a.first, b.first); });
    std::vector<FlowKey> keys;
    std::vector<CandidateCount> counts;
    for (std::size_t begin = 0; begin < all.size();) {
        std::size_t end = begin + 1;
        CandidateCount sum = all[begin].second;
        for (; end < all.size() && all[end].first == all[begin].first; ++end) {
            sum.exact += all[end].second.exact;
            const std::uint64_t upper = all[end].second.upper;
            sum.upper = sum.upper > UINT64_MAX - upper ? UINT64_MAX : sum.upper + upper;
        }
        // Held by one part only: the other part's count of the key is not bounded here.
        if (end - begin == 1) sum.upper = UINT64_MAX;
        keys.push_back(all[begin].first);
        counts.push_back(sum);
        begin = end;
    }
    key.candidates[w] = std::move(keys);
    key.candidate_counts[w] = counted ? std::move(counts) : std::vector<CandidateCount>{};
}

void write_string(ByteWriter& out, const std::string& text) {
    out.u32(static_cast<std::uint32_t>(text.size()));
    out.bytes().insert(out.bytes().end(), text.begin(), text.end());
}

std::string read_string(ByteReader& in, const char* field) {
    const std::uint32_t size = in.u32(field);
    if (size > max_name_bytes || size > in.remaining()) throw FormatError(std::string("window value: bad ") + field);
    std::string text(size, '\0');
    for (char& c : text) c = static_cast<char>(in.u8(field));
    return text;
}

void write_double(ByteWriter& out, double value) { out.u64(std::bit_cast<std::uint64_t>(value)); }
double read_double(ByteReader& in, const char* field) { return std::bit_cast<double>(in.u64(field)); }

// A count, then each key's 40 bytes as they lie in memory.
void write_keys(ByteWriter& out, const std::vector<FlowKey>& keys) {
    out.u32(static_cast<std::uint32_t>(keys.size()));
    for (const FlowKey& key : keys) {
        const auto bytes = std::bit_cast<std::array<std::uint8_t, sizeof(FlowKey)>>(key);
        out.bytes().insert(out.bytes().end(), bytes.begin(), bytes.end());
    }
}

std::vector<FlowKey> read_keys(ByteReader& in) {
    const std::uint32_t count = in.u32("candidates");
    if (std::uint64_t{count} * sizeof(FlowKey) > in.remaining()) {
        throw FormatError("window value: more candidates than bytes");
    }
    std::vector<FlowKey> keys;
    for (std::uint32_t i = 0; i < count; ++i) {
        std::array<std::uint8_t, sizeof(FlowKey)> raw;
        for (std::uint8_t& byte : raw) byte = in.u8("candidate");
        keys.push_back(std::bit_cast<FlowKey>(raw));
    }
    return keys;
}

// A count (0, or that of the candidates), then (u64 exact, u64 upper) per candidate.
void write_counts(ByteWriter& out, const KeyWindow& key, std::size_t w) {
    if (!has_counts(key, w)) {
        out.u32(0);
        return;
    }
    out.u32(static_cast<std::uint32_t>(key.candidate_counts[w].size()));
    for (const CandidateCount& count : key.candidate_counts[w]) {
        out.u64(count.exact);
        out.u64(count.upper);
    }
}

std::vector<CandidateCount> read_counts(ByteReader& in, std::size_t candidates) {
    const std::uint32_t count = in.u32("candidate counts");
    if (count == 0) return {};
    if (count != candidates) throw FormatError("window value: candidate counts do not match the candidates");
    std::vector<CandidateCount> counts(count);
    for (CandidateCount& c : counts) {
        c.exact = in.u64("candidate exact count");
        c.upper = in.u64("candidate upper bound");
        if (c.exact > c.upper) throw FormatError("window value: a candidate's exact count above its upper bound");
    }
    return counts;
}

std::uint32_t read_count(ByteReader& in, const char* field, std::uint32_t max) {
    const std::uint32_t count = in.u32(field);
    if (count > max) throw FormatError(std::string("window value: too many ") + field);
    return count;
}

}  // namespace

void add_flow_counts(FlowCounts& sum, const FlowCounts& window, double& expired_variance) {
    sum.new_flows += window.new_flows;
    sum.new_undercount_bound += window.new_undercount_bound;
    sum.new_undercount_expected += window.new_undercount_expected;
    sum.expired += window.expired;
    expired_variance += window.expired_stderr * window.expired_stderr;
    sum.ended += window.ended;
    sum.ended_undercount_bound += window.ended_undercount_bound;
    sum.max_fpr = std::max(sum.max_fpr, window.max_fpr);
    sum.overfilled = sum.overfilled || window.overfilled;
}

TopList KeyWindow::top(Weight weight, std::uint32_t top_k, std::uint64_t hash_seed) const {
    const auto lane = static_cast<std::uint32_t>(weight);
    const std::vector<CandidateCount>& counts = candidate_counts[lane];
    return rank_keys(sketch, lane, candidates[lane], spec, weight, top_k, hash_seed,
                     counts.size() == candidates[lane].size() ? std::span<const CandidateCount>(counts)
                                                              : std::span<const CandidateCount>());
}

WindowSummary WindowValue::summary() const {
    WindowSummary summary;
    summary.packets = packets();
    summary.bytes = bytes();
    for (std::size_t k = 0; k < keys.size(); ++k) {
        TopList by_packets = keys[k].top(Weight::packets, top_k, hash_seed);
        TopList by_bytes = keys[k].top(Weight::bytes, top_k, hash_seed);
        if (k == 0) {
            summary.top_packets = std::move(by_packets);
            summary.top_bytes = std::move(by_bytes);
        } else {
            KeyTops key;
            key.top_packets = std::move(by_packets);
            key.top_bytes = std::move(by_bytes);
            if (keys[k].distinct) {
                const DistinctSketch& distinct = *keys[k].distinct;
                key.distinct_packets = distinct_counts(key.top_packets, distinct, keys[k].sketch, 0, hash_seed);
                key.distinct_bytes = distinct_counts(key.top_bytes, distinct, keys[k].sketch, 0, hash_seed);
                key.has_distinct = true;
                key.top_distinct = rank_by_distinct(keys[k].sketch, 0, keys[k].distinct_candidates, distinct,
                                                    keys[k].spec, top_k, hash_seed);
                key.distinct_pairs = distinct.total();
            }
            summary.keys.push_back(std::move(key));
        }
    }
    if (distinct_totals.size() == DistinctTotalsSketch::counters) {
        DistinctTotalsSketch totals;
        for (std::size_t i = 0; i < DistinctTotalsSketch::counters; ++i) totals.counter(i).assign(distinct_totals[i]);
        summary.has_distinct_totals = true;
        summary.distinct_totals = totals.totals();
    }
    summary.has_flows = has_flows;
    summary.flows = flows;
    return summary;
}

void WindowValue::merge(const WindowValue& other) {
    if (&other == this) throw std::invalid_argument("cannot merge a window value with itself");
    if (other.hash_seed != hash_seed) throw std::invalid_argument("window values of different seeds");
    if (other.keys.size() != keys.size()) throw std::invalid_argument("window values of different key specs");
    for (std::size_t k = 0; k < keys.size(); ++k) {
        if (!(other.keys[k].spec == keys[k].spec)) {
            throw std::invalid_argument("window values of different key specs (" + keys[k].spec.name() + ", " +
                                        other.keys[k].spec.name() + ")");
        }
        keys[k].sketch.merge(other.keys[k].sketch);  // throws on other dimensions or schemes
        for (std::size_t w = 0; w < 2; ++w) {
            unite_candidates(keys[k], other.keys[k], w);
        }
        if (keys[k].distinct.has_value() != other.keys[k].distinct.has_value()) {
            throw std::invalid_argument("window values of different distinct counts");
        }
        if (keys[k].distinct) {
            keys[k].distinct->merge(*other.keys[k].distinct);  // throws on other dimensions
            keys[k].distinct_candidates = united(keys[k].distinct_candidates, other.keys[k].distinct_candidates);
        }
    }
    if (distinct_totals.size() != other.distinct_totals.size()) {
        throw std::invalid_argument("window values of different distinct totals");
    }
    for (std::size_t i = 0; i < distinct_totals.size(); ++i) {
        if (distinct_totals[i].size() != other.distinct_totals[i].size()) {
            throw std::invalid_argument("window values of different distinct totals");
        }
        for (std::size_t r = 0; r < distinct_totals[i].size(); ++r) {
            distinct_totals[i][r] = std::max(distinct_totals[i][r], other.distinct_totals[i][r]);
        }
    }
    start_ns = std::min(start_ns, other.start_ns);
    end_ns = std::max(end_ns, other.end_ns);
    top_k = std::max(top_k, other.top_k);
    frames += other.frames;
    for (const NamedCount& skip : other.skipped) {
        auto same = std::find_if(skipped.begin(), skipped.end(), [&](const NamedCount& n) { return n.name == skip.name; });
        if (same == skipped.end()) {
            skipped.push_back(skip);
        } else {
            same->count += skip.count;
        }
    }
    for (const InterfaceCounts& interface : other.interfaces) {
        auto same = std::find_if(interfaces.begin(), interfaces.end(),
                                 [&](const InterfaceCounts& i) { return i.name == interface.name; });
        if (same == interfaces.end()) {
            interfaces.push_back(interface);
        } else {
            same->frames += interface.frames;
            same->received += interface.received;
            same->dropped += interface.dropped;
            same->if_dropped += interface.if_dropped;
        }
    }
    if (other.has_flows) {
        const bool other_later = other.end_ns >= end_ns;
        FlowCounts sum = !has_flows || other_later ? other.flows : flows;
        const FlowCounts& earlier = !has_flows ? FlowCounts{} : other_later ? flows : other.flows;
        double expired_variance = sum.expired_stderr * sum.expired_stderr;
        add_flow_counts(sum, earlier, expired_variance);
        sum.expired_stderr = std::sqrt(expired_variance);
        flows = sum;
        has_flows = true;
    }
}

std::vector<std::uint8_t> WindowValue::serialize() const {
    ByteWriter out;
    out.u8(static_cast<std::uint8_t>(window));
    out.u8(has_flows ? 1 : 0);
    out.u16(0);
    out.u32(top_k);
    out.u64(static_cast<std::uint64_t>(start_ns));
    out.u64(static_cast<std::uint64_t>(end_ns));
    out.u64(frames);
    out.u32(static_cast<std::uint32_t>(skipped.size()));
    for (const NamedCount& skip : skipped) {
        write_string(out, skip.name);
        out.u64(skip.count);
    }
    out.u32(static_cast<std::uint32_t>(interfaces.size()));
    for (const InterfaceCounts& interface : interfaces) {
        write_string(out, interface.name);
        out.u64(interface.frames);
        out.u64(interface.received);
        out.u64(interface.dropped);
        out.u64(interface.if_dropped);
    }
    out.u32(static_cast<std::uint32_t>(keys.size()));
    for (const KeyWindow& key : keys) {
        out.u8(key.spec.fields());
        out.u8(key.spec.prefix(true, AddressFamily::ipv4));
        out.u8(key.spec.prefix(true, AddressFamily::ipv6));
        out.u8(key.spec.prefix(false, AddressFamily::ipv4));
        out.u8(key.spec.prefix(false, AddressFamily::ipv6));
        out.u8(key.spec.distinct());
        const std::vector<std::uint8_t> sketch = core::serialize(key.sketch);
        out.u64(key.sketch.params().seed);
        out.u64(sketch.size());
        out.bytes().insert(out.bytes().end(), sketch.begin(), sketch.end());
        for (const std::vector<FlowKey>& candidates : key.candidates) write_keys(out, candidates);
        for (std::size_t w = 0; w < 2; ++w) write_counts(out, key, w);  // version 4
        if (key.spec.counts_distinct()) {
            const DistinctSketchParams& params = key.distinct->params();
            out.u32(params.width);
            out.u32(params.depth);
            out.u32(params.register_bits);
            write_double(out, params.epsilon);
            const std::vector<std::uint8_t> registers = key.distinct->register_bytes();
            out.u64(registers.size());
            out.bytes().insert(out.bytes().end(), registers.begin(), registers.end());
            write_keys(out, key.distinct_candidates);
        }
    }
    out.u32(static_cast<std::uint32_t>(distinct_totals.size()));
    for (const std::vector<std::uint8_t>& registers : distinct_totals) {
        out.u32(static_cast<std::uint32_t>(registers.size()));
        out.bytes().insert(out.bytes().end(), registers.begin(), registers.end());
    }
    if (has_flows) {
        out.u64(flows.new_flows);
        out.u64(flows.ended);
        for (const double value : {flows.new_undercount_bound, flows.active, flows.active_stderr, flows.active_lower,
                                   flows.active_upper, flows.expired, flows.expired_stderr,
                                   flows.ended_undercount_bound, flows.fpr, flows.max_fpr, flows.target_fpr}) {
            write_double(out, value);
        }
        out.u8(flows.overfilled ? 1 : 0);
        write_double(out, flows.new_undercount_expected);  // version 3
    }
    return frame_value(SketchKind::window_value, window_value_version, hash_seed, out.bytes());
}

WindowValue WindowValue::deserialize(std::span<const std::uint8_t> bytes) {
    WindowValue value;
    std::uint32_t version = 0;
    ByteReader in = open_value(bytes, SketchKind::window_value, window_value_version, value.hash_seed, &version);
    // Version 1 had no distinct counts: no distinct field per key, no totals.
    const bool has_distinct_fields = version >= 2;
    const std::uint8_t window = in.u8("window");
    if (window > 1) throw FormatError("window value: unknown window " + std::to_string(window));
    value.window = static_cast<Window>(window);
    const std::uint8_t has_flows = in.u8("has_flows");
    if (has_flows > 1 || in.u16("reserved") != 0) throw FormatError("window value: bad flags");
    value.has_flows = has_flows == 1;
    value.top_k = in.u32("top_k");
    value.start_ns = static_cast<std::int64_t>(in.u64("start"));
    value.end_ns = static_cast<std::int64_t>(in.u64("end"));
    value.frames = in.u64("frames");
    for (std::uint32_t i = read_count(in, "skip reasons", max_named); i > 0; --i) {
        NamedCount skip;
        skip.name = read_string(in, "skip reason");
        skip.count = in.u64("skip count");
        value.skipped.push_back(std::move(skip));
    }
    for (std::uint32_t i = read_count(in, "interfaces", max_named); i > 0; --i) {
        InterfaceCounts interface;
        interface.name = read_string(in, "interface name");
        interface.frames = in.u64("interface frames");
        interface.received = in.u64("interface received");
        interface.dropped = in.u64("interface dropped");
        interface.if_dropped = in.u64("interface if_dropped");
        value.interfaces.push_back(std::move(interface));
    }
    const std::uint32_t key_count = read_count(in, "key specs", max_keys);
    for (std::uint32_t k = 0; k < key_count; ++k) {
        const std::uint8_t fields = in.u8("key fields");
        std::array<std::uint8_t, 4> prefixes{};
        for (std::uint8_t& prefix : prefixes) prefix = in.u8("key prefix");
        const std::uint8_t distinct_field = has_distinct_fields ? in.u8("distinct field") : 0;
        KeySpec spec = KeySpec::five_tuple();
        try {
            spec = KeySpec(fields, prefixes[0], prefixes[1], prefixes[2], prefixes[3]);
            if (distinct_field != 0) spec = spec.with_distinct(static_cast<KeyField>(distinct_field));
        } catch (const std::invalid_argument& e) {
            throw FormatError(std::string("window value: ") + e.what());
        }
        const std::uint64_t sketch_seed = in.u64("sketch seed");
        const std::uint64_t sketch_size = in.u64("sketch length");
        if (sketch_size > in.remaining()) throw FormatError("window value: sketch longer than the value");
        std::vector<std::uint8_t> sketch_bytes(static_cast<std::size_t>(sketch_size));
        for (std::uint8_t& byte : sketch_bytes) byte = in.u8("sketch");
        KeyWindow key{spec, deserialize_count_min(sketch_bytes, sketch_seed), {}, {}, {}, {}};
        if (key.sketch.params().lanes != 2) throw FormatError("window value: a key's sketch must have 2 lanes");
        for (std::vector<FlowKey>& candidates : key.candidates) candidates = read_keys(in);
        if (version >= 4) {
            for (std::size_t w = 0; w < 2; ++w) key.candidate_counts[w] = read_counts(in, key.candidates[w].size());
        }
        if (spec.counts_distinct()) {
            DistinctSketchParams params;
            params.width = in.u32("distinct width");
            params.depth = in.u32("distinct depth");
            params.register_bits = in.u32("distinct register bits");
            params.epsilon = read_double(in, "distinct epsilon");
            // The registers must be in the value before a sketch of that size is built.
            const std::uint64_t size = in.u64("distinct registers");
            if (size > in.remaining()) throw FormatError("window value: more distinct registers than bytes");
            const bool sized = params.depth >= 1 && params.depth <= 16 && params.register_bits >= 4 &&
                               params.register_bits <= 12;
            if (!sized || size != params.cells() * (std::uint64_t{1} << params.register_bits) +
                                       (std::uint64_t{1} << DistinctSketch::total_register_bits)) {
                throw FormatError("window value: a distinct sketch whose registers do not match its dimensions");
            }
            try {
                key.distinct.emplace(params);
            } catch (const std::invalid_argument& e) {
                throw FormatError(std::string("window value: ") + e.what());
            }
            std::vector<std::uint8_t> registers(static_cast<std::size_t>(size));
            for (std::uint8_t& byte : registers) byte = in.u8("distinct register");
            try {
                key.distinct->assign_registers(registers);
            } catch (const std::invalid_argument& e) {
                throw FormatError(std::string("window value: ") + e.what());
            }
            key.distinct_candidates = read_keys(in);
        }
        value.keys.push_back(std::move(key));
    }
    const std::uint32_t totals = has_distinct_fields ? in.u32("distinct totals") : 0;
    if (totals != 0 && totals != 3) throw FormatError("window value: distinct totals are 0 or 3 counters");
    for (std::uint32_t i = 0; i < totals; ++i) {
        const std::uint32_t size = in.u32("distinct total registers");
        if (size != (1u << DistinctTotalsSketch::register_bits)) {
            throw FormatError("window value: a distinct total of another size");
        }
        std::vector<std::uint8_t> registers(size);
        for (std::uint8_t& byte : registers) byte = in.u8("distinct total register");
        if (std::any_of(registers.begin(), registers.end(), [](std::uint8_t r) { return r > hll::max_rank; })) {
            throw FormatError("window value: a register above the highest rank");
        }
        value.distinct_totals.push_back(std::move(registers));
    }
    if (value.has_flows) {
        FlowCounts& f = value.flows;
        f.new_flows = in.u64("new flows");
        f.ended = in.u64("ended flows");
        for (double* field : {&f.new_undercount_bound, &f.active, &f.active_stderr, &f.active_lower, &f.active_upper,
                              &f.expired, &f.expired_stderr, &f.ended_undercount_bound, &f.fpr, &f.max_fpr,
                              &f.target_fpr}) {
            *field = read_double(in, "flow count");
        }
        const std::uint8_t overfilled = in.u8("overfilled");
        if (overfilled > 1) throw FormatError("window value: bad overfilled flag");
        f.overfilled = overfilled == 1;
        if (version >= 3) f.new_undercount_expected = read_double(in, "expected missed flows");
    }
    in.expect_end("window value");
    return value;
}

}  // namespace flowsketch::core
