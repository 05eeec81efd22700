// Types of the msgq Node client (lib/*.js). Durations are seconds.
import type { ChannelOptions, Metadata, status as grpcStatus } from '@grpc/grpc-js';

/** The gRPC status codes (grpc.status of @grpc/grpc-js). */
export declare const status: typeof grpcStatus;
/** "NOT_FOUND" for status.NOT_FOUND. */
export declare function codeName(code: number): string;
export declare const version: string;

/** Every failed call: the gRPC status code and the server's message. */
export declare class MsgqError extends Error {
  readonly name: 'MsgqError';
  /** A code of `status`. */
  readonly code: number;
  readonly codeName: string;
  readonly details: string;
  /** The server it came from (set with several servers), else "". */
  readonly server: string;
  readonly metadata?: Metadata;
  constructor(code: number, details: string,
              options?: { server?: string; cause?: unknown; metadata?: Metadata });
}

/** A table by name (keyspace "" = the server's first database having it). */
export type TableRef = string | { keyspace?: string; name: string };

/** An id as MessageAck takes it: the text form of column 0. */
export type Id = string | Buffer | number | bigint;

/** One delivery of a message: what MessageNack and MessageExtend take. */
export interface Delivery {
  /** Text, or a Buffer for an id whose bytes are not UTF-8. */
  readonly id: string | Buffer;
  readonly epoch: number;
}

/** A column value typed by its DATA_TYPE (see lib/message.js). */
export type ColumnValue = number | bigint | string | Buffer | null;

export interface Field {
  readonly name: string;
  /** information_schema.COLUMNS.DATA_TYPE, lower case. */
  readonly type: string;
  readonly kind: 'number' | 'bigint' | 'buffer' | 'string';
}

export declare class Schema {
  readonly fields: readonly Field[];
  constructor(fields: { name: string; type: string }[]);
}

/** W3C Trace Context parsed from the traceparent/tracestate columns. */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate: string | null;
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly sampled: boolean;
}

/** One streamed row, decoded. Immutable. */
export declare class Message {
  /** Column 0 as text (what MessageAck takes). */
  readonly id: string;
  readonly idBytes: Buffer;
  /** Sends of this message before this delivery (0 on the first). */
  readonly epoch: number;
  readonly delivery: Delivery;
  /** The server it came from (its ack/nack/extend go there). */
  readonly server: string;
  /** Every column by name, typed. */
  readonly columns: Readonly<Record<string, ColumnValue>>;
  readonly fields: readonly Field[];
  /** The parsed traceparent (and tracestate) columns; null without. */
  readonly traceContext: TraceContext | null;
  constructor(schema: Schema, row: { lengths: (string | number)[]; values: Buffer; epoch?: string | number }, server?: string);
  has(name: string): boolean;
  /** The typed value; undefined when there is no such column. */
  get(name: string): ColumnValue | undefined;
  /** The bytes (null for NULL); undefined when there is no such column. */
  raw(name: string): Buffer | null | undefined;
  /** The column parsed as JSON (null for NULL). */
  json<T = unknown>(name: string): T | null;
  toJSON(): { id: string; epoch: number; server: string; columns: Record<string, unknown> };
}

export interface AckResult { readonly kind: 'ack'; readonly delay: undefined; readonly reason: '' }
export interface RetryResult { readonly kind: 'retry'; readonly delay: number | undefined; readonly reason: string }
export interface DeadResult { readonly kind: 'dead'; readonly delay: undefined; readonly reason: string }
export type HandlerResult = AckResult | RetryResult | DeadResult;

/** Done: the id joins the next ack batch. */
export declare function ack(): AckResult;
/** Not done: again after `delay` seconds (0 = at once; undefined = the table's backoff). */
export declare function retry(options?: { delay?: number; reason?: string }): RetryResult;
/** Never going to work: dead now; `reason` goes to last_error. */
export declare function dead(reason?: string): DeadResult;
/** The result a handler's return value stands for (undefined/true = ack, false = retry). */
export declare function outcome(value: unknown): HandlerResult;

