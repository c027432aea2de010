// The packet-size mix of `flowsketch gen` (`--sizes`): frame sizes and their
// weights, the default, parsing and formatting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowsketch::gen {

/// One bin of the packet-size mix: frame length (Ethernet header to end of
/// payload, no FCS) and relative weight.
struct SizeBin {
    std::uint32_t size = 0;
    double weight = 0;
};

inline constexpr std::uint32_t min_frame_size = 60;  // Ethernet minimum without FCS
inline constexpr std::uint32_t max_frame_size = 65535;

/// The classic "simple IMIX" 7:4:1 of 64/576/1500-byte frames.
std::vector<SizeBin> default_size_mix();
/// Parses "64:0.5,576:0.2,1500:0.3". Throws std::invalid_argument naming the bad entry.
std::vector<SizeBin> parse_size_mix(std::string_view text);
std::string format_size_mix(const std::vector<SizeBin>& mix);

/// The mix's weights in order, for an AliasTable over its bins.
std::vector<double> size_weights(const std::vector<SizeBin>& mix);

}  // namespace flowsketch::gen
