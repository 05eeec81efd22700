// The public API as an ES module user writes it, checked by `tsc` against
// index.d.ts through the package's exports map (scripts/ctest.sh types).
// Each @ts-expect-error line must fail to type-check.
import msgq, {
  Client, InboxError, Message, MsgqError, Subscriber, ack, dead, inboxHandler,
  purgeInbox, retry, status, traceColumns, enqueue, enqueueBatch,
} from 'msgq';
import type { Delivery, HandlerResult, SubscriberStats, TableStatus } from 'msgq';
// @ts-expect-error internals are not exported
import { Backoff } from 'msgq';
import mysql from 'mysql2/promise';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function expectType<T>(value: T): T { return value; }

void Backoff;
expectType<typeof Subscriber>(msgq.Subscriber);

const controller = new AbortController();
const sub = new Subscriber({
  servers: ['db1:15999', { name: 'b', target: 'db2:15999' }], table: 'orders', concurrency: 4,
  signal: controller.signal, heartbeat: { maxExtension: 600 }, ack: { maxDelay: 0.05 },
  handler: async (msg) => {
    expectType<Message>(msg);
    if (msg.get('message') === null) return dead('NULL message');
    if (msg.epoch > 3) return retry({ delay: 30, reason: 'later' });
    const body = msg.json<{ total: number }>('message');
    expectType<number | undefined>(body?.total);
    return ack();
  },
  onStreamError: (error, retryIn) => { expectType<MsgqError>(error); expectType<number>(retryIn); },
}).start();
const stats: SubscriberStats = sub.stats();
expectType<number>(stats.acked);
await sub.close();
await sub.wait();

// @ts-expect-error a delay is a number of seconds
retry({ delay: '5s' });
// @ts-expect-error the table is required
new Subscriber({ servers: 'a:1', handler: () => ack() });

const loop = new Subscriber({ servers: 'db1:15999', table: 'orders', signal: AbortSignal.timeout(1000) });
for await (const msg of loop) {
  const equal: Equal<typeof msg, Message> = true;
  void equal;
  if (msg.id === '1') loop.settle(msg, dead('bad'));
  else loop.settle(msg);
  // @ts-expect-error settle takes a handler's result
  loop.settle(msg, 'ack');
}

const client = new Client('db1:15999', { timeout: 5, tokenFile: '/etc/msgq/token' });
const delivery: Delivery = { id: '17', epoch: 0 };
expectType<number>(await client.ack('orders', ['17', 18, 19n]));
expectType<{ retried: number; dead: number }>(
  await client.nack({ keyspace: 'app', name: 'orders' }, [delivery], { delay: 5 }));
expectType<number>(await client.extend('orders', [delivery], 60));
const tables: TableStatus[] = await client.listTables();
expectType<number | undefined>(tables[0]?.settings?.ackWait);
client.close();

try {
  await client.redriveAll('orders');
} catch (e) {
  if (e instanceof MsgqError && e.code === status.NOT_FOUND) expectType<string>(e.details);
}

const result: HandlerResult = retry();
expectType<'ack' | 'retry' | 'dead'>(result.kind);
expectType<{ traceparent: string | null; tracestate: string | null }>(traceColumns());

const pool = mysql.createPool({ database: 'billing' });
const handler = inboxHandler({ pool, source: 'prod', table: 'transfers' }, async (msg, conn) => {
  const equal: Equal<typeof conn, mysql.PoolConnection> = true;
  void equal;
  await conn.query('UPDATE accounts SET balance = balance + 1 WHERE id = ?', [msg.id]);
  return ack();
});
new Subscriber({ servers: 'msgq:15999', table: 'transfers', handler });
expectType<number>(await purgeInbox(pool, { retentionSeconds: 86400 }));
expectType<Error>(new InboxError('x'));

const conn = await pool.getConnection();
await conn.beginTransaction();
const id: string = await enqueue(conn, 'order_events', {
  body: { order: 17 }, key: 'customer-3', type: 'order.placed', headers: { source: 'web' }, delay: 10,
});
const ids: string[] = await enqueueBatch(conn, { keyspace: 'shop', name: 'order_events' }, [
  { id: 18, body: Buffer.from('{}') }, { columns: { priority: 10 } },
], { context: undefined });
// @ts-expect-error headers are strings
await enqueue(conn, 'order_events', { headers: { retries: 3 } });
await conn.commit();
conn.release();
void id; void ids;
