// The bench's side of msgqd's gRPC API.
//
// SubscriberPool: S subscribers of one or more message tables (stream i
// reads tables[i mod T]), each a MessageStream on its own gRPC channel (its
// own TCP connection over loopback), read by gRPC callback reactors (no
// thread per stream, so hundreds of streams cost no hundreds of threads).
// Every received batch is recorded in a DeliveryLog and acked with one
// MessageAck, asynchronously: up to max_acks_in_flight per stream, so reading
// never waits on an ack's MySQL commit (with that many in flight, the next
// read waits for one to return); each ack's round trip is recorded. A failed
// ack's ids are retried with the stream's next ack; a stream that ends is
// reopened 50 ms later.
//
// Thread-safe. Start() at most once; Stop() (also run by the destructor)
// cancels the streams, waits for acks in flight and joins.
//
// DeliveryLog: what the subscribers received. WaitForTables: blocks until
// msgqd has loaded message tables.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/v1/messaging.pb.h"
#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// DeliveryLog: what the subscribers received, per message id 1..max_id: when
// first (for latency and loss) and how often beyond that (duplicates).
// Lock-free, thread-safe; 8 bytes per id.
class DeliveryLog {
 public:
  explicit DeliveryLog(int64_t max_id) : first_ns_(max_id + 1) {}

  // Notes that `id` arrived at `now_ns` (bench clock, > 0).
  void Record(int64_t id, int64_t now_ns);

  // Ids received at least once / receipts beyond the first / ids outside
  // 1..max_id.
  int64_t unique() const { return unique_.load(std::memory_order_relaxed); }
  int64_t duplicates() const { return duplicates_.load(); }
  int64_t unexpected() const { return unexpected_.load(); }
  // First receipt of `id`, 0 if never received (requires 1 <= id <= max_id).
  int64_t first_ns(int64_t id) const { return first_ns_[id].load(); }
  // Earliest receipt of any id; 0 before the first.
  int64_t earliest_ns() const { return earliest_ns_.load(); }

 private:
  std::vector<std::atomic<int64_t>> first_ns_;
  std::atomic<int64_t> unique_{0};
  std::atomic<int64_t> duplicates_{0};
  std::atomic<int64_t> unexpected_{0};
  std::atomic<int64_t> earliest_ns_{0};
};

class SubscriberPool {
 public:
  struct Options {
    std::string address;
    std::string keyspace;
    // Not empty; stream i reads tables[i % tables.size()].
    std::vector<std::string> tables;
    int streams = 4;
    int max_acks_in_flight = 32;  // per stream
  };

  SubscriberPool(Options options, DeliveryLog* log);
  ~SubscriberPool();
  SubscriberPool(const SubscriberPool&) = delete;
  SubscriberPool& operator=(const SubscriberPool&) = delete;

  void Start();
  void Stop();

  // Blocks until msgqd has reported `n` rows acked, or `timeout`. Returns
  // when the count first reached `n` (bench clock), 0 if it did not.
  int64_t WaitAcked(int64_t n, absl::Duration timeout);

  int64_t acked() const { return acked_.load(std::memory_order_relaxed); }
  // batches, rows, ack_rpcs, ack_errors, acked (rows msgqd reported as newly
  // acked), stream_restarts, and the round trips of the first
  // kMaxAckSamples successful acks (ack_latency).
  pb::Subscribers stats() const;

  static constexpr size_t kMaxAckSamples = size_t{1} << 21;

 private:
  struct Stream;
  struct AckCall;
  class Reader;

  // Opens `stream` with a new Reader (unless stopping).
  void OpenReader(Stream* stream);
  // Records a batch a Reader received and acks it; whether the Reader may
  // read the next one now.
  bool OnBatch(Stream* stream, const v1::MessageStreamResponse& response);
  void OnReaderDone(Stream* stream);
  // Reopens ended streams when due, until Stop().
  void RestartLoop();

  // Sends an ack (counted in flight by the caller) with the callback API;
  // OnAckDone runs when it returns.
  void IssueAck(Stream* stream, std::unique_ptr<AckCall> call);
  void OnAckDone(Stream* stream, std::unique_ptr<AckCall> call, bool ok);

  const Options options_;
  DeliveryLog* const log_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::thread restarter_;

  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> rows_{0};
  std::atomic<int64_t> ack_rpcs_{0};
  std::atomic<int64_t> ack_errors_{0};
  std::atomic<int64_t> restarts_{0};
  std::atomic<int64_t> acked_{0};
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  // Round trips of successful acks, at most kMaxAckSamples.
  std::vector<int64_t> ack_rtt_ns_ ABSL_GUARDED_BY(mu_);
  int64_t target_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t reached_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Readers not yet done, and ended streams to reopen (when due, bench
  // clock).
  int live_readers_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<int64_t, Stream*>> restarts_due_ ABSL_GUARDED_BY(mu_);
};

// Polls ListTables on `address` (one call per poll, however many tables)
// until every table of `tables` in `keyspace` is loaded and has the
// subscribers of a SubscriberPool of `streams` streams (0: any); returns
// their statuses in the order of `tables`. DEADLINE_EXCEEDED after `timeout`,
// naming how many are not ready, the first of them and why (msgqd's error,
// or the RPC's).
absl::StatusOr<std::vector<v1::TableStatus>> WaitForTables(
    const std::string& address, const std::string& keyspace,
    const std::vector<std::string>& tables, int streams,
    absl::Duration timeout);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_
