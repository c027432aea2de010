#include "reports/snapshot.hpp"

#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <ctime>

#include "core/sketch/serialization.hpp"

namespace flowsketch::reports {
namespace {

constexpr std::array<std::uint8_t, 4> magic = {'F', 'S', 'N', 'P'};
constexpr std::size_t header_bytes = 24;
constexpr std::size_t trailer_bytes = 8;
// Bounds a header may announce, checked before anything is allocated: a
// snapshot of 64 key specs at the largest sketch --max-memory allows.
constexpr std::uint64_t max_payload_bytes = std::uint64_t{4} << 30;
constexpr std::uint32_t max_strings = 1024;
constexpr std::uint32_t max_string_bytes = 4096;
// Level 3 (zstd's default): a default-size snapshot in a few milliseconds.
constexpr int compression_level = 3;

void put_le(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t get_le(std::span<const std::uint8_t> bytes, std::size_t at, int size) {
    std::uint64_t value = 0;
    for (int i = 0; i < size; ++i) value |= std::uint64_t{bytes[at + static_cast<std::size_t>(i)]} << (8 * i);
    return value;
}

void write_string(core::ByteWriter& out, const std::string& text) {
    out.u32(static_cast<std::uint32_t>(text.size()));
    out.bytes().insert(out.bytes().end(), text.begin(), text.end());
}

std::string read_string(core::ByteReader& in, const char* field) {
    const std::uint32_t size = in.u32(field);
    if (size > max_string_bytes || size > in.remaining()) throw core::FormatError(fmt::format("bad {}", field));
    std::string text(size, '\0');
    for (char& c : text) c = static_cast<char>(in.u8(field));
    return text;
}

void write_double(core::ByteWriter& out, double value) { out.u64(std::bit_cast<std::uint64_t>(value)); }
double read_double(core::ByteReader& in, const char* field) { return std::bit_cast<double>(in.u64(field)); }

// Payload: the context, then the window value in its own envelope (kind 5).
std::vector<std::uint8_t> payload_of(const Snapshot& snapshot) {
    const SnapshotContext& context = snapshot.context;
    core::ByteWriter out;
    write_string(out, context.probe);
    out.u64(context.memory_bytes);
    out.u32(static_cast<std::uint32_t>(context.key_memory_bytes.size()));
    for (const std::uint64_t bytes : context.key_memory_bytes) out.u64(bytes);
    const FlowSection& flows = context.flows;
    write_string(out, flows.seen_filter);
    write_double(out, flows.idle_timeout);
    out.u32(flows.generations);
    out.u64(flows.max_flows);
    out.u64(flows.memory_bytes);
    out.u8(context.truncated ? 1 : 0);
    out.u32(static_cast<std::uint32_t>(context.warnings.size()));
    for (const std::string& warning : context.warnings) write_string(out, warning);
    const std::vector<std::uint8_t> value = snapshot.value.serialize();
    out.u64(value.size());
    out.bytes().insert(out.bytes().end(), value.begin(), value.end());
    return std::move(out.bytes());
}

Snapshot parse_payload(std::span<const std::uint8_t> payload) {
    Snapshot snapshot;
    SnapshotContext& context = snapshot.context;
    core::ByteReader in(payload);
    context.probe = read_string(in, "probe name");
    if (!valid_probe_name(context.probe)) throw core::FormatError("bad probe name");
    context.memory_bytes = in.u64("memory bytes");
    const std::uint32_t keys = in.u32("key specs");
    if (keys > max_strings) throw core::FormatError("too many key specs");
    for (std::uint32_t i = 0; i < keys; ++i) context.key_memory_bytes.push_back(in.u64("key memory bytes"));
    FlowSection& flows = context.flows;
    flows.seen_filter = read_string(in, "seen filter");
    flows.idle_timeout = read_double(in, "idle timeout");
    flows.generations = in.u32("generations");
    flows.max_flows = in.u64("max flows");
    flows.memory_bytes = in.u64("flow memory bytes");
    const std::uint8_t truncated = in.u8("truncated");
    if (truncated > 1) throw core::FormatError("bad truncated flag");
    context.truncated = truncated == 1;
    const std::uint32_t warnings = in.u32("warnings");
    if (warnings > max_strings) throw core::FormatError("too many warnings");
    for (std::uint32_t i = 0; i < warnings; ++i) context.warnings.push_back(read_string(in, "warning"));
    const std::uint64_t size = in.u64("window value length");
    if (size != in.remaining()) throw core::FormatError("the window value's length does not match the payload");
    snapshot.value = core::WindowValue::deserialize(payload.subspan(payload.size() - static_cast<std::size_t>(size)));
    return snapshot;
}

std::string utc_stamp(std::int64_t ns) {
    std::int64_t seconds = ns / 1'000'000'000;
    std::int64_t rest = ns % 1'000'000'000;
    if (rest < 0) {
        --seconds;
        rest += 1'000'000'000;
    }
    const auto time = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&time, &tm);
    return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec, rest / 1'000'000);
}

}  // namespace

bool valid_probe_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
    });
}

