// SubscriberPool: S subscribers of one or more message tables (stream i
// reads tables[i mod T]), each a MessageStream on its own gRPC channel (its
// own TCP connection over loopback). Streams are read either by a thread
// each with the sync ClientReader, or by gRPC callback reactors (no thread
// per stream; for hundreds of streams). Every received batch is recorded in a
// DeliveryLog and acked with one MessageAck, either asynchronously (callback
// API; up to max_acks_in_flight per stream, so reading never waits on an
// ack's MySQL commit) or synchronously (the stream reads its next batch only
// once the ack returned). A failed ack's ids are retried with the stream's
// next ack; a stream that ends is reopened 50 ms later.
//
// Thread-safe. Start() once; Stop() (also run by the destructor) cancels the
// streams, waits for acks in flight and joins.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/v1/messaging.pb.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/delivery_log.h"
#include "tools/msgq_bench/options.h"

namespace msgq::bench {

class SubscriberPool {
 public:
  struct Options {
    std::string address;
    std::string keyspace;
    // Not empty; stream i reads tables[i % tables.size()].
    std::vector<std::string> tables;
    int streams = 4;
    AckMode ack_mode = AckMode::kAsync;
    int max_acks_in_flight = 32;
    // Callback reactors instead of a reader thread per stream.
    bool callback_reader = false;
  };
  // batches, rows, ack_rpcs, ack_errors, acked (rows msgqd reported as newly
  // acked), stream_restarts.
  using Stats = pb::Subscribers;

  SubscriberPool(Options options, DeliveryLog* log);
  ~SubscriberPool();
  SubscriberPool(const SubscriberPool&) = delete;
  SubscriberPool& operator=(const SubscriberPool&) = delete;

  void Start();
  void Stop();

  // Blocks until msgqd has reported `n` rows acked, or `timeout`. Returns
  // whether it got there.
  bool WaitAcked(int64_t n, absl::Duration timeout);
  // When the acked count first reached the WaitAcked target (bench clock),
  // 0 if not yet.
  int64_t reached_ns() const;

  int64_t acked() const { return acked_.load(std::memory_order_relaxed); }
  Stats stats() const;

 private:
  struct Stream;
  struct AckCall;
  class Reader;
  struct Restart {
    int64_t due_ns;
    Stream* stream;
  };

  // Thread reader.
  void ReadLoop(Stream* stream);
  void SendAck(Stream* stream, std::unique_ptr<AckCall> call);
  // Callback reader: opens `stream` with a new Reader (unless stopping).
  void OpenReader(Stream* stream);
  // A batch a Reader received; whether it may read the next one now.
  bool OnBatch(Stream* stream, std::unique_ptr<AckCall> call);
  void OnReaderDone(Stream* stream);
  // Reopens ended streams when due, until Stop().
  void RestartLoop();

  // Records a received batch; the ack of its ids.
  std::unique_ptr<AckCall> Receive(Stream* stream,
                                   const v1::MessageStreamResponse& response);
  // Sends an ack with the callback API; OnAckDone follows.
  void IssueAck(Stream* stream, std::unique_ptr<AckCall> call);
  void OnAckDone(Stream* stream, AckCall* call, bool ok, int64_t acked);

  const Options options_;
  DeliveryLog* const log_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::thread> threads_;
  std::thread restarter_;  // callback reader only

  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> rows_{0};
  std::atomic<int64_t> ack_rpcs_{0};
  std::atomic<int64_t> ack_errors_{0};
  std::atomic<int64_t> restarts_{0};
  std::atomic<int64_t> acked_{0};
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  int64_t target_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t reached_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Callback reader: Readers not yet done, and ended streams to reopen.
  int live_readers_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Restart> restarts_due_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_SUBSCRIBERS_H_
