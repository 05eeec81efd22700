// OwnEchoes: msgq's own committed writes of one table whose echo the
// binlog has not shown yet: acks and postpones, so that the echo is known
// as msgq's own (rule 5 of row_reconciler.h), and every row msgq wrote
// (postpones, nacks, extends), so that a change the binlog shows before
// that write's echo is known to be older than it (rule 7).
//
// On MariaDB with a binary log each write's commit names its GTID
// ("domain-server-sequence", WriteResult::gtid) and each change carries
// the GTID of its transaction (RowChange::gtid): an echo is the change
// whose GTID is the write's, exactly. A write's facts are kept from its
// commit until the binlog shows a change of a later transaction of the
// same domain (the binlog is in commit order, so its echo, if any, has
// passed), and not at all when such a change was shown before the commit
// was reported. Where the server names no GTIDs (MySQL, or no binary log:
// then no change is ever shown), a committed write's facts are matched by
// id: an ack by the next ack of the id, a postpone by the next change of
// the id (its echo when its time_next is the one written); for rule 7, a
// row written waits for the change of the id showing the time_next
// written, or for the id shown gone.
//
// Bounds: the facts of writes whose echo has not passed, so about what is
// in flight while the binlog is followed; writes naming at most `capacity`
// ids in all (the oldest go first: forgetting a fact only loses a check,
// as row_reconciler.h says). Nothing is kept for a time.
//
// Example:
//   OwnEchoes echoes;
//   echoes.Committed(std::string("0-1-7"), {"a"}, {});
//   echoes.Shown(change);             // change.gtid == "0-1-7"
//   echoes.TakeAck(change);           // true: msgq's own ack
//
// Not thread-safe: the owning RowReconciler is guarded by its manager.
#ifndef MSGQ_ENGINE_QUEUE_OWN_ECHOES_H_
#define MSGQ_ENGINE_QUEUE_OWN_ECHOES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "engine/queue/message_store.h"
#include "engine/queue/row_change.h"

namespace msgq {

class OwnEchoes {
 public:
  explicit OwnEchoes(size_t capacity = size_t{1} << 16) : capacity_(capacity) {}

  // A write of msgq's committed. `gtid`: its GTID; "" when it wrote
  // nothing (no echo will come); nullopt when the server does not name
  // GTIDs. `acked`: the ids it acked; `postponed`: the postpones it wrote
  // (rule 5); `written`: the time_next each row it wrote got (postpones,
  // nacks, extends; rule 7).
  void Committed(const std::optional<std::string>& gtid,
                 const std::vector<std::string>& acked,
                 const std::vector<Postponement>& postponed,
                 const std::vector<Postponement>& written = {});
  // The binlog shows a change of the transaction `gtid` (call before the
  // Take* for it): the writes of its domain committed before it have
  // passed, and their facts go.
  void Shown(absl::string_view gtid);
  // Whether the ack `c` shows (newly acked) is the echo of a committed
  // ack of msgq's; the fact is used up.
  bool TakeAck(const RowChange& c);
  // Whether the change `c` (of an id not in flight) is the echo of a
  // committed postpone of msgq's; the id's facts without a GTID are used
  // up either way.
  bool TakePostpone(const RowChange& c);
  // Whether a committed ack of `id` awaits its echo.
  bool AckAwaits(absl::string_view id) const { return acks_.contains(id); }
  // Rule 7: whether a committed postpone, nack or extend of `c.id` awaits
  // its echo and `c` (call after Shown) is not that echo: then `c`
  // committed before the write. The echo uses its fact up; so does a
  // change showing the id gone, for facts without a GTID.
  bool OlderThanWrite(const RowChange& c);

  size_t size() const { return facts_; }

 private:
  // A transaction's place in its domain; `known` false without a GTID.
  struct Gtid {
    bool known = false;
    uint32_t domain = 0;
    uint64_t seq = 0;
    bool operator==(const Gtid& o) const {
      return known == o.known && domain == o.domain && seq == o.seq;
    }
  };
  static std::optional<Gtid> Parse(absl::string_view gtid);
  // One committed write's facts, until its echo passed.
  struct Write {
    Gtid gtid;
    std::vector<std::string> acked;
    std::vector<Postponement> postponed;
    std::vector<Postponement> written;
    size_t ids() const {
      return acked.size() + postponed.size() + written.size();
    }
  };
  // Forgets `w`'s facts that are still kept.
  void Forget(const Write& w);
  // Drops the oldest writes while they name more than `capacity` ids.
  void Trim();

  const size_t capacity_;
  size_t facts_ = 0;  // entries of acks_ and postpones_
  size_t held_ = 0;   // ids named by the writes kept (at least facts_)
  // Writes with a GTID, by (domain, seq); those without, oldest first.
  std::map<std::pair<uint32_t, uint64_t>, Write> by_gtid_;
  std::deque<Write> unnamed_;
  // Per id, the GTIDs of the committed acks and postpones awaiting their
  // echo (with the time_next written).
  absl::flat_hash_map<std::string, std::vector<Gtid>> acks_;
  absl::flat_hash_map<std::string, std::vector<std::pair<Gtid, int64_t>>>
      postpones_;
  // Rule 7: per id, the GTIDs of the committed writes of its row awaiting
  // their echo, with the time_next written.
  absl::flat_hash_map<std::string, std::vector<std::pair<Gtid, int64_t>>>
      written_;
  // Per domain, the sequence of the latest transaction shown.
  absl::flat_hash_map<uint32_t, uint64_t> shown_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_OWN_ECHOES_H_
