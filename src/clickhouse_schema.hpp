// The ClickHouse tables flowsketch exports to (docs/clickhouse.md): their
// CREATE statements, and the SQL that merges probes and intervals inside
// ClickHouse. The sketch's configuration (variant, width, depth, seeds,
// update rule, ε) is part of every sketch row's key, so rows of different
// configurations never fold into one aggregate state: sumForEach would pad
// arrays of unequal length silently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flowsketch::app {

/// Table names (before the prefix).
inline constexpr std::string_view sketch_rows_table = "sketch_rows";
inline constexpr std::string_view sketch_minute_table = "sketch_minute";
inline constexpr std::string_view sketch_hour_table = "sketch_hour";
inline constexpr std::string_view candidates_table = "candidates";
inline constexpr std::string_view intervals_table = "intervals";

/// The sketch's configuration columns, in every sketch table's key.
inline constexpr std::string_view sketch_config_columns =
    "key_spec, lane, variant, width, depth, sketch_seed, hash_seed, conservative, stated_epsilon";
/// Those of them that are the sketch's parameters, not the key spec and lane
/// it counts: rows that differ in one of them must never be summed.
inline constexpr std::string_view sketch_parameter_columns =
    sketch_config_columns.substr(std::string_view("key_spec, lane, ").size());

/// CREATE statements, in order (database first), each without a trailing
/// semicolon; `database` and `prefix` as given (already validated).
std::vector<std::string> clickhouse_schema(std::string_view database, std::string_view prefix);

/// A database or table-prefix name is [A-Za-z0-9_]* (the database not
/// empty), so it needs no quoting anywhere.
bool valid_clickhouse_name(std::string_view name, bool may_be_empty);

/// The statement that ranks the global heavy hitters of one key spec and
/// lane over [from_ns, to_ns) of every probe inside ClickHouse: the counters
/// summed (sumForEach) per row, each candidate's estimate the minimum over
/// rows of the summed counter at its column, its lower bound estimate − ε·N.
/// A second configuration in the range raises an error (throwIf) instead of
/// being summed. What docs/clickhouse.md shows, and a test runs.
std::string heavy_hitters_sql(std::string_view database, std::string_view prefix, std::string_view key_spec,
                              unsigned lane, long long from_ns, long long to_ns, unsigned top);

}  // namespace flowsketch::app
