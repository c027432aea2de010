#include "src/clickhouse_options.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "src/cli/range.hpp"
#include "src/clickhouse_schema.hpp"

namespace flowsketch::app {

void add_clickhouse_options(CLI::App& app, ClickHouseOptions& options, bool url_required, bool export_queue) {
    CLI::Option* url = app.add_option("--clickhouse", options.url,
                                      "ClickHouse HTTP interface, http://HOST:PORT (user and password from "
                                      "FLOWSKETCH_CLICKHOUSE_USER, FLOWSKETCH_CLICKHOUSE_PASSWORD or "
                                      "--clickhouse-password-file)")
                            ->type_name("URL");
    if (url_required) url->required();
    app.add_option("--clickhouse-database", options.database, "ClickHouse database of the tables")
        ->type_name("NAME")
        ->capture_default_str();
    app.add_option("--clickhouse-table-prefix", options.table_prefix,
                   "Prefix of the table names (several deployments in one database)")
        ->type_name("PREFIX");
    app.add_option("--clickhouse-password-file", options.password_file,
                   "Read the ClickHouse password from FILE's first line (instead of "
                   "FLOWSKETCH_CLICKHOUSE_PASSWORD)")
        ->type_name("FILE");
    app.add_option("--clickhouse-timeout", options.timeout, "Seconds allowed for each exchange with ClickHouse")
        ->type_name("SECONDS")
        ->check(cli::Range(0.01, 3600.0))
        ->capture_default_str();
    if (export_queue) {
        app.add_option("--clickhouse-queue", options.queue,
                       "Intervals waiting for ClickHouse at most; when full, the oldest is spilled to "
                       "--snapshot-dir (or counted as undelivered)")
            ->type_name("N")
            ->check(cli::Range(std::size_t{1}, std::size_t{4096}))
            ->capture_default_str();
    }
}

ClickHouseEndpoint clickhouse_endpoint(const ClickHouseOptions& options) {
    ClickHouseEndpoint endpoint = parse_clickhouse_url(options.url);
    if (!valid_clickhouse_name(options.database, false)) {
        throw std::invalid_argument(fmt::format(
            "--clickhouse-database '{}': a name is 1 to 64 of A-Z a-z 0-9 _", options.database));
    }
    if (!valid_clickhouse_name(options.table_prefix, true)) {
        throw std::invalid_argument(fmt::format(
            "--clickhouse-table-prefix '{}': a prefix is up to 64 of A-Z a-z 0-9 _", options.table_prefix));
    }
    endpoint.database = options.database;
    endpoint.table_prefix = options.table_prefix;
    if (const char* user = std::getenv("FLOWSKETCH_CLICKHOUSE_USER")) endpoint.user = user;
    if (const char* password = std::getenv("FLOWSKETCH_CLICKHOUSE_PASSWORD")) endpoint.password = password;
    if (!options.password_file.empty()) {
        std::ifstream in(options.password_file);
        if (!in) {
            throw std::runtime_error(
                fmt::format("--clickhouse-password-file {}: {}", options.password_file, std::strerror(errno)));
        }
        std::string line;
        std::getline(in, line);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        endpoint.password = line;
    }
    return endpoint;
}

}  // namespace flowsketch::app
