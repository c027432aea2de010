#include "core/sketch/serialization.hpp"

#include <xxhash.h>

#include <bit>
#include <string>

namespace flowsketch::core {
namespace {

constexpr std::uint8_t magic[4] = {0x46, 0x53, 0x4b, 0x31};  // "FSK1"
constexpr std::uint64_t max_filter_bits = std::uint64_t{1} << 40;
constexpr std::uint64_t max_counting_counters = std::uint64_t{1} << 36;

const char* kind_name(SketchKind kind) noexcept {
    switch (kind) {
        case SketchKind::count_min: return "Count-Min sketch";
        case SketchKind::bloom: return "Bloom filter";
        case SketchKind::counting_bloom: return "counting Bloom filter";
        case SketchKind::two_choice_bloom: return "two-choice Bloom filter";
        case SketchKind::window_value: return "window value";
    }
    return "unknown sketch";
}

std::string hex(std::uint64_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 60; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
    return s;
}

// Header + body + checksum around a body written by `write_body`.
template <class WriteBody>
std::vector<std::uint8_t> frame(SketchKind kind, std::uint64_t seed, WriteBody&& write_body,
                                std::uint32_t version = format_version) {
    ByteWriter body;
    write_body(body);
    ByteWriter out;
    for (const std::uint8_t b : magic) out.u8(b);
    out.u8(static_cast<std::uint8_t>(kind));
    out.u8(static_cast<std::uint8_t>(version));
    out.u16(0);
    out.u64(seed);
    out.u64(body.bytes().size());
    auto& bytes = out.bytes();
    bytes.insert(bytes.end(), body.bytes().begin(), body.bytes().end());
    out.u64(XXH3_64bits(bytes.data(), bytes.size()));
    return std::move(out.bytes());
}

// Validates the frame and returns a reader over the body; `version` gets the
// frame's format version (1 .. newest_version).
ByteReader open_frame(std::span<const std::uint8_t> bytes, SketchKind expected_kind,
                      std::uint64_t expected_seed, std::uint32_t newest_version = format_version,
                      std::uint32_t* version_out = nullptr, std::uint64_t* seed_out = nullptr) {
    const std::string what = kind_name(expected_kind);
    if (bytes.size() < format_header_bytes + format_trailer_bytes) {
        throw FormatError(what + ": " + std::to_string(bytes.size()) +
                          " bytes is shorter than the 32-byte header and checksum");
    }
    ByteReader header(bytes.first(format_header_bytes));
    for (const std::uint8_t b : magic) {
        if (header.u8("magic") != b) throw FormatError(what + ": bad magic (not a flowsketch sketch)");
    }
    const std::uint8_t kind = header.u8("kind");
    if (kind != static_cast<std::uint8_t>(expected_kind)) {
        throw FormatError(what + ": wrong kind " + std::to_string(kind) + " (expected " +
                          std::to_string(static_cast<unsigned>(expected_kind)) + ")");
    }
    const std::uint8_t version = header.u8("version");
    if (version < 1 || version > newest_version) {
        const std::string readable =
            newest_version == 1 ? "version 1" : "versions 1 to " + std::to_string(newest_version);
        throw FormatError(what + ": unsupported format version " + std::to_string(version) +
                          " (this build reads " + readable + ")");
    }
    if (version_out != nullptr) *version_out = version;
    if (header.u16("flags") != 0) throw FormatError(what + ": unknown flags set");
    const std::uint64_t seed = header.u64("seed");
    const std::uint64_t body_length = header.u64("body length");
    const std::size_t available = bytes.size() - format_header_bytes - format_trailer_bytes;
    if (body_length != available) {
        throw FormatError(what + ": header announces a " + std::to_string(body_length) +
                          "-byte body but " + std::to_string(available) + " bytes are present");
    }
    const std::size_t checked = format_header_bytes + available;
    ByteReader trailer(bytes.subspan(checked));
    const std::uint64_t stored = trailer.u64("checksum");
    const std::uint64_t actual = XXH3_64bits(bytes.data(), checked);
    if (stored != actual) {
        throw FormatError(what + ": checksum mismatch (stored " + hex(stored) + ", computed " +
                          hex(actual) + "): the data is corrupted");
    }
    if (seed_out != nullptr) {
        *seed_out = seed;
    } else if (seed != expected_seed) {
        throw FormatError(what + ": built with seed " + hex(seed) + ", expected " +
                          hex(expected_seed) + " (hashes would not match)");
    }
    return ByteReader(bytes.subspan(format_header_bytes, available));
}

// Exactly `words` u64 values must remain; checked before anything is allocated.
void expect_words(const ByteReader& reader, std::uint64_t words, const std::string& what) {
    if (reader.remaining() % 8 != 0 || reader.remaining() / 8 != words) {
        throw FormatError(what + ": parameters need " + std::to_string(words) +
                          " data words but the body holds " + std::to_string(reader.remaining()) +
                          " bytes");
    }
}

// Bits past `used` in the last word must be zero.
void expect_clear_padding(std::span<const std::uint64_t> words, std::uint64_t used_bits,
                          const std::string& what) {
    const std::uint64_t tail = used_bits % 64;
    if (tail != 0 && !words.empty() && (words.back() >> tail) != 0) {
        throw FormatError(what + ": padding bits past the last cell are set");
    }
}

template <class Fn>
auto construct(const std::string& what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::invalid_argument& e) {
        throw FormatError(what + ": invalid parameters: " + e.what());
    }
}

}  // namespace

