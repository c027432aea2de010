// A real ClickHouse server for tests: the Debian clickhouse-server started as
// a child on free loopback ports with a private data directory and a minimal
// configuration, stopped (killed) when the fixture goes, and killed with the
// test process too (PR_SET_PDEATHSIG), so no server outlives a failed or
// interrupted test. Without the server binary the constructor throws: the
// tests fail rather than skip.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "src/sinks/clickhouse_http.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {

class ClickHouseServer {
public:
    ClickHouseServer() : directory_(tmp_path("clickhouse-" + std::to_string(::getpid()) + "-" + std::to_string(serial()))) {
        const char* given = std::getenv("FLOWSKETCH_CLICKHOUSE_SERVER");
        binary_ = given != nullptr ? given : "/usr/sbin/clickhouse-server";
        if (::access(binary_.c_str(), X_OK) != 0) {
            throw std::runtime_error(binary_ + " not found: install clickhouse-server (scripts/install-deps.sh)");
        }
        std::filesystem::remove_all(directory_);
        std::filesystem::create_directories(directory_);
        http_port_ = free_port();
        tcp_port_ = free_port();
        write_config();
        start();
    }
    ~ClickHouseServer() { kill(); }
    ClickHouseServer(const ClickHouseServer&) = delete;
    ClickHouseServer& operator=(const ClickHouseServer&) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
    int http_port() const noexcept { return http_port_; }

    /// A client of the server's HTTP interface, in `database`.
    app::ClickHouseClient client(const std::string& database = "flowsketch") const {
        app::ClickHouseEndpoint endpoint;
        endpoint.host = "127.0.0.1";
        endpoint.port = std::to_string(http_port_);
        endpoint.database = database;
        return app::ClickHouseClient(endpoint, std::chrono::seconds(60));
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }

    /// Starts it again on the same ports and data; waits until it answers.
    void start() {
        const std::string log = directory_ + "/console.log";
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, 1);
                ::dup2(fd, 2);
            }
            const std::string config = "--config-file=" + directory_ + "/config.xml";
            ::execl(binary_.c_str(), binary_.c_str(), config.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < deadline) {
            try {
                if (client("default").execute("SELECT 'Ok.'", {}, false) == "Ok.\n") return;
            } catch (const app::ClickHouseError&) {
            }
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("clickhouse-server exited at start: see " + log);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        kill();
        throw std::runtime_error("clickhouse-server did not answer within 60 s: see " + log);
    }

private:
    static int serial() {
        static int next = 0;
        return next++;
    }

    // A port the kernel has just handed out and nobody holds.
    static int free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof(address);
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
            throw std::runtime_error("no free loopback port");
        }
        ::close(fd);
        return ntohs(address.sin_port);
    }

    void write_config() const {
        std::ofstream config(directory_ + "/config.xml");
        config << "<?xml version=\"1.0\"?>\n<yandex>\n"
               << "  <logger><level>warning</level><log>" << directory_ << "/server.log</log><errorlog>" << directory_
               << "/error.log</errorlog><console>0</console></logger>\n"
               << "  <listen_host>127.0.0.1</listen_host>\n"
               << "  <http_port>" << http_port_ << "</http_port>\n"
               << "  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
               << "  <path>" << directory_ << "/data/</path>\n"
               << "  <tmp_path>" << directory_ << "/tmp/</tmp_path>\n"
               << "  <user_files_path>" << directory_ << "/user_files/</user_files_path>\n"
               << "  <users_config>users.xml</users_config>\n"
               << "  <default_profile>default</default_profile>\n"
               << "  <default_database>default</default_database>\n"
               << "  <mark_cache_size>5368709120</mark_cache_size>\n"
               << "</yandex>\n";
        std::ofstream users(directory_ + "/users.xml");
        users << "<?xml version=\"1.0\"?>\n<yandex>\n"
              << "  <profiles><default></default></profiles>\n"
              << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
              << "<profile>default</profile><quota>default</quota></default></users>\n"
              << "  <quotas><default></default></quotas>\n"
              << "</yandex>\n";
    }

    std::string directory_;
    std::string binary_;
    int http_port_ = 0;
    int tcp_port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace flowsketch::testing
