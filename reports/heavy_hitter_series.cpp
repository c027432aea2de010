#include "reports/heavy_hitter_series.hpp"

#include <algorithm>
#include <functional>
#include <tuple>

#include "reports/key_format.hpp"
#include "reports/prometheus.hpp"

namespace flowsketch::reports {

std::string heavy_hitter_labels(const core::HeavyHitter& flow, const core::KeySpec& spec) {
    std::string text = "{";
    auto add = [&text](std::string_view name, std::string_view value) {
        if (text.size() > 1) text.push_back(',');
        text += name;
        text += "=\"";
        text += escape_label_value(value);
        text.push_back('"');
    };
    if (!spec.is_identity()) add("key", spec.name());
    for (KeyFieldText& field : key_fields(flow.key, spec)) {
        if (field.name == "proto") field.text = protocol_name(flow.key.protocol);
        add(field.name, field.text);
    }
    text.push_back('}');
    return text;
}

HeavyHitterSeries::HeavyHitterSeries(std::size_t per_list, std::uint32_t staleness, std::size_t cap)
    : per_list_(per_list), staleness_(staleness), cap_(std::max<std::size_t>(cap, 1)) {}

void HeavyHitterSeries::observe(const std::vector<const core::TopList*>& lists) {
    ++interval_;
    floor_.assign(lists.size(), 0);
    for (std::size_t list = 0; list < lists.size(); ++list) {
        const core::TopList& top = *lists[list];
        const std::size_t count = std::min(top.size(), per_list_);
        if (count > 0) floor_[list] = top[count - 1].estimate;
        for (std::size_t i = 0; i < count; ++i) {
            Tracked& tracked = keys_[heavy_hitter_labels(top[i], top.spec)];
            tracked = Tracked{list, interval_, i + 1, top[i].estimate, top[i].lower};
        }
    }
    std::erase_if(keys_, [this](const auto& entry) {
        const Tracked& tracked = entry.second;
        return interval_ - tracked.last_interval > staleness_ || tracked.list >= floor_.size();
    });
    if (keys_.size() <= cap_) return;
    // Over the cap: keep the current top (by rank, across lists), then the
    // keys that left it most recently.
    std::vector<const std::pair<const std::string, Tracked>*> entries;
    entries.reserve(keys_.size());
    for (const auto& entry : keys_) entries.push_back(&entry);
    std::sort(entries.begin(), entries.end(), [this](const auto* a, const auto* b) {
        const Tracked& x = a->second;
        const Tracked& y = b->second;
        return std::make_tuple(interval_ - x.last_interval, x.rank, x.list, std::cref(a->first)) <
               std::make_tuple(interval_ - y.last_interval, y.rank, y.list, std::cref(b->first));
    });
    std::vector<std::string> dropped;
    for (std::size_t i = cap_; i < entries.size(); ++i) dropped.push_back(entries[i]->first);
    for (const std::string& labels : dropped) keys_.erase(labels);
}

std::vector<HeavyHitterSeries::Row> HeavyHitterSeries::rows() const {
    std::vector<const std::pair<const std::string, Tracked>*> entries;
    entries.reserve(keys_.size());
    for (const auto& entry : keys_) entries.push_back(&entry);
    std::sort(entries.begin(), entries.end(), [this](const auto* a, const auto* b) {
        const Tracked& x = a->second;
        const Tracked& y = b->second;
        return std::make_tuple(x.list, interval_ - x.last_interval, x.rank, std::cref(a->first)) <
               std::make_tuple(y.list, interval_ - y.last_interval, y.rank, std::cref(b->first));
    });
    std::vector<Row> rows;
    rows.reserve(entries.size());
    for (const auto* entry : entries) {
        const Tracked& tracked = entry->second;
        if (tracked.last_interval == interval_) {
            rows.push_back(
                Row{entry->first, tracked.list, tracked.rank, tracked.estimate, tracked.lower});
        } else {
            rows.push_back(Row{entry->first, tracked.list, 0, floor_[tracked.list], 0});
        }
    }
    return rows;
}

}  // namespace flowsketch::reports
