// Subcommand wiring (CLI11 "options struct + setup + run" pattern): each
// command registers its options on the app and, when chosen, stores the
// function that runs it. main() only parses and calls that function.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace flowsketch::app {

/// Exit codes: 0 success, 1 runtime error, 2 usage error (as tcpdump and CLI11);
/// 3: --verify=strict found bounds broken more often than δ allows.
inline constexpr int exit_ok = 0;
inline constexpr int exit_runtime_error = 1;
inline constexpr int exit_usage_error = 2;
inline constexpr int exit_bounds_broken = 3;

using CommandRunner = std::function<int()>;

/// The default command: measure packets from files (-r) or interfaces (-i).
void setup_measure_command(CLI::App& app, CommandRunner& runner);
/// `flowsketch gen`: synthetic traffic with exact per-flow truth.
void setup_gen_command(CLI::App& app, CommandRunner& runner);
/// `flowsketch merge`: snapshots of many probes and intervals into reports.
void setup_merge_command(CLI::App& app, CommandRunner& runner);
/// `flowsketch clickhouse-schema`: the tables --clickhouse exports to.
void setup_clickhouse_schema_command(CLI::App& app, CommandRunner& runner);
/// `flowsketch query`: windows exported to ClickHouse, merged there, as reports.
void setup_query_command(CLI::App& app, CommandRunner& runner);
/// `flowsketch lab`: reproduce the seed papers' experiments.
void setup_lab_command(CLI::App& app, CommandRunner& runner);

}  // namespace flowsketch::app
