// One captured frame as every source hands it out, and the packet time's range.
#pragma once

#include <cstdint>

namespace flowsketch::capture {

/// One captured frame. `data` is valid only until the next read, unless the
/// source's frame_storage() is held.
struct Frame {
    std::int64_t timestamp_ns = 0;
    std::uint32_t captured_length = 0;
    std::uint32_t wire_length = 0;  // the record's original length
    const std::uint8_t* data = nullptr;
};

/// Latest packet time flowsketch represents (2^62 ns, in the year 2116).
inline constexpr std::int64_t max_timestamp_ns = std::int64_t{1} << 62;

/// Packet time in Unix nanoseconds, clamped to [0, max_timestamp_ns]: a
/// damaged or hostile capture (pcapng timestamps are 64-bit) cannot make the
/// interval arithmetic downstream overflow. Inline: every frame of a walk
/// goes through it.
inline std::int64_t clamp_timestamp_ns(std::int64_t seconds, std::int64_t subsecond_ns) noexcept {
    constexpr std::int64_t ns_per_second = 1'000'000'000;
    if (seconds < 0 || subsecond_ns < 0) return 0;
    if (seconds >= max_timestamp_ns / ns_per_second) return max_timestamp_ns;
    // (The fraction is below a second unless the file is damaged: skip the division then.)
    const std::int64_t fraction =
        subsecond_ns < ns_per_second ? subsecond_ns : subsecond_ns % ns_per_second;
    const std::int64_t ns = seconds * ns_per_second + fraction;
    return ns > max_timestamp_ns ? max_timestamp_ns : ns;
}

}  // namespace flowsketch::capture
