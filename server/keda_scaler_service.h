// KedaScalerService: KEDA's external scaler (externalscaler.ExternalScaler,
// proto/externalscaler/externalscaler.proto) on msgqd's gRPC port, so that
// KEDA scales a table's consumers from its exact counts: IsActive,
// StreamIsActive, GetMetricSpec and GetMetrics for the table the trigger's
// metadata names. The metric, its name and the metadata keys:
// server/keda_scaler.h. Usage: docs/operations.md#autoscaling-with-keda.
//
// Every call authenticates its caller as ListTables does and sees only a
// table ListTables would list to it (any grant on the table, with a policy;
// server/auth/authorizer.h): UNAUTHENTICATED, PERMISSION_DENIED
// "permission denied: 'P' may not see K.T" (whether or not the table
// exists). Then: INVALID_ARGUMENT for bad metadata (keda_scaler.h); the
// table's lookup errors as Engine::Find (NOT_FOUND "message table `K`.`T`
// not found", FAILED_PRECONDITION with its load error, UNAVAILABLE before
// the schema is read); UNAVAILABLE "counts of `K`.`T` are not loaded yet"
// before its first counting read (IsActive, GetMetrics); FAILED_PRECONDITION
// with --exact_counts=false. GetMetrics answers with the metric name it was
// asked for (KEDA asks for the one GetMetricSpec gave).
//
// StreamIsActive sends the table's activity at once (once its counts are
// loaded) and then each time it changes, from the engine's counts listener
// (Engine::AddCountsListener): the binlog row event that makes a table
// active reaches KEDA without waiting for a poll. A row that becomes due
// with no binlog event (a scheduled message whose time_next passes) is
// seen by KEDA's next IsActive poll instead. The stream ends with the
// table's lookup error (NOT_FOUND, FAILED_PRECONDITION) when the table goes
// away, and with UNAUTHENTICATED or PERMISSION_DENIED when a reload of the
// tokens or policy file takes the caller's credential or its sight of the
// table away. Open streams are bounded: Options::max_streams_per_connection and
// max_streams (RESOURCE_EXHAUSTED beyond).
//
// Handlers never block: the unary calls read in-memory state and finish at
// once; a stream's writes start from its reactions or from the listener
// (one write in flight, the latest state kept, nothing else queued).
//
// Thread-safety: thread-safe; gRPC and the engine's threads call it.
#ifndef MSGQ_SERVER_KEDA_SCALER_SERVICE_H_
#define MSGQ_SERVER_KEDA_SCALER_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/engine.h"
#include "externalscaler/externalscaler.grpc.pb.h"
#include "server/auth/authorizer.h"
#include "server/auth/peer_directory.h"

namespace msgq {

class KedaScalerService final
    : public externalscaler::ExternalScaler::CallbackService {
 public:
  struct Options {
    // StreamIsActive calls open at once on one connection, and in all.
    int max_streams_per_connection = 16;
    int max_streams = 1024;
  };

  // `engine`, `authorizer` and `peers` (may be null) must outlive the
  // service; the service must outlive every call (the gRPC server is shut
  // down first). Registers a counts listener with `engine` until destroyed.
  KedaScalerService(Engine* engine, auth::Authorizer* authorizer,
                    const auth::PeerDirectory* peers, Options options);
  KedaScalerService(Engine* engine, auth::Authorizer* authorizer,
                    const auth::PeerDirectory* peers)
      : KedaScalerService(engine, authorizer, peers, Options()) {}
  ~KedaScalerService() override;
  KedaScalerService(const KedaScalerService&) = delete;
  KedaScalerService& operator=(const KedaScalerService&) = delete;

  grpc::ServerUnaryReactor* IsActive(
      grpc::CallbackServerContext* context,
      const externalscaler::ScaledObjectRef* request,
      externalscaler::IsActiveResponse* response) override;
  grpc::ServerWriteReactor<externalscaler::IsActiveResponse>* StreamIsActive(
      grpc::CallbackServerContext* context,
      const externalscaler::ScaledObjectRef* request) override;
  grpc::ServerUnaryReactor* GetMetricSpec(
      grpc::CallbackServerContext* context,
      const externalscaler::ScaledObjectRef* request,
      externalscaler::GetMetricSpecResponse* response) override;
  grpc::ServerUnaryReactor* GetMetrics(
      grpc::CallbackServerContext* context,
      const externalscaler::GetMetricsRequest* request,
      externalscaler::GetMetricsResponse* response) override;

  // StreamIsActive calls open now.
  int open_streams() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class ActivityStream;
  class ActivityOutbox;
  struct Resolved;
  using Key = std::pair<std::string, std::string>;  // keyspace, table

  // The caller, its trigger and its table, or the error to answer.
  absl::StatusOr<Resolved> Resolve(
      const grpc::CallbackServerContext& context,
      const externalscaler::ScaledObjectRef& ref) const;
  // Takes a stream slot of `connection` for `outbox` on `key`;
  // RESOURCE_EXHAUSTED when a bound is reached.
  absl::Status AddStream(const Key& key, const std::string& connection,
                         std::shared_ptr<ActivityOutbox> outbox)
      ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveStream(const Key& key, const std::string& connection,
                    const ActivityOutbox* outbox) ABSL_LOCKS_EXCLUDED(mu_);
  // The engine's counts listener: updates the streams of the table.
  void OnCountsChanged(const std::string& keyspace, const std::string& table)
      ABSL_LOCKS_EXCLUDED(mu_);

  Engine* const engine_;
  auth::Authorizer* const authorizer_;
  const auth::PeerDirectory* const peers_;
  const Options options_;
  uint64_t listener_ = 0;  // set in the constructor

  mutable absl::Mutex mu_;
  std::multimap<Key, std::shared_ptr<ActivityOutbox>> streams_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> per_connection_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_KEDA_SCALER_SERVICE_H_
