// The /metrics endpoint: what it serves, and that no client can stall the
// event loop it shares with the capture or grow its memory. The server's
// io_context runs on a worker thread with a repeating timer standing in for
// the capture; clients are plain Asio sockets with their own io_context, so
// every client wait is bounded.
#include "src/sinks/metrics_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace flowsketch::app {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using ErrorCode = boost::system::error_code;
using namespace std::chrono_literals;

// The server on its own loop thread, with a 2 ms ticker: the ticker's count
// shows whether the loop kept running while clients misbehaved.
class LoopFixture {
public:
    // Runs `fn` on the loop thread and returns its result.
    template <class Fn>
    auto on_loop(Fn fn) {
        std::packaged_task<decltype(fn())()> task(std::move(fn));
        auto result = task.get_future();
        net::post(io_, [&task] { task(); });
        return result.get();
    }

    explicit LoopFixture(MetricsServerLimits limits = {}, std::string listen = "127.0.0.1:0")
        : work_(net::make_work_guard(io_)), ticker_(io_) {
        server_ = std::make_unique<MetricsServer>(io_, listen, limits);
        tick();
        thread_ = std::thread([this] { io_.run(); });
    }
    ~LoopFixture() {
        // The server is destroyed on its loop, as the live runner will do.
        on_loop([this] {
            server_.reset();
            stopping_ = true;  // a tick already due would re-arm despite cancel()
            ticker_.cancel();
            return 0;
        });
        work_.reset();
        thread_.join();
    }
    LoopFixture(const LoopFixture&) = delete;
    LoopFixture& operator=(const LoopFixture&) = delete;

    MetricsServer& server() { return *server_; }
    std::uint16_t port() {
        return on_loop([this] { return server_->port(); });
    }
    std::uint64_t ticks() const { return ticks_.load(); }
    std::size_t connections() {
        return on_loop([this] { return server_->connections(); });
    }

private:
    void tick() {
        ticker_.expires_after(2ms);
        ticker_.async_wait([this](ErrorCode ec) {
            if (ec || stopping_) return;
            ++ticks_;
            tick();
        });
    }

    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    net::steady_timer ticker_;
    std::atomic<std::uint64_t> ticks_{0};
    bool stopping_ = false;  // loop thread only
    std::unique_ptr<MetricsServer> server_;
    std::thread thread_;
};

struct Reply {
    bool complete = false;  // a whole response arrived
    unsigned status = 0;
    std::string content_type;
    std::string allow;
    std::string content_length;
    std::string body;
    bool keep_alive = false;
};

// A client connection with bounded waits. Responses are parsed by hand (status
// line, headers, Content-Length body): the test does not trust the server's
// own HTTP library to judge it.
class Client {
public:
    explicit Client(std::uint16_t port) : socket_(io_) {
        socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    }

    void send(std::string_view bytes) {
        net::write(socket_, net::buffer(bytes.data(), bytes.size()));
    }

