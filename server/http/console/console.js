// msgq web console: polls /api/tables every 2 s, keeps an hour of history
// per table for rates and sparklines (seeded from msgqd's own,
// GET /api/history, then kept by the page every 10 s), and shows the
// selected table's last hour by state (a chart of msgqd's history), its
// dead messages 100 at a time (GET /api/dead) with redrive buttons (POST /api/redrive) and a selection
// to redrive or delete (POST /api/dead/delete), each action confirmed
// first, its recent messages (GET /api/messages, the payload only when
// asked) and one message found by id (GET /api/message), a dead one with
// its own Redrive and Delete.
// Data is only ever inserted as text (textContent), never as HTML.
"use strict";

const REFRESH_MS = 2000;
const HISTORY = 360;  // samples: an hour at 10 s
const SAMPLE_EVERY = 10;  // seconds between kept samples, as msgqd keeps them
const history = new Map();  // "ks.table" -> [{t, sent, acked}]
const lastPoll = new Map();  // "ks.table" -> the previous poll's {t, sent, acked}
const seeded = new Set();  // tables whose served history was asked for
let selected = null;  // {keyspace, name}
let lastTables = [];  // the latest /api/tables "tables"

const $ = (id) => document.getElementById(id);

// With authentication on (msgqd --auth_tokens_file) the /api calls need a
// bearer token: asked for at the first 401 and kept in this tab only
// (sessionStorage), sent as "Authorization: Bearer ...".
const TOKEN_KEY = "msgq-token";

async function api(url, init) {
  const options = Object.assign({cache: "no-store"}, init || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) {
    options.headers = Object.assign({}, options.headers,
                                    {"Authorization": "Bearer " + token});
  }
  const r = await fetch(url, options);
  if (r.status === 401) {
    $("token-form").hidden = false;
    $("ready").textContent = "token needed";
    $("ready").className = "badge bad";
  }
  return r;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function fmt(n) {
  if (n === null || n === undefined) return "–";
  return Number(n).toLocaleString("en-US");
}

function fmtRate(r) {
  if (r === null) return "–";
  return r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2);
}

// Per-second rate of `field` over the last two samples.
function rates(samples, field) {
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].t - samples[i - 1].t;
    const dv = samples[i][field] - samples[i - 1][field];
    out.push(dt > 0 && dv >= 0 ? dv / dt : 0);
  }
  return out;
}

function sparkline(values) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 90 22");
  svg.setAttribute("preserveAspectRatio", "none");
  const max = Math.max(1e-9, ...values);
  const pts = values.map((v, i) => {
    const x = values.length > 1 ? (i * 90) / (HISTORY - 1) + 90 - ((values.length - 1) * 90) / (HISTORY - 1) : 90;
    return `${x.toFixed(1)},${(21 - (v / max) * 19).toFixed(1)}`;
  });
  const base = document.createElementNS(ns, "rect");
  base.setAttribute("width", "90");
  base.setAttribute("height", "22");
  base.setAttribute("fill", "#f0f3f8");
  svg.append(base);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", pts.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#2f6fde");
  line.setAttribute("stroke-width", "1.5");
  svg.append(line);
  return svg;
}

// The table's rows by state, exact (msgqd's counts kept from the binlog);
// before the first counting read, ready is the sampled due count and in
// flight the cache's.
function stateCounts(t) {
  if (t.counts) return t.counts;
  return {ready: t.pending_due === undefined ? null : t.pending_due,
          scheduled: null, in_flight: t.in_flight, dead: t.dead};
}

function readyCell(t) {
  const c = stateCounts(t);
  return el("td", {class: "num", "data-field": "ready",
                   title: t.counts
                       ? "unacked rows due now (time_next <= now), exact"
                       : "unacked rows due now, counted in the index every " +
                         "10 s at most (exact counts not loaded yet)"},
            fmt(c.ready) + (!t.counts && t.pending_capped ? "+" : ""));
}

// In flight; with msgq_concurrency_by also the keys at their limit.
function inFlightCell(t) {
  const td = el("td", {class: "num", "data-field": "in_flight",
                       title: "sent, waiting for an ack or a retry " +
                              "(epoch > 0, time_next > now)"},
                fmt(stateCounts(t).in_flight));
  if (t.concurrency) {
    td.title = "msgq_concurrency_by=" + t.concurrency_by + ", msgq_concurrency=" +
        t.concurrency + ": keys with " + t.concurrency + " in flight now";
    td.append(el("span", {class: "muted", "data-field": "keys_at_limit"},
        " · " + fmt(t.keys_at_limit) + " keys at " + t.concurrency));
  }
  return td;
}

