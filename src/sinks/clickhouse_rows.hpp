// Snapshots as the bodies of the INSERTs that export them, one body per
// table of clickhouse_schema.hpp, in that table's column order: RowBinary
// where a row holds doubles (they must arrive exact), TabSeparated for the
// candidates.
#pragma once

#include <span>
#include <string>

#include "reports/snapshot.hpp"

namespace flowsketch::app {

struct ClickHouseRows {
    std::string sketch_rows;  // RowBinary: one row per key spec, lane and sketch row
    std::string candidates;   // TabSeparated: one line per key spec, lane and candidate key
    std::string interval;     // RowBinary: one row, the window's totals and context

    /// Empties the bodies, keeping their memory for the next windows.
    void clear() noexcept {
        sketch_rows.clear();
        candidates.clear();
        interval.clear();
    }
};

/// Appends the windows' rows to `rows`, for one INSERT per table. Each body
/// is in its table's sort order (sketch rows and candidates by key spec, lane,
/// start, probe and row; intervals by start and probe), so that ClickHouse
/// stores the block as it comes instead of sorting it. Throws
/// std::invalid_argument, before appending anything, for what the tables
/// cannot hold: distinct-count key specs (their sketches are not exported).
void append_clickhouse_rows(std::span<const reports::Snapshot> windows, ClickHouseRows& rows);

/// A key's 40 bytes as 80 lower-case hex digits, and back (false: not such text).
std::string key_hex(const core::FlowKey& key);
bool parse_key_hex(std::string_view text, core::FlowKey& key);

/// The variant's name in the tables: "km" or "standard" (--cms).
std::string_view variant_column(core::CountMinVariant variant) noexcept;

}  // namespace flowsketch::app
