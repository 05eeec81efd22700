// The numbers of `msgq stats`: rates from two ListTables samples of the same
// servers and the depths of the later one, as an aligned table or JSON.
//
// A rate is (after - before) / elapsed per counter (sent, acked,
// redelivered, nacked, died). When any counter of a table went down between
// the samples (msgqd restarted, so its counters started over), none of that
// table's rates is known: nullopt, printed "-" in text and null in JSON,
// never a negative number (nor a misleading 0). A table missing from the
// first sample has no rates either.
//
// Example:
//   std::vector<StatsRow> rows = ComputeStats(before, after, absl::Seconds(1));
//   std::cout << FormatStatsText(rows, /*show_server=*/false);
//
// Thread-safe (pure functions).
#ifndef MSGQ_CLIENT_CLI_STATS_FORMAT_H_
#define MSGQ_CLIENT_CLI_STATS_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq {

// One server's ListTables answer.
struct StatsSample {
  std::string server;
  std::vector<v1::TableStatus> tables;
};

// One (server, table) of the later sample.
struct StatsRow {
  std::string server;
  std::string keyspace;
  std::string name;
  // Counters of the later sample.
  int64_t sent = 0, acked = 0, redelivered = 0, nacked = 0, died = 0;
  // Per second between the samples; nullopt: see the file comment.
  std::optional<double> sent_rate, acked_rate, redelivered_rate, nacked_rate,
      died_rate;
  // Depths of the later sample (dead: -1 until counted).
  int64_t cached = 0, in_flight = 0, dead = -1, subscribers = 0;
};

// (after - before) / elapsed; nullopt when after < before or elapsed <= 0.
std::optional<double> CounterRate(int64_t before, int64_t after,
                                  absl::Duration elapsed);

// One row per loaded table of each sample of `after`, in order, matched with
// the same server's sample in `before` by keyspace and name. `table`, when
// not empty, keeps only tables of that name.
std::vector<StatsRow> ComputeStats(const std::vector<StatsSample>& before,
                                   const std::vector<StatsSample>& after,
                                   absl::Duration elapsed,
                                   const std::string& table = "");

// Columns aligned as in `msgq tables`:
//   [SERVER] KEYSPACE NAME SENT/S ACKED/S REDELIVERED/S NACKED/S DIED/S
//   CACHED IN_FLIGHT DEAD SUBSCRIBERS
// Rates with one decimal ("12.5"), "-" when unknown; DEAD "-" when -1.
// Ends with a newline.
std::string FormatStatsText(const std::vector<StatsRow>& rows,
                            bool show_server);

// One line of JSON, no newline:
// {"interval_s":1.0,"tables":[{"server":"A","keyspace":"msgq","name":"q",
//  "sent":N,"acked":N,"redelivered":N,"nacked":N,"died":N,
//  "sent_per_s":R,"acked_per_s":R,"redelivered_per_s":R,"nacked_per_s":R,
//  "died_per_s":R,"cached":N,"in_flight":N,"dead":N,"subscribers":N},...]}
// with null for unknown rates.
std::string FormatStatsJson(const std::vector<StatsRow>& rows,
                            absl::Duration elapsed);

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_STATS_FORMAT_H_
