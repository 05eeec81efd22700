// The campaign's cluster and clients, configured from its options: the
// table (and with --hostile the decoy table and msgqd's TLS, tokens,
// policy and ports), the producers, the subscribers, the hostile phase and
// the fault plan.
//
// Thread-safe (pure functions).
#ifndef MSGQ_TOOLS_CHAOS_CAMPAIGN_SETUP_H_
#define MSGQ_TOOLS_CHAOS_CAMPAIGN_SETUP_H_

#include <atomic>
#include <string>

#include "tools/chaos/campaign.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/fault_plan.h"
#include "tools/chaos/hostile_phase.h"
#include "tools/chaos/producers.h"
#include "tools/chaos/soak_files.h"
#include "tools/chaos/subscribers.h"

namespace msgq::chaos {

inline constexpr char kDatabase[] = "chaos";
inline constexpr char kTable[] = "q";
// --hostile: a table no producer writes, for the hostile clients' streams,
// acks and forms, so that the Ledger of kTable stays exact.
inline constexpr char kDecoy[] = "decoy";

// msgqd's three ports (0 when off).
struct Ports {
  int grpc = 0, https = 0, mysql = 0;
};

// `files` are used with --hostile only; `msgqd_pid` holds the running
// msgqd's pid.
Cluster::Options ClusterOptions(const CampaignOptions& o,
                                const std::string& work_dir,
                                const SoakFiles& files,
                                std::atomic<int>* msgqd_pid);
Producers::Options ProducerOptions(const CampaignOptions& o,
                                   const Cluster& cluster);
Subscribers::Options SubscriberOptions(const CampaignOptions& o,
                                       const Cluster& cluster,
                                       const SoakFiles& files, int mysql_port);
// The hostile clients disconnect `subscribers`' MySQL connections.
HostilePhase::Options HostileOptions(const CampaignOptions& o,
                                     const SoakFiles& files, Ports ports,
                                     Subscribers* subscribers,
                                     std::atomic<int>* msgqd_pid);
FaultPlan::Options FaultOptions(const CampaignOptions& o);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_CAMPAIGN_SETUP_H_
