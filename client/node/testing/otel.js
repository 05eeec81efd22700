'use strict';
// An OpenTelemetry SDK for the trace test: a BasicTracerProvider exporting
// to an InMemorySpanExporter, registered globally, with a context manager
// on AsyncLocalStorage (what @opentelemetry/context-async-hooks provides in
// an application; written out here to keep the test's dependencies to
// @opentelemetry/api and @opentelemetry/sdk-trace-base).
const { AsyncLocalStorage } = require('node:async_hooks');
const api = require('@opentelemetry/api');
const {
  BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor,
} = require('@opentelemetry/sdk-trace-base');

class AlsContextManager {
  constructor() { this.als = new AsyncLocalStorage(); }
  active() { return this.als.getStore() || api.ROOT_CONTEXT; }
  with(ctx, fn, thisArg, ...args) {
    return this.als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind(ctx, target) {
    if (typeof target !== 'function') return target;
    const manager = this;
    return function bound(...args) { return manager.with(ctx, target, this, ...args); };
  }
  enable() { return this; }
  disable() { this.als.disable(); return this; }
}

function installSdk() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  api.context.setGlobalContextManager(new AlsContextManager());
  api.trace.setGlobalTracerProvider(provider);
  return { api, exporter, provider };
}

module.exports = { installSdk };
