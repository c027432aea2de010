// The HTTP endpoint Prometheus scrapes: GET /metrics serves the last body
// handed to publish(). It runs on the caller's io_context, beside the capture,
// and is built so that no client can stall that loop or grow its memory:
// every operation is asynchronous, connections are capped, requests are
// size-limited, and each request must arrive whole before a deadline.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace flowsketch::app {

struct MetricsServerLimits {
    /// Time a client has to send a whole request (and to read the response);
    /// also how long an idle keep-alive connection is kept. Slow clients are closed.
    std::chrono::steady_clock::duration request_deadline = std::chrono::seconds(10);
    /// Connections served at once; a connection accepted beyond this is closed at once.
    std::size_t max_connections = 64;
    /// Request line plus header fields, in bytes (431 beyond).
    std::uint32_t max_header_bytes = 8 * 1024;
    /// Request body, in bytes (413 beyond); scrapes have none.
    std::uint64_t max_body_bytes = 4 * 1024;
};

/// Where to listen: "ADDR:PORT", "[IPV6]:PORT", or ":PORT" (127.0.0.1).
/// ADDR is a numeric address or "localhost". Throws std::invalid_argument
/// naming the text if it does not parse.
struct ListenAddress {
    std::string host;  // numeric address
    std::uint16_t port = 0;
    static ListenAddress parse(std::string_view text);
};

/// Single-threaded: run the io_context on one thread. publish() may be called
/// from any thread; the other members only from the io_context's thread (or
/// before it runs).
class MetricsServer {
public:
    /// Binds and starts accepting. Throws std::invalid_argument if `listen`
    /// does not parse, std::runtime_error naming the address if it cannot be
    /// bound (port taken, address not local, no permission).
    MetricsServer(boost::asio::io_context& io, std::string_view listen,
                  MetricsServerLimits limits = {});
    /// Stops accepting and closes every connection; their handlers finish on
    /// the io_context (shared state lives until the last one has run).
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    /// Replaces the body served at GET /metrics (Prometheus text format).
    /// Responses already being written keep the body they started with.
    void publish(std::string exposition);

    /// The bound port (the one the system chose when asked for port 0).
    std::uint16_t port() const noexcept;
    /// The bound address as "ADDR:PORT" ("[ADDR]:PORT" for IPv6).
    std::string address() const;

    /// Connections open now; never above limits.max_connections.
    std::size_t connections() const noexcept;
    /// Most connections open at once since the start.
    std::size_t peak_connections() const noexcept;
    /// Connections closed on accept because the cap was reached.
    std::uint64_t rejected_connections() const noexcept;
    /// Connections closed because their deadline passed.
    std::uint64_t timed_out_connections() const noexcept;

    struct State;  // shared with the connections; defined in the .cpp

private:
    std::shared_ptr<State> state_;
};

}  // namespace flowsketch::app
