// The windows a measurement keeps apart (the current interval and the whole
// run) and the weights it counts (packets and bytes). Every sketch cell holds
// one counter per (window, weight): its lanes.
#pragma once

#include <array>
#include <cstdint>

namespace flowsketch::core {

enum class Window : std::uint8_t { interval = 0, run = 1 };
enum class Weight : std::uint8_t { packets = 0, bytes = 1 };

inline constexpr std::array<Window, 2> all_windows = {Window::interval, Window::run};
inline constexpr std::array<Weight, 2> all_weights = {Weight::packets, Weight::bytes};
/// Lanes of a measurement's sketch cell: one per (window, weight).
inline constexpr std::uint32_t window_lanes = 4;

/// The lane of (window, weight): interval packets, interval bytes, run
/// packets, run bytes. A window's two lanes are adjacent, so closing an
/// interval clears one contiguous pair.
constexpr std::uint32_t lane_of(Window window, Weight weight) noexcept {
    return 2 * static_cast<std::uint32_t>(window) + static_cast<std::uint32_t>(weight);
}

}  // namespace flowsketch::core