    Reply read_reply(bool head = false, std::chrono::milliseconds timeout = 5000ms) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        Reply reply;
        std::size_t header_end = std::string::npos;
        // A failed read may still have appended the last bytes: look again first.
        while ((header_end = pending_.find("\r\n\r\n")) == std::string::npos) {
            if (!read_more(deadline) && pending_.find("\r\n\r\n") == std::string::npos) {
                return reply;
            }
        }
        std::map<std::string, std::string> headers;
        std::istringstream lines(pending_.substr(0, header_end));
        std::string line;
        std::getline(lines, line);
        if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) return reply;
        const bool http11 = line[7] == '1';
        reply.status = static_cast<unsigned>(std::stoul(line.substr(9, 3)));
        while (std::getline(lines, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const std::size_t colon = line.find(':');
            if (colon == std::string::npos) return reply;
            std::string name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            const std::size_t value = line.find_first_not_of(' ', colon + 1);
            headers[name] = value == std::string::npos ? "" : line.substr(value);
        }
        reply.content_type = headers["content-type"];
        reply.allow = headers["allow"];
        reply.content_length = headers["content-length"];
        if (reply.content_length.empty()) return reply;  // the server always sends it
        const std::size_t length = head ? 0 : std::stoul(reply.content_length);
        const std::size_t body_start = header_end + 4;
        while (pending_.size() < body_start + length) {
            if (!read_more(deadline) && pending_.size() < body_start + length) return reply;
        }
        reply.body = pending_.substr(body_start, length);
        pending_.erase(0, body_start + length);
        const std::string connection = headers["connection"];
        reply.keep_alive = http11 ? connection != "close" : connection == "keep-alive";
        reply.complete = true;
        return reply;
    }

    // Reads until the server closes; nullopt if it is still open at the timeout.
    std::optional<std::string> read_until_closed(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!closed_) {
            if (!read_more(deadline) && !closed_) return std::nullopt;
        }
        return pending_;
    }

private:
    // One read into pending_; false on timeout or when the connection ended.
    bool read_more(std::chrono::steady_clock::time_point deadline) {
        if (closed_) return false;
        bool done = false;
        socket_.async_read_some(net::buffer(chunk_), [&](ErrorCode ec, std::size_t n) {
            pending_.append(chunk_.data(), n);
            closed_ = static_cast<bool>(ec);
            done = true;
        });
        io_.restart();
        while (!done && std::chrono::steady_clock::now() < deadline) io_.run_for(10ms);
        if (!done) {
            socket_.cancel();
            io_.restart();
            io_.run();  // the cancelled read completes before `done` goes away
            closed_ = false;
            return false;
        }
        return !closed_;
    }

    net::io_context io_;
    tcp::socket socket_;
    std::string pending_;
    std::array<char, 4096> chunk_{};
    bool closed_ = false;
};

Reply get(std::uint16_t port, const std::string& target, const std::string& method = "GET") {
    Client client(port);
    client.send(method + " " + target +
                " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    return client.read_reply(method == "HEAD");
}

TEST(MetricsServer, ServesThePublishedExposition) {
    LoopFixture loop;
    const std::string body = "# HELP x An x\n# TYPE x counter\nx_total 1\n";
    loop.server().publish(body);
    const Reply reply = get(loop.port(), "/metrics");
    ASSERT_TRUE(reply.complete);
    EXPECT_EQ(reply.status, 200U);
    EXPECT_EQ(reply.content_type.rfind("text/plain; version=0.0.4", 0), 0U) << reply.content_type;
    EXPECT_EQ(reply.body, body);

    loop.server().publish("y 2\n");  // replaces, not appends
    EXPECT_EQ(get(loop.port(), "/metrics").body, "y 2\n");
    // A query string (some scrapers add one) names the same resource.
    EXPECT_EQ(get(loop.port(), "/metrics?format=text").body, "y 2\n");
}

TEST(MetricsServer, EmptyBodyBeforeTheFirstPublish) {
    LoopFixture loop;
    const Reply reply = get(loop.port(), "/metrics");
    ASSERT_TRUE(reply.complete);
    EXPECT_EQ(reply.status, 200U);
    EXPECT_EQ(reply.body, "");
}

TEST(MetricsServer, HeadHasTheLengthButNoBody) {
    LoopFixture loop;
    loop.server().publish(std::string(1000, 'a'));
    Client client(loop.port());
    client.send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    const Reply head = client.read_reply(true);
    ASSERT_TRUE(head.complete);
    EXPECT_EQ(head.status, 200U);
    EXPECT_EQ(head.content_length, "1000");
    // Keep-alive: the next request on the same connection is answered, and
    // nothing of a body was sent in between.
    client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    const Reply next = client.read_reply();
    ASSERT_TRUE(next.complete);
    EXPECT_EQ(next.status, 200U);
    EXPECT_EQ(next.body.size(), 1000U);
    EXPECT_TRUE(next.keep_alive);
}

TEST(MetricsServer, IndexLinksToMetrics) {
    LoopFixture loop;
    const Reply reply = get(loop.port(), "/");
    ASSERT_TRUE(reply.complete);
    EXPECT_EQ(reply.status, 200U);
    EXPECT_NE(reply.body.find("href=\"/metrics\""), std::string::npos);
}

TEST(MetricsServer, UnknownPathIs404) {
    LoopFixture loop;
    for (const char* target : {"/metricsx", "/metrics/", "/favicon.ico", "*"}) {
        const Reply reply = get(loop.port(), target);
        ASSERT_TRUE(reply.complete) << target;
        EXPECT_EQ(reply.status, 404U) << target;
    }
}

TEST(MetricsServer, OtherMethodsAre405) {
    LoopFixture loop;
    for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "BREW"}) {
        const Reply reply = get(loop.port(), "/metrics", method);
        ASSERT_TRUE(reply.complete) << method;
        EXPECT_EQ(reply.status, 405U) << method;
        EXPECT_EQ(reply.allow, "GET, HEAD") << method;
    }
}

