// The options every ClickHouse-facing command shares (--clickhouse URL, the
// database, the table prefix, the password file) and how they become an
// endpoint with credentials. The user and password come from the
// environment (FLOWSKETCH_CLICKHOUSE_USER, FLOWSKETCH_CLICKHOUSE_PASSWORD) or
// a file, never from the command line, where ps shows them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "src/sinks/clickhouse_http.hpp"

namespace flowsketch::app {

struct ClickHouseOptions {
    std::string url;  // empty: no ClickHouse
    std::string database = "flowsketch";
    std::string table_prefix;
    std::string password_file;
    std::size_t queue = 16;  // the measuring command's export queue, in windows
    double timeout = 5.0;    // seconds per HTTP exchange
};

/// Registers --clickhouse (required when `url_required`), --clickhouse-database,
/// --clickhouse-table-prefix, --clickhouse-password-file, --clickhouse-timeout
/// and, with `export_queue`, --clickhouse-queue.
void add_clickhouse_options(CLI::App& app, ClickHouseOptions& options, bool url_required, bool export_queue);

/// The endpoint the options name, with the credentials. Throws
/// std::invalid_argument for a bad URL or name (a usage error) and
/// std::runtime_error for a password file that cannot be read.
ClickHouseEndpoint clickhouse_endpoint(const ClickHouseOptions& options);

}  // namespace flowsketch::app
