#include "src/sinks/clickhouse_exporter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <utility>

#include "src/clickhouse_schema.hpp"

namespace flowsketch::app {

ClickHouseExporter::ClickHouseExporter(ClickHouseExporterOptions options)
    : options_(std::move(options)), client_(options_.endpoint, options_.timeout) {
    if (!options_.spill_directory.empty()) {
        SnapshotWriterOptions spill;
        spill.directory = options_.spill_directory;
        // Never waits: the measuring thread spills what the full queue pushes
        // out. Room for the whole export queue, given up at once at the end.
        spill.queue = options_.queue + 4;
        spill.wait_when_full = false;
        spill.sync_each = options_.sync_spills;
        spill_ = std::make_unique<SnapshotWriter>(spill);
    }
    thread_ = std::thread([this] { run(); });
}

ClickHouseExporter::~ClickHouseExporter() { finish(); }

void ClickHouseExporter::say(const std::string& message) const {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: ClickHouse export: {}\n", message);
}

void ClickHouseExporter::submit(reports::Snapshot snapshot) {
    std::optional<Pending> pushed_out;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= options_.queue) {
            pushed_out.emplace(std::move(queue_.front()));
            queue_.pop_front();
        }
        queue_.push_back(Pending{std::move(snapshot), std::nullopt, 0});
        counts_.queued = queue_.size();
        changed_.notify_all();
    }
    // The spill writer's submit does not wait (its own queue is bounded and
    // counts what it cannot take), so this never stalls the capture.
    if (pushed_out) give_up(std::move(*pushed_out), fmt::format("the queue of {} windows was full", options_.queue));
}

void ClickHouseExporter::finish() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        if (!stopping_) stop_deadline_ = std::chrono::steady_clock::now() + options_.finish_grace;
        stopping_ = true;
        changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    if (spill_) spill_->finish();
}

reports::ClickHouseExportCounts ClickHouseExporter::counts() const {
    std::lock_guard lock(mutex_);
    reports::ClickHouseExportCounts counts = counts_;
    if (spill_) counts.spilled = spill_->written();
    return counts;
}

void ClickHouseExporter::give_up(Pending pending, const std::string& why) {
    const std::string name = reports::snapshot_file_name(pending.snapshot);
    {
        std::lock_guard lock(mutex_);
        ++counts_.undelivered;
    }
    if (spill_) {
        say(fmt::format("window {} not delivered ({}); spilled to {}/{}", name, why, options_.spill_directory, name));
        spill_->submit(std::move(pending.snapshot));
    } else {
        say(fmt::format("window {} not delivered ({}); no --snapshot-dir to spill it to", name, why));
    }
}

bool ClickHouseExporter::deliver(Pending& pending) {
    if (!pending.rows) pending.rows = clickhouse_rows(pending.snapshot);
    // The window's row in `intervals` goes last: a window is whole in
    // ClickHouse once it is there, and a retry resumes after the inserts that
    // succeeded instead of repeating them.
    const std::tuple<std::string_view, std::string_view, const std::string*> inserts[] = {
        {sketch_rows_table, "RowBinary", &pending.rows->sketch_rows},
        {candidates_table, "TabSeparated", &pending.rows->candidates},
        {intervals_table, "RowBinary", &pending.rows->interval},
    };
    for (; pending.inserted < std::size(inserts); ++pending.inserted) {
        const auto& [table, format, body] = inserts[pending.inserted];
        if (body->empty()) continue;
        client_.execute(fmt::format("INSERT INTO {} FORMAT {}", client_.table(table), format), *body);
    }
    return true;
}

void ClickHouseExporter::run() {
    std::chrono::milliseconds backoff = options_.first_backoff;
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything is delivered
        Pending pending = std::move(queue_.front());
        queue_.pop_front();
        counts_.queued = queue_.size();
        const bool past_deadline = stopping_ && std::chrono::steady_clock::now() >= stop_deadline_;
        lock.unlock();
        if (past_deadline) {
            give_up(std::move(pending), "ClickHouse did not take it before the end of the run");
            lock.lock();
            continue;
        }
        std::string error;
        try {
            deliver(pending);
        } catch (const ClickHouseError& e) {
            error = e.what();
        } catch (const std::invalid_argument& e) {  // cannot be encoded: retrying will not help
            give_up(std::move(pending), e.what());
            lock.lock();
            continue;
        }
        if (error.empty()) {
            lock.lock();
            ++counts_.delivered;
            if (failing_) {
                failing_ = false;
                lock.unlock();
                say(fmt::format("delivering again after {} failed attempts", counts_.retries));
                lock.lock();
            }
            backoff = options_.first_backoff;
            continue;
        }
        lock.lock();
        ++counts_.retries;
        const bool announce = !failing_;
        failing_ = true;
        queue_.push_front(std::move(pending));  // first again: windows go in order
        counts_.queued = queue_.size();
        const std::size_t queued = queue_.size();
        lock.unlock();
        if (announce) say(fmt::format("{}; retrying with backoff ({} windows queued)", error, queued));
        lock.lock();
        // Wait out the backoff; a new window or finish() does not cut it
        // short, but the end of finish()'s grace does.
        auto until = std::chrono::steady_clock::now() + backoff;
        if (stopping_) until = std::min(until, stop_deadline_);
        changed_.wait_until(lock, until, [this, until] {
            return (stopping_ && std::chrono::steady_clock::now() >= stop_deadline_) ||
                   std::chrono::steady_clock::now() >= until;
        });
        backoff = std::min(backoff * 2, options_.max_backoff);
    }
}

}  // namespace flowsketch::app