// Per-second rate of `field` between two polls; null without both.
function pollRate(prev, cur, field) {
  if (!prev || cur.t <= prev.t) return null;
  const dv = cur[field] - prev[field];
  return dv >= 0 ? dv / (cur.t - prev.t) : 0;
}

// The table's last hour from msgqd (GET /api/history), put before what the
// page has kept itself.
async function seedHistory(key, keyspace, name) {
  const r = await api("/api/history?" + query({keyspace, table: name}));
  if (!r.ok) return;
  const data = await r.json();
  const kept = history.get(key) || [];
  const first = kept.length ? kept[0].t : Infinity;
  const served = data.samples.filter((s) => s.time < first)
      .map((s) => ({t: s.time, sent: s.sent, acked: s.acked}));
  history.set(key, served.concat(kept).slice(-HISTORY));
}

function rateCell(samples, field, last) {
  const r = rates(samples, field);
  return el("td", {"data-field": field + "_rate", "data-samples": samples.length},
            el("span", {class: "spark"}, sparkline(r),
               el("span", {}, fmtRate(last))));
}

function stateCell(t) {
  if (!t.loaded) {
    return el("td", {class: "state bad", "data-field": "state"}, "error");
  }
  if (!t.mysql_up) {
    return el("td", {class: "state bad", "data-field": "state"}, "MySQL down");
  }
  if (t.paused) {
    return el("td", {class: "state warn", "data-field": "state",
                     title: "sends nothing until resumed"}, "paused");
  }
  return el("td", {class: "state ok", "data-field": "state"}, "loaded");
}

// The database server's purge debt and the transaction holding it back.
const LONG_TRANSACTION = 60;  // seconds: shown as a warning past this
function renderDatabase(db) {
  const line = $("database");
  line.replaceChildren();
  if (!db) return;
  const parts = [];
  if (db.history_list_length !== null) {
    parts.push(`InnoDB history list ${fmt(db.history_list_length)}`);
  }
  const t = db.oldest_transaction;
  let warn = false;
  if (t) {
    const who = [t.user && t.host ? `${t.user}@${t.host}` : t.user,
                 t.db ? `db ${t.db}` : ""].filter(Boolean).join(", ");
    parts.push(`oldest transaction: connection ${t.connection}` +
               (who ? ` (${who})` : "") + `, open ${fmt(t.seconds)} s` +
               (t.statement ? `, running ${t.statement}` : ", idle"));
    warn = t.seconds >= LONG_TRANSACTION;
  } else if (db.oldest_transaction_error) {
    parts.push("oldest transaction: unknown (msgqd's user needs the " +
               "PROCESS privilege)");
  } else if (db.history_list_length !== null) {
    parts.push("no open transaction");
  }
  if (!parts.length) return;
  line.append(el("span", {id: "database-text",
                          class: warn ? "warn-text" : ""},
                 "Database: " + parts.join("  ·  ")));
  if (t) line.dataset.connection = String(t.connection);
  else delete line.dataset.connection;
}

