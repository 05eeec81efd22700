#include "engine/queue/row_change.h"

namespace msgq {

Message MessageOf(const RowChange& change) {
  Message m;
  m.id = change.id;
  m.priority = change.priority;
  m.time_next = change.time_next.value_or(0);
  m.epoch = change.epoch;
  m.time_created = change.time_created;
  m.fair_key = change.fair_key;
  m.row = change.row;
  return m;
}

}  // namespace msgq
