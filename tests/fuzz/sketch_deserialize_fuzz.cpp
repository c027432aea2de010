// Fuzz target: deserialising a sketch snapshot (core/sketch/serialization.hpp).
//
// Input layout: byte 0 is a selector, the rest is the serialised sketch.
//   bits 0-1  which reader: Count-Min, Bloom, counting Bloom, two-choice Bloom
//   bit 2     repair the frame first: set the header's body length to what is present and
//             recompute the checksum, so mutations reach the parameter and body checks instead
//             of dying at the checksum (a 64-bit hash the fuzzer would never guess)
//   bit 3     expect seed 0 instead of the seed in the header (reaches the seed check)
// make_fuzz_seeds writes one valid snapshot of every kind and shape with this byte in front.
//
// Any FormatError is a correct answer. Anything else thrown, a crash, or a broken invariant
// traps: a snapshot that is accepted must serialise back to exactly the same bytes (no field is
// silently ignored; an older format version is written as the newest, which must then read
// back and serialise to itself) and must be usable — a few updates and queries run under ASan.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/key/hash.hpp"
#include "core/sketch/serialization.hpp"

namespace {

namespace core = flowsketch::core;

void check(bool condition) {
    if (!condition) __builtin_trap();
}

std::uint64_t read_le64(std::span<const std::uint8_t> bytes, std::size_t offset) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t{bytes[offset + i]} << (8 * i);
    return v;
}

void write_le64(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint64_t v) {
    for (std::size_t i = 0; i < 8; ++i) bytes[offset + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Sets the body length and checksum to match the bytes present (when there is room for them).
void repair(std::vector<std::uint8_t>& bytes) {
    constexpr std::size_t frame_bytes = core::format_header_bytes + core::format_trailer_bytes;
    if (bytes.size() < frame_bytes) return;
    const std::size_t checked = bytes.size() - core::format_trailer_bytes;
    write_le64(bytes, 16, checked - core::format_header_bytes);
    write_le64(bytes, checked, core::hash64(bytes.data(), checked, 0));
}

std::array<core::Hash128, 4> probe_keys() {
    std::array<core::Hash128, 4> keys{};
    for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = core::hash128(&i, sizeof i, 7);
    return keys;
}

template <class Sketch, class Deserialize, class Use>
void round_trip(const std::vector<std::uint8_t>& bytes, std::uint64_t seed, Deserialize&& read,
                Use&& use, std::uint32_t newest_version = core::format_version) {
    try {
        Sketch sketch = read(std::span<const std::uint8_t>(bytes), seed);
        const std::vector<std::uint8_t> written = core::serialize(sketch);
        if (bytes[5] < newest_version) {  // accepted, so the header (and its version byte) is there
            check(written[5] == newest_version);
            check(core::serialize(read(std::span<const std::uint8_t>(written), seed)) == written);
        } else {
            check(written == bytes);
        }
        use(sketch);
    } catch (const core::FormatError&) {
        // The documented answer to a bad snapshot.
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t selector = data[0];
    std::vector<std::uint8_t> bytes(data + 1, data + size);
    if ((selector & 0x04u) != 0) repair(bytes);
    const bool has_header = bytes.size() >= core::format_header_bytes;
    const std::uint64_t seed = (selector & 0x08u) != 0 || !has_header ? 0 : read_le64(bytes, 8);

    try {
        (void)core::peek_kind(bytes);
    } catch (const core::FormatError&) {
    }

    const auto keys = probe_keys();
    switch (selector & 0x03u) {
        case 0:
            round_trip<core::CountMinSketch>(
                bytes, seed, core::deserialize_count_min, [&](core::CountMinSketch& s) {
                    std::vector<std::uint64_t> weights(s.params().lanes, 1);
                    std::vector<std::uint64_t> estimates(s.params().lanes, 0);
                    // No value checks: hostile counters near 2^64 wrap (defined, and
                    // garbage in); what matters is that the indices stay in bounds.
                    for (const auto& key : keys) {
                        s.update_and_estimate(key, weights, estimates);
                        (void)s.lower_bound(s.estimate(key));
                    }
                },
                core::count_min_format_version);
            break;
        case 1:
            round_trip<core::BloomFilter>(bytes, seed, core::deserialize_bloom,
                                          [&](core::BloomFilter& f) {
                                              for (const auto& key : keys) {
                                                  f.insert(key);
                                                  check(f.contains(key));
                                              }
                                              (void)f.fill_ratio();
                                              (void)f.estimate_cardinality();
                                          });
            break;
        case 2:
            round_trip<core::CountingBloomFilter>(
                bytes, seed, core::deserialize_counting_bloom, [&](core::CountingBloomFilter& f) {
                    for (const auto& key : keys) {
                        f.insert(key);
                        check(f.contains(key));
                    }
                    for (const auto& key : keys) (void)f.erase(key);
                    (void)f.max_counter();
                });
            break;
        default:
            round_trip<core::TwoChoiceBloomFilter>(
                bytes, seed, core::deserialize_two_choice_bloom,
                [&](core::TwoChoiceBloomFilter& f) {
                    for (const auto& key : keys) {
                        (void)f.insert(key);
                        check(f.contains(key));
                    }
                    (void)f.fill_ratio();
                });
            break;
    }
    return 0;
}