function render(data) {
  lastTables = data.tables;
  $("ready").textContent = data.ready ? "ready" : "not ready";
  $("ready").className = "badge " + (data.ready ? "ok" : "bad");
  $("ready").title = data.ready_reason || "";
  $("binlog").textContent = data.binlog.streaming
      ? "binlog: streaming" : "binlog: off (polling)";
  $("updated").textContent = "updated " + new Date(data.time * 1000).toLocaleTimeString();
  renderDatabase(data.database);

  const sums = {subscribers: 0, ready: 0, scheduled: 0, in_flight: 0, dead: 0,
                sentRate: 0, ackedRate: 0};
  const body = el("tbody");
  for (const t of data.tables) {
    const key = t.keyspace + "." + t.name;
    let samples = history.get(key) || [];
    let sentRate = null, ackedRate = null;
    if (t.loaded) {
      const cur = {t: data.time, sent: t.sent, acked: t.acked};
      const prev = lastPoll.get(key);
      lastPoll.set(key, cur);
      sentRate = pollRate(prev, cur, "sent");
      ackedRate = pollRate(prev, cur, "acked");
      if (!samples.length || cur.t - samples[samples.length - 1].t >= SAMPLE_EVERY) {
        samples.push(cur);
      }
      if (samples.length > HISTORY) samples = samples.slice(-HISTORY);
      history.set(key, samples);
      if (!seeded.has(key)) {
        seeded.add(key);
        seedHistory(key, t.keyspace, t.name);
      }
      sums.subscribers += t.subscribers;
      const c = stateCounts(t);
      sums.ready += c.ready || 0;
      sums.scheduled += c.scheduled || 0;
      sums.in_flight += c.in_flight || 0;
      sums.dead += c.dead || 0;
      sums.sentRate += sentRate || 0;
      sums.ackedRate += ackedRate || 0;
    }
    const row = el("tr", {"data-table": key},
        el("td", {"data-field": "name"}, el("strong", {}, t.name),
           el("span", {class: "muted"}, "  " + t.keyspace)),
        stateCell(t));
    if (t.loaded) {
      row.append(
          el("td", {"data-field": "discovery"}, t.discovery),
          el("td", {class: "num", "data-field": "subscribers"}, fmt(t.subscribers)),
          readyCell(t),
          el("td", {class: "num", "data-field": "scheduled",
                    title: "never sent, due later (epoch 0, time_next > now)"},
             fmt(stateCounts(t).scheduled)),
          inFlightCell(t),
          el("td", {class: "num" + (stateCounts(t).dead ? " dead-nonzero" : ""),
                    "data-field": "dead"}, fmt(stateCounts(t).dead)),
          el("td", {class: "num", "data-field": "sent"}, fmt(t.sent)),
          el("td", {class: "num", "data-field": "acked"}, fmt(t.acked)),
          el("td", {class: "num", "data-field": "redelivered"}, fmt(t.redelivered)),
          rateCell(samples, "sent", sentRate), rateCell(samples, "acked", ackedRate));
    } else {
      row.append(el("td", {colSpan: 11, class: "error", "data-field": "error",
                           title: t.error}, t.error));
    }
    if (selected && selected.keyspace === t.keyspace && selected.name === t.name) {
      row.classList.add("selected");
    }
    row.addEventListener("click", () => select(t.keyspace, t.name));
    body.append(row);
  }
  if (!data.tables.length) {
    body.append(el("tr", {}, el("td", {colSpan: 13, class: "muted"},
        "no message tables yet: create one (see docs/tables.md#schema-and-directives)")));
  }
  $("tables").tBodies[0].replaceWith(body);
  if (selected) {
    showOwnership(data.tables.find((x) => x.keyspace === selected.keyspace &&
                                          x.name === selected.name));
  }
  $("sum-tables").textContent = fmt(data.tables.length);
  for (const f of ["subscribers", "ready", "scheduled", "in_flight", "dead"]) {
    $("sum-" + f).textContent = fmt(sums[f]);
  }
  $("sum-sent-rate").textContent = fmtRate(sums.sentRate);
  $("sum-acked-rate").textContent = fmtRate(sums.ackedRate);
}

async function refresh() {
  try {
    const r = await api("/api/tables");
    if (r.status === 401) return;
    render(await r.json());
  } catch (e) {
    $("ready").textContent = "msgqd unreachable";
    $("ready").className = "badge bad";
  }
}

function query(params) {
  return new URLSearchParams(params).toString();
}

// The dead list in pages of DEAD_PAGE by id: the after_id of each page
// from the first to the one shown.
const DEAD_PAGE = 100;
let deadPages = [""];

