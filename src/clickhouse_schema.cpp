#include "src/clickhouse_schema.hpp"

#include <fmt/format.h>

#include <cctype>

namespace flowsketch::app {
namespace {

// Columns naming one sketch row's configuration: equal configurations, and
// only those, add up.
constexpr std::string_view config_definition =
    "    key_spec String,\n"
    "    lane UInt8,\n"
    "    variant String,\n"
    "    width UInt32,\n"
    "    depth UInt16,\n"
    "    sketch_seed UInt64,\n"
    "    hash_seed UInt64,\n"
    "    conservative UInt8,\n"
    "    stated_epsilon Float64,\n";

std::string rollup(std::string_view database, std::string_view prefix, std::string_view name,
                   long long bucket_ns) {
    return fmt::format(
        "CREATE TABLE IF NOT EXISTS `{0}`.`{1}{2}` (\n"
        "    day Date,\n"
        "    bucket_ns Int64,\n"
        "    probe String,\n"
        "{3}"
        "    row UInt16,\n"
        "    windows AggregateFunction(count),\n"
        "    total AggregateFunction(sum, UInt64),\n"
        "    counters AggregateFunction(sumForEach, Array(UInt64))\n"
        ") ENGINE = AggregatingMergeTree\n"
        "PARTITION BY day\n"
        "ORDER BY ({4}, bucket_ns, probe, row)",
        database, prefix, name, config_definition, sketch_config_columns, bucket_ns);
}

std::string rollup_view(std::string_view database, std::string_view prefix, std::string_view name,
                        long long bucket_ns) {
    return fmt::format(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS `{0}`.`{1}{2}_mv` TO `{0}`.`{1}{2}` AS\n"
        "SELECT day, intDiv(start_ns, {3}) * {3} AS bucket_ns, probe, {4}, row,\n"
        "    countState() AS windows, sumState(total) AS total, sumForEachState(counters) AS counters\n"
        "FROM `{0}`.`{1}{5}`\n"
        "GROUP BY day, bucket_ns, probe, {4}, row",
        database, prefix, name, bucket_ns, sketch_config_columns, sketch_rows_table);
}

}  // namespace

bool valid_clickhouse_name(std::string_view name, bool may_be_empty) {
    if (name.empty()) return may_be_empty;
    if (name.size() > 64) return false;
    for (const char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    }
    return true;
}

std::vector<std::string> clickhouse_schema(std::string_view database, std::string_view prefix) {
    std::vector<std::string> statements;
    statements.push_back(fmt::format("CREATE DATABASE IF NOT EXISTS `{}`", database));
    // One row per sketch row and lane of one probe's window: the counters of
    // that row, and the lane's total (N of the bound ε·N).
    statements.push_back(fmt::format(
        "CREATE TABLE IF NOT EXISTS `{0}`.`{1}{2}` (\n"
        "    day Date,\n"
        "    probe String,\n"
        "    start_ns Int64,\n"
        "    end_ns Int64,\n"
        "{3}"
        "    row UInt16,\n"
        "    total UInt64,\n"
        "    counters Array(UInt64)\n"
        ") ENGINE = MergeTree\n"
        "PARTITION BY day\n"
        "ORDER BY ({4}, start_ns, probe, row)",
        database, prefix, sketch_rows_table, config_definition, sketch_config_columns));
    statements.push_back(rollup(database, prefix, sketch_minute_table, 60'000'000'000LL));
    statements.push_back(rollup(database, prefix, sketch_hour_table, 3'600'000'000'000LL));
    statements.push_back(rollup_view(database, prefix, sketch_minute_table, 60'000'000'000LL));
    statements.push_back(rollup_view(database, prefix, sketch_hour_table, 3'600'000'000'000LL));
    // The keys each window kept as possible heavy hitters, by lane, with the
    // column they hit in each row (what the ranking reads the sums at).
    statements.push_back(fmt::format(
        "CREATE TABLE IF NOT EXISTS `{0}`.`{1}{2}` (\n"
        "    day Date,\n"
        "    probe String,\n"
        "    start_ns Int64,\n"
        "    end_ns Int64,\n"
        "    key_spec String,\n"
        "    lane UInt8,\n"
        "    src String,\n"
        "    dst String,\n"
        "    sport UInt16,\n"
        "    dport UInt16,\n"
        "    proto UInt8,\n"
        "    vlan UInt16,\n"
        "    key_hex String,\n"
        "    columns Array(UInt32),\n"
        "    exact UInt64,\n"
        "    upper UInt64\n"
        ") ENGINE = MergeTree\n"
        "PARTITION BY day\n"
        "ORDER BY (key_spec, lane, start_ns, probe)",
        database, prefix, candidates_table));
    // One row per probe's window: its totals, drops, flow counts and context.
    statements.push_back(fmt::format(
        "CREATE TABLE IF NOT EXISTS `{0}`.`{1}{2}` (\n"
        "    day Date,\n"
        "    probe String,\n"
        "    start_ns Int64,\n"
        "    end_ns Int64,\n"
        "    window String,\n"
        "    hash_seed UInt64,\n"
        "    top_k UInt32,\n"
        "    key_specs Array(String),\n"
        "    frames UInt64,\n"
        "    packets UInt64,\n"
        "    bytes UInt64,\n"
        "    skipped_reasons Array(String),\n"
        "    skipped_counts Array(UInt64),\n"
        "    interface_names Array(String),\n"
        "    interface_frames Array(UInt64),\n"
        "    interface_received Array(UInt64),\n"
        "    interface_dropped Array(UInt64),\n"
        "    interface_if_dropped Array(UInt64),\n"
        "    memory_bytes UInt64,\n"
        "    key_memory_bytes Array(UInt64),\n"
        "    has_flows UInt8,\n"
        "    seen_filter String,\n"
        "    idle_timeout Float64,\n"
        "    generations UInt32,\n"
        "    max_flows UInt64,\n"
        "    flows_memory_bytes UInt64,\n"
        "    flow_packets UInt64,\n"
        "    new_flows UInt64,\n"
        "    new_undercount_expected Float64,\n"
        "    new_undercount_bound Float64,\n"
        "    active Float64,\n"
        "    active_stderr Float64,\n"
        "    active_lower Float64,\n"
        "    active_upper Float64,\n"
        "    expired Float64,\n"
        "    expired_stderr Float64,\n"
        "    ended UInt64,\n"
        "    ended_undercount_bound Float64,\n"
        "    fill Float64,\n"
        "    fpr Float64,\n"
        "    max_fpr Float64,\n"
        "    target_fpr Float64,\n"
        "    overfilled UInt8,\n"
        "    generations_advanced UInt64,\n"
        "    truncated UInt8,\n"
        "    warnings Array(String)\n"
        ") ENGINE = MergeTree\n"
        "PARTITION BY day\n"
        "ORDER BY (start_ns, probe)",
        database, prefix, intervals_table));
    return statements;
}

std::string heavy_hitters_sql(std::string_view database, std::string_view prefix, std::string_view key_spec,
                              unsigned lane, long long from_ns, long long to_ns, unsigned top) {
    return fmt::format(
        "WITH (\n"
        "    -- each key once, with what the windows counted of it exactly (a retried insert's twin once)\n"
        "    SELECT groupArray((src, dst, sport, dport, proto, vlan, key_hex, columns, exact)) FROM (\n"
        "        SELECT src, dst, sport, dport, proto, vlan, key_hex, any(columns) AS columns, sum(window_exact) AS exact\n"
        "        FROM (\n"
        "            SELECT src, dst, sport, dport, proto, vlan, key_hex, any(columns) AS columns,\n"
        "                any(exact) AS window_exact\n"
        "            FROM `{0}`.`{1}candidates`\n"
        "            WHERE key_spec = {2} AND lane = {3} AND start_ns >= {4} AND start_ns < {5}\n"
        "            GROUP BY src, dst, sport, dport, proto, vlan, key_hex, probe, start_ns\n"
        "        )\n"
        "        GROUP BY src, dst, sport, dport, proto, vlan, key_hex\n"
        "    )\n"
        ") AS candidates\n"
        "SELECT arrayJoin(candidates) AS candidate,\n"
        "    tupleElement(candidate, 1) AS src, tupleElement(candidate, 2) AS dst,\n"
        "    tupleElement(candidate, 3) AS sport, tupleElement(candidate, 4) AS dport,\n"
        "    tupleElement(candidate, 5) AS proto, tupleElement(candidate, 6) AS vlan,\n"
        "    tupleElement(candidate, 7) AS key_hex, tupleElement(candidate, 8) AS key_columns,\n"
        "    -- (named outside the lambda too: ClickHouse 18.16 drops subquery columns only a lambda reads)\n"
        "    length(merged) AS rows,\n"
        "    -- the estimate: the minimum over rows of the summed counter at the key's column\n"
        "    arrayReduce('min', arrayMap((c, r) -> merged[r][c + 1], key_columns, arrayEnumerate(key_columns)))\n"
        "        AS estimate,\n"
        "    -- the lower bound: estimate - epsilon N, or the exact count if higher\n"
        "    greatest(toUInt64(greatest(0, ceil(estimate - epsilon * lane_total))), tupleElement(candidate, 9))\n"
        "        AS lower_bound\n"
        "FROM (\n"
        "    -- every row's counters summed over probes and windows, in row order;\n"
        "    -- a second configuration or width in the range is an error, never padding\n"
        "    SELECT arrayMap(pair -> tupleElement(pair, 2), arraySort(groupArray((row, summed)))) AS merged,\n"
        "        any(row_total) AS lane_total, any(eps) AS epsilon,\n"
        "        throwIf(uniqExact(config) != 1 OR uniqExact(length(summed)) != 1) AS refused_mixed_configurations\n"
        "    FROM (\n"
        "        SELECT row, sumForEach(counters) AS summed, sum(total) AS row_total,\n"
        "            any(if(stated_epsilon > 0, stated_epsilon, if(variant = 'km', 2, 1) * e() / width)) AS eps,\n"
        "            uniqExact({7}) AS configs,\n"
        "            any(({7})) AS config\n"
        "        FROM `{0}`.`{1}sketch_rows`\n"
        "        WHERE key_spec = {2} AND lane = {3} AND start_ns >= {4} AND start_ns < {5}\n"
        "        GROUP BY row\n"
        "        HAVING throwIf(configs != 1) = 0\n"
        "    )\n"
        ")\n"

        "ORDER BY estimate DESC, key_hex\n"
        "LIMIT {6}",
        database, prefix, fmt::format("'{}'", key_spec), lane, from_ns, to_ns, top, sketch_parameter_columns);
}

}  // namespace flowsketch::app