/** What a handler may return (a throw = retry with the table's backoff). */
export type Handler = (message: Message) =>
  HandlerResult | void | boolean | Promise<HandlerResult | void | boolean>;

export interface TlsOptions {
  /** PEM text or Buffers. */
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Paths of PEM files (read once). */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** The name checked in the server's certificate. */
  serverName?: string;
}

export interface ConnectionOptions {
  /** TLS settings; true = TLS with the system's roots; absent = plaintext. */
  tls?: TlsOptions | true;
  /** Bearer token, sent as `authorization: Bearer <token>` on every call. */
  token?: string;
  /** A file whose first line is the token. */
  tokenFile?: string;
  /** Extra grpc-js channel options. */
  channelOptions?: ChannelOptions;
}

export interface ClientOptions extends ConnectionOptions {
  /** Deadline of each call in seconds (default 10). */
  timeout?: number;
}

export interface DeadMessage {
  id: string;
  idBytes: Buffer;
  epoch: number;
  lastError: string;
  /** Unix ns; 0n when the table has no time_dead / time_created column. */
  timeDead: bigint;
  timeCreated: bigint;
}

export interface TableSettings {
  ackWait: number; purgeAfter: number; batchSize: number; cacheSize: number;
  pollerInterval: number; minBackoff: number; maxBackoff: number;
  messageCols: string[]; maxAttempts: number; maxAge: number;
  deadRetention: number; rateLimit: number; rateBurst: number;
  orderBy: string; fairBy: string;
}

export interface TableStatus {
  keyspace: string; name: string; loaded: boolean; error: string;
  subscribers: number; discovery: string; settings: TableSettings | null;
  cached: number; inFlight: number; dead: number; sent: number;
  redelivered: number; postponed: number; acked: number; nacked: number;
  died: number; purged: number; polls: number;
  ownership: { state: string; owner: string; since: bigint; expires: bigint; error: string } | null;
  paused: boolean;
}

export interface TableList extends Array<TableStatus> {
  binlog?: {
    streaming: boolean; serverId: number; lastError: string;
    positionResets: number; evictions: number; position: string;
  };
  instance: string;
}

/** The unary calls of msgq.v1.Messaging. Errors reject with MsgqError. */
export declare class Client {
  readonly target: string;
  readonly timeout: number;
  constructor(target: string, options?: ClientOptions);
  /** group: a consumer group's acks ('' = the default group). */
  ack(table: TableRef, ids: Iterable<Id>, options?: { group?: string }): Promise<number>;
  nack(table: TableRef, deliveries: Iterable<Delivery>,
       options?: { delay?: number; reason?: string; dead?: boolean; group?: string }): Promise<{ retried: number; dead: number }>;
  extend(table: TableRef, deliveries: Iterable<Delivery>, duration: number): Promise<number>;
  redrive(table: TableRef, ids: Iterable<Id>): Promise<number>;
  redriveAll(table: TableRef): Promise<number>;
  listDead(table: TableRef, options?: { limit?: number; afterId?: Id }): Promise<DeadMessage[]>;
  listTables(): Promise<TableList>;
  setPaused(table: TableRef, paused: boolean): Promise<void>;
  close(): void;
}

export interface SubscriberStats {
  received: number; handled: number; failed: number; acked: number;
  ackCalls: number; retried: number; dead: number; nackCalls: number;
  extended: number; lost: number; extendErrors: number;
  streamsStarted: number; reconnects: number; running: number; queued: number;
}