async function loadDead() {
  if (!selected) return;
  const tbody = $("dead").tBodies[0];
  const r = await api("/api/dead?" + query({
      keyspace: selected.keyspace, table: selected.name,
      after_id: deadPages[deadPages.length - 1], limit: DEAD_PAGE + 1}));
  const data = await r.json();
  const body = el("tbody");
  $("detail-error").hidden = r.ok;
  if (!r.ok) {
    $("detail-error").textContent = data.error;
  } else {
    // A later page emptied by an action: back to the one before.
    if (!data.messages.length && deadPages.length > 1) {
      deadPages.pop();
      return loadDead();
    }
    const more = data.messages.length > DEAD_PAGE;
    const shown = data.messages.slice(0, DEAD_PAGE);
    const first = (deadPages.length - 1) * DEAD_PAGE + 1;
    $("dead-page").textContent = shown.length
        ? `dead ${fmt(first)}–${fmt(first + shown.length - 1)} by id` +
          (more ? ", more after" : "")
        : "";
    $("dead-prev").disabled = deadPages.length === 1;
    $("dead-next").disabled = !more;
    $("dead-next").dataset.after = more ? shown[shown.length - 1].id : "";
    for (const m of shown) {
      const button = el("button", {textContent: "Redrive"});
      button.addEventListener("click", () => deadAction("redrive", [m.id]));
      const check = el("input", {type: "checkbox", value: m.id});
      check.addEventListener("change", selectionChanged);
      body.append(el("tr", {"data-dead-id": m.id},
          el("td", {}, check),
          el("td", {}, messageLink(m.id)),
          el("td", {class: "num"}, fmt(m.epoch)),
          el("td", {}, m.time_dead ? new Date(m.time_dead * 1000).toLocaleString() : "–"),
          el("td", {class: "error", title: m.last_error}, m.last_error || "–"),
          el("td", {}, button)));
    }
    if (!data.messages.length) {
      body.append(el("tr", {}, el("td", {colSpan: 6, class: "muted"}, "no dead messages")));
    }
    $("redrive-all").disabled = !data.messages.length && deadPages.length === 1;
  }
  tbody.replaceWith(body);
  $("dead-select-all").checked = false;
  selectionChanged();
}

// The dead messages ticked in the list (msgqd takes 100 at a time).
const MAX_SELECTION = 100;

function deadSelection() {
  return [...document.querySelectorAll("#dead tr[data-dead-id] input:checked")]
      .map((c) => c.value);
}

function selectionChanged() {
  const n = deadSelection().length;
  for (const id of ["redrive-selected", "delete-selected"]) {
    $(id).disabled = n === 0 || n > MAX_SELECTION;
    $(id).title = n > MAX_SELECTION ? `at most ${MAX_SELECTION} at once` : "";
  }
}

// Asks to confirm `text` in the detail's confirmation bar, scrolled into
// view with Cancel focused (a row's button may be far below it); `run` is
// called only when its button (labelled `label`) is clicked, never on
// Cancel.
let pendingConfirm = null;
function confirmThen(text, label, run) {
  pendingConfirm = run;
  $("confirm-text").textContent = text;
  $("confirm-yes").textContent = label;
  $("confirm").hidden = false;
  $("confirm").scrollIntoView({block: "nearest"});
  $("confirm-no").focus({preventScroll: true});
}

function closeConfirm() {
  pendingConfirm = null;
  $("confirm").hidden = true;
}

// POSTs a console action's form fields (repeated ones as arrays); the
// answer's status and JSON body.
async function postAction(path, fields) {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) {
    for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
  }
  const r = await api(path, {
    method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded",
              "X-Msgq-Console": "1"},
    body: form.toString(),
  });
  return {ok: r.ok, data: await r.json()};
}

// Ids as the confirmation names them: the first five, then how many more.
function idList(ids) {
  const shown = ids.slice(0, 5).join(", ");
  return ids.length > 5 ? `${shown} and ${ids.length - 5} more` : shown;
}

// Redrives ("redrive") or deletes ("delete") the dead messages `ids` of the
// selected table, once confirmed; then reloads the views.
function deadAction(action, ids) {
  if (!ids.length) return;
  const table = `${selected.keyspace}.${selected.name}`;
  const n = ids.length === 1 ? "1 dead message" : `${ids.length} dead messages`;
  const text = action === "delete"
      ? `Delete ${n} of ${table} (${idList(ids)})? This cannot be undone.`
      : `Redrive ${n} of ${table} (${idList(ids)})? ` +
        "They become due now with epoch 0.";
  confirmThen(text, action === "delete" ? "Delete" : "Redrive", async () => {
    const {ok, data} = await postAction(
        action === "delete" ? "/api/dead/delete" : "/api/redrive",
        {keyspace: selected.keyspace, table: selected.name, id: ids});
    $("action-result").textContent = ok
        ? (action === "delete" ? `deleted: ${data.deleted}`
                               : `redriven: ${data.redriven}`)
        : `${action} failed: ${data.error}`;
    await afterAction();
  });
}

