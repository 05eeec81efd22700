// Subscribers: S MessageStream subscribers of the campaign's table, each on
// its own gRPC channel (a new one after every stream end: msgqd restarts on
// the same address), each with a reader thread that records every received row
// in the Ledger, with the epoch it was streamed with, and an acker thread that
// acks them (MessageAck, up to 500 ids per call, a failed call's ids retried
// 200 ms later). While `faulty` is on, a
// received id is sometimes never acked (skip_fraction: msgqd must redeliver
// it after its ack wait) or acked late (delay_fraction: U(0, 2 ack_wait)
// later, so a redelivery may race the ack).
//
// With `tls_ca_pem` the channels use TLS (trusting that CA) and with `token`
// every call carries "authorization: Bearer <token>". `mysql_streams` more
// subscribers (indexes after the gRPC ones) read the table over msgqd's
// MySQL-protocol port instead: each logs in as `mysql_user` with `token`
// as its password (over TLS when `mysql_ca_file` is set), runs `stream *
// from keyspace.table`, records each row it reads in the Ledger like the
// others, and acks over gRPC through its own acker thread; a stream that
// ends (an error, a KILL, a read timeout) is counted and started again.
//
// Thread-safe. Start() once, Stop() (also the destructor) cancels and joins;
// ids still waiting for their ack then stay unacked.
#ifndef MSGQ_TOOLS_CHAOS_SUBSCRIBERS_H_
#define MSGQ_TOOLS_CHAOS_SUBSCRIBERS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/chaos/ledger.h"

namespace msgq::chaos {

// "UNAVAILABLE", "PERMISSION_DENIED"... ("?" for a code out of range).
std::string GrpcCodeName(grpc::StatusCode code);

class Subscribers {
 public:
  struct Options {
    std::string address;
    std::string keyspace;
    std::string table;
    int streams = 3;
    absl::Duration ack_wait = absl::Seconds(2);
    double skip_fraction = 0.03;
    double delay_fraction = 0.05;
    uint64_t seed = 1;
    std::string tls_ca_pem;  // empty: plaintext channels
    std::string token;       // empty: no authorization header
    int mysql_streams = 0;
    int mysql_port = 0;  // on 127.0.0.1
    std::string mysql_user;
    std::string mysql_ca_file;
    // A MySQL stream with no row for this long is started again.
    absl::Duration mysql_read_timeout = absl::Seconds(60);
  };
  struct Stats {
    int64_t rows = 0, ack_calls = 0, ack_errors = 0, acked = 0, skipped = 0,
            delayed = 0, reconnects = 0;
    int64_t mysql_rows = 0, mysql_logins = 0;  // of the MySQL streams
    // How streams ended and acks failed: "stream UNAVAILABLE: <msg>" -> n.
    std::map<std::string, int64_t> errors;
  };

  Subscribers(Options options, Ledger* ledger);
  ~Subscribers();

  void Start();
  void Stop();
  // Turns skipped and delayed acks on or off (off for the final drain).
  void SetFaulty(bool faulty) { faulty_.store(faulty); }
  Stats stats() const;
  // The connection ids of the MySQL-protocol streams logged in now.
  std::vector<uint32_t> MysqlConnectionIds() const;

 private:
  struct Stream;
  std::shared_ptr<v1::Messaging::Stub> NewStub() const;
  void Read(Stream* s);
  void ReadMysql(Stream* s);
  // Records `ids`, received at `now` with `epochs`, and queues them for the
  // acker (or skips or delays them while faulty).
  void Receive(Stream* s, const std::vector<int64_t>& ids,
               const std::vector<int64_t>& epochs, int64_t now,
               std::mt19937_64& rng);
  void Ack(Stream* s);
  void Prepare(grpc::ClientContext* context) const;
  void CountError(const char* what, const grpc::Status& status);
  void CountError(const std::string& what);

  const Options options_;
  Ledger* const ledger_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> faulty_{true};
  std::atomic<int64_t> rows_{0}, ack_calls_{0}, ack_errors_{0}, acked_{0},
      skipped_{0}, delayed_{0}, reconnects_{0};
  std::atomic<int64_t> mysql_rows_{0}, mysql_logins_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_SUBSCRIBERS_H_
