#include "src/sinks/clickhouse_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <bit>
#include <ctime>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/key/hash.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::app {
namespace {

// A string in TabSeparated: backslash, tab and newline escaped.
void append_text(std::string& out, std::string_view text) {
    for (const char c : text) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\'': out += "\\'"; break;
            default: out.push_back(c);
        }
    }
}

template <class Numbers>
void append_number_array(std::string& out, const Numbers& numbers) {
    out.push_back('[');
    bool first = true;
    for (const auto number : numbers) {
        if (!first) out.push_back(',');
        first = false;
        fmt::format_to(std::back_inserter(out), "{}", number);
    }
    out.push_back(']');
}

// RowBinary: little-endian numbers, LEB128 lengths. Doubles travel as their
// bits: ClickHouse 18.16 parses text doubles to within an ulp, not exactly.
struct RowBinary {
    std::string& out;
    template <class T>
    void number(T value) {
        char bytes[sizeof(T)];
        std::memcpy(bytes, &value, sizeof(T));
        out.append(bytes, sizeof(T));
    }
    void length(std::uint64_t n) {
        do {
            auto byte = static_cast<std::uint8_t>(n & 0x7f);
            n >>= 7;
            if (n != 0) byte |= 0x80;
            out.push_back(static_cast<char>(byte));
        } while (n != 0);
    }
    void text(std::string_view value) {
        length(value.size());
        out.append(value);
    }
    template <class T, class Items>
    void numbers(const Items& items) {
        length(items.size());
        for (const auto item : items) number(static_cast<T>(item));
    }
    // `count` numbers `stride` apart, as an Array(UInt64), copied a block at a time.
    void strided_numbers(const std::uint64_t* first, std::size_t count, std::size_t stride) {
        length(count);
        std::array<std::uint64_t, 256> block;
        for (std::size_t done = 0; done < count;) {
            const std::size_t n = std::min(block.size(), count - done);
            for (std::size_t i = 0; i < n; ++i) block[i] = first[(done + i) * stride];
            out.append(reinterpret_cast<const char*>(block.data()), n * sizeof(std::uint64_t));
            done += n;
        }
    }
    void texts(const std::vector<std::string>& items) {
        length(items.size());
        for (const std::string& item : items) text(item);
    }
};

