// A synchronous client of ClickHouse's HTTP interface (one connection per
// statement, Boost.Beast): what the exporter's own thread and the query and
// schema commands send. Credentials travel in the X-ClickHouse-User and
// X-ClickHouse-Key headers, never in the URL, so no log line holds them.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace flowsketch::app {

/// Where ClickHouse listens, and as whom to connect.
struct ClickHouseEndpoint {
    std::string host;
    std::string port = "8123";
    std::string database = "flowsketch";
    std::string table_prefix;
    std::string user;      // empty: the server's default user
    std::string password;
};

/// Parses `http://HOST[:PORT][/]`; throws std::invalid_argument naming what is
/// wrong (another scheme, no host, a port outside 1..65535, a path, user info).
ClickHouseEndpoint parse_clickhouse_url(std::string_view url);

/// A statement ClickHouse refused (the status and its message), or one that
/// never reached it (the message says which).
class ClickHouseError : public std::runtime_error {
public:
    ClickHouseError(const std::string& message, bool refused_by_server)
        : std::runtime_error(message), refused_by_server_(refused_by_server) {}
    /// true: the server answered with an error (retrying the same statement
    /// will not help); false: connection, timeout or transport failure.
    bool refused_by_server() const noexcept { return refused_by_server_; }

private:
    bool refused_by_server_;
};

class ClickHouseClient {
public:
    ClickHouseClient(ClickHouseEndpoint endpoint, std::chrono::milliseconds timeout);

    const ClickHouseEndpoint& endpoint() const noexcept { return endpoint_; }

    /// Runs `query` (with `body` after it as the data of an INSERT, when not
    /// empty) in the endpoint's database, or in none when `in_database` is
    /// false (CREATE DATABASE). Returns the response body; throws
    /// ClickHouseError.
    std::string execute(std::string_view query, std::string_view body = {}, bool in_database = true) const;

    /// A table's full name: `database`.`prefix + name`.
    std::string table(std::string_view name) const;

private:
    ClickHouseEndpoint endpoint_;
    std::chrono::milliseconds timeout_;
};

/// `text` as a ClickHouse string literal ('…' with \\ and \' escaped).
std::string quote_literal(std::string_view text);

}  // namespace flowsketch::app