// Every dead message of the selected table, once confirmed.
function redriveAll() {
  const t = lastTables.find((x) => x.keyspace === selected.keyspace &&
                                   x.name === selected.name);
  const dead = t ? stateCounts(t).dead : null;
  confirmThen(`Redrive all ${dead === null || dead === undefined ? "" : fmt(dead) + " "}` +
              `dead messages of ${selected.keyspace}.${selected.name}? ` +
              "They become due now with epoch 0.", "Redrive all", async () => {
    const {ok, data} = await postAction("/api/redrive",
        {keyspace: selected.keyspace, table: selected.name, all: "1"});
    $("action-result").textContent = ok
        ? `redriven: ${data.redriven}` : `redrive failed: ${data.error}`;
    await afterAction();
  });
}

// Reloads what an action may have changed: the lists, the message shown
// and the counts.
async function afterAction() {
  await loadDead();
  await loadRecent();
  if (!$("message").hidden && shownMessage) await findMessage(shownMessage);
  await refresh();
}

// Unix ns (text) as a local time; "–" for NULL, "at once" for 0.
function fmtNs(ns) {
  if (ns === null || ns === undefined) return "–";
  if (ns === "0") return "at once";
  return new Date(Number(ns) / 1e6).toLocaleString();
}

async function loadRecent() {
  if (!selected) return;
  const payload = $("recent-payload").checked;
  const params = {keyspace: selected.keyspace, table: selected.name, limit: 50,
                  order: $("recent-order").value};
  if (payload) params.payload = "1";
  if ($("recent-state").value) params.state = $("recent-state").value;
  const r = await api("/api/messages?" + query(params));
  const data = await r.json();
  const body = el("tbody");
  if (!r.ok) {
    body.append(el("tr", {}, el("td", {colSpan: 10, class: "error"}, data.error)));
  } else {
    const fixed = new Set(["id", "priority", "epoch", "time_next", "time_acked",
                           "time_created", "time_dead", "last_error",
                           "msgq_state"]);
    for (const m of data.messages) {
      const extra = Object.entries(m).filter(([k]) => !fixed.has(k))
          .map(([k, v]) => `${k}: ${v === null ? "NULL" : v}`).join("  ");
      body.append(el("tr", {"data-recent-id": m.id},
          el("td", {}, messageLink(m.id)),
          el("td", {"data-field": "state"}, m.msgq_state.replace("_", " ")),
          el("td", {class: "num"}, m.priority),
          el("td", {class: "num"}, m.epoch),
          el("td", {}, m.time_acked !== null ? "–" : fmtNs(m.time_next)),
          el("td", {}, fmtNs(m.time_acked)),
          el("td", {}, "time_created" in m ? fmtNs(m.time_created) : "–"),
          el("td", {}, "time_dead" in m ? fmtNs(m.time_dead) : "–"),
          el("td", {class: "error"}, m.last_error || "–"),
          el("td", {class: "muted", title: extra}, payload ? extra : "hidden")));
    }
    if (!data.messages.length) {
      body.append(el("tr", {}, el("td", {colSpan: 10, class: "muted"}, "no messages")));
    }
  }
  $("recent").tBodies[0].replaceWith(body);
}

// An id that opens the message view when clicked.
function messageLink(id) {
  const link = el("a", {href: "#", textContent: id});
  link.addEventListener("click", (event) => {
    event.preventDefault();
    $("find-id").value = id;
    findMessage(id);
  });
  return link;
}

// Names of the columns that carry a message's trace context or headers,
// labelled as such in the message view.
const CONTEXT_COLUMNS = new Set(["traceparent", "tracestate", "headers"]);

// One message by id (GET /api/message): its state, attempts, times, last
// error and every other column (payload, headers, trace context), each
// value as text.
let shownMessage = null;  // the id in the message view
async function findMessage(id) {
  if (!selected || !id) return;
  const r = await api("/api/message?" + query({keyspace: selected.keyspace,
                                               table: selected.name, id}));
  const data = await r.json();
  $("find-error").textContent = r.ok ? "" : data.error;
  $("message").hidden = !r.ok;
  shownMessage = r.ok ? data.message.id : null;
  if (!r.ok) return;
  const m = data.message;
  $("message-actions").hidden = m.msgq_state !== "dead";
  const body = el("tbody");
  const field = (name, label, value, cls) => body.append(
      el("tr", {"data-field": name}, el("th", {}, label),
         el("td", {class: cls || ""}, value === null || value === undefined
             ? "–" : value)));
  field("id", "Id", m.id);
  field("state", "State", m.msgq_state.replace("_", " "));
  field("epoch", "Attempts (epoch)", m.epoch);
  field("priority", "Priority", m.priority);
  field("time_next", "Next send", m.time_acked !== null ? null : fmtNs(m.time_next));
  field("time_acked", "Acked", fmtNs(m.time_acked));
  if ("time_created" in m) field("time_created", "Created", fmtNs(m.time_created));
  if ("time_dead" in m) field("time_dead", "Died", fmtNs(m.time_dead));
  if ("last_error" in m) field("last_error", "Last error", m.last_error, "error");
  for (const c of m.columns) {
    const kind = CONTEXT_COLUMNS.has(c.name) ? " (context)" : "";
    const value = c.value === null ? "NULL" : c.value +
        (c.truncated ? ` … (cut at ${data.max_value_chars} characters)` : "");
    body.append(el("tr", {"data-column": c.name},
        el("th", {}, c.name + kind), el("td", {}, el("pre", {}, value))));
  }
  $("message-fields").tBodies[0].replaceWith(body);
}

