// Engine::ClockLoop and Engine::MeasureDbClock (engine.h): MySQL's clock,
// measured once a second, and at once when a manager asks for a reading
// (DbReadings), for the DbClock every table's manager reads; and with it
// whether the server is read-only (for readiness).
#include <optional>

#include "absl/strings/numbers.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {
namespace {

constexpr absl::Duration kMeasureEvery = absl::Seconds(1);
constexpr absl::Duration kStepLogged = absl::Seconds(1);

}  // namespace

void Engine::ClockLoop() {
  // Engine::Stop closes db_clock_.
  while (db_clock_.WaitForMeasure(clock_->MonotonicNow() + kMeasureEvery)) {
    MeasureDbClock();
  }
}

void Engine::MeasureDbClock() {
  db_clock_.MeasureStarts();
  const bool ok = MeasureDbClockOnce();
  db_clock_.MeasureEnds(ok);
}

bool Engine::MeasureDbClockOnce() {
  absl::StatusOr<MysqlPool::Lease> conn =
      pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
  if (!conn.ok()) return false;  // the estimate carries on
  const absl::Time sent = clock_->MonotonicNow();
  // The read-only state rides along: readiness needs it (MysqlActivity).
  absl::StatusOr<QueryResult> r = (*conn)->Query(
      "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), "
      "@@global.read_only, @@global.innodb_read_only");
  const absl::Time received = clock_->MonotonicNow();
  int64_t micros = 0;
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 3 ||
      !r->rows[0][0].has_value() ||
      !absl::SimpleAtoi(*r->rows[0][0], &micros)) {
    return false;
  }
  options_.mysql.activity->ObserveReadOnly(r->rows[0][1].value_or("0") != "0",
                                           r->rows[0][2].value_or("0") != "0");
  const std::optional<absl::Duration> before = db_clock_.offset();
  db_clock_.Observe(absl::FromUnixMicros(micros), sent, received);
  const std::optional<absl::Duration> after = db_clock_.offset();
  if (before.has_value() && absl::AbsDuration(*after - *before) > kStepLogged) {
    LogWarning("MySQL's clock stepped by ",
               absl::FormatDuration(*after - *before),
               "; due times follow MySQL's clock");
  }
  return true;
}

}  // namespace msgq