TEST(MetricsServer, GarbageIs400AndTheConnectionCloses) {
    LoopFixture loop;
    loop.server().publish("x 1\n");
    const std::vector<std::string> garbage = {
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  // a TLS ClientHello
        "GET /metrics HTTP/1.1\r\nbad header line\r\n\r\n",
        "GET /metrics HTTP/9.9\r\n\r\n",     // the parser takes HTTP/1.0 and 1.1 only
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",  // an HTTP/2 preface
        "GET\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        std::string("GET /met\0rics HTTP/1.1\r\n\r\n", 26),
    };
    for (const auto& request : garbage) {
        Client client(loop.port());
        client.send(request);
        const Reply reply = client.read_reply();
        ASSERT_TRUE(reply.complete) << request;
        EXPECT_EQ(reply.status, 400U) << request;
        EXPECT_FALSE(reply.keep_alive);
        EXPECT_TRUE(client.read_until_closed(2000ms).has_value()) << "left open: " << request;
    }
    // The server is unharmed.
    EXPECT_EQ(get(loop.port(), "/metrics").body, "x 1\n");
}

TEST(MetricsServer, OversizedRequestsAreRefusedWithBoundedMemory) {
    MetricsServerLimits limits;
    limits.max_header_bytes = 1024;
    limits.max_body_bytes = 256;
    LoopFixture loop(limits);
    {
        Client client(loop.port());
        client.send("GET /metrics HTTP/1.1\r\nX-Long: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
        const Reply reply = client.read_reply();
        ASSERT_TRUE(reply.complete);
        EXPECT_EQ(reply.status, 431U);
    }
    {
        Client client(loop.port());
        client.send("POST /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" +
                    std::string(1000, 'b'));
        const Reply reply = client.read_reply();
        ASSERT_TRUE(reply.complete);
        EXPECT_EQ(reply.status, 413U);
    }
}

TEST(MetricsServer, ParsesListenAddresses) {
    EXPECT_EQ(ListenAddress::parse(":9464").host, "127.0.0.1");
    EXPECT_EQ(ListenAddress::parse(":9464").port, 9464);
    EXPECT_EQ(ListenAddress::parse("0.0.0.0:80").host, "0.0.0.0");
    EXPECT_EQ(ListenAddress::parse("localhost:1").host, "127.0.0.1");
    EXPECT_EQ(ListenAddress::parse("[::1]:9464").host, "::1");
    EXPECT_EQ(ListenAddress::parse("[::1]:9464").port, 9464);
    EXPECT_EQ(ListenAddress::parse("127.0.0.1:0").port, 0);
    for (const char* bad :
         {"", "9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x",
          "::1:9464", "[::1]9464", "[::1]", "example.com:80", "300.1.1.1:80"}) {
        EXPECT_THROW(ListenAddress::parse(bad), std::invalid_argument) << bad;
    }
    net::io_context io;
    try {
        MetricsServer server(io, "nonsense");
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("nonsense"), std::string::npos) << e.what();
    }
}

