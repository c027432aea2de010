// Byte-level encoding shared by gen's frame builder, SYN flood and pcap
// writer: big- and little-endian stores and the Internet checksum (RFC 1071).
#pragma once

#include <cstddef>
#include <cstdint>

namespace flowsketch::gen {

inline void put16(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

inline void put32(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    p[1] = static_cast<std::uint8_t>(v >> 16);
    p[2] = static_cast<std::uint8_t>(v >> 8);
    p[3] = static_cast<std::uint8_t>(v);
}

inline void put32_le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
}

inline void put16_le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
}

/// Ones'-complement sum of big-endian 16-bit words (even length), not yet folded.
inline std::uint32_t sum16(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < n; i += 2) {
        sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
    }
    return sum;
}

inline std::uint16_t fold_checksum(std::uint32_t sum) noexcept {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum & 0xffff);
}

}  // namespace flowsketch::gen