// The selected table's last hour by state, as msgqd sampled it
// (GET /api/history): one line each for ready, scheduled, in flight and
// dead over the hour before the newest sample, the newest values in the
// legend. A sample taken before the table's first counting read has no
// counts and is left out of the lines.
const CHART_STATES = [["ready", "ready"], ["scheduled", "scheduled"],
                      ["in_flight", "in flight"], ["dead", "dead"]];
const CHART_W = 720, CHART_H = 120;
let stateChartData = null;  // the last /api/history answer shown

async function loadStateChart() {
  if (!selected) return;
  const asked = selected;
  const r = await api("/api/history?" + query({keyspace: asked.keyspace,
                                               table: asked.name}));
  const data = await r.json();
  if (selected !== asked) return;
  if (!r.ok) {
    $("state-chart-note").textContent = data.error;
    return;
  }
  stateChartData = data;
  renderStateChart(data);
}

function renderStateChart(data) {
  const ns = "http://www.w3.org/2000/svg";
  const samples = data.samples;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${CHART_W} ${CHART_H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.dataset.samples = String(samples.length);
  svg.dataset.times = JSON.stringify(samples.map((x) => x.time));
  const base = document.createElementNS(ns, "rect");
  base.setAttribute("width", String(CHART_W));
  base.setAttribute("height", String(CHART_H));
  base.setAttribute("class", "chart-bg");
  svg.append(base);
  const last = samples.length ? samples[samples.length - 1] : null;
  let max = 1;
  for (const x of samples) {
    for (const [f] of CHART_STATES) if (x[f] !== null) max = Math.max(max, x[f]);
  }
  const legend = $("state-legend");
  legend.replaceChildren();
  for (const [f, label] of CHART_STATES) {
    const pts = [];
    for (const x of samples) {
      if (x[f] === null) continue;
      const px = (1 - (last.time - x.time) / 3600) * CHART_W;
      const py = CHART_H - 3 - (x[f] / max) * (CHART_H - 6);
      pts.push(`${px.toFixed(1)},${py.toFixed(1)}`);
    }
    // A lone sample is drawn as a short tick ending at its time.
    if (pts.length === 1) {
      const [px, py] = pts[0].split(",");
      pts.unshift(`${Math.max(0, Number(px) - 6).toFixed(1)},${py}`);
    }
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", pts.join(" "));
    line.setAttribute("class", "line-" + f);
    line.setAttribute("vector-effect", "non-scaling-stroke");
    line.dataset.state = f;
    line.dataset.values = JSON.stringify(samples.map((x) => x[f]));
    svg.append(line);
    legend.append(el("span", {"data-state": f},
        el("span", {class: "swatch line-" + f}),
        `${label} ${last ? fmt(last[f]) : "–"}`));
  }
  $("state-chart").replaceChildren(svg);
  $("state-chart-note").textContent = samples.length
      ? `scale 0 to ${fmt(max)}; ${samples.length} ` +
        `sample${samples.length === 1 ? "" : "s"}, one every ${data.interval} s`
      : `no samples yet (one every ${data.interval} s)`;
}

function select(keyspace, name) {
  selected = {keyspace, name};
  $("detail").hidden = false;
  $("detail-title").textContent = `${keyspace}.${name}`;
  $("action-result").textContent = "";
  $("message").hidden = true;
  shownMessage = null;
  $("find-error").textContent = "";
  closeConfirm();
  deadPages = [""];
  stateChartData = null;
  $("state-chart").replaceChildren();
  $("state-legend").replaceChildren();
  $("state-chart-note").textContent = "loading…";
  window.history.replaceState(null, "", "#" + keyspace + "." + name);
  for (const tr of document.querySelectorAll("#tables tr[data-table]")) {
    tr.classList.toggle("selected", tr.dataset.table === keyspace + "." + name);
  }
  showOwnership(lastTables.find((x) => x.keyspace === keyspace && x.name === name));
  loadDead();
  loadRecent();
  loadStateChart();
}

async function togglePause() {
  const t = lastTables.find((x) => x.keyspace === selected.keyspace &&
                                   x.name === selected.name);
  if (!t || !t.loaded) return;
  const button = $("pause-toggle");
  button.disabled = true;
  const r = await api("/api/pause", {
    method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded",
              "X-Msgq-Console": "1"},
    body: query({keyspace: selected.keyspace, table: selected.name,
                 paused: t.paused ? "0" : "1"}),
  });
  const data = await r.json();
  $("action-result").textContent = r.ok
      ? (data.paused ? "paused" : "resumed") : `pause failed: ${data.error}`;
  button.disabled = false;
  await refresh();
}

