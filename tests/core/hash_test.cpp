// hash_keys against hash_key (XXH3-128 of the 40-byte key) key by key: the
// eight-lane AVX-512 kernel must give every key its XXH3 value, whatever its
// bytes, the seed, the stride of the records holding the keys, and a count
// that is not a multiple of eight.
#include "core/key/hash.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/sketch/random.hpp"
#include "core/platform/simd.hpp"

namespace flowsketch::core {
namespace {

// Keys of every shape: random bytes in every field (reserved included, which
// the product keeps zero), IPv4 and IPv6 keys as the decoder builds them, and
// words at their extremes (all zeros, all ones), where a lost carry shows.
std::vector<FlowKey> varied_keys(std::size_t n) {
    std::vector<FlowKey> keys(n);
    Xoshiro256 rng(99);
    for (std::size_t i = 0; i < n; ++i) {
        FlowKey& key = keys[i];
        switch (i % 4) {
            case 0: {
                std::uint64_t words[5];
                for (auto& w : words) w = rng.next();
                std::memcpy(&key, words, sizeof key);
                break;
            }
            case 1:
                key = FlowKey::ipv4(static_cast<std::uint32_t>(rng.next()),
                                    static_cast<std::uint32_t>(rng.next()),
                                    static_cast<std::uint16_t>(rng.next()),
                                    static_cast<std::uint16_t>(rng.next()), 6);
                break;
            case 2: {
                std::array<std::uint8_t, 16> src{};
                std::array<std::uint8_t, 16> dst{};
                for (auto& b : src) b = static_cast<std::uint8_t>(rng.next());
                for (auto& b : dst) b = static_cast<std::uint8_t>(rng.next());
                key = FlowKey::ipv6(src, dst, 443, static_cast<std::uint16_t>(rng.next()), 17);
                break;
            }
            default: {
                std::uint64_t words[5];
                for (auto& w : words) w = (rng.next() & 1) != 0 ? ~std::uint64_t{0} : 0;
                std::memcpy(&key, words, sizeof key);
                break;
            }
        }
    }
    return keys;
}

TEST(HashKeys, EveryKeyGetsItsXxh3ValueEitherWay) {
    const bool vector = simd::supported() == simd::Level::avx512;
    const std::vector<FlowKey> keys = varied_keys(100'003);  // not a multiple of 8
    for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{0x666c6f77736b7463},
                                     ~std::uint64_t{0}, std::uint64_t{1} << 63}) {
        for (const bool use_vector : {false, vector}) {
            std::vector<Hash128> out(keys.size());
            hash_keys(reinterpret_cast<const std::byte*>(keys.data()), sizeof(FlowKey), keys.size(),
                      seed, out.data(), use_vector);
            for (std::size_t i = 0; i < keys.size(); ++i) {
                const Hash128 expected = hash128(&keys[i], sizeof(FlowKey), seed);
                ASSERT_EQ(out[i], expected) << "key " << i << " seed " << seed << " vector " << use_vector;
            }
        }
    }
}

// Keys inside larger records, as the measurement hashes its PacketRecords.
TEST(HashKeys, KeysInsideRecordsOfAnyStride) {
    const bool vector = simd::supported() == simd::Level::avx512;
    const std::vector<FlowKey> keys = varied_keys(1'001);
    for (const std::size_t stride : {std::size_t{40}, std::size_t{64}, std::size_t{72}, std::size_t{200}}) {
        std::vector<std::byte> records(keys.size() * stride, std::byte{0x5a});
        for (std::size_t i = 0; i < keys.size(); ++i) {
            std::memcpy(records.data() + i * stride, &keys[i], sizeof(FlowKey));
        }
        std::vector<Hash128> out(keys.size());
        hash_keys(records.data(), stride, keys.size(), 7, out.data(), vector);
        for (std::size_t i = 0; i < keys.size(); ++i) {
            ASSERT_EQ(out[i], hash_key(keys[i], 7)) << "key " << i << " stride " << stride;
        }
    }
}

}  // namespace
}  // namespace flowsketch::core
