#include "src/measurement_worker.hpp"

#include <utility>

namespace flowsketch::app {

MeasurementWorker::MeasurementWorker(core::FlowMeasurement& measurement)
    : measurement_(measurement), thread_([this] { run(); }) {}

MeasurementWorker::~MeasurementWorker() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_one();
    thread_.join();
}

MeasurementWorker::Batch MeasurementWorker::take_spare() {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return Batch{};
    Batch batch = std::move(spare_.back());
    spare_.pop_back();
    return batch;
}

void MeasurementWorker::submit(Batch batch) {
    {
        std::unique_lock lock(mutex_);
        space_ready_.wait(lock, [this] { return queue_.size() < max_queued; });
        queue_.push_back(std::move(batch));
    }
    work_ready_.notify_one();
}

void MeasurementWorker::drain() {
    std::unique_lock lock(mutex_);
    space_ready_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void MeasurementWorker::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to add
        Batch batch = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        space_ready_.notify_one();
        measurement_.add_prepared(batch.packets, batch.prepared);
        batch.packets.clear();
        lock.lock();
        busy_ = false;
        spare_.push_back(std::move(batch));
        space_ready_.notify_one();
    }
}

}  // namespace flowsketch::app