std::vector<std::uint8_t> encode_snapshot(const Snapshot& snapshot, SnapshotCompression compression) {
    const std::vector<std::uint8_t> payload = payload_of(snapshot);
    std::vector<std::uint8_t> out(header_bytes);
    std::copy(magic.begin(), magic.end(), out.begin());
    put_le(out, 4, snapshot_format_version, 2);
    out[6] = static_cast<std::uint8_t>(compression);
    out[7] = 0;
    if (compression == SnapshotCompression::zstd) {
        out.resize(header_bytes + ZSTD_compressBound(payload.size()));
        const std::size_t stored = ZSTD_compress(out.data() + header_bytes, out.size() - header_bytes, payload.data(),
                                                 payload.size(), compression_level);
        if (ZSTD_isError(stored) != 0) {
            throw std::runtime_error(fmt::format("zstd compression failed: {}", ZSTD_getErrorName(stored)));
        }
        out.resize(header_bytes + stored);
    } else {
        out.insert(out.end(), payload.begin(), payload.end());
    }
    put_le(out, 8, out.size() - header_bytes, 8);
    put_le(out, 16, payload.size(), 8);
    const std::uint64_t checksum = XXH3_64bits(out.data(), out.size());
    out.resize(out.size() + trailer_bytes);
    put_le(out, out.size() - trailer_bytes, checksum, 8);
    return out;
}

Snapshot decode_snapshot(std::span<const std::uint8_t> bytes) {
    const std::size_t magic_present = std::min(bytes.size(), magic.size());
    if (!std::equal(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(magic_present), magic.begin())) {
        throw SnapshotError("not a flowsketch snapshot (no FSNP magic)");
    }
    if (bytes.size() < header_bytes + trailer_bytes) {
        throw SnapshotError(fmt::format("truncated: {} bytes, shorter than a snapshot's header and checksum ({})",
                                        bytes.size(), header_bytes + trailer_bytes));
    }
    const auto version = static_cast<std::uint16_t>(get_le(bytes, 4, 2));
    if (version != snapshot_format_version) {
        throw SnapshotError(fmt::format("snapshot format version {}; this build reads version {}", version,
                                        snapshot_format_version));
    }
    const std::uint8_t compression = bytes[6];
    if (compression > 1 || bytes[7] != 0) {
        throw SnapshotError(fmt::format("unknown compression {} or flags {}", compression, bytes[7]));
    }
    const std::uint64_t stored = get_le(bytes, 8, 8);
    const std::uint64_t raw = get_le(bytes, 16, 8);
    const std::uint64_t present = bytes.size() - header_bytes - trailer_bytes;
    if (stored > present) {
        throw SnapshotError(fmt::format("truncated: {} bytes, the header announces {}", bytes.size(),
                                        stored + header_bytes + trailer_bytes));
    }
    if (stored < present) {
        throw SnapshotError(fmt::format("{} bytes after the snapshot's end", present - stored));
    }
    const std::size_t checked = bytes.size() - trailer_bytes;
    const std::uint64_t expected = get_le(bytes, checked, 8);
    const std::uint64_t actual = XXH3_64bits(bytes.data(), checked);
    if (expected != actual) {
        throw SnapshotError(
            fmt::format("checksum mismatch (stored {:#018x}, computed {:#018x}): the file is damaged", expected, actual));
    }
    if (raw > max_payload_bytes) throw SnapshotError(fmt::format("a payload of {} bytes is implausible", raw));
    const std::span<const std::uint8_t> body = bytes.subspan(header_bytes, static_cast<std::size_t>(stored));
    std::vector<std::uint8_t> inflated;
    std::span<const std::uint8_t> payload = body;
    if (compression == static_cast<std::uint8_t>(SnapshotCompression::zstd)) {
        inflated.resize(static_cast<std::size_t>(raw));
        const std::size_t size = ZSTD_decompress(inflated.data(), inflated.size(), body.data(), body.size());
        if (ZSTD_isError(size) != 0) {
            throw SnapshotError(fmt::format("damaged compressed payload: {}", ZSTD_getErrorName(size)));
        }
        if (size != raw) throw SnapshotError(fmt::format("payload of {} bytes, the header announces {}", size, raw));
        payload = inflated;
    } else if (raw != stored) {
        throw SnapshotError(fmt::format("payload of {} bytes, the header announces {}", stored, raw));
    }
    try {
        return parse_payload(payload);
    } catch (const core::FormatError& e) {
        throw SnapshotError(fmt::format("damaged payload: {}", e.what()));
    }
}

std::string snapshot_file_name(const Snapshot& snapshot) {
    return fmt::format("{}-{}-{}.fsnap", snapshot.context.probe, utc_stamp(snapshot.value.start_ns),
                       snapshot.value.window == core::Window::run ? "run" : "interval");
}

Report report_from_value(ReportKind kind, const core::WindowValue& value, const SnapshotContext& context) {
    const core::WindowSummary summary = value.summary();
    Report report;
    report.kind = kind;
    report.start = static_cast<double>(value.start_ns) / 1e9;
    report.end = static_cast<double>(value.end_ns) / 1e9;
    report.frames = value.frames;
    report.packets = summary.packets;
    report.bytes = summary.bytes;
    report.skipped = value.skipped;
    if (!value.keys.empty()) report.sketch = describe_sketch(value.keys.front().sketch.params(), 0);
    report.sketch.memory_bytes = context.memory_bytes;
    report.top_packets = summary.top_packets;
    report.top_bytes = summary.top_bytes;
    report.keys = summary.keys;
    for (std::size_t k = 0; k < report.keys.size() && k < context.key_memory_bytes.size(); ++k) {
        report.keys[k].memory_bytes = context.key_memory_bytes[k];
    }
    report.has_distinct_totals = summary.has_distinct_totals;
    report.distinct_totals = summary.distinct_totals;
    if (summary.has_flows) {
        report.has_flows = true;
        report.flows = context.flows;
        report.flows.counts = summary.flows;
    }
    report.interfaces = value.interfaces;
    for (const core::InterfaceCounts& interface : value.interfaces) {
        if (interface.dropped > 0 || interface.if_dropped > 0) report.counts_are_lower_bounds = true;
    }
    report.truncated = context.truncated;
    report.warnings = context.warnings;
    report.probe = context.probe;
    report.seed = value.hash_seed;
    return report;
}

}  // namespace flowsketch::reports
