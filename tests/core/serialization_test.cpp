#include "core/sketch/serialization.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <bit>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::key_hash;
using Bytes = std::vector<std::uint8_t>;

// Recomputes the trailing checksum after a deliberate edit, so a test reaches
// the checks that come after it.
void reseal(Bytes& bytes) {
    const std::uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
    for (int i = 0; i < 8; ++i) {
        bytes[bytes.size() - 8 + static_cast<std::size_t>(i)] =
            static_cast<std::uint8_t>(sum >> (8 * i));
    }
}

void put_u64(Bytes& bytes, std::size_t offset, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        bytes[offset + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
    }
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

CountMinSketch sample_count_min(std::uint64_t seed) {
    CountMinParams p = CountMinParams::for_error(0.05, 0.05, CountMinVariant::kirsch_mitzenmacher);
    p.seed = seed;
    p.lanes = 2;
    CountMinSketch sketch(p);
    for (std::uint64_t i = 0; i < 500; ++i) {
        const std::uint64_t w[2] = {1, i % 1500};
        sketch.update(key_hash(i % 37), w);
    }
    return sketch;
}

BloomFilter sample_bloom(std::uint64_t seed, BloomLayout layout = BloomLayout::standard) {
    BloomFilter f(BloomParams{999, 3, ProbeScheme::enhanced_square, layout, seed});
    for (std::uint64_t i = 0; i < 100; ++i) f.insert(key_hash(i));
    return f;
}

CountingBloomFilter sample_counting(std::uint64_t seed, std::uint32_t bits = 4) {
    CountingBloomFilter f(CountingBloomParams{333, 4, bits, ProbeScheme::double_hashing, seed});
    for (std::uint64_t i = 0; i < 60; ++i) f.insert(key_hash(i % 40));
    return f;
}

TwoChoiceBloomFilter sample_two_choice(std::uint64_t seed) {
    TwoChoiceBloomFilter f(TwoChoiceParams{777, 5, 2, ProbeScheme::independent, seed});
    for (std::uint64_t i = 0; i < 80; ++i) f.insert(key_hash(i));
    return f;
}

// Every deserializer, as (bytes, seed) → throws or succeeds.
struct Case {
    const char* name;
    Bytes bytes;
    std::uint64_t seed;
    std::function<void(std::span<const std::uint8_t>, std::uint64_t)> read;
};

std::vector<Case> all_cases() {
    return {
        {"count-min", serialize(sample_count_min(11)), 11,
         [](auto b, auto s) { (void)deserialize_count_min(b, s); }},
        {"bloom", serialize(sample_bloom(12)), 12,
         [](auto b, auto s) { (void)deserialize_bloom(b, s); }},
        {"bloom-partitioned", serialize(sample_bloom(12, BloomLayout::partitioned)), 12,
         [](auto b, auto s) { (void)deserialize_bloom(b, s); }},
        {"counting", serialize(sample_counting(13)), 13,
         [](auto b, auto s) { (void)deserialize_counting_bloom(b, s); }},
        {"counting-16", serialize(sample_counting(13, 16)), 13,
         [](auto b, auto s) { (void)deserialize_counting_bloom(b, s); }},
        {"two-choice", serialize(sample_two_choice(14)), 14,
         [](auto b, auto s) { (void)deserialize_two_choice_bloom(b, s); }},
    };
}

TEST(Serialization, CountMinRoundTrip) {
    const CountMinSketch a = sample_count_min(11);
    const CountMinSketch b = deserialize_count_min(serialize(a), 11);
    EXPECT_EQ(a.params(), b.params());
    EXPECT_EQ(b.params().epsilon(), 0.05);  // the ε asked for, not the width's own
    EXPECT_TRUE(std::equal(a.counters().begin(), a.counters().end(), b.counters().begin()));
    EXPECT_TRUE(std::equal(a.totals().begin(), a.totals().end(), b.totals().begin()));
    for (std::uint64_t i = 0; i < 40; ++i) {
        EXPECT_EQ(a.estimate(key_hash(i), 1), b.estimate(key_hash(i), 1));
    }
    // Standard variant: row hashes are rebuilt from the seed.
    CountMinParams p = CountMinParams::for_error(0.05, 0.05, CountMinVariant::standard);
    p.seed = 3;
    p.conservative_update = true;
    CountMinSketch s(p);
    for (std::uint64_t i = 0; i < 300; ++i) s.update(key_hash(i % 17), 2);
    const CountMinSketch t = deserialize_count_min(serialize(s), 3);
    EXPECT_EQ(s.params(), t.params());
    for (std::uint64_t i = 0; i < 17; ++i) EXPECT_EQ(s.estimate(key_hash(i)), t.estimate(key_hash(i)));
}

// Format 1 had no stated ε: such a snapshot still reads, with the same
// counters, and states its guarantee at the width's own ε (2e/w for KM).
TEST(Serialization, CountMinReadsFormatVersion1) {
    const CountMinSketch a = sample_count_min(11);
    const Bytes current = serialize(a);
    ASSERT_EQ(current[5], count_min_format_version);
    constexpr std::size_t epsilon_at = format_header_bytes + 16;  // u8 u8 u16 u32 u32 u32
    Bytes old(current.begin(), current.begin() + epsilon_at);
    old.insert(old.end(), current.begin() + epsilon_at + 8, current.end());
    old[5] = 1;
    put_u64(old, 16, old.size() - format_header_bytes - format_trailer_bytes);
    reseal(old);
    const CountMinSketch b = deserialize_count_min(old, 11);
    EXPECT_EQ(b.params().stated_epsilon, 0.0);
    EXPECT_EQ(b.params().width, a.params().width);
    EXPECT_EQ(b.params().depth, a.params().depth);
    EXPECT_DOUBLE_EQ(b.params().epsilon(), 2 * std::numbers::e / a.params().width);
    EXPECT_TRUE(std::equal(a.counters().begin(), a.counters().end(), b.counters().begin()));
    EXPECT_TRUE(std::equal(a.totals().begin(), a.totals().end(), b.totals().begin()));
    // Written back in the current format, with ε = 0 ("the width's own").
    const Bytes upgraded = serialize(b);
    EXPECT_EQ(upgraded[5], count_min_format_version);
    EXPECT_EQ(deserialize_count_min(upgraded, 11).params(), b.params());

    // A stated ε must be 0 or in (0, 1).
    for (const double bad : {1.0, -0.1, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity()}) {
        Bytes forged = current;
        put_u64(forged, epsilon_at, std::bit_cast<std::uint64_t>(bad));
        reseal(forged);
        EXPECT_NE(error_of([&] { (void)deserialize_count_min(forged, 11); }).find("stated epsilon"),
                  std::string::npos)
            << bad;
    }
    Bytes future = current;
    future[5] = count_min_format_version + 1;
    reseal(future);
    EXPECT_NE(error_of([&] { (void)deserialize_count_min(future, 11); }).find("versions 1 to 2"),
              std::string::npos);
}

TEST(Serialization, BloomRoundTrips) {
    for (const BloomLayout layout : {BloomLayout::standard, BloomLayout::partitioned}) {
        const BloomFilter a = sample_bloom(12, layout);
        const BloomFilter b = deserialize_bloom(serialize(a), 12);
        EXPECT_EQ(a.params(), b.params());
        EXPECT_EQ(a.insertions(), b.insertions());
        EXPECT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin()));
        for (std::uint64_t i = 0; i < 100; ++i) EXPECT_TRUE(b.contains(key_hash(i)));
    }
    const CountingBloomFilter c = sample_counting(13);
    const CountingBloomFilter d = deserialize_counting_bloom(serialize(c), 13);
    EXPECT_EQ(c.params(), d.params());
    EXPECT_TRUE(std::equal(c.words().begin(), c.words().end(), d.words().begin()));
    EXPECT_EQ(c.max_counter(), d.max_counter());

    const TwoChoiceBloomFilter e = sample_two_choice(14);
    const TwoChoiceBloomFilter f = deserialize_two_choice_bloom(serialize(e), 14);
    EXPECT_EQ(e.params(), f.params());
    EXPECT_EQ(e.insertions(), f.insertions());
    for (std::uint64_t i = 0; i < 80; ++i) EXPECT_TRUE(f.contains(key_hash(i)));
}

