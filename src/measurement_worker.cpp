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

std::vector<core::PacketRecord> MeasurementWorker::submit(std::vector<core::PacketRecord> batch) {
    const std::size_t capacity = batch.capacity();
    std::vector<core::PacketRecord> next;
    {
        std::unique_lock lock(mutex_);
        space_ready_.wait(lock, [this] { return queue_.size() < max_queued; });
        queue_.push_back(std::move(batch));
        if (!spare_.empty()) {
            next = std::move(spare_.back());
            spare_.pop_back();
        }
    }
    work_ready_.notify_one();
    next.clear();
    next.reserve(capacity);
    return next;
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
        std::vector<core::PacketRecord> batch = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        space_ready_.notify_one();
        measurement_.add_batch(batch);
        batch.clear();
        lock.lock();
        busy_ = false;
        spare_.push_back(std::move(batch));
        space_ready_.notify_one();
    }
}

}  // namespace flowsketch::app
