#include "client/cli_stats_format.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace msgq {
namespace {

const v1::TableStatus* Find(const std::vector<StatsSample>& samples,
                            const std::string& server,
                            const v1::TableStatus& table) {
  for (const StatsSample& sample : samples) {
    if (sample.server != server) continue;
    for (const v1::TableStatus& t : sample.tables) {
      if (t.keyspace() == table.keyspace() && t.name() == table.name()) {
        return &t;
      }
    }
  }
  return nullptr;
}

std::string Rate(const std::optional<double>& rate) {
  return rate.has_value() ? absl::StrFormat("%.1f", *rate) : "-";
}

nlohmann::ordered_json RateJson(const std::optional<double>& rate) {
  if (!rate.has_value()) return nullptr;
  return *rate;
}

}  // namespace

std::optional<double> CounterRate(int64_t before, int64_t after,
                                  absl::Duration elapsed) {
  if (after < before || elapsed <= absl::ZeroDuration()) return std::nullopt;
  return static_cast<double>(after - before) / absl::ToDoubleSeconds(elapsed);
}

std::vector<StatsRow> ComputeStats(const std::vector<StatsSample>& before,
                                   const std::vector<StatsSample>& after,
                                   absl::Duration elapsed,
                                   const std::string& table) {
  std::vector<StatsRow> rows;
  for (const StatsSample& sample : after) {
    for (const v1::TableStatus& t : sample.tables) {
      if (!t.loaded() || (!table.empty() && t.name() != table)) continue;
      StatsRow row{.server = sample.server,
                   .keyspace = t.keyspace(),
                   .name = t.name(),
                   .sent = t.sent(),
                   .acked = t.acked(),
                   .redelivered = t.redelivered(),
                   .nacked = t.nacked(),
                   .died = t.died(),
                   .cached = t.cached(),
                   .in_flight = t.in_flight(),
                   .dead = t.dead(),
                   .subscribers = t.subscribers()};
      const v1::TableStatus* b = Find(before, sample.server, t);
      // Any counter going down means they all started over (msgqd
      // restarted): no rate from this pair, not even a plausible-looking 0.
      const bool reset =
          b != nullptr && (t.sent() < b->sent() || t.acked() < b->acked() ||
                           t.redelivered() < b->redelivered() ||
                           t.nacked() < b->nacked() || t.died() < b->died());
      if (b != nullptr && !reset) {
        row.sent_rate = CounterRate(b->sent(), t.sent(), elapsed);
        row.acked_rate = CounterRate(b->acked(), t.acked(), elapsed);
        row.redelivered_rate =
            CounterRate(b->redelivered(), t.redelivered(), elapsed);
        row.nacked_rate = CounterRate(b->nacked(), t.nacked(), elapsed);
        row.died_rate = CounterRate(b->died(), t.died(), elapsed);
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string FormatStatsText(const std::vector<StatsRow>& rows,
                            bool show_server) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"KEYSPACE", "NAME", "SENT/S", "ACKED/S", "REDELIVERED/S",
                   "NACKED/S", "DIED/S", "CACHED", "IN_FLIGHT", "DEAD",
                   "SUBSCRIBERS"});
  if (show_server) cells[0].insert(cells[0].begin(), "SERVER");
  for (const StatsRow& r : rows) {
    std::vector<std::string> line = {r.keyspace,
                                     r.name,
                                     Rate(r.sent_rate),
                                     Rate(r.acked_rate),
                                     Rate(r.redelivered_rate),
                                     Rate(r.nacked_rate),
                                     Rate(r.died_rate),
                                     absl::StrCat(r.cached),
                                     absl::StrCat(r.in_flight),
                                     r.dead < 0 ? "-" : absl::StrCat(r.dead),
                                     absl::StrCat(r.subscribers)};
    if (show_server) line.insert(line.begin(), r.server);
    cells.push_back(std::move(line));
  }
  std::vector<size_t> widths(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) {
      widths[i] = std::max(widths[i], line[i].size());
    }
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      absl::StrAppend(&text, line[i]);
      if (i + 1 < line.size()) {
        text.append(widths[i] - line[i].size() + 2, ' ');
      }
    }
    absl::StrAppend(&out, text, "\n");
  }
  return out;
}

std::string FormatStatsJson(const std::vector<StatsRow>& rows,
                            absl::Duration elapsed) {
  nlohmann::ordered_json tables = nlohmann::ordered_json::array();
  for (const StatsRow& r : rows) {
    tables.push_back({{"server", r.server},
                      {"keyspace", r.keyspace},
                      {"name", r.name},
                      {"sent", r.sent},
                      {"acked", r.acked},
                      {"redelivered", r.redelivered},
                      {"nacked", r.nacked},
                      {"died", r.died},
                      {"sent_per_s", RateJson(r.sent_rate)},
                      {"acked_per_s", RateJson(r.acked_rate)},
                      {"redelivered_per_s", RateJson(r.redelivered_rate)},
                      {"nacked_per_s", RateJson(r.nacked_rate)},
                      {"died_per_s", RateJson(r.died_rate)},
                      {"cached", r.cached},
                      {"in_flight", r.in_flight},
                      {"dead", r.dead},
                      {"subscribers", r.subscribers}});
  }
  nlohmann::ordered_json out = {{"interval_s", absl::ToDoubleSeconds(elapsed)},
                                {"tables", tables}};
  return out.dump();
}

}  // namespace msgq