TEST(Serialization, RejectsEveryTruncation) {
    // Cut at every length 0..size−1 (and one byte too many): each must be a
    // clean FormatError — run under ASan this also proves no read past the end.
    for (const Case& c : all_cases()) {
        for (std::size_t len = 0; len < c.bytes.size(); ++len) {
            const Bytes cut(c.bytes.begin(), c.bytes.begin() + static_cast<std::ptrdiff_t>(len));
            EXPECT_THROW(c.read(cut, c.seed), FormatError) << c.name << " cut at " << len;
        }
        Bytes longer = c.bytes;
        longer.push_back(0);
        EXPECT_THROW(c.read(longer, c.seed), FormatError) << c.name;
        EXPECT_NO_THROW(c.read(c.bytes, c.seed)) << c.name;
    }
}

TEST(Serialization, RejectsEverySingleBitFlip) {
    for (const Case& c : all_cases()) {
        for (std::size_t i = 0; i < c.bytes.size(); ++i) {
            Bytes bad = c.bytes;
            bad[i] ^= 0x10;
            EXPECT_THROW(c.read(bad, c.seed), FormatError) << c.name << " byte " << i;
        }
    }
}

TEST(Serialization, ClearErrors) {
    const Bytes bloom = serialize(sample_bloom(12));
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(bloom, 99); }).find("seed"),
              std::string::npos);
    EXPECT_NE(error_of([&] { (void)deserialize_count_min(bloom, 12); }).find("wrong kind"),
              std::string::npos);
    Bytes version = bloom;
    version[5] = 2;
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(version, 12); }).find("version"),
              std::string::npos);
    Bytes corrupt = bloom;
    corrupt[40] ^= 1;
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(corrupt, 12); }).find("checksum"),
              std::string::npos);
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(Bytes(10, 0), 12); }).find("shorter"),
              std::string::npos);
    Bytes magic = bloom;
    magic[0] = 'X';
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(magic, 12); }).find("magic"),
              std::string::npos);
    EXPECT_EQ(peek_kind(bloom), SketchKind::bloom);
}