// Days since 1970-01-01 (a Date in RowBinary) of the window's start.
std::uint16_t day_number(std::int64_t start_ns) {
    std::int64_t seconds = start_ns / 1'000'000'000;
    if (start_ns < 0 && start_ns % 1'000'000'000 != 0) --seconds;
    std::int64_t days = seconds / 86'400;
    if (seconds < 0 && seconds % 86'400 != 0) --days;
    return static_cast<std::uint16_t>(std::clamp<std::int64_t>(days, 0, 65'535));
}

// The partition: the UTC day of the window's start.
std::string day_of(std::int64_t start_ns) {
    std::time_t seconds = static_cast<std::time_t>(start_ns / 1'000'000'000);
    if (start_ns < 0 && start_ns % 1'000'000'000 != 0) --seconds;
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    return fmt::format("{:04}-{:02}-{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday);
}

}  // namespace

std::string_view variant_column(core::CountMinVariant variant) noexcept {
    return variant == core::CountMinVariant::standard ? "standard" : "km";
}

std::string key_hex(const core::FlowKey& key) {
    const auto bytes = std::bit_cast<std::array<std::uint8_t, sizeof(core::FlowKey)>>(key);
    std::string out;
    out.reserve(2 * bytes.size());
    for (const std::uint8_t byte : bytes) fmt::format_to(std::back_inserter(out), "{:02x}", byte);
    return out;
}

bool parse_key_hex(std::string_view text, core::FlowKey& key) {
    std::array<std::uint8_t, sizeof(core::FlowKey)> bytes{};
    if (text.size() != 2 * bytes.size()) return false;
    const auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const int high = nibble(text[2 * i]);
        const int low = nibble(text[2 * i + 1]);
        if (high < 0 || low < 0) return false;
        bytes[i] = static_cast<std::uint8_t>(high * 16 + low);
    }
    key = std::bit_cast<core::FlowKey>(bytes);
    return true;
}

namespace {

// One key spec's lane of one window: the sketch rows and candidates it adds.
struct SketchPart {
    const reports::Snapshot* window;
    const core::KeyWindow* key;
    std::string spec;
    std::uint32_t lane;
};

// The sketch_rows table's sort key (clickhouse_schema.hpp) up to `row`:
// parts in this order make a block that ClickHouse stores without sorting it.
bool before_in_table(const SketchPart& a, const SketchPart& b) {
    const core::CountMinParams& x = a.key->sketch.params();
    const core::CountMinParams& y = b.key->sketch.params();
    return std::forward_as_tuple(a.spec, a.lane, variant_column(x.variant), x.width, x.depth, x.seed,
                                 a.window->value.hash_seed, x.conservative_update, x.stated_epsilon,
                                 a.window->value.start_ns, a.window->context.probe) <
           std::forward_as_tuple(b.spec, b.lane, variant_column(y.variant), y.width, y.depth, y.seed,
                                 b.window->value.hash_seed, y.conservative_update, y.stated_epsilon,
                                 b.window->value.start_ns, b.window->context.probe);
}

void append_sketch_rows(const SketchPart& part, std::string& body) {
    const core::WindowValue& value = part.window->value;
    const core::CountMinSketch& sketch = part.key->sketch;
    const core::CountMinParams& params = sketch.params();
    const std::uint32_t lanes = params.lanes;
    const std::uint64_t* counters = sketch.counters().data();
    for (std::uint32_t row = 0; row < params.depth; ++row) {
        RowBinary out{body};
        out.number(day_number(value.start_ns));
        out.text(part.window->context.probe);
        out.number(value.start_ns);
        out.number(value.end_ns);
        out.text(part.spec);
        out.number(static_cast<std::uint8_t>(part.lane));
        out.text(variant_column(params.variant));
        out.number(params.width);
        out.number(static_cast<std::uint16_t>(params.depth));
        out.number(params.seed);
        out.number(value.hash_seed);
        out.number(static_cast<std::uint8_t>(params.conservative_update ? 1 : 0));
        out.number(params.stated_epsilon);
        out.number(static_cast<std::uint16_t>(row));
        out.number(sketch.total(part.lane));
        out.strided_numbers(counters + std::size_t{row} * params.width * lanes + part.lane, params.width, lanes);
    }
}

void append_candidates(const SketchPart& part, std::string& out) {
    const core::WindowValue& value = part.window->value;
    const core::KeyWindow& key = *part.key;
    const core::CountMinSketch& sketch = key.sketch;
    const std::uint32_t lane = part.lane;
    std::vector<std::uint32_t> columns(sketch.params().depth);
    const bool counted = key.candidate_counts[lane].size() == key.candidates[lane].size();
    std::string head;  // day, probe, start_ns, end_ns, key spec, lane: the part's columns in every line
    head += day_of(value.start_ns);
    head.push_back('\t');
    append_text(head, part.window->context.probe);
    fmt::format_to(std::back_inserter(head), "\t{}\t{}\t", value.start_ns, value.end_ns);
    append_text(head, part.spec);
    fmt::format_to(std::back_inserter(head), "\t{}\t", lane);
    for (std::size_t c = 0; c < key.candidates[lane].size(); ++c) {
        const core::FlowKey& candidate = key.candidates[lane][c];
        // Without counts (a value read from an older snapshot) the key has no lower or upper bound of its own.
        const core::CandidateCount count = counted ? key.candidate_counts[lane][c] : core::CandidateCount{};
        const core::Hash128 hash = core::hash_key(candidate, value.hash_seed);
        for (std::uint32_t row = 0; row < columns.size(); ++row) columns[row] = sketch.column(hash, row);
        out += head;
        std::string src;
        std::string dst;
        std::string sport = "0";
        std::string dport = "0";
        std::string proto = "0";
        std::string vlan = "0";
        for (const reports::KeyFieldText& field : reports::key_fields(candidate, key.spec)) {
            if (field.name == "src") src = field.text;
            if (field.name == "dst") dst = field.text;
            if (field.name == "sport") sport = field.text;
            if (field.name == "dport") dport = field.text;
            if (field.name == "proto") proto = field.text;
            if (field.name == "vlan") vlan = field.text;
        }
        append_text(out, src);
        out.push_back('\t');
        append_text(out, dst);
        fmt::format_to(std::back_inserter(out), "\t{}\t{}\t{}\t{}\t{}\t", sport, dport, proto, vlan,
                       key_hex(candidate));
        append_number_array(out, columns);
        fmt::format_to(std::back_inserter(out), "\t{}\t{}\n", count.exact, count.upper);
    }
}

void append_interval(const reports::Snapshot& snapshot, std::string& body) {
    const core::WindowValue& value = snapshot.value;
    const reports::SnapshotContext& context = snapshot.context;
    const std::uint16_t day = day_number(value.start_ns);
    RowBinary out{body};
    out.number(day);
    out.text(context.probe);
    out.number(value.start_ns);
    out.number(value.end_ns);
    out.text(value.window == core::Window::run ? "run" : "interval");
    out.number(value.hash_seed);
    out.number(value.top_k);
    std::vector<std::string> specs;
    for (const core::KeyWindow& key : value.keys) specs.push_back(key.spec.name());
    out.texts(specs);
    out.number(value.frames);
    out.number(value.packets());
    out.number(value.bytes());
    std::vector<std::string> names;
    std::vector<std::uint64_t> counts;
    for (const core::NamedCount& skip : value.skipped) {
        names.push_back(skip.name);
        counts.push_back(skip.count);
    }
    out.texts(names);
    out.numbers<std::uint64_t>(counts);
    names.clear();
    std::array<std::vector<std::uint64_t>, 4> interface_counts;
    for (const core::InterfaceCounts& interface : value.interfaces) {
        names.push_back(interface.name);
        interface_counts[0].push_back(interface.frames);
        interface_counts[1].push_back(interface.received);
        interface_counts[2].push_back(interface.dropped);
        interface_counts[3].push_back(interface.if_dropped);
    }
    out.texts(names);
    for (const auto& numbers : interface_counts) out.numbers<std::uint64_t>(numbers);
    out.number(context.memory_bytes);
    out.numbers<std::uint64_t>(context.key_memory_bytes);
    const core::FlowCounts& flows = value.flows;
    const reports::FlowSection& section = context.flows;
    out.number(static_cast<std::uint8_t>(value.has_flows ? 1 : 0));
    out.text(section.seen_filter);
    out.number(section.idle_timeout);
    out.number(section.generations);
    out.number(section.max_flows);
    out.number(section.memory_bytes);
    out.number(flows.packets);
    out.number(flows.new_flows);
    for (const double real : {flows.new_undercount_expected, flows.new_undercount_bound, flows.active,
                              flows.active_stderr, flows.active_lower, flows.active_upper, flows.expired,
                              flows.expired_stderr}) {
        out.number(real);
    }
    out.number(flows.ended);
    for (const double real : {flows.ended_undercount_bound, flows.fill, flows.fpr, flows.max_fpr, flows.target_fpr}) {
        out.number(real);
    }
    out.number(static_cast<std::uint8_t>(flows.overfilled ? 1 : 0));
    out.number(flows.generations_advanced);
    out.number(static_cast<std::uint8_t>(context.truncated ? 1 : 0));
    out.texts(context.warnings);
}

}  // namespace

void append_clickhouse_rows(std::span<const reports::Snapshot> windows, ClickHouseRows& rows) {
    std::vector<SketchPart> parts;
    for (const reports::Snapshot& window : windows) {
        for (const core::KeyWindow& key : window.value.keys) {
            if (key.distinct) {
                throw std::invalid_argument(fmt::format(
                    "key spec {}: distinct counts are not exported to ClickHouse", key.spec.name()));
            }
            const std::uint32_t lanes = std::min<std::uint32_t>(key.sketch.params().lanes, 2);
            for (std::uint32_t lane = 0; lane < lanes; ++lane) parts.push_back({&window, &key, key.spec.name(), lane});
        }
    }
    std::stable_sort(parts.begin(), parts.end(), before_in_table);
    for (const SketchPart& part : parts) {
        append_sketch_rows(part, rows.sketch_rows);
        append_candidates(part, rows.candidates);
    }
    std::vector<const reports::Snapshot*> by_start;
    for (const reports::Snapshot& window : windows) by_start.push_back(&window);
    std::stable_sort(by_start.begin(), by_start.end(), [](const reports::Snapshot* a, const reports::Snapshot* b) {
        return std::tie(a->value.start_ns, a->context.probe) < std::tie(b->value.start_ns, b->context.probe);
    });
    for (const reports::Snapshot* window : by_start) append_interval(*window, rows.interval);
}

}  // namespace flowsketch::app
