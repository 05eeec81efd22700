// The campaign's results on stdout: the faults run, the producers' and
// subscribers' counts, the ledger's verdict (ledger.h) and its violations,
// in the lines docs/reliability.md shows. The hostile soak's own report is
// soak_report.h.
//
// Thread-compatible (writes stdout).
#ifndef MSGQ_TOOLS_CHAOS_CAMPAIGN_REPORT_H_
#define MSGQ_TOOLS_CHAOS_CAMPAIGN_REPORT_H_

#include <cstdint>

#include "absl/time/time.h"
#include "tools/chaos/campaign.h"
#include "tools/chaos/ledger.h"
#include "tools/chaos/producers.h"
#include "tools/chaos/subscribers.h"

namespace msgq::chaos {

struct CampaignResults {
  absl::Duration fault_phase;
  absl::Duration drain;
  int dumps_missing = 0;  // dump KILLs that found no dump connection
  int msgqd_starts = 0;
  Report ledger;
  Producers::Stats producers;
  Subscribers::Stats subscribers;
};

// Prints the results of a campaign run with `options` (everything but the
// final RESULT line).
void PrintCampaignResults(const CampaignOptions& options,
                          const CampaignResults& results);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_CAMPAIGN_REPORT_H_
