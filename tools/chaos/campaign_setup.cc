#include "tools/chaos/campaign_setup.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq::chaos {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TableComment(double ack_wait, int batch_size) {
  return absl::StrFormat(
      "vitess_message,vt_ack_wait=%g,vt_purge_after=86400,"
      "vt_batch_size=%d,vt_cache_size=1000,vt_poller_interval=5,"
      "vt_max_backoff=%g",
      ack_wait, batch_size, 2 * ack_wait);
}

}  // namespace

// MariaDB's setup (the table, and the decoy with --hostile) and msgqd's
// flags (with --hostile, TLS, tokens, a policy and all three ports).
Cluster::Options ClusterOptions(const CampaignOptions& o,
                                const std::string& work_dir,
                                const SoakFiles& files,
                                std::atomic<int>* msgqd_pid) {
  Cluster::Options co;
  co.source_dir = o.source_dir;
  co.msgqd_path = o.msgqd_path;
  co.work_dir = work_dir;
  co.msgqd_pid = msgqd_pid;
  co.msgqd_args = {absl::StrCat("--databases=", kDatabase)};
  if (o.hostile) {
    co.msgqd_args.insert(
        co.msgqd_args.end(),
        {"--tls_cert=" + files.cert_file, "--tls_key=" + files.key_file,
         "--auth_tokens_file=" + files.tokens_file,
         "--auth_policy_file=" + files.policy_file, "--http_listen=127.0.0.1:0",
         "--mysql_protocol_listen=127.0.0.1:0"});
  }
  co.setup_sql = {
      absl::StrCat("CREATE DATABASE IF NOT EXISTS ", kDatabase),
      absl::StrFormat(
          "CREATE TABLE IF NOT EXISTS %s.%s (id bigint NOT NULL, "
          "priority tinyint NOT NULL DEFAULT 50, epoch bigint NOT NULL "
          "DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT "
          "NULL, message json, PRIMARY KEY (id), INDEX poller_idx "
          "(time_acked, priority, time_next)) COMMENT '%s'",
          kDatabase, kTable, TableComment(o.ack_wait_s, 10)),
      absl::StrCat("TRUNCATE TABLE ", kDatabase, ".", kTable)};
  if (o.hostile) {
    co.setup_sql.push_back(
        absl::StrFormat("CREATE TABLE IF NOT EXISTS %s.%s LIKE %s.%s",
                        kDatabase, kDecoy, kDatabase, kTable));
    co.setup_sql.push_back(
        absl::StrCat("TRUNCATE TABLE ", kDatabase, ".", kDecoy));
  }
  return co;
}

Producers::Options ProducerOptions(const CampaignOptions& o,
                                   const Cluster& cluster) {
  Producers::Options po;
  po.mysql = cluster.mysql();
  po.table = absl::StrCat(kDatabase, ".", kTable);
  po.threads = o.producers;
  po.tx_per_second = o.rate;
  po.max_schedule_s = 3 * o.ack_wait_s;
  po.seed = o.seed;
  return po;
}

Subscribers::Options SubscriberOptions(const CampaignOptions& o,
                                       const Cluster& cluster,
                                       const SoakFiles& files, int mysql_port) {
  Subscribers::Options so;
  so.address = cluster.address();
  so.keyspace = kDatabase;
  so.table = kTable;
  so.streams = o.subscribers;
  so.ack_wait = absl::Seconds(o.ack_wait_s);
  so.seed = o.seed;
  if (o.hostile) {
    // Acks go through at once: every duplicate is then the soak's doing.
    so.skip_fraction = 0;
    so.delay_fraction = 0;
    so.tls_ca_pem = ReadFile(files.ca_file);
    so.token = files.worker_token;
    so.mysql_streams = o.soak.mysql_subscribers;
    so.mysql_port = mysql_port;
    so.mysql_user = "worker";
    so.mysql_ca_file = files.ca_file;
  }
  return so;
}

HostilePhase::Options HostileOptions(const CampaignOptions& o,
                                     const SoakFiles& files, Ports ports,
                                     Subscribers* subscribers,
                                     std::atomic<int>* msgqd_pid) {
  HostilePhase::Options h;
  h.calm = absl::Seconds(o.soak.calm_s);
  h.probes.https_port = ports.https;
  h.probes.mysql_port = ports.mysql;
  h.probes.grpc_port = ports.grpc;
  h.probes.ca_file = files.ca_file;
  h.probes.token = files.worker_token;
  h.probes.interval = absl::Seconds(o.soak.probe_interval_s);
  h.sampler.pid = [msgqd_pid] { return msgqd_pid->load(); };
  Hostile::Options& ho = h.attack;
  ho.grpc_port = ports.grpc;
  ho.https_port = ports.https;
  ho.mysql_port = ports.mysql;
  ho.ca_file = files.ca_file;
  ho.keyspace = kDatabase;
  ho.table = kTable;
  ho.decoy = kDecoy;
  ho.worker_token = files.worker_token;
  ho.idler_token = files.idler_token;
  ho.ops_token = files.ops_token;
  ho.mallory_token = files.mallory_token;
  ho.hog_token = files.hog_token;
  ho.victims = [subscribers] { return subscribers->MysqlConnectionIds(); };
  ho.duration = absl::Seconds(o.duration_s);
  ho.hold = absl::Seconds(o.soak.hold_s);
  ho.gap = absl::Seconds(o.soak.gap_s);
  ho.interval = absl::Seconds(o.soak.interval_s);
  ho.mid_record = o.soak.mid_record;
  ho.silent_tls = o.soak.silent_tls;
  ho.silent_tcp = o.soak.silent_tcp;
  ho.hoard = o.soak.hoard;
  ho.idle = o.soak.idle;
  ho.big_query_threads = o.soak.big_queries;
  return h;
}

FaultPlan::Options FaultOptions(const CampaignOptions& o) {
  FaultPlan::Options f;
  f.msgqd_kills = o.msgqd_kills;
  f.mariadb_restarts = o.mariadb_restarts;
  f.sigstops = o.sigstops;
  f.dump_kills = o.dump_kills;
  f.host_crashes = o.host_crashes;
  f.table_reloads = o.table_reloads;
  f.ack_wait_s = o.ack_wait_s;
  f.alter = [ack_wait = o.ack_wait_s](int batch) {
    return absl::StrCat("ALTER TABLE ", kDatabase, ".", kTable, " COMMENT '",
                        TableComment(ack_wait, batch), "'");
  };
  return f;
}

}  // namespace msgq::chaos
