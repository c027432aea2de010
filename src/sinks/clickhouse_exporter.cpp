#include "src/sinks/clickhouse_exporter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <utility>

#include "src/clickhouse_schema.hpp"
#include "src/sinks/background_priority.hpp"

namespace flowsketch::app {
ClickHouseExporter::ClickHouseExporter(ClickHouseExporterOptions options)
    : options_(std::move(options)), client_(options_.endpoint, options_.timeout) {
    if (!options_.spill_directory.empty()) {
        SnapshotWriterOptions spill;
        spill.directory = options_.spill_directory;
        // Never waits: the measuring thread spills what the full queue pushes
        // out. Room for the whole queue and the batch in flight, given up at
        // once at the end.
        spill.queue = options_.queue + max_batch_windows + 4;
        spill.wait_when_full = false;
        spill.sync_each = options_.sync_spills;
        spill.pool = options_.pool;
        spill_ = std::make_unique<SnapshotWriter>(spill);
    }
    thread_ = std::thread([this] {
        lower_this_thread_priority();
        run();
    });
}

ClickHouseExporter::~ClickHouseExporter() { finish(); }

void ClickHouseExporter::say(const std::string& message) const {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: ClickHouse export: {}\n", message);
}

void ClickHouseExporter::submit(reports::Snapshot snapshot) {
    std::optional<reports::Snapshot> pushed_out;
    {
        std::unique_lock lock(mutex_);
        if (options_.wait_when_full) {
            changed_.wait(lock, [this] { return queue_.size() < options_.queue || failing_ || stopping_; });
        }
        if (queue_.size() >= options_.queue) {
            pushed_out.emplace(std::move(queue_.front()));
            queue_.pop_front();
        }
        queue_.push_back(std::move(snapshot));
        counts_.queued = queue_.size() + in_flight_;
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

void ClickHouseExporter::give_up(reports::Snapshot snapshot, const std::string& why) {
    const std::string name = reports::snapshot_file_name(snapshot);
    {
        std::lock_guard lock(mutex_);
        ++counts_.undelivered;
    }
    if (spill_) {
        say(fmt::format("window {} not delivered ({}); spilled to {}/{}", name, why, options_.spill_directory, name));
        spill_->submit(std::move(snapshot));
    } else {
        say(fmt::format("window {} not delivered ({}); no --snapshot-dir to spill it to", name, why));
        if (options_.pool != nullptr) options_.pool->give_back(std::move(snapshot));
    }
}

void ClickHouseExporter::deliver(Batch& batch) {
    if (!batch.encoded) {
        batch.rows.clear();
        append_clickhouse_rows(batch.windows, batch.rows);
        batch.encoded = true;
    }
    // The windows' rows in `intervals` go last: a window is whole in
    // ClickHouse once it is there, and a retry resumes after the inserts that
    // succeeded instead of repeating them.
    const std::tuple<std::string_view, std::string_view, const std::string*> inserts[] = {
        {sketch_rows_table, "RowBinary", &batch.rows.sketch_rows},
        {candidates_table, "TabSeparated", &batch.rows.candidates},
        {intervals_table, "RowBinary", &batch.rows.interval},
    };
    for (; batch.inserted < std::size(inserts); ++batch.inserted) {
        const auto& [table, format, body] = inserts[batch.inserted];
        if (body->empty()) continue;
        client_.execute(fmt::format("INSERT INTO {} FORMAT {}", client_.table(table), format), *body);
    }
}

void ClickHouseExporter::run() {
    std::chrono::milliseconds backoff = options_.first_backoff;
    Batch batch;
    std::unique_lock lock(mutex_);
    for (;;) {
        if (batch.windows.empty()) {
            changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and everything is delivered
            batch.encoded = false;
            batch.inserted = 0;
            while (!queue_.empty() && batch.windows.size() < max_batch_windows) {
                batch.windows.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            in_flight_ = batch.windows.size();
            counts_.queued = queue_.size() + in_flight_;
            changed_.notify_all();  // places are free
        }
        const bool past_deadline = stopping_ && std::chrono::steady_clock::now() >= stop_deadline_;
        lock.unlock();
        std::string error;
        if (past_deadline) {
            error = "ClickHouse did not take it before the end of the run";
        } else {
            try {
                deliver(batch);
            } catch (const ClickHouseError& e) {
                error = e.what();
            } catch (const std::invalid_argument& e) {  // cannot be encoded: retrying will not help
                for (reports::Snapshot& snapshot : batch.windows) give_up(std::move(snapshot), e.what());
                batch.windows.clear();
                lock.lock();
                in_flight_ = 0;
                continue;
            }
        }
        if (past_deadline) {
            for (reports::Snapshot& snapshot : batch.windows) give_up(std::move(snapshot), error);
            batch.windows.clear();
            lock.lock();
            in_flight_ = 0;
            continue;
        }
        if (error.empty()) {
            const std::size_t delivered = batch.windows.size();
            if (options_.pool != nullptr) {
                for (reports::Snapshot& snapshot : batch.windows) options_.pool->give_back(std::move(snapshot));
            }
            batch.windows.clear();
            lock.lock();
            counts_.delivered += delivered;
            // At the end, a server that keeps taking windows gets the time to take them all.
            if (stopping_) stop_deadline_ = std::chrono::steady_clock::now() + options_.finish_grace;
            in_flight_ = 0;
            counts_.queued = queue_.size();
            backoff = options_.first_backoff;
            if (failing_) {
                failing_ = false;
                const std::uint64_t retries = counts_.retries;
                lock.unlock();
                say(fmt::format("delivering again after {} failed attempts", retries));
                lock.lock();
            }
            continue;
        }
        lock.lock();
        ++counts_.retries;
        const bool announce = !failing_;
        failing_ = true;
        changed_.notify_all();  // a replay waiting for a place pushes the oldest out now
        const std::size_t queued = queue_.size() + batch.windows.size();
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
