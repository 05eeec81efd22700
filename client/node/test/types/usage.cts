// The public API as a CommonJS user writes it, checked by `tsc` against
// index.d.ts through the package's exports map (scripts/ctest.sh types).
import msgq = require('msgq');

const { Subscriber, ack, retry } = msgq;

const sub = new Subscriber({
  servers: 'db1:15999', table: 'orders',
  handler: (msg) => (msg.epoch < 3 ? retry({ delay: 1 }) : ack()),
});
sub.start();
void sub.close();
// @ts-expect-error internals are not exported
void msgq.Heartbeat;
