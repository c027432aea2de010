#include "src/merge_verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "capture/file/pcap_file_source.hpp"
#include "src/measurement_worker.hpp"
#include "src/pipeline.hpp"

namespace flowsketch::app {

MergeVerifier::MergeVerifier(const std::vector<core::KeySpec>& extra_keys, std::uint64_t max_entries,
                             std::uint64_t hash_seed, const std::vector<std::int64_t>& starts, std::int64_t interval_ns)
    : max_entries_(max_entries), interval_ns_(interval_ns) {
    outer_vlan_ = std::any_of(extra_keys.begin(), extra_keys.end(),
                              [](const core::KeySpec& spec) { return spec.keeps_vlan(); });
    const auto make = [&] { return std::make_unique<core::ExactCounter>(extra_keys, nullptr, max_entries, hash_seed); };
    if (interval_ns_ == 0) {
        windows_.emplace(0, make());
        return;
    }
    for (const std::int64_t start : starts) windows_.emplace(start, make());
}

core::ExactCounter* MergeVerifier::counter_for(std::int64_t timestamp_ns) {
    if (interval_ns_ == 0) return windows_.begin()->second.get();
    std::int64_t start = timestamp_ns / interval_ns_ * interval_ns_;
    if (timestamp_ns < 0 && timestamp_ns % interval_ns_ != 0) start -= interval_ns_;
    const auto it = windows_.find(start);
    return it == windows_.end() ? nullptr : it->second.get();
}

void MergeVerifier::count(const std::string& capture) {
    capture::PcapFileSource source(capture, "");
    capture::DecodeLimits limits;
    limits.outer_vlan = outer_vlan_;
    std::array<capture::Frame, 1024> frames;
    std::vector<core::PacketRecord> records;
    for (;;) {
        capture::ReadStatus status = capture::ReadStatus::frame;
        const std::size_t n = source.next_batch(frames, status);
        for (std::size_t i = 0; i < n; ++i) {
            records.clear();
            if (decode_into(records, source.link_type(), frames[i], limits) != capture::SkipReason::none) continue;
            core::ExactCounter* counter = counter_for(frames[i].timestamp_ns);
            if (counter == nullptr || counter->add_batch(records)) continue;
            throw VerifyLimitExceeded(fmt::format("--verify-max-flows {}: {} of the window at {} s passed it",
                                                  max_entries_, counter->exceeded(),
                                                  frames[i].timestamp_ns / 1'000'000'000));
        }
        if (status == capture::ReadStatus::frame) continue;
        if (status == capture::ReadStatus::damaged) {
            throw std::runtime_error(fmt::format("{}: {}", capture, source.damage_message()));
        }
        return;
    }
}

core::ExactWindow MergeVerifier::window(std::int64_t start) const {
    const auto it = interval_ns_ == 0 ? windows_.begin() : windows_.find(start);
    return it->second->window(core::Window::interval);
}

std::size_t MergeVerifier::memory_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const auto& [start, counter] : windows_) bytes += counter->memory_bytes();
    return bytes;
}

}  // namespace flowsketch::app
