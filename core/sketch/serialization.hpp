// Versioned binary format for every sketch (Count-Min, Bloom, counting Bloom,
// two-choice Bloom). All integers little-endian. Documented in
// docs/serialization.md.
//
//   offset  size  field
//   ------  ----  -----------------------------------------------------------
//        0     4  magic "FSK1" (0x46 0x53 0x4b 0x31)
//        4     1  kind: 1 Count-Min, 2 Bloom, 3 counting Bloom, 4 two-choice Bloom
//        5     1  format version of that kind (currently 1 for every kind)
//        6     2  flags, must be 0
//        8     8  seed the sketch was built with
//       16     8  body length L in bytes
//       24     L  body: the kind's parameters, then its data (below)
//     24+L     8  checksum: XXH3-64 (seed 0) of bytes [0, 24 + L)
//
// Bodies (after the header):
//   Count-Min (kind 1):  u8 variant, u8 conservative_update, u16 0,
//                        u32 width, u32 depth, u32 lanes,
//                        u64 totals[lanes], u64 counters[depth·width·lanes]
//   Bloom (kind 2):      u8 layout, u8 probe scheme, u16 0, u32 k,
//                        u64 bits, u64 insertions, u64 words[⌈bits/64⌉]
//   counting Bloom (3):  u8 probe scheme, u8 counter_bits, u16 0, u32 k,
//                        u64 counters, u64 words[⌈counters·counter_bits/64⌉]
//   two-choice (kind 4): u8 probe scheme, u8 choices, u16 0, u32 k,
//                        u64 bits, u64 insertions, u64 words[⌈bits/64⌉]
//
// Deserialising checks, in order: the buffer holds a header and a checksum;
// magic; kind; version; flags; that the body length equals what the buffer
// holds; the checksum; the seed against the caller's; then every parameter
// through the sketch's own validation and that the data length matches the
// parameters exactly — all before any allocation sized by the input, and every
// read goes through the checked ByteReader. Padding bits past the last counter
// must be zero. Any failure throws FormatError with a message naming it.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sketch/bloom_filter.hpp"
#include "core/sketch/count_min.hpp"
#include "core/sketch/counting_bloom_filter.hpp"
#include "core/sketch/two_choice_bloom_filter.hpp"

namespace flowsketch::core {

/// A serialised sketch that cannot be read back: truncated, corrupted, of a
/// different kind, version or seed.
class FormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class SketchKind : std::uint8_t {
    count_min = 1,
    bloom = 2,
    counting_bloom = 3,
    two_choice_bloom = 4,
    window_value = 5,  // a measurement window (core/measure/window_value.hpp)
};

inline constexpr std::uint32_t format_version = 1;
/// Count-Min's format version: 2 adds the ε its guarantee is stated at
/// (version 1 snapshots are still read; their ε is the width's own).
inline constexpr std::uint32_t count_min_format_version = 2;
inline constexpr std::size_t format_header_bytes = 24;
inline constexpr std::size_t format_trailer_bytes = 8;

/// Appends little-endian integers to a byte vector.
class ByteWriter {
public:
    void u8(std::uint8_t v) { bytes_.push_back(v); }
    void u16(std::uint16_t v) { put(v, 2); }
    void u32(std::uint32_t v) { put(v, 4); }
    void u64(std::uint64_t v) { put(v, 8); }
    void u64s(std::span<const std::uint64_t> values);
    std::vector<std::uint8_t>& bytes() noexcept { return bytes_; }

private:
    void put(std::uint64_t v, int size);
    std::vector<std::uint8_t> bytes_;
};

/// Reads little-endian integers; every read checks the remaining length
/// first (comparing lengths, never forming an out-of-range pointer) and
/// throws FormatError naming the field on a short buffer.
class ByteReader {
public:
    explicit ByteReader(std::span<const std::uint8_t> bytes) noexcept : bytes_(bytes) {}
    std::uint8_t u8(const char* field);
    std::uint16_t u16(const char* field);
    std::uint32_t u32(const char* field);
    std::uint64_t u64(const char* field);
    /// Reads out.size() u64 values; checks out.size()·8 ≤ remaining() first.
    void u64s(std::span<std::uint64_t> out, const char* field);
    std::size_t remaining() const noexcept { return bytes_.size() - offset_; }
    /// Throws FormatError unless every byte has been read.
    void expect_end(const char* what) const;

private:
    std::uint64_t get(int size, const char* field);
    std::span<const std::uint8_t> bytes_;
    std::size_t offset_ = 0;
};

std::vector<std::uint8_t> serialize(const CountMinSketch& sketch);
std::vector<std::uint8_t> serialize(const BloomFilter& filter);
std::vector<std::uint8_t> serialize(const CountingBloomFilter& filter);
std::vector<std::uint8_t> serialize(const TwoChoiceBloomFilter& filter);

/// Each throws FormatError on any malformed input or when the stored seed
/// differs from expected_seed.
CountMinSketch deserialize_count_min(std::span<const std::uint8_t> bytes,
                                     std::uint64_t expected_seed);
BloomFilter deserialize_bloom(std::span<const std::uint8_t> bytes, std::uint64_t expected_seed);
CountingBloomFilter deserialize_counting_bloom(std::span<const std::uint8_t> bytes,
                                               std::uint64_t expected_seed);
TwoChoiceBloomFilter deserialize_two_choice_bloom(std::span<const std::uint8_t> bytes,
                                                  std::uint64_t expected_seed);

/// The envelope every serialised value shares (header, body, checksum), for
/// values built of these sketches: `body` framed as `kind` at `version`.
std::vector<std::uint8_t> frame_value(SketchKind kind, std::uint32_t version, std::uint64_t seed,
                                      std::span<const std::uint8_t> body);
/// Checks a frame of `kind` (versions 1 .. newest_version) and returns a
/// reader over its body; its seed goes to `seed` for the caller to compare.
ByteReader open_value(std::span<const std::uint8_t> bytes, SketchKind kind, std::uint32_t newest_version,
                      std::uint64_t& seed, std::uint32_t* version = nullptr);

/// The kind recorded in a serialised sketch's header (after checking magic
/// and length, not the checksum).
SketchKind peek_kind(std::span<const std::uint8_t> bytes);

}  // namespace flowsketch::core
