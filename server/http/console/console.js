// msgq web console: polls /api/tables every 2 s, keeps a few minutes of
// history per table in memory for rates and sparklines, and shows the
// selected table's dead messages with redrive buttons (POST /api/redrive)
// and its recent messages (GET /api/messages, the payload only when asked).
// Data is only ever inserted as text (textContent), never as HTML.
"use strict";

const REFRESH_MS = 2000;
const HISTORY = 90;  // samples: 3 minutes at 2 s
const history = new Map();  // "ks.table" -> [{t, sent, acked}]
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

// In flight; with msgq_concurrency_by also the keys at their limit.
function inFlightCell(t) {
  const td = el("td", {class: "num", "data-field": "in_flight"}, fmt(t.in_flight));
  if (t.concurrency) {
    td.title = "msgq_concurrency_by=" + t.concurrency_by + ", msgq_concurrency=" +
        t.concurrency + ": keys with " + t.concurrency + " in flight now";
    td.append(el("span", {class: "muted", "data-field": "keys_at_limit"},
        " · " + fmt(t.keys_at_limit) + " keys at " + t.concurrency));
  }
  return td;
}

function rateCell(samples, field, key) {
  const r = rates(samples, field);
  const last = r.length ? r[r.length - 1] : null;
  return el("td", {"data-field": field + "_rate"},
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

function render(data) {
  lastTables = data.tables;
  $("ready").textContent = data.ready ? "ready" : "not ready";
  $("ready").className = "badge " + (data.ready ? "ok" : "bad");
  $("ready").title = data.ready_reason || "";
  $("binlog").textContent = data.binlog.streaming
      ? "binlog: streaming" : "binlog: off (polling)";
  $("updated").textContent = "updated " + new Date(data.time * 1000).toLocaleTimeString();

  const sums = {subscribers: 0, queued: 0, in_flight: 0, dead: 0,
                sentRate: 0, ackedRate: 0};
  const body = el("tbody");
  for (const t of data.tables) {
    const key = t.keyspace + "." + t.name;
    let samples = history.get(key) || [];
    if (t.loaded) {
      samples.push({t: data.time, sent: t.sent, acked: t.acked});
      if (samples.length > HISTORY) samples = samples.slice(-HISTORY);
      history.set(key, samples);
      sums.subscribers += t.subscribers;
      sums.queued += t.queued;
      sums.in_flight += t.in_flight;
      sums.dead += t.dead || 0;
      const s = rates(samples, "sent"), a = rates(samples, "acked");
      sums.sentRate += s.length ? s[s.length - 1] : 0;
      sums.ackedRate += a.length ? a[a.length - 1] : 0;
    }
    const row = el("tr", {"data-table": key},
        el("td", {"data-field": "name"}, el("strong", {}, t.name),
           el("span", {class: "muted"}, "  " + t.keyspace)),
        stateCell(t));
    if (t.loaded) {
      row.append(
          el("td", {"data-field": "discovery"}, t.discovery),
          el("td", {class: "num", "data-field": "subscribers"}, fmt(t.subscribers)),
          el("td", {class: "num", "data-field": "due_now",
                    title: "unacked rows due now, counted in the index " +
                           "every 10 s at most (msgq_pending_due_messages)"},
             t.pending_due === null || t.pending_due === undefined
                 ? "–" : fmt(t.pending_due) + (t.pending_capped ? "+" : "")),
          el("td", {class: "num", "data-field": "queued",
                    title: "due rows read into msgqd's cache"}, fmt(t.queued)),
          inFlightCell(t),
          el("td", {class: "num" + (t.dead ? " dead-nonzero" : ""),
                    "data-field": "dead"}, fmt(t.dead)),
          el("td", {class: "num", "data-field": "sent"}, fmt(t.sent)),
          el("td", {class: "num", "data-field": "acked"}, fmt(t.acked)),
          el("td", {class: "num", "data-field": "redelivered"}, fmt(t.redelivered)),
          rateCell(samples, "sent"), rateCell(samples, "acked"));
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
  for (const f of ["subscribers", "queued", "in_flight", "dead"]) {
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

async function loadDead() {
  if (!selected) return;
  const tbody = $("dead").tBodies[0];
  const r = await api("/api/dead?" + query({keyspace: selected.keyspace,
                                               table: selected.name, limit: 100}));
  const data = await r.json();
  const body = el("tbody");
  $("detail-error").hidden = r.ok;
  if (!r.ok) {
    $("detail-error").textContent = data.error;
  } else {
    for (const m of data.messages) {
      const button = el("button", {textContent: "Redrive"});
      button.addEventListener("click", () => redrive({id: m.id}, button));
      body.append(el("tr", {"data-dead-id": m.id},
          el("td", {}, m.id),
          el("td", {class: "num"}, fmt(m.epoch)),
          el("td", {}, m.time_dead ? new Date(m.time_dead * 1000).toLocaleString() : "–"),
          el("td", {class: "error", title: m.last_error}, m.last_error || "–"),
          el("td", {}, button)));
    }
    if (!data.messages.length) {
      body.append(el("tr", {}, el("td", {colSpan: 5, class: "muted"}, "no dead messages")));
    }
    $("redrive-all").disabled = !data.messages.length;
  }
  tbody.replaceWith(body);
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
  const r = await api("/api/messages?" + query(params));
  const data = await r.json();
  const body = el("tbody");
  if (!r.ok) {
    body.append(el("tr", {}, el("td", {colSpan: 9, class: "error"}, data.error)));
  } else {
    const fixed = new Set(["id", "priority", "epoch", "time_next", "time_acked",
                           "time_created", "time_dead", "last_error"]);
    for (const m of data.messages) {
      const extra = Object.entries(m).filter(([k]) => !fixed.has(k))
          .map(([k, v]) => `${k}: ${v === null ? "NULL" : v}`).join("  ");
      body.append(el("tr", {"data-recent-id": m.id},
          el("td", {}, m.id),
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
      body.append(el("tr", {}, el("td", {colSpan: 9, class: "muted"}, "no messages")));
    }
  }
  $("recent").tBodies[0].replaceWith(body);
}

async function redrive(what, button) {
  if (button) button.disabled = true;
  const form = Object.assign({keyspace: selected.keyspace, table: selected.name}, what);
  const r = await api("/api/redrive", {
    method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded",
              "X-Msgq-Console": "1"},
    body: query(form),
  });
  const data = await r.json();
  $("action-result").textContent = r.ok
      ? `redriven: ${data.redriven}` : `redrive failed: ${data.error}`;
  await loadDead();
  await loadRecent();
  await refresh();
}

function select(keyspace, name) {
  selected = {keyspace, name};
  $("detail").hidden = false;
  $("detail-title").textContent = `${keyspace}.${name}`;
  $("action-result").textContent = "";
  window.history.replaceState(null, "", "#" + keyspace + "." + name);
  for (const tr of document.querySelectorAll("#tables tr[data-table]")) {
    tr.classList.toggle("selected", tr.dataset.table === keyspace + "." + name);
  }
  showOwnership(lastTables.find((x) => x.keyspace === keyspace && x.name === name));
  loadDead();
  loadRecent();
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
        (t.loaded ? `  ·  postponed ${fmt(t.postponed)}  ·  nacked ${fmt(t.nacked)}` +
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
$("recent-order").addEventListener("change", loadRecent);
$("recent-payload").addEventListener("change", loadRecent);
$("redrive-all").addEventListener("click", () => redrive({all: "1"}, $("redrive-all")));
$("pause-toggle").addEventListener("click", togglePause);
$("detail-close").addEventListener("click", () => {
  selected = null;
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
