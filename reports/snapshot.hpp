// A snapshot: what one window of one probe measured, as bytes a later
// `flowsketch merge` rebuilds the window's report from, alone or summed with
// other windows and probes (docs/snapshots.md). Nothing here does I/O.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/measure/window_value.hpp"
#include "reports/report.hpp"

namespace flowsketch::reports {

/// A snapshot that cannot be read: not a snapshot, truncated, damaged, or of
/// a format version this build does not read. The message says which.
class SnapshotError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What a report says beside the window's value: who measured, and how the
/// probe's state was configured.
struct SnapshotContext {
    std::string probe;
    std::uint64_t memory_bytes = 0;  // the whole measurement state
    std::vector<std::uint64_t> key_memory_bytes;  // each extra key spec's state, in order
    /// With flow tracking: the seen filter's description (counts unused).
    FlowSection flows;
    bool truncated = false;  // an input ended early or was damaged
    std::vector<std::string> warnings;
};

struct Snapshot {
    SnapshotContext context;
    core::WindowValue value;
};

enum class SnapshotCompression : std::uint8_t { none = 0, zstd = 1 };

inline constexpr std::uint16_t snapshot_format_version = 1;

/// A probe name: 1 to 64 of A-Z a-z 0-9 . _ : - (a host name fits), so it
/// is safe in a file name, a CSV cell and a label without quoting.
bool valid_probe_name(std::string_view name) noexcept;

/// The snapshot as a file's bytes (header, payload compressed or not, checksum).
std::vector<std::uint8_t> encode_snapshot(const Snapshot& snapshot, SnapshotCompression compression);

/// Reads a snapshot back whole, or throws SnapshotError naming what is wrong;
/// nothing is returned half-read.
Snapshot decode_snapshot(std::span<const std::uint8_t> bytes);

/// The file name a snapshot is written under: PROBE-YYYYmmddTHHMMSS.nnnZ-interval.fsnap
/// (or -run.fsnap for a run without intervals), so `ls` sorts a probe's files by time.
std::string snapshot_file_name(const Snapshot& snapshot);

/// The report of a window value: what the measuring run's report of that
/// window says, except the lists of what changed since the previous interval
/// (a value does not hold the previous interval).
Report report_from_value(ReportKind kind, const core::WindowValue& value, const SnapshotContext& context);

}  // namespace flowsketch::reports