function showOwnership(t) {
  const button = $("pause-toggle");
  button.hidden = !(t && t.loaded);
  if (t && t.loaded) button.textContent = t.paused ? "Resume" : "Pause";
  const o = t && t.ownership;
  $("detail-ownership").textContent = o
      ? `ownership: ${o.state}${o.owner ? " (owner " + o.owner + ")" : ""}` +
        `${o.error ? ": " + o.error : ""}` +
        (t.loaded && t.pending_due !== null && t.pending_due !== undefined
            ? `  ·  due now ${fmt(t.pending_due)}${t.pending_capped ? "+" : ""}` +
              `  ·  oldest due ${t.oldest_due_age.toFixed(0)} s`
            : "") +
        (t.loaded ? `  ·  in msgqd's cache ${fmt(t.queued)}` +
                    `  ·  postponed ${fmt(t.postponed)}  ·  nacked ${fmt(t.nacked)}` +
                    `  ·  died ${fmt(t.died)}  ·  purged ${fmt(t.purged)}` +
                    `  ·  polls ${fmt(t.polls)}  ·  binlog fetches ${fmt(t.fetches)}` : "")
      : "";
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value);
  $("token").value = "";
  $("token-form").hidden = true;
  refresh();
});
$("find-form").addEventListener("submit", (event) => {
  event.preventDefault();
  findMessage($("find-id").value.trim());
});
$("recent-order").addEventListener("change", loadRecent);
$("recent-state").addEventListener("change", () => {
  // Acked rows are listed highest id first only.
  if ($("recent-state").value === "acked") $("recent-order").value = "newest";
  loadRecent();
});
$("recent-payload").addEventListener("change", loadRecent);
$("redrive-all").addEventListener("click", redriveAll);
$("redrive-selected").addEventListener("click",
                                       () => deadAction("redrive", deadSelection()));
$("delete-selected").addEventListener("click",
                                      () => deadAction("delete", deadSelection()));
$("message-redrive").addEventListener("click",
                                      () => deadAction("redrive", [shownMessage]));
$("message-delete").addEventListener("click",
                                     () => deadAction("delete", [shownMessage]));
$("confirm-yes").addEventListener("click", () => {
  const run = pendingConfirm;
  closeConfirm();
  if (run) run();
});
$("confirm-no").addEventListener("click", closeConfirm);
$("dead-next").addEventListener("click", () => {
  deadPages.push($("dead-next").dataset.after);
  loadDead();
});
$("dead-prev").addEventListener("click", () => {
  if (deadPages.length > 1) deadPages.pop();
  loadDead();
});
$("dead-select-all").addEventListener("change", () => {
  for (const c of document.querySelectorAll("#dead tr[data-dead-id] input")) {
    c.checked = $("dead-select-all").checked;
  }
  selectionChanged();
});
$("pause-toggle").addEventListener("click", togglePause);
$("detail-close").addEventListener("click", () => {
  selected = null;
  closeConfirm();
  $("detail").hidden = true;
  window.history.replaceState(null, "", "#");
});
if (location.hash.length > 1) {
  const h = decodeURIComponent(location.hash.slice(1));
  const dot = h.indexOf(".");
  if (dot > 0) select(h.slice(0, dot), h.slice(dot + 1));
}
refresh();
setInterval(refresh, REFRESH_MS);
setInterval(loadStateChart, SAMPLE_EVERY * 1000);
