#include "tools/msgq_bench/preload.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

absl::Status InsertRange(const MysqlOptions& mysql, const PreloadSpec& spec,
                         int64_t first, int64_t last) {
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
      MysqlConnection::Connect(mysql);
  if (!conn.ok()) return conn.status();
  std::string sql;
  for (int64_t id = first; id <= last;) {
    const int64_t end = std::min(last, id + spec.rows_per_insert - 1);
    sql = absl::StrCat("INSERT INTO ", spec.qualified_table, " (id, ",
                       spec.payload_column, ") VALUES ");
    for (int64_t i = id; i <= end; ++i) {
      if (i != id) sql.push_back(',');
      absl::StrAppend(&sql, "(", i, ",'", Payload(i, spec.payload_bytes), "')");
    }
    absl::StatusOr<uint64_t> n = (*conn)->Execute(sql);
    if (!n.ok()) return n.status();
    id = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> Preload(const MysqlOptions& mysql,
                               const PreloadSpec& spec) {
  const int64_t start = NowNs();
  const int k = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(spec.connections, spec.rows)));
  absl::Mutex mu;
  absl::Status first_error;
  std::vector<std::thread> threads;
  const int64_t per = (spec.rows + k - 1) / k;
  for (int t = 0; t < k; ++t) {
    const int64_t first = 1 + t * per;
    const int64_t last = std::min(spec.rows, first + per - 1);
    if (first > last) break;
    threads.emplace_back([&, first, last] {
      absl::Status s = InsertRange(mysql, spec, first, last);
      absl::MutexLock lock(&mu);
      if (!s.ok() && first_error.ok()) first_error = s;
    });
  }
  for (std::thread& t : threads) t.join();
  if (!first_error.ok()) return first_error;
  return NsToSeconds(NowNs() - start);
}

}  // namespace msgq::bench