TEST(Serialization, RejectsHostileParametersBeforeAllocating) {
    // A well-sealed frame that claims 2^40 bits but carries the original words:
    // rejected by the size check, not by an allocation of 128 GiB.
    Bytes bloom = serialize(sample_bloom(12));
    put_u64(bloom, 24 + 8, std::uint64_t{1} << 40);  // body: u8 u8 u16 u32, then bits
    reseal(bloom);
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(bloom, 12); }).find("data words"),
              std::string::npos);

    // Count-Min claiming a huge width.
    Bytes cms = serialize(sample_count_min(11));
    cms[24 + 4] = 0xff;
    cms[24 + 5] = 0xff;
    cms[24 + 6] = 0xff;
    cms[24 + 7] = 0x7f;
    reseal(cms);
    EXPECT_THROW((void)deserialize_count_min(cms, 11), FormatError);

    // k out of range passes the size check and is rejected by the constructor.
    Bytes bad_k = serialize(sample_bloom(12));
    bad_k[24 + 4] = 200;
    reseal(bad_k);
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(bad_k, 12); }).find("invalid parameters"),
              std::string::npos);

    // Padding bits past m set: 999 bits leave 25 padding bits in the last word.
    Bytes padding = serialize(sample_bloom(12));
    padding[padding.size() - 9] |= 0x80;  // top bit of the last word
    reseal(padding);
    EXPECT_NE(error_of([&] { (void)deserialize_bloom(padding, 12); }).find("padding"),
              std::string::npos);

    // A width that no longer matches the data (and is not prime).
    Bytes composite = serialize(sample_count_min(11));
    composite[28] = static_cast<std::uint8_t>(composite[28] + 1);  // odd prime + 1: even
    reseal(composite);
    EXPECT_THROW((void)deserialize_count_min(composite, 11), FormatError);
}

}  // namespace
}  // namespace flowsketch::core