void ByteWriter::put(std::uint64_t v, int size) {
    for (int i = 0; i < size; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void ByteWriter::u64s(std::span<const std::uint64_t> values) {
    bytes_.reserve(bytes_.size() + values.size() * 8);
    for (const std::uint64_t v : values) u64(v);
}

std::uint64_t ByteReader::get(int size, const char* field) {
    const auto need = static_cast<std::size_t>(size);
    if (remaining() < need) {
        throw FormatError(std::string("truncated input: ") + field + " needs " +
                          std::to_string(need) + " bytes, " + std::to_string(remaining()) +
                          " left");
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < need; ++i) {
        v |= std::uint64_t{bytes_[offset_ + i]} << (8 * i);
    }
    offset_ += need;
    return v;
}

std::uint8_t ByteReader::u8(const char* field) { return static_cast<std::uint8_t>(get(1, field)); }
std::uint16_t ByteReader::u16(const char* field) {
    return static_cast<std::uint16_t>(get(2, field));
}
std::uint32_t ByteReader::u32(const char* field) {
    return static_cast<std::uint32_t>(get(4, field));
}
std::uint64_t ByteReader::u64(const char* field) { return get(8, field); }

void ByteReader::u64s(std::span<std::uint64_t> out, const char* field) {
    if (remaining() / 8 < out.size()) {
        throw FormatError(std::string("truncated input: ") + field + " needs " +
                          std::to_string(out.size()) + " words, " + std::to_string(remaining()) +
                          " bytes left");
    }
    for (auto& v : out) v = get(8, field);
}

void ByteReader::expect_end(const char* what) const {
    if (remaining() != 0) {
        throw FormatError(std::string(what) + ": " + std::to_string(remaining()) +
                          " unexpected trailing bytes in the body");
    }
}

SketchKind peek_kind(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < format_header_bytes + format_trailer_bytes) {
        throw FormatError("sketch: input shorter than the 32-byte header and checksum");
    }
    for (std::size_t i = 0; i < 4; ++i) {
        if (bytes[i] != magic[i]) throw FormatError("sketch: bad magic (not a flowsketch sketch)");
    }
    const std::uint8_t kind = bytes[4];
    if (kind < 1 || kind > 5) throw FormatError("sketch: unknown kind " + std::to_string(kind));
    return static_cast<SketchKind>(kind);
}

// --- Count-Min ---------------------------------------------------------------

std::vector<std::uint8_t> serialize(const CountMinSketch& sketch) {
    const CountMinParams& p = sketch.params();
    return frame(SketchKind::count_min, p.seed, [&](ByteWriter& w) {
        w.u8(static_cast<std::uint8_t>(p.variant));
        w.u8(p.conservative_update ? 1 : 0);
        w.u16(0);
        w.u32(p.width);
        w.u32(p.depth);
        w.u32(p.lanes);
        w.u64(std::bit_cast<std::uint64_t>(p.stated_epsilon));
        w.u64s(sketch.totals());
        w.u64s(sketch.counters());
    }, count_min_format_version);
}

CountMinSketch deserialize_count_min(std::span<const std::uint8_t> bytes,
                                     std::uint64_t expected_seed) {
    const std::string what = kind_name(SketchKind::count_min);
    std::uint32_t version = 0;
    ByteReader r =
        open_frame(bytes, SketchKind::count_min, expected_seed, count_min_format_version, &version);
    CountMinParams p;
    p.seed = expected_seed;
    const std::uint8_t variant = r.u8("variant");
    if (variant > 1) throw FormatError(what + ": unknown variant " + std::to_string(variant));
    p.variant = static_cast<CountMinVariant>(variant);
    const std::uint8_t conservative = r.u8("update rule");
    if (conservative > 1) throw FormatError(what + ": bad update-rule flag");
    p.conservative_update = conservative == 1;
    if (r.u16("reserved") != 0) throw FormatError(what + ": reserved field is not zero");
    p.width = r.u32("width");
    p.depth = r.u32("depth");
    p.lanes = r.u32("lanes");
    if (p.depth < 1 || p.depth > max_count_min_depth || p.lanes < 1 ||
        p.lanes > max_count_min_lanes || p.width < 2) {
        throw FormatError(what + ": dimensions out of range (width " + std::to_string(p.width) +
                          ", depth " + std::to_string(p.depth) + ", lanes " +
                          std::to_string(p.lanes) + ")");
    }
    if (version >= 2) {
        p.stated_epsilon = std::bit_cast<double>(r.u64("stated epsilon"));
        if (!(p.stated_epsilon == 0.0 || (p.stated_epsilon > 0.0 && p.stated_epsilon < 1.0))) {
            throw FormatError(what + ": stated epsilon out of range (must be 0 or in (0, 1))");
        }
    }
    // < 2^32 · 64 · 8 = 2^41 cells: no overflow.
    const std::uint64_t cells = std::uint64_t{p.width} * p.depth * p.lanes;
    expect_words(r, p.lanes + cells, what);
    CountMinSketch sketch = construct(what, [&] { return CountMinSketch(p); });
    r.u64s(sketch.mutable_totals(), "totals");
    r.u64s(sketch.mutable_counters(), "counters");
    r.expect_end(what.c_str());
    return sketch;
}

// --- Bloom -------------------------------------------------------------------

std::vector<std::uint8_t> serialize(const BloomFilter& filter) {
    const BloomParams& p = filter.params();
    return frame(SketchKind::bloom, p.seed, [&](ByteWriter& w) {
        w.u8(static_cast<std::uint8_t>(p.layout));
        w.u8(static_cast<std::uint8_t>(p.scheme));
        w.u16(0);
        w.u32(p.k);
        w.u64(p.bits);
        w.u64(filter.insertions());
        w.u64s(filter.words());
    });
}

// The probe-scheme byte every filter kind stores, validated before use.
static ProbeScheme read_probe_scheme(ByteReader& r, const std::string& what) {
    const std::uint8_t scheme = r.u8("probe scheme");
    if (!is_valid_probe_scheme(scheme)) {
        throw FormatError(what + ": unknown probe scheme " + std::to_string(scheme));
    }
    return static_cast<ProbeScheme>(scheme);
}

BloomFilter deserialize_bloom(std::span<const std::uint8_t> bytes, std::uint64_t expected_seed) {
    const std::string what = kind_name(SketchKind::bloom);
    ByteReader r = open_frame(bytes, SketchKind::bloom, expected_seed);
    BloomParams p;
    p.seed = expected_seed;
    const std::uint8_t layout = r.u8("layout");
    if (layout > 1) throw FormatError(what + ": unknown layout " + std::to_string(layout));
    p.layout = static_cast<BloomLayout>(layout);
    p.scheme = read_probe_scheme(r, what);
    if (r.u16("reserved") != 0) throw FormatError(what + ": reserved field is not zero");
    p.k = r.u32("k");
    p.bits = r.u64("bits");
    const std::uint64_t insertions = r.u64("insertions");
    if (p.bits < 1 || p.bits > max_filter_bits) {
        throw FormatError(what + ": size " + std::to_string(p.bits) + " bits out of range");
    }
    expect_words(r, (p.bits + 63) / 64, what);
    BloomFilter filter = construct(what, [&] { return BloomFilter(p); });
    r.u64s(filter.mutable_words(), "bit words");
    r.expect_end(what.c_str());
    expect_clear_padding(filter.words(), p.bits, what);
    filter.set_insertions(insertions);
    return filter;
}

// --- counting Bloom ----------------------------------------------------------

std::vector<std::uint8_t> serialize(const CountingBloomFilter& filter) {
    const CountingBloomParams& p = filter.params();
    return frame(SketchKind::counting_bloom, p.seed, [&](ByteWriter& w) {
        w.u8(static_cast<std::uint8_t>(p.scheme));
        w.u8(static_cast<std::uint8_t>(p.counter_bits));
        w.u16(0);
        w.u32(p.k);
        w.u64(p.counters);
        w.u64s(filter.words());
    });
}

CountingBloomFilter deserialize_counting_bloom(std::span<const std::uint8_t> bytes,
                                               std::uint64_t expected_seed) {
    const std::string what = kind_name(SketchKind::counting_bloom);
    ByteReader r = open_frame(bytes, SketchKind::counting_bloom, expected_seed);
    CountingBloomParams p;
    p.seed = expected_seed;
    p.scheme = read_probe_scheme(r, what);
    p.counter_bits = r.u8("counter bits");
    if (p.counter_bits != 4 && p.counter_bits != 8 && p.counter_bits != 16) {
        throw FormatError(what + ": counter width " + std::to_string(p.counter_bits) +
                          " is not 4, 8 or 16");
    }
    if (r.u16("reserved") != 0) throw FormatError(what + ": reserved field is not zero");
    p.k = r.u32("k");
    p.counters = r.u64("counters");
    if (p.counters < 1 || p.counters > max_counting_counters) {
        throw FormatError(what + ": " + std::to_string(p.counters) + " counters out of range");
    }
    const std::uint64_t used_bits = p.counters * p.counter_bits;  // ≤ 2^40
    expect_words(r, (used_bits + 63) / 64, what);
    CountingBloomFilter filter = construct(what, [&] { return CountingBloomFilter(p); });
    r.u64s(filter.mutable_words(), "counter words");
    r.expect_end(what.c_str());
    expect_clear_padding(filter.words(), used_bits, what);
    return filter;
}

// --- two-choice Bloom --------------------------------------------------------

std::vector<std::uint8_t> serialize(const TwoChoiceBloomFilter& filter) {
    const TwoChoiceParams& p = filter.params();
    return frame(SketchKind::two_choice_bloom, p.seed, [&](ByteWriter& w) {
        w.u8(static_cast<std::uint8_t>(p.scheme));
        w.u8(static_cast<std::uint8_t>(p.choices));
        w.u16(0);
        w.u32(p.k);
        w.u64(p.bits);
        w.u64(filter.insertions());
        w.u64s(filter.words());
    });
}

TwoChoiceBloomFilter deserialize_two_choice_bloom(std::span<const std::uint8_t> bytes,
                                                  std::uint64_t expected_seed) {
    const std::string what = kind_name(SketchKind::two_choice_bloom);
    ByteReader r = open_frame(bytes, SketchKind::two_choice_bloom, expected_seed);
    TwoChoiceParams p;
    p.seed = expected_seed;
    p.scheme = read_probe_scheme(r, what);
    p.choices = r.u8("choices");
    if (r.u16("reserved") != 0) throw FormatError(what + ": reserved field is not zero");
    p.k = r.u32("k");
    p.bits = r.u64("bits");
    const std::uint64_t insertions = r.u64("insertions");
    if (p.bits < 1 || p.bits > max_filter_bits) {
        throw FormatError(what + ": size " + std::to_string(p.bits) + " bits out of range");
    }
    expect_words(r, (p.bits + 63) / 64, what);
    TwoChoiceBloomFilter filter = construct(what, [&] { return TwoChoiceBloomFilter(p); });
    r.u64s(filter.mutable_words(), "bit words");
    r.expect_end(what.c_str());
    expect_clear_padding(filter.words(), p.bits, what);
    filter.set_insertions(insertions);
    return filter;
}

std::vector<std::uint8_t> frame_value(SketchKind kind, std::uint32_t version, std::uint64_t seed,
                                      std::span<const std::uint8_t> body) {
    return frame(
        kind, seed, [&](ByteWriter& out) { out.bytes().insert(out.bytes().end(), body.begin(), body.end()); },
        version);
}

ByteReader open_value(std::span<const std::uint8_t> bytes, SketchKind kind, std::uint32_t newest_version,
                      std::uint64_t& seed, std::uint32_t* version) {
    return open_frame(bytes, kind, 0, newest_version, version, &seed);
}

}  // namespace flowsketch::core