export interface SubscriberOptions extends ConnectionOptions {
  /** "host:port", "a:1,b:2", or a list (fan-in); { name, target } names a server. */
  servers?: string | (string | { name?: string; target: string })[];
  /** Alias of servers. */
  server?: string;
  table: TableRef;
  keyspace?: string;
  /** A consumer group of the table, sent on the stream, acks and nacks ('' = the default group). */
  group?: string;
  /** Absent: iterate the subscriber with `for await`. */
  handler?: Handler;
  /** Aborting it closes the subscriber (wait() then resolves). */
  signal?: AbortSignal;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** max_unacked of each stream (default 0 = unlimited). */
  prefetch?: number;
  /** Messages received and not yet handled (default 16). */
  queueCapacity?: number;
  /** false: settle nothing (peek). Default true. */
  autoAck?: boolean;
  /** close() nacks (delay 0) messages received but never started. Default true. */
  releaseOnClose?: boolean;
  ack?: { maxBatch?: number; maxDelay?: number; maxAttempts?: number };
  /** Deadline of each ack, nack, extend and ListTables (default 10). */
  ackTimeout?: number;
  /** maxExtension 0 disables; ackWait 0 = learn it with ListTables. */
  heartbeat?: { fraction?: number; maxExtension?: number; ackWait?: number };
  backoff?: { initial?: number; multiplier?: number; max?: number; jitter?: number };
  /** false: a first stream that fails ends the subscription. Default true. */
  retryInitialConnect?: boolean;
  /** false: no spans even with @opentelemetry/api. Default true. */
  tracing?: boolean;
  /** An OpenTelemetry TracerProvider (default: the global one). */
  tracerProvider?: { getTracer(name: string, version?: string): unknown };
  onConnected?: (server: string, fields: readonly Field[]) => void;
  onStreamError?: (error: MsgqError, retryIn: number) => void;
  onAckError?: (error: MsgqError) => void;
  onNackError?: (error: MsgqError) => void;
  onHeartbeatError?: (error: MsgqError) => void;
  onHandlerError?: (error: unknown, message: Message) => void;
}

/**
 * Receives the messages of one table. With a handler: start(), then close()
 * or an aborted signal. Without: `for await (const msg of subscriber)`,
 * which starts it; moving to the next message acks the previous one unless
 * settle() answered it; leaving the loop retries an unsettled message and
 * closes the subscriber; a fatal error is thrown by the loop.
 */
export declare class Subscriber implements AsyncIterable<Message> {
  constructor(options: SubscriberOptions);
  /** Opens the streams and starts the handlers. */
  start(): this;
  /** Stops taking messages, waits for running handlers, flushes acks. */
  close(): Promise<void>;
  /** Resolves once closed; rejects with the MsgqError of a fatal failure. */
  wait(): Promise<void>;
  stats(): SubscriberStats;
  /**
   * Answers the message the loop holds (default ack()). Throws a MsgqError
   * (FAILED_PRECONDITION) for a message the loop does not hold.
   */
  settle(message: Message, result?: HandlerResult | void | boolean): void;
  /** Throws a MsgqError (FAILED_PRECONDITION) with a handler or a second loop. */
  [Symbol.asyncIterator](): AsyncIterator<Message, undefined>;
}

/** new Subscriber(options).start() */
export declare function subscribe(options: SubscriberOptions): Subscriber;

/** Parses a traceparent value (and tracestate); null when invalid. */
export declare function parseTraceparent(traceparent: string | null | undefined,
                                         tracestate?: string | null): TraceContext | null;
export declare function formatTraceparent(spanContext: { traceId: string; spanId: string; traceFlags: number }): string;
/** The active OpenTelemetry context's traceparent (null without a span or @opentelemetry/api). */
export declare function traceparent(context?: unknown): string | null;
export declare function tracestate(context?: unknown): string | null;
export declare function traceColumns(context?: unknown): { traceparent: string | null; tracestate: string | null };

export declare function readTokenFile(path: string): string;

/**
 * What the helpers need of a mysql2/promise connection or pool: a mysql2
 * Connection, PoolConnection or Pool fits.
 */
export interface SqlConnection {
  query(sql: string, values?: unknown): Promise<unknown>;
}

