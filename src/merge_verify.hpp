// `merge --verify`: snapshots hold sketches, not exact counts, so the exact
// counts come from the captures the probes measured (--verify-against), read
// and decoded as a replay decodes them and counted over merge's windows.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/key/key_spec.hpp"
#include "core/verify/exact_counter.hpp"

namespace flowsketch::app {

class MergeVerifier {
public:
    /// Windows start at the given times and last `interval_ns` (0: one window
    /// over every packet, whatever `starts` holds). Each window's tables hold
    /// at most `max_entries` entries.
    MergeVerifier(const std::vector<core::KeySpec>& extra_keys, std::uint64_t max_entries, std::uint64_t hash_seed,
                  const std::vector<std::int64_t>& starts, std::int64_t interval_ns);

    /// Counts every packet of the capture that falls in a window. Throws
    /// capture::CaptureError (the file cannot be read), std::runtime_error
    /// (it is damaged) or VerifyLimitExceeded.
    void count(const std::string& capture);

    /// The exact counts of the window starting at `start` (the only window when
    /// the interval is 0).
    core::ExactWindow window(std::int64_t start) const;
    std::size_t memory_bytes() const noexcept;
    std::uint64_t max_entries() const noexcept { return max_entries_; }

private:
    core::ExactCounter* counter_for(std::int64_t timestamp_ns);

    std::uint64_t max_entries_;
    std::int64_t interval_ns_;
    bool outer_vlan_ = false;
    std::map<std::int64_t, std::unique_ptr<core::ExactCounter>> windows_;
};

}  // namespace flowsketch::app
