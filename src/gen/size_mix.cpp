// The packet-size mix: default, parsing, formatting.
#include "src/gen/size_mix.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace flowsketch::gen {

std::vector<SizeBin> default_size_mix() { return {{64, 7}, {576, 4}, {1500, 1}}; }

std::vector<SizeBin> parse_size_mix(std::string_view text) {
    std::vector<SizeBin> mix;
    double total = 0;
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view entry = text.substr(0, comma);
        const std::size_t colon = entry.find(':');
        if (colon == std::string_view::npos) {
            throw std::invalid_argument(
                fmt::format("entry '{}' is not SIZE:WEIGHT (e.g. 64:0.5,1500:0.5)", entry));
        }
        const std::string_view size_text = entry.substr(0, colon);
        const std::string_view weight_text = entry.substr(colon + 1);
        SizeBin bin;
        const auto* size_end = size_text.data() + size_text.size();
        const auto [sp, se] = std::from_chars(size_text.data(), size_end, bin.size);
        if (se != std::errc{} || sp != size_end || bin.size < min_frame_size ||
            bin.size > max_frame_size) {
            throw std::invalid_argument(
                fmt::format("size '{}' in '{}' is not an integer in [{}, {}]", size_text, entry,
                            min_frame_size, max_frame_size));
        }
        const auto* weight_end = weight_text.data() + weight_text.size();
        const auto [wp, we] = std::from_chars(weight_text.data(), weight_end, bin.weight);
        if (we != std::errc{} || wp != weight_end || !std::isfinite(bin.weight) || bin.weight < 0) {
            throw std::invalid_argument(
                fmt::format("weight '{}' in '{}' is not a finite number >= 0", weight_text, entry));
        }
        total += bin.weight;
        mix.push_back(bin);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    if (!(total > 0)) throw std::invalid_argument("the weights sum to zero");
    return mix;
}

std::string format_size_mix(const std::vector<SizeBin>& mix) {
    std::string out;
    for (const SizeBin& bin : mix) {
        if (!out.empty()) out += ',';
        out += fmt::format("{}:{}", bin.size, bin.weight);
    }
    return out;
}

std::vector<double> size_weights(const std::vector<SizeBin>& mix) {
    std::vector<double> w;
    for (const SizeBin& bin : mix) w.push_back(bin.weight);
    return w;
}

}  // namespace flowsketch::gen