TEST(MetricsServer, PortTakenIsAClearError) {
    net::io_context io;
    MetricsServer first(io, "127.0.0.1:0");
    const std::string taken = "127.0.0.1:" + std::to_string(first.port());
    EXPECT_EQ(first.address(), taken);
    try {
        MetricsServer second(io, taken);
        FAIL() << "expected runtime_error";
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(taken), std::string::npos) << message;
        EXPECT_NE(message.find("in use"), std::string::npos) << message;
    }
}

TEST(MetricsServer, IPv6Loopback) {
    net::io_context probe;
    tcp::acceptor acceptor(probe);
    ErrorCode ec;
    acceptor.open(tcp::v6(), ec);
    if (!ec) acceptor.bind(tcp::endpoint(net::ip::make_address("::1"), 0), ec);
    if (ec) GTEST_SKIP() << "no IPv6 loopback here: " << ec.message();
    net::io_context io;
    MetricsServer server(io, "[::1]:0");
    EXPECT_EQ(server.address().rfind("[::1]:", 0), 0U) << server.address();
}

TEST(MetricsServer, TwoHundredConcurrentClientsWhileTheLoopRuns) {
    MetricsServerLimits limits;
    limits.max_connections = 256;
    LoopFixture loop(limits);
    loop.server().publish("flowsketch_packets_total 1224\n");
    const std::uint16_t port = loop.port();
    const std::uint64_t ticks_before = loop.ticks();
    // All connected and all requests sent before any response is read: the
    // server holds 200 connections at once.
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 200; ++i) clients.push_back(std::make_unique<Client>(port));
    for (auto& client : clients) client->send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    int ok = 0;
    for (auto& client : clients) {
        const Reply reply = client->read_reply();
        ok += reply.complete && reply.status == 200 &&
              reply.body == "flowsketch_packets_total 1224\n";
    }
    EXPECT_EQ(ok, 200);
    EXPECT_EQ(loop.connections(), 200U);  // keep-alive: all still open
    EXPECT_GT(loop.ticks(), ticks_before);
    clients.clear();
    // Closed by the clients: the server lets go of every one.
    for (int i = 0; i < 200 && loop.connections() != 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(loop.connections(), 0U);
}

TEST(MetricsServer, ConnectionsBeyondTheCapAreClosedAtOnce) {
    MetricsServerLimits limits;
    limits.max_connections = 64;
    LoopFixture loop(limits);
    loop.server().publish("x 1\n");
    const std::uint16_t port = loop.port();
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 200; ++i) clients.push_back(std::make_unique<Client>(port));
    // Wait until the server has accepted all 200 (64 held, the rest closed).
    for (int i = 0; i < 400; ++i) {
        const auto accepted = loop.on_loop(
            [&loop] { return loop.server().connections() + loop.server().rejected_connections(); });
        if (accepted >= 200) break;
        std::this_thread::sleep_for(5ms);
    }
    int served = 0;
    int refused = 0;
    for (auto& client : clients) {
        try {
            client->send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        } catch (const boost::system::system_error&) {
            ++refused;  // reset before the request could be written
            continue;
        }
        const Reply reply = client->read_reply(false, 2000ms);
        if (reply.complete && reply.status == 200) {
            ++served;
        } else {
            ++refused;
        }
    }
    EXPECT_EQ(served, 64);
    EXPECT_EQ(refused, 136);
    EXPECT_EQ(loop.on_loop([&loop] { return loop.server().peak_connections(); }), 64U);
    EXPECT_EQ(loop.on_loop([&loop] { return loop.server().rejected_connections(); }), 136U);
    clients.clear();
    for (int i = 0; i < 200 && loop.connections() != 0; ++i) std::this_thread::sleep_for(5ms);
    // Slots freed: a new client is served.
    EXPECT_EQ(get(port, "/metrics").status, 200U);
}