/** A connection the inbox runs a transaction on (a mysql2 PoolConnection). */
export interface InboxConnection extends SqlConnection {
  beginTransaction(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  release(): void;
  destroy(): void;
}

// The idempotent-consumer helper (lib/inbox.js, docs/effectively-once.md):
// `work` runs inside a transaction on a connection of `pool` (a
// mysql2/promise Pool), after the inbox row's INSERT; ack after the commit.
export interface InboxOptions<C extends InboxConnection = InboxConnection> {
  pool: { getConnection(): Promise<C> };
  source: string;
  table: string;
  keyspace?: string;
  inboxTable?: string;
  create?: boolean;
  onCommitted?: (message: Message) => void;
  onDuplicate?: (message: Message) => void;
  log?: (...args: unknown[]) => void;
}
export declare function inboxHandler<C extends InboxConnection>(
  options: InboxOptions<C>,
  work: (message: Message, conn: C) =>
    HandlerResult | boolean | void | Promise<HandlerResult | boolean | void>,
): Handler;
/** Deletes inbox rows older than the retention; resolves to the count. */
export declare function purgeInbox(
  pool: SqlConnection,
  options: { retentionSeconds: number; batch?: number; inboxTable?: string },
): Promise<number>;
export declare class InboxError extends Error {}

/**
 * One message for enqueue(): a row of a message table. Columns not written
 * take their defaults; key, type and headers need their columns.
 */
export interface Outgoing {
  /** The id column; default a new UUIDv7 (36 characters of text). */
  id?: string | Buffer | number | bigint;
  /** The message column: Buffer and string as they are, null as NULL, else JSON. */
  body?: unknown;
  /** message_key. */
  key?: string;
  /** message_type. */
  type?: string;
  /** headers, stored as a JSON object sorted by name. */
  headers?: Record<string, string>;
  /** Seconds from now by MySQL's clock (time_next); default 0, send now. */
  delay?: number;
  /** More columns by name, e.g. { priority: 10 }; traceparent/tracestate override the context's. */
  columns?: Record<string, unknown>;
  /**
   * dedup_key: on a table with msgq_dedup_window MySQL keeps one row per key
   * (docs/tables.md#deduplicated-enqueue). Needed by enqueueDedup; enqueue
   * writes it too, and a duplicate then rejects with errno 1062.
   */
  dedupKey?: string;
}

/** What enqueueDedup did with one message. */
export interface Enqueued {
  /** The id of the row holding the message's dedupKey (its own when inserted). */
  readonly id: string;
  /** That row was there before: nothing was inserted for this message. */
  readonly duplicate: boolean;
}

export interface EnqueueOptions {
  /** The OpenTelemetry Context whose span fills traceparent/tracestate (default: the active one). */
  context?: unknown;
}

/**
 * Inserts a message on `conn` (a mysql2/promise connection inside the
 * application's transaction); resolves to its id as text. Rejects with a
 * MsgqError (INVALID_ARGUMENT) for a bad argument, else with mysql2's
 * error (errno 1062: duplicate id).
 */
export declare function enqueue(conn: SqlConnection, table: TableRef, message: Outgoing,
                                options?: EnqueueOptions): Promise<string>;
/** Inserts several messages with one multi-row INSERT; resolves to their ids. */
export declare function enqueueBatch(conn: SqlConnection, table: TableRef, messages: Outgoing[],
                                     options?: EnqueueOptions): Promise<string[]>;
/**
 * Inserts the message unless a row already holds its dedupKey (committed,
 * or committed by a racing producer while this INSERT waited for it), with
 * INSERT ... ON DUPLICATE KEY UPDATE id = id inside the application's
 * transaction; a duplicate resolves, it does not reject. Rejects with a
 * MsgqError (INVALID_ARGUMENT) without a dedupKey.
 */
export declare function enqueueDedup(conn: SqlConnection, table: TableRef, message: Outgoing,
                                     options?: EnqueueOptions): Promise<Enqueued>;
/** enqueueDedup of several messages with one INSERT; a repeated key is a duplicate of its first. */
export declare function enqueueDedupBatch(conn: SqlConnection, table: TableRef, messages: Outgoing[],
                                          options?: EnqueueOptions): Promise<Enqueued[]>;
