#!/usr/bin/python3
"""Drives msgqd's web console in headless Chromium through chromedriver
(the W3C WebDriver protocol over HTTP, Debian's python3 only).

  console_driver.py URL TABLE EXPECT_SENT OUT_DIR MESSAGE_ID

Opens URL, waits until TABLE's row ("keyspace.name") shows EXPECT_SENT sent
messages, reads every row as shown, saves OUT_DIR/console.png, clicks the
row, reads the summary cards and the chart's sample count, the "Last hour"
chart by state (its sample times, each line's values and the legend), the
dead list, the recent messages (all, then the dead ones, then the acked
ones), the message view of MESSAGE_ID found by the search (saving
OUT_DIR/console-message.png) and the error for an id no row has, and the
ownership line, saves OUT_DIR/console-dead.png, ticks the first dead message and
clicks "Redrive selected" and confirms (reading the confirmation), ticks the
last, clicks "Delete selected" and cancels, then opens that message's view
and deletes it there, confirmed,
waits for the results and for the row's dead count to show 0,
collects what the browser logged as a security violation (a Content
Security Policy that blocked some of the console), then checks that the
policy is in force (with MSGQ_CONSOLE_PAGED_TABLE set, first opens that
table and reads its dead list's first page, the next and the first again,
then clicks the last row's Redrive and reads its confirmation, cancelled):
an inline script added to the page does not run and the
console framed by itself does not load; and prints a JSON report on stdout. With MSGQ_CONSOLE_TOKEN set, first waits
for the console to ask for a token (report "token_prompt") and signs in
with it. Exit 77 when Chromium or chromedriver is
missing (the test reports it as skipped), 1 on failure.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, base):
        self.base = base
        self.session = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: %s" % (method, path, e.read()[:500]))

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.session, path), body)

    def find(self, css):
        return self.s("POST", "/element",
                      {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        # The console re-renders its tables every 2 s: an element found just
        # before a refresh is stale by the click, so find it again.
        for attempt in range(10):
            try:
                self.s("POST", "/element/%s/click" % self.find(css), {})
                return
            except RuntimeError as e:
                if "stale element" not in str(e) or attempt == 9:
                    raise
                time.sleep(0.1)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def wait(self, what, script, *args, timeout=20):
        deadline = time.time() + timeout
        while True:
            value = self.js(script, *args)
            if value:
                return value
            if time.time() > deadline:
                raise RuntimeError("timed out waiting for " + what)
            time.sleep(0.2)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.s("GET", "/screenshot")))


ROWS = """
const out = {};
for (const tr of document.querySelectorAll('#tables tr[data-table]')) {
  const row = {};
  for (const td of tr.querySelectorAll('td[data-field]')) {
    row[td.dataset.field] = td.textContent.trim();
  }
  out[tr.dataset.table] = row;
}
return out;
"""


def main():
    url, table, expect_sent, out_dir, message_id = sys.argv[1:6]
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("chromium or chromedriver not installed (tools/setup)",
              file=sys.stderr)
        return 77
    port = free_port()
    # Everything Chromium writes goes under one directory removed at the
    # end: its profile, and its TMPDIR (Chromium leaves
    # org.chromium.Chromium.scoped_dir.* in the temp directory even when it
    # exits normally). Named msgq-test-*, so that the harness's sweep
    # removes it after a run that was killed.
    work = tempfile.mkdtemp(prefix="msgq-test-chromium-")
    profile = os.path.join(work, "profile")
    tmp = os.path.join(work, "tmp")
    os.mkdir(profile)
    os.mkdir(tmp)
    driver = subprocess.Popen([driver_bin, "--port=%d" % port],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, TMPDIR=tmp))
    wd = WebDriver("http://127.0.0.1:%d" % port)
    report = {}
    try:
        deadline = time.time() + 20
        while True:
            try:
                if wd.call("GET", "/status").get("ready"):
                    break
            except Exception:
                pass
            if time.time() > deadline:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1440,900",
                         "--user-data-dir=" + profile],
            }}}}
        wd.session = wd.call("POST", "/session", caps)["sessionId"]
        wd.s("POST", "/url", {"url": url})
        token = os.environ.get("MSGQ_CONSOLE_TOKEN")
        if token:
            # Authentication on: the console asks for a token at the first
            # 401, then shows the tables with it.
            report["token_prompt"] = wd.wait(
                "the token form",
                "const f = document.getElementById('token-form');"
                "return f && !f.hidden ? "
                "document.getElementById('ready').textContent : null;")
            wd.js("document.getElementById('token').value = arguments[0];"
                  "document.getElementById('token-form').requestSubmit();",
                  token)
        wd.wait("%s to show %s sent" % (table, expect_sent),
                "const r = document.querySelector("
                "'#tables tr[data-table=\"' + arguments[0] + '\"] td[data-field=sent]');"
                "return r && r.textContent.trim() === arguments[1];",
                table, expect_sent)
        # The rows by state, once every loaded table's exact counts are
        # read (scheduled shows "\u2013" until then).
        wd.wait("every table to show its counts by state",
                "const rows = [...document.querySelectorAll("
                "'#tables tr[data-table]')].filter("
                "tr => tr.querySelector('td[data-field=discovery]'));"
                "return rows.length > 0 && rows.every(tr => tr.querySelector("
                "'td[data-field=scheduled]').textContent.trim() !== '\u2013');")
        # Let a second refresh fill in the rates.
        time.sleep(2.5)
        report["before"] = wd.js(ROWS)
        report["ready"] = wd.js("return document.getElementById('ready').textContent;")
        # The purge debt line, and the connection it names.
        report["database"] = wd.wait(
            "the Database line",
            "const e = document.getElementById('database-text');"
            "return e ? e.textContent : null;")
        report["database_connection"] = wd.js(
            "return document.getElementById('database').dataset.connection"
            " || null;")
        # The samples behind the table's sparklines: msgqd's served history
        # (GET /api/history) and the page's own.
        report["chart_samples"] = wd.js(
            "const r = document.querySelector("
            "'#tables tr[data-table=\"' + arguments[0] + '\"] "
            "td[data-field=sent_rate]');"
            "return r ? Number(r.dataset.samples) : null;", table)
        report["cards"] = wd.js(
            "const out = {};"
            "for (const f of ['ready', 'scheduled', 'in_flight', 'dead'])"
            "  out[f] = document.getElementById('sum-' + f).textContent;"
            "return out;")
        wd.screenshot(os.path.join(out_dir, "console.png"))
        wd.click('#tables tr[data-table="%s"] td[data-field=name]' % table)
        wd.wait("the dead list", "return document.querySelectorAll("
                "'#dead tr[data-dead-id]').length > 0;")
        report["dead_ids"] = wd.js(
            "return [...document.querySelectorAll('#dead tr[data-dead-id]')]"
            ".map(tr => tr.dataset.deadId);")
        report["dead_errors"] = wd.js(
            "return [...document.querySelectorAll('#dead tr[data-dead-id] td.error')]"
            ".map(td => td.textContent);")
        wd.wait("the recent messages", "return document.querySelectorAll("
                "'#recent tr[data-recent-id]').length > 0;")
        report["recent_ids"] = wd.js(
            "return [...document.querySelectorAll('#recent tr[data-recent-id]')]"
            ".map(tr => tr.dataset.recentId);")
        # The recent list filtered by state: the dead ones.
        wd.js("const s = document.getElementById('recent-state');"
              "s.value = 'dead'; s.dispatchEvent(new Event('change'));")
        recent_in = (
            "const rows = [...document.querySelectorAll("
            "'#recent tr[data-recent-id]')];"
            "return rows.length && rows.every(tr => tr.querySelector("
            "'td[data-field=state]').textContent === arguments[0]) ? "
            "rows.map(tr => tr.dataset.recentId) : null;")
        report["recent_dead"] = wd.wait(
            "the recent list of dead messages", recent_in, "dead")
        # The acked ones: the order turns to highest id first.
        wd.js("const o = document.getElementById('recent-order');"
              "o.value = 'next';"
              "const s = document.getElementById('recent-state');"
              "s.value = 'acked'; s.dispatchEvent(new Event('change'));")
        report["recent_acked"] = wd.wait(
            "the recent list of acked messages", recent_in, "acked")
        report["recent_acked_order"] = wd.js(
            "return document.getElementById('recent-order').value;")
        # The last hour by state, drawn from msgqd's served history.
        report["state_chart"] = wd.wait(
            "the state chart",
            "const svg = document.querySelector('#state-chart svg');"
            "if (!svg) return null;"
            "const series = {};"
            "for (const l of svg.querySelectorAll('polyline[data-state]'))"
            "  series[l.dataset.state] = JSON.parse(l.dataset.values);"
            "return {samples: Number(svg.dataset.samples),"
            "        times: JSON.parse(svg.dataset.times),"
            "        series,"
            "        legend: [...document.querySelectorAll("
            "            '#state-legend > span[data-state]')]"
            "            .map(e => e.textContent)};")
        # The message view: search an id, read what is shown; then an id
        # that no row has.
        find = ("document.getElementById('find-id').value = arguments[0];"
                "document.getElementById('find-form').requestSubmit();")
        wd.js(find, message_id)
        wd.wait("the message view",
                "const m = document.getElementById('message');"
                "const td = document.querySelector("
                "'#message-fields tr[data-field=id] td');"
                "return !m.hidden && td && td.textContent === arguments[0];",
                message_id)
        report["message"] = wd.js(
            "const out = {};"
            "for (const tr of document.querySelectorAll("
            "'#message-fields tr[data-field]'))"
            "  out[tr.dataset.field] = tr.querySelector('td').textContent;"
            "for (const tr of document.querySelectorAll("
            "'#message-fields tr[data-column]'))"
            "  out['column:' + tr.dataset.column] = "
            "    tr.querySelector('th').textContent + ' = ' + "
            "    tr.querySelector('td').textContent;"
            "return out;")
        # Values are text: markup in a payload makes no element.
        report["message_elements"] = wd.js(
            "return document.querySelectorAll('#message-fields td *:not(pre)')"
            ".length;")
        # A dead message's view offers its own Redrive and Delete.
        report["message_actions"] = wd.js(
            "return !document.getElementById('message-actions').hidden;")
        wd.screenshot(os.path.join(out_dir, "console-message.png"))
        wd.js(find, "999")
        report["find_error"] = wd.wait(
            "the unknown id's error",
            "const e = document.getElementById('find-error').textContent;"
            "return e && document.getElementById('message').hidden ? e : null;")
        report["ownership"] = wd.js(
            "return document.getElementById('detail-ownership').textContent;")
        wd.screenshot(os.path.join(out_dir, "console-dead.png"))
        # Redrive a selection (the first dead message), confirmed; then
        # delete the other: from the selection, cancelled, then from its
        # message view, confirmed.
        dead_ids = report["dead_ids"]
        tick = ("document.querySelector('#dead tr[data-dead-id=\"' + "
                "arguments[0] + '\"] input').click();")
        confirm_text = (
            "const c = document.getElementById('confirm');"
            "return c.hidden ? null : "
            "document.getElementById('confirm-text').textContent + ' [' + "
            "document.getElementById('confirm-yes').textContent + ']';")
        wd.js(tick, dead_ids[0])
        wd.click("#redrive-selected")
        report["redrive_confirm"] = wd.wait("the redrive's confirmation",
                                            confirm_text)
        wd.click("#confirm-yes")
        report["redrive"] = wd.wait(
            "the redrive result",
            "const t = document.getElementById('action-result').textContent;"
            "return t.startsWith('redrive') ? t : null;")
        report["dead_ids_after_redrive"] = wd.wait(
            "the dead list after the redrive",
            "const ids = [...document.querySelectorAll("
            "'#dead tr[data-dead-id]')].map(tr => tr.dataset.deadId);"
            "return ids.length === arguments[0] ? ids : null;",
            len(dead_ids) - 1)
        wd.js(tick, dead_ids[-1])
        wd.click("#delete-selected")
        report["delete_confirm"] = wd.wait("the delete's confirmation",
                                           confirm_text)
        wd.click("#confirm-no")
        report["delete_cancelled"] = wd.js(
            "return {confirm_hidden: document.getElementById('confirm').hidden,"
            " result: document.getElementById('action-result').textContent,"
            " dead_ids: [...document.querySelectorAll("
            "'#dead tr[data-dead-id]')].map(tr => tr.dataset.deadId)};")
        wd.js(find, dead_ids[-1])
        wd.wait("the message view's Delete",
                "return !document.getElementById('message-actions').hidden &&"
                " document.querySelector('#message-fields tr[data-field=id] td')"
                ".textContent === arguments[0];", dead_ids[-1])
        wd.click("#message-delete")
        report["message_delete_confirm"] = wd.wait(
            "the message delete's confirmation", confirm_text)
        wd.click("#confirm-yes")
        report["delete"] = wd.wait(
            "the delete result",
            "const t = document.getElementById('action-result').textContent;"
            "return t.startsWith('delete') ? t : null;")
        report["find_error_after_delete"] = wd.wait(
            "the deleted message's view to close",
            "const e = document.getElementById('find-error').textContent;"
            "return e && document.getElementById('message').hidden ? e : null;")
        wd.wait("the dead count to drop",
                "const r = document.querySelector("
                "'#tables tr[data-table=\"' + arguments[0] + '\"] td[data-field=dead]');"
                "return r && r.textContent.trim() === '0';", table)
        report["after"] = wd.js(ROWS)
        report["dead_ids_after"] = wd.js(
            "return [...document.querySelectorAll('#dead tr[data-dead-id]')]"
            ".map(tr => tr.dataset.deadId);")
        wd.screenshot(os.path.join(out_dir, "console-after-redrive.png"))
        # Pause, then resume, with the detail's button; the state comes back
        # from msgqd's /api/tables.
        state = ("const r = document.querySelector("
                 "'#tables tr[data-table=\"' + arguments[0] + '\"] td[data-field=state]');"
                 "return r && r.textContent.trim() === arguments[1] ? "
                 "r.textContent.trim() : null;")
        button = ("const b = document.getElementById('pause-toggle');"
                  "return !b.hidden && b.textContent === arguments[0] ? "
                  "b.textContent : null;")
        report["pause_button"] = wd.wait("the Pause button", button, "Pause")
        wd.click("#pause-toggle")
        report["paused_state"] = wd.wait("the table to show paused", state,
                                         table, "paused")
        report["resume_button"] = wd.wait("the Resume button", button, "Resume")
        wd.screenshot(os.path.join(out_dir, "console-paused.png"))
        wd.click("#pause-toggle")
        report["resumed_state"] = wd.wait("the table to show loaded", state,
                                          table, "loaded")
        paged = os.environ.get("MSGQ_CONSOLE_PAGED_TABLE")
        if paged:
            # The dead list a page at a time: first, next, back.
            page = ("const ids = [...document.querySelectorAll("
                    "'#dead tr[data-dead-id]')].map(tr => tr.dataset.deadId);"
                    "return ids.length && ids[0] === arguments[0] ? "
                    "{first: ids[0], last: ids[ids.length - 1], "
                    " count: ids.length,"
                    " label: document.getElementById('dead-page').textContent,"
                    " prev: !document.getElementById('dead-prev').disabled,"
                    " next: !document.getElementById('dead-next').disabled}"
                    " : null;")
            wd.click('#tables tr[data-table="%s"] td[data-field=name]' % paged)
            report["dead_page_1"] = wd.wait("the first dead page", page, "1")
            wd.click("#dead-next")
            report["dead_page_2"] = wd.wait("the next dead page", page, "101")
            wd.click("#dead-prev")
            report["dead_page_back"] = wd.wait("the first dead page again",
                                               page, "1")
            # A row's Redrive far down the page: its confirmation is
            # scrolled into view; cancelled.
            wd.click('#dead tr[data-dead-id="100"] button')
            report["row_confirm"] = wd.wait(
                "the row's confirmation",
                "const c = document.getElementById('confirm');"
                "if (c.hidden) return null;"
                "const r = c.getBoundingClientRect();"
                "return {text: document.getElementById('confirm-text')"
                ".textContent,"
                " in_view: Math.round(r.top) >= 0 &&"
                "     Math.round(r.bottom) <= window.innerHeight};")
            wd.click("#confirm-no")
        # CSP violations are logged with source "security"; the console's
        # own run must have none (collected before the probes below, which
        # cause two).
        report["security_log"] = [
            e["message"] for e in wd.s("POST", "/se/log", {"type": "browser"})
            if e.get("source") == "security"]
        report["inline_script_ran"] = wd.js(
            "const s = document.createElement('script');"
            "s.textContent = 'window.msgqInlineRan = true;';"
            "document.body.append(s);"
            "return window.msgqInlineRan === true;")
        wd.js("const f = document.createElement('iframe');"
              "f.id = 'frame-probe';"
              "f.onload = () => { f.dataset.loaded = '1'; };"
              "f.src = '/'; document.body.append(f);")
        wd.wait("the framed console to load or fail",
                "return document.getElementById('frame-probe').dataset.loaded"
                " || null;")
        # A refused frame holds the browser's error page, not the console.
        report["framed"] = wd.js(
            "const d = document.getElementById('frame-probe').contentDocument;"
            "return !!(d && d.getElementById('tables'));")
    except Exception as e:
        report["error"] = str(e)
        try:
            wd.screenshot(os.path.join(out_dir, "console-failure.png"))
        except Exception:
            pass
    finally:
        if wd.session:
            try:
                wd.call("DELETE", "/session/" + wd.session)
            except Exception:
                pass
        driver.terminate()
        driver.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))
    return 1 if "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