TEST(MetricsServer, AClientThatNeverFinishesIsClosedByTheDeadline) {
    MetricsServerLimits limits;
    limits.request_deadline = 300ms;
    LoopFixture loop(limits);
    loop.server().publish("x 1\n");
    Client slow(loop.port());
    slow.send("GET /metrics HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
    const std::uint64_t ticks_before = loop.ticks();
    const auto start = std::chrono::steady_clock::now();
    // Meanwhile other clients are served: the loop is not waiting on the slow one.
    EXPECT_EQ(get(loop.port(), "/metrics").body, "x 1\n");
    const auto closed = slow.read_until_closed(1500ms);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(closed.has_value()) << "the slow client was not closed";
    EXPECT_EQ(*closed, "");  // closed without a response
    EXPECT_GE(elapsed, 250ms);
    EXPECT_LT(elapsed, 1500ms);
    EXPECT_GT(loop.ticks(), ticks_before + 50);  // 2 ms ticks kept coming
    EXPECT_EQ(loop.on_loop([&loop] { return loop.server().timed_out_connections(); }), 1U);
    EXPECT_EQ(loop.connections(), 0U);
}

TEST(MetricsServer, IdleKeepAliveConnectionsAreClosedToo) {
    MetricsServerLimits limits;
    limits.request_deadline = 200ms;
    LoopFixture loop(limits);
    Client client(loop.port());
    client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(client.read_reply().complete);
    EXPECT_TRUE(client.read_until_closed(1500ms).has_value());
}

TEST(MetricsServer, ALargeExpositionIsServedWhole) {
    LoopFixture loop;
    std::string body;
    for (int i = 0; body.size() < 8 * 1024 * 1024; ++i) {
        body += "flowsketch_heavy_hitter_packets{rank=\"" + std::to_string(i) + "\"} 1\n";
    }
    loop.server().publish(body);
    Client client(loop.port());
    client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    loop.server().publish("replaced while being written\n");
    const Reply reply = client.read_reply();
    ASSERT_TRUE(reply.complete);
    EXPECT_TRUE(reply.body == body || reply.body == "replaced while being written\n");
}

TEST(MetricsServer, DestroyedWithClientsConnected) {
    std::vector<std::unique_ptr<Client>> clients;
    {
        LoopFixture loop;
        for (int i = 0; i < 10; ++i) clients.push_back(std::make_unique<Client>(loop.port()));
        clients[0]->send("GET /metrics HTTP/1.1\r\n");  // half a request
        for (int i = 0; i < 200 && loop.connections() < 10; ++i) std::this_thread::sleep_for(5ms);
    }  // server and loop gone: every connection is closed, nothing leaks (ASan)
    for (auto& client : clients) EXPECT_TRUE(client->read_until_closed(2000ms).has_value());
}

// The live runner may stop its loop with handlers still queued and destroy
// the server and then the io_context without running it again.
TEST(MetricsServer, DestroyedWithHandlersNeverRun) {
    auto io = std::make_unique<net::io_context>();
    auto server = std::make_unique<MetricsServer>(*io, "127.0.0.1:0");
    Client client(server->port());
    client.send("GET /metrics HTTP/1.1\r\n");  // half a request: a read stays pending
    for (int i = 0; i < 100 && server->connections() == 0; ++i) io->run_for(10ms);
    EXPECT_EQ(server->connections(), 1U);
    server.reset();
    io.reset();  // queued handlers are destroyed, not run: nothing leaks (ASan)
    EXPECT_TRUE(client.read_until_closed(2000ms).has_value());
}

}  // namespace
}  // namespace flowsketch::app
