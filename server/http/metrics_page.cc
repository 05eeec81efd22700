#include "server/http/metrics_page.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include "common/metrics.h"

namespace msgq {
namespace {

using Table = Engine::TableInfo;

MetricLabels TableLabels(const Table& t) {
  return {{"keyspace", t.keyspace}, {"table", t.name}};
}

void CountFamilies(const std::vector<Table>& tables, MetricsText& text);

struct TableMetric {
  const char* name;
  MetricType type;
  const char* help;
  std::function<double(const MessageManager::Stats&)> value;
};

// Families with one sample per loaded table, from MessageManager::Stats.
const std::vector<TableMetric>& LoadedTableMetrics() {
  using S = MessageManager::Stats;
  static const auto* metrics = new std::vector<TableMetric>{
      {"msgq_sent_total", MetricType::kCounter,
       "Messages written to subscribers' streams (redeliveries included).",
       [](const S& s) { return s.sent; }},
      {"msgq_redelivered_total", MetricType::kCounter,
       "Messages sent again: sent with epoch > 0 (part of msgq_sent_total).",
       [](const S& s) { return s.redelivered; }},
      {"msgq_postponed_total", MetricType::kCounter,
       "Sent messages whose time_next was pushed back by the ack wait.",
       [](const S& s) { return s.postponed; }},
      {"msgq_acked_total", MetricType::kCounter,
       "Rows acked by MessageAck (went from unacked to acked).",
       [](const S& s) { return s.acked; }},
      {"msgq_acked_by_sql_total", MetricType::kCounter,
       "Rows the binlog showed going from unacked to acked that this msgqd "
       "did not ack: an application's UPDATE (or another msgqd's "
       "MessageAck). Binlog discovery only.",
       [](const S& s) { return s.acked_by_sql; }},
      {"msgq_locked_rows_total", MetricType::kCounter,
       "Rows whose postpone or ack found the row locked by another "
       "transaction (e.g. an application's SELECT ... FOR UPDATE) and was "
       "held back for a retry, each counted once while its writes wait; "
       "nacks, extends and redrives of a locked row (ABORTED) count too.",
       [](const S& s) { return s.locked_rows; }},
      {"msgq_locked_rows_waiting", MetricType::kGauge,
       "Rows whose postpone or ack waits now for another transaction's row "
       "lock (retried every 250 ms; the rest of the table's writes go on).",
       [](const S& s) { return s.locked_rows_waiting; }},
      {"msgq_nacked_total", MetricType::kCounter,
       "Rows handed back for a retry by MessageNack.",
       [](const S& s) { return s.nacked; }},
      {"msgq_died_total", MetricType::kCounter,
       "Rows that died (dead nack, msgq_max_attempts, msgq_max_age, size).",
       [](const S& s) { return s.died; }},
      {"msgq_purged_total", MetricType::kCounter,
       "Acked rows deleted past msgq_purge_after.",
       [](const S& s) { return s.purged; }},
      {"msgq_partitions_created_total", MetricType::kCounter,
       "Partitions created ahead of time (tables RANGE-partitioned on "
       "time_created).",
       [](const S& s) { return s.partitions_created; }},
      {"msgq_partitions_dropped_total", MetricType::kCounter,
       "Partitions dropped because every row in them was acked before "
       "vt_purge_after (or dead past msgq_dead_retention).",
       [](const S& s) { return s.partitions_dropped; }},
      {"msgq_partitions_held_back", MetricType::kGauge,
       "Partitions past vt_purge_after kept at the last purge step because "
       "they still hold unacked (or dead, not expired) rows.",
       [](const S& s) { return s.partitions_held_back; }},
      {"msgq_polls_total", MetricType::kCounter,
       "Polls of the table for due rows.", [](const S& s) { return s.polls; }},
      {"msgq_binlog_fetches_total", MetricType::kCounter,
       "Reads by primary key of rows the binlog named.",
       [](const S& s) { return s.fetches; }},
      {"msgq_binlog_fetch_misses_total", MetricType::kCounter,
       "Binlog-named rows a fetch did not find (not visible yet, or acked or "
       "rescheduled meanwhile); each is read again after the refetch delay.",
       [](const S& s) { return s.fetch_misses; }},
      {"msgq_binlog_image_rows_total", MetricType::kCounter,
       "Due rows queued straight from their binlog row image, with no read "
       "(--binlog_discovery=image).",
       [](const S& s) { return s.image_rows; }},
      {"msgq_queued_messages", MetricType::kGauge,
       "Messages in the cache waiting for a subscriber.",
       [](const S& s) { return s.queued; }},
      {"msgq_in_flight_messages", MetricType::kGauge,
       "Messages sent or being acked whose write is not settled yet.",
       [](const S& s) { return s.in_flight; }},
      {"msgq_subscribers", MetricType::kGauge, "Open MessageStreams.",
       [](const S& s) { return s.subscribers; }},
      {"msgq_table_paused", MetricType::kGauge,
       "1 while the table is paused (SetPaused, msgq pause): it sends "
       "nothing.",
       [](const S& s) { return s.paused ? 1 : 0; }},
      {"msgq_mysql_up", MetricType::kGauge,
       "1 when the table's last MySQL statement reached the server.",
       [](const S& s) { return s.mysql_ok ? 1 : 0; }},
  };
  return *metrics;
}

// Who sends each loaded table (engine/lease/,
// docs/several-instances.md#ownership-listtables-metrics-and-the-console):
// this instance's view as ListTables shows it.
void OwnershipFamilies(const std::vector<Table>& tables, MetricsText& text) {
  text.Family("msgq_table_owned", MetricType::kGauge,
              "1 while this instance may send the table (it holds the "
              "table's lease, or with --leases=false the instance lock of "
              "its database), else 0.");
  for (const Table& t : tables) {
    if (!t.loaded) continue;
    const std::string& state = t.ownership.state;
    text.Sample(TableLabels(t), state == "owner" || state == "off" ? 1 : 0);
  }
  text.Family("msgq_table_lease_info", MetricType::kGauge,
              "The table's lease as this instance last read it, in labels "
              "(value 1): state (owner, standby, off with --leases=false "
              "while this instance holds the instance lock, unknown when "
              "MySQL does not answer the keeper) and owner (the instance "
              "holding the lease, or the MySQL session holding the "
              "instance lock; empty when none).");
  for (const Table& t : tables) {
    if (!t.loaded) continue;
    MetricLabels labels = TableLabels(t);
    labels.emplace_back("owner", t.ownership.owner);
    labels.emplace_back("state", t.ownership.state);
    text.Sample(labels, 1);
  }
  text.Family("msgq_table_owner_since_seconds", MetricType::kGauge,
              "Unix time (MySQL's clock) the lease's holder took the table; "
              "absent when nobody holds it or it is not known yet.");
  for (const Table& t : tables) {
    if (t.loaded && t.ownership.since > 0) {
      text.Sample(TableLabels(t), t.ownership.since / 1e9);
    }
  }
  text.Family("msgq_table_lease_expires_seconds", MetricType::kGauge,
              "Unix time (MySQL's clock) the table's lease ends unless its "
              "holder renews it; absent when nobody holds it.");
  for (const Table& t : tables) {
    if (t.loaded && t.ownership.expires > 0) {
      text.Sample(TableLabels(t), t.ownership.expires / 1e9);
    }
  }
}

// Each table's state: loaded or why not, how rows are found, the
// manager's counters and gauges.
void TableFamilies(const std::vector<Table>& tables, MetricsText& text) {
  text.Family("msgq_table_loaded", MetricType::kGauge,
              "1 when the message table loaded, 0 when its definition is "
              "refused (see msgq_table_error_info).");
  for (const Table& t : tables) text.Sample(TableLabels(t), t.loaded ? 1 : 0);
  text.Family("msgq_table_error_info", MetricType::kGauge,
              "Why a table failed to load, in the error label (value 1).");
  for (const Table& t : tables) {
    if (t.loaded) continue;
    MetricLabels labels = TableLabels(t);
    labels.emplace_back("error", t.error);
    text.Sample(labels, 1);
  }
  text.Family("msgq_discovery_info", MetricType::kGauge,
              "How new rows are found (mode=binlog or poll), value 1.");
  for (const Table& t : tables) {
    if (!t.loaded) continue;
    MetricLabels labels = TableLabels(t);
    labels.emplace_back("mode", t.discovery);
    text.Sample(labels, 1);
  }
  for (const TableMetric& m : LoadedTableMetrics()) {
    text.Family(m.name, m.type, m.help);
    for (const Table& t : tables) {
      if (t.loaded) text.Sample(TableLabels(t), m.value(t.stats));
    }
  }
  text.Family("msgq_dead_messages", MetricType::kGauge,
              "Dead rows in the table (msgq_messages{state=\"dead\"} where "
              "exact counts are kept, else counted at a purge step; absent "
              "until first counted).");
  for (const Table& t : tables) {
    if (t.loaded && t.stats.dead >= 0) {
      text.Sample(TableLabels(t), static_cast<double>(t.stats.dead));
    }
  }
  CountFamilies(tables, text);
  text.Family("msgq_concurrency_keys_at_limit", MetricType::kGauge,
              "Keys with msgq_concurrency messages in flight now (tables "
              "with msgq_concurrency_by only).");
  for (const Table& t : tables) {
    if (t.loaded && t.settings.concurrency > 0) {
      text.Sample(TableLabels(t), static_cast<double>(t.stats.keys_at_limit));
    }
  }
}

// The exact counts by state (engine/queue/message_counts.h) of the tables
// that keep them.
void CountFamilies(const std::vector<Table>& tables, MetricsText& text) {
  text.Family("msgq_messages", MetricType::kGauge,
              "Rows by state, exact (kept from the binlog after one counting "
              "read): ready (unacked, time_next <= now; a message just sent "
              "counts here until its postpone is written), scheduled (never "
              "sent, time_next > now), in_flight (sent, epoch > 0, "
              "time_next > now: waiting for its ack or its retry), dead. "
              "Absent until the first counting read.");
  for (const Table& t : tables) {
    if (!t.loaded || !t.counts.has_value()) continue;
    const MessageCounts::Counts& c = *t.counts;
    const std::pair<const char*, int64_t> states[] = {
        {"ready", c.ready},
        {"scheduled", c.scheduled},
        {"in_flight", c.in_flight},
        {"dead", c.dead}};
    for (const auto& [state, value] : states) {
      MetricLabels labels = TableLabels(t);
      labels.emplace_back("state", state);
      text.Sample(labels, static_cast<double>(value));
    }
  }
  text.Family("msgq_oldest_ready_age_seconds", MetricType::kGauge,
              "Now minus the smallest time_next > 0 of the ready rows (rows "
              "enqueued with time_next 0 carry no due time); 0 when none. "
              "Tables with exact counts only.");
  for (const Table& t : tables) {
    if (!t.loaded || !t.counts.has_value()) continue;
    const MessageCounts::Counts& c = *t.counts;
    text.Sample(TableLabels(t),
                c.oldest_due_ns.has_value()
                    ? std::max<double>(0, (c.now_ns - *c.oldest_due_ns) / 1e9)
                    : 0);
  }
  text.Family("msgq_counts_corrections_total", MetricType::kCounter,
              "Counting reads (load aside) that found the kept counts wrong "
              "and replaced them: changes the binlog did not show.");
  for (const Table& t : tables) {
    if (t.loaded && t.counts.has_value()) {
      text.Sample(TableLabels(t), static_cast<double>(t.counts->corrections));
    }
  }
}

// The latency histograms of each loaded table: its MySQL statements by
// kind, and the delays before a message is sent.
void LatencyFamilies(const std::vector<Table>& tables, MetricsText& text) {
  text.Family("msgq_mysql_statement_seconds", MetricType::kHistogram,
              "MySQL statement latency by kind: poll, fetch (binlog-named "
              "rows), write (a round's postpones, acks, nacks, extends and "
              "redrives in one transaction), purge.");
  HistogramData data;
  data.bounds.assign(StatementLatency::kBounds.begin(),
                     StatementLatency::kBounds.end());
  for (const Table& t : tables) {
    if (!t.loaded) continue;
    const std::pair<const char*, const StatementLatency*> kinds[] = {
        {"poll", &t.stats.poll_latency},
        {"fetch", &t.stats.fetch_latency},
        {"write", &t.stats.write_latency},
        {"purge", &t.stats.purge_latency}};
    for (const auto& [kind, latency] : kinds) {
      data.counts.assign(latency->buckets.begin(), latency->buckets.end());
      data.sum = latency->sum_seconds;
      MetricLabels labels = TableLabels(t);
      labels.emplace_back("kind", kind);
      text.Histogram(labels, data);
    }
  }
  using S = MessageManager::Stats;
  const std::tuple<const char*, const char*, StatementLatency S::*> delays[] = {
      {"msgq_send_delay_seconds",
       "Per message sent: from its time_next (when it became due) to its "
       "handoff to a stream.",
       &S::send_delay},
      {"msgq_commit_to_send_seconds",
       "Per message found through the binlog: from the moment msgqd read "
       "its commit on the binlog to its first handoff to a stream. The "
       "commit itself is earlier by msgq_binlog_lag_seconds (binlog "
       "timestamps have 1 s resolution).",
       &S::commit_to_send}};
  for (const auto& [name, help, field] : delays) {
    text.Family(name, MetricType::kHistogram, help);
    for (const Table& t : tables) {
      if (!t.loaded) continue;
      const StatementLatency& latency = t.stats.*field;
      data.counts.assign(latency.buckets.begin(), latency.buckets.end());
      data.sum = latency.sum_seconds;
      text.Histogram(TableLabels(t), data);
    }
  }
}

void DueFamilies(const std::vector<Table>& tables,
                 const DueDepthSampler& sampler, MetricsText& text) {
  std::vector<std::pair<const Table*, DueDepthSampler::Sample>> samples;
  for (const Table& t : tables) {
    if (!t.loaded) continue;
    if (auto s = sampler.For(t)) samples.emplace_back(&t, *s);
  }
  text.Family(
      "msgq_pending_due_messages", MetricType::kGauge,
      "Unacked rows with time_next <= now: msgq_messages{state=\"ready\"} "
      "where exact counts are kept, else counted from poller_idx "
      "alone (never the table) at most every 10 s, up to 100000 (see "
      "msgq_pending_due_capped); absent until first measured.");
  for (const auto& [t, s] : samples) {
    text.Sample(TableLabels(*t), static_cast<double>(s.depth.count));
  }
  text.Family("msgq_pending_due_capped", MetricType::kGauge,
              "1 when more rows were due than the count's cap (100000), so "
              "msgq_pending_due_messages is a lower bound.");
  for (const auto& [t, s] : samples) {
    text.Sample(TableLabels(*t), s.depth.capped ? 1 : 0);
  }
  text.Family("msgq_oldest_due_age_seconds", MetricType::kGauge,
              "At the last measurement: its time minus the smallest "
              "time_next > 0 of the due rows (rows enqueued with time_next 0 "
              "carry no due time); 0 when none.");
  for (const auto& [t, s] : samples) {
    const double age =
        s.depth.oldest_due_ns.has_value()
            ? std::max<double>(0, (s.now_ns - *s.depth.oldest_due_ns) / 1e9)
            : 0;
    text.Sample(TableLabels(*t), age);
  }
  text.Family("msgq_innodb_history_list_length", MetricType::kGauge,
              "The database server's InnoDB history list length (undo log "
              "entries not purged yet; long-running transactions make it "
              "grow), read at most every 10 s through a loaded table's "
              "pool connection; absent until first read.");
  if (std::optional<int64_t> length = sampler.HistoryLength()) {
    text.Sample({}, static_cast<double>(*length));
  }
  text.Family("msgq_innodb_oldest_transaction_seconds", MetricType::kGauge,
              "How long the database server's oldest open InnoDB "
              "transaction has been open (0 when none is), read with the "
              "history list length; absent until first read and while "
              "msgqd's user lacks the PROCESS privilege. The console names "
              "its connection.");
  if (DueDepthSampler::TransactionSample t = sampler.OldestTransactionSample();
      t.read) {
    text.Sample({}, t.oldest ? static_cast<double>(t.oldest->seconds) : 0.0);
  }
}

// Each loaded consumer group's lag (docs/design/consumer-groups.md), of
// the tables shown.
void GroupFamilies(const std::vector<Engine::GroupLag>& lags,
                   const std::vector<Table>& tables, MetricsText& text) {
  std::vector<const Engine::GroupLag*> shown;
  for (const Engine::GroupLag& g : lags) {
    if (std::any_of(tables.begin(), tables.end(), [&](const Table& t) {
          return t.keyspace == g.keyspace && t.name == g.table;
        })) {
      shown.push_back(&g);
    }
  }
  auto labels = [](const Engine::GroupLag& g) -> MetricLabels {
    return {{"group", g.group}, {"keyspace", g.keyspace}, {"table", g.table}};
  };
  text.Family("msgq_group_lag_messages", MetricType::kGauge,
              "Committed inserts the consumer group has not acked: queued "
              "for its streams or held by them (above its floor).");
  for (const Engine::GroupLag* g : shown) {
    text.Sample(labels(*g), static_cast<double>(g->messages));
  }
  text.Family("msgq_group_lag_seconds", MetricType::kGauge,
              "Now (MySQL's clock) minus the binlog timestamp (1 s "
              "resolution, the server's clock when the statement ran) of the "
              "oldest insert the consumer group has not acked; 0 when none.");
  for (const Engine::GroupLag* g : shown) {
    text.Sample(labels(*g), g->oldest_event_ns > 0
                                ? std::max<double>(
                                      0, (g->now_ns - g->oldest_event_ns) / 1e9)
                                : 0);
  }
  text.Family("msgq_group_in_flight_messages", MetricType::kGauge,
              "Messages of the consumer group held by its streams: sent and "
              "not acked.");
  for (const Engine::GroupLag* g : shown) {
    text.Sample(labels(*g), static_cast<double>(g->in_flight));
  }
}

}  // namespace

std::string RenderMetrics(const Engine& engine, const GrpcMetrics* grpc,
                          const BuildInfo& build, const DueDepthSampler* depth,
                          const TableFilter& visible) {
  MetricsText text;
  text.Family("msgq_build_info", MetricType::kGauge,
              "msgqd's version and git commit, in labels (value 1).");
  text.Sample({{"version", build.version}, {"commit", build.commit}}, 1);
  text.Family("msgq_instance_info", MetricType::kGauge,
              "This msgqd's instance id (--instance_id), as written in lease "
              "rows and shown by ListTables, in a label (value 1).");
  text.Sample({{"instance", engine.instance_id()}}, 1);
  const absl::Status health = engine.Health();
  text.Family("msgq_ready", MetricType::kGauge,
              "1 when the schema is loaded and MySQL answers (as /readyz "
              "and the gRPC health service).");
  text.Sample({}, health.ok() ? 1 : 0);
  const BinlogWatcher::Status binlog = engine.binlog_status();
  text.Family("msgq_binlog_streaming", MetricType::kGauge,
              "1 while msgqd follows the binlog (else tables are polled).");
  text.Sample({}, binlog.streaming ? 1 : 0);
  text.Family("msgq_binlog_lag_seconds", MetricType::kGauge,
              "Seconds behind the binlog: now minus the timestamp (1 s "
              "resolution) of the last binlog event read while events keep "
              "arriving; 0 once the server sent a heartbeat (it does after "
              "1 s with nothing to send: caught up), 0 while not streaming.");
  text.Sample({}, binlog.lag_seconds);
  text.Family("msgq_binlog_position_resets_total", MetricType::kCounter,
              "Times the binlog resume position was gone and following "
              "restarted from the server's current position.");
  text.Sample({}, static_cast<double>(binlog.position_resets));
  text.Family("msgq_binlog_evictions_total", MetricType::kCounter,
              "Times another replica with the same server id took the "
              "binlog dump over.");
  text.Sample({}, static_cast<double>(binlog.evictions));
  std::vector<Table> tables = engine.ListTables();
  if (visible != nullptr) {
    std::erase_if(tables, [&](const Table& t) { return !visible(t); });
  }
  text.Family("msgq_tables", MetricType::kGauge,
              "Message tables found, loaded or not.");
  text.Sample({}, static_cast<double>(tables.size()));
  TableFamilies(tables, text);
  LatencyFamilies(tables, text);
  OwnershipFamilies(tables, text);
  GroupFamilies(engine.GroupLags(), tables, text);
  if (depth != nullptr) DueFamilies(tables, *depth, text);
  if (grpc != nullptr) grpc->Collect(text);
  return text.Take();
}

}  // namespace msgq
