// Field loads from capture files, in the file's byte order (`swapped`: the
// other one than the host's), through memcpy: records are not aligned.
#pragma once

#include <cstdint>
#include <cstring>

namespace flowsketch::capture::file {

inline std::uint16_t load16(const std::uint8_t* p, bool swapped) noexcept {
    std::uint16_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap16(value) : value;
}

inline std::uint32_t load32(const std::uint8_t* p, bool swapped) noexcept {
    std::uint32_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap32(value) : value;
}

inline std::uint64_t load64(const std::uint8_t* p, bool swapped) noexcept {
    std::uint64_t value;
    std::memcpy(&value, p, sizeof value);
    return swapped ? __builtin_bswap64(value) : value;
}

}  // namespace flowsketch::capture::file
