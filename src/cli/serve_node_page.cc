// One node's page (node?name=NODE): its state and why, its last cycle that changed or
// failed something (every outcome with its reason, the diffs of files that may be shown),
// what waits while it is paused or runs --noop, the serials it applied over time and the
// pushes that named it, and its services. Everything comes from /api/node (read from etcd
// at each ask: a reload shows the same), asked again on each event of /events.
#include <string>

#include "cli/serve_page.hh"

namespace mesh::cli {

namespace {

constexpr std::string_view kHead = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mesh-host node</title>
<style>
)PAGE";

constexpr std::string_view kBody = R"PAGE(</style>
</head>
<body>
<header>
  <h1><a class="node-link" href="./">mesh-host fleet</a> › <span id="node">…</span></h1>
  <span class="meta">cluster <b id="cluster">…</b></span>
  <span class="meta">etcd revision <b id="revision">…</b></span>
  <span class="meta" id="updated"></span>
  <span id="conn">connecting…</span>
</header>
<main>
  <section id="error" class="banner" hidden></section>
  <section>
    <h2>State</h2>
    <div id="state"><span class="empty">…</span></div>
  </section>
  <section>
    <h2>What failed and why</h2>
    <div id="failed"><span class="empty">…</span></div>
  </section>
  <section>
    <h2>Last cycle that changed or failed something</h2>
    <div id="report"><span class="empty">…</span></div>
  </section>
  <section>
    <h2>Pending changes</h2>
    <div id="pending"><span class="empty">…</span></div>
  </section>
  <section>
    <h2>Serials over time</h2>
    <div id="serials"><span class="empty">…</span></div>
  </section>
  <section>
    <h2>Services</h2>
    <div id="services"><span class="empty">…</span></div>
  </section>
</main>
<script>
"use strict";
)PAGE";

constexpr std::string_view kScript = R"PAGE(
const nodeName = new URLSearchParams(location.search).get("name") || "";
window.meshUpdates = 0;
let detail = null;

const when = ms => ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " (" + ago(ms) + ")" : "-";
function box(id, ...children) {
  const b = document.getElementById(id);
  b.replaceChildren(...children.filter(c => c !== null && c !== undefined));
  return b;
}
const none = text => el("span", {class: "empty", text: text});
function table(head, rows, attrs) {
  return el("table", attrs || {}, el("thead", {}, el("tr", {}, ...head.map(t => el("th", {text: t})))),
            el("tbody", {}, ...rows));
}
const counts = s => ["created", "updated", "unchanged", "removed", "released", "skipped", "failed"]
  .map(k => s[k] + " " + k).join(", ");

function renderState(d) {
  const v = d.view;
  if (!v) { box("state", none("etcd holds nothing of node " + nodeName)); return; }
  box("state",
    el("div", {}, badge(v.state), " ", el("span", {class: "muted", text: v.up ? "up" : "not up"})),
    el("table", {},
      el("tbody", {},
        el("tr", {}, el("th", {text: "Last seen"}),
           el("td", {id: "last-seen", title: v.last_seen_ms ? new Date(v.last_seen_ms).toISOString() : ""},
              (v.up ? "heartbeat " : "last status ") + ago(v.last_seen_ms))),
        el("tr", {}, el("th", {text: "Applied"}),
           el("td", {}, "serial " + orDash(v.applied_serial) + " ", el("code", {text: short(v.applied_digest)}),
              d.applied_cycle ? " in cycle " + d.applied_cycle.cycle + ", " + when(d.applied_cycle.at_ms) : null)),
        el("tr", {}, el("th", {text: "Wanted"}),
           el("td", {}, "serial " + orDash(v.wanted_serial) + " ", el("code", {text: short(v.wanted_digest)}))),
        el("tr", {}, el("th", {text: "Last cycle"}),
           el("td", {}, "cycle " + v.cycle + ": " + counts(v.summary))),
        el("tr", {}, el("th", {text: "Version"}), el("td", {text: v.version || "-"})))),
    v.reasons.length ? el("ul", {class: "reasons", id: "reasons"}, ...v.reasons.map(r => el("li", {text: r}))) : null);
}

function renderFailed(d) {
  const v = d.view;
  const rows = [];
  if (v) {
    for (const f of v.failing)
      rows.push(el("tr", {"data-failed": f.id}, el("td", {}, el("code", {text: f.id})), el("td", {class: "err", text: f.reason})));
    if (v.cycle_error) rows.push(el("tr", {}, el("td", {text: "(the cycle)"}), el("td", {class: "err", text: v.cycle_error})));
    if (v.refused) rows.push(el("tr", {}, el("td", {text: "refused serial " + orDash(v.refused.serial)}),
                                el("td", {class: "err", text: v.refused.reason})));
  }
  box("failed", rows.length ? table(["Resource", "Why"], rows) : none("nothing is failing"));
}

function renderReport(d) {
  const r = d.report;
  if (!r) { box("report", none("no report: the node has not changed or failed anything since it reports")); return; }
  if (!r.verified) { box("report", el("div", {class: "err", text: r.problem})); return; }
  const rows = [];
  for (const o of r.outcomes) {
    rows.push(el("tr", {"data-outcome": o.id},
      el("td", {}, el("code", {text: o.id})), el("td", {text: o.kind}),
      el("td", {}, badge(o.outcome === "failed" ? "failing" : o.outcome === "skipped" ? "refused" : "converged", o.outcome)),
      el("td", {class: o.outcome === "failed" ? "err" : "", text: o.reason + (o.restarted ? " (restarted)" : "")}),
      el("td", {class: "muted", text: o.detail})));
    if (o.diff)
      rows.push(el("tr", {"data-diff": o.id}, el("td", {colSpan: 5},
        el("pre", {class: "diff", text: o.diff}),
        o.diff_cut ? el("div", {class: "muted", text: "(diff cut to fit the report)"}) : null)));
  }
  box("report",
    el("div", {}, el("b", {text: "cycle " + r.cycle}), " ", el("span", {class: "muted", text: when(r.at_ms)}),
       " — serial " + orDash(r.serial) + " ", el("code", {text: short(r.declaration_digest)})),
    el("div", {class: "muted", id: "report-counts", text: counts(r.summary)}),
    r.cut ? el("div", {class: "err", text: r.cut}) : null,
    rows.length ? table(["Resource", "Kind", "Outcome", "Reason", "Detail"], rows, {id: "outcomes"}) : null);
}

function renderPending(d) {
  const v = d.view;
  if (!v || (!v.paused && !v.noop)) { box("pending", none("none: the node applies what it is given")); return; }
  box("pending", el("div", {id: "pending-text", text: v.paused
    ? "paused by " + v.paused.user + " since " + when(v.paused.since_ms) + ": " + v.paused.reason + "; " + v.pending + " change(s) waiting"
    : "run --noop: " + v.pending + " change(s) waiting"}));
}

function renderSerials(d) {
  const applied = d.report && d.report.verified ? d.report.applied.slice().reverse() : [];
  const rows = applied.map(a => el("tr", {"data-applied": orDash(a.serial)},
    el("td", {}, el("b", {text: orDash(a.serial)})), el("td", {}, el("code", {text: short(a.declaration_digest)})),
    el("td", {text: "cycle " + a.cycle}), el("td", {text: when(a.at_ms)})));
  const pushes = d.pushes.map(p => el("tr", {"data-pushed": String(p.serial)},
    el("td", {}, el("b", {text: String(p.serial)})), el("td", {}, el("code", {text: short(p.digest)})),
    el("td", {}, el("code", {text: shortKey(p.pushed_by)}), p.verified ? null : el("span", {class: "err", text: " (not a trusted key)"})),
    el("td", {text: p.selector}), el("td", {text: when(p.pushed_at_ms)})));
  box("serials",
    el("h3", {text: "Applied (newest first), as the node reports"}),
    rows.length ? table(["Serial", "Digest", "Cycle", "Applied"], rows, {id: "applied"}) : none("nothing reported"),
    el("h3", {text: "Pushes that named it (newest first)"}),
    pushes.length ? table(["Serial", "Digest", "Pushed by", "Selector", "Pushed"], pushes, {id: "pushes"}) : none("no push record names it"));
}

function renderServices(d) {
  const rows = d.services.map(s => el("tr", {"data-service": s.id},
    el("td", {}, el("code", {text: s.id})), el("td", {text: s.unit}),
    el("td", {}, badge(s.running ? "converged" : "failing", s.running ? "running" : "not running")),
    el("td", {text: s.up_since_ms ? when(s.up_since_ms) : "-"}),
    el("td", {text: String(s.restarts_by_mesh_host)}), el("td", {class: s.restarts_by_crash ? "err" : "", text: String(s.restarts_by_crash)}),
    el("td", {class: s.health === "unhealthy" ? "err" : "", text: (s.health || "not declared") + (s.health_reason ? ": " + s.health_reason : "")})));
  box("services", rows.length
    ? table(["Resource", "Unit", "Running", "Up since", "Restarts by mesh-host", "Restarts by crash", "Health"], rows, {id: "service-table"})
    : none("no services reported"));
}

function render() {
  if (!detail) return;
  const d = detail;
  document.getElementById("node").textContent = d.node;
  document.getElementById("cluster").textContent = d.cluster;
  document.getElementById("revision").textContent = d.revision;
  renderState(d);
  renderFailed(d);
  renderReport(d);
  renderPending(d);
  renderSerials(d);
  renderServices(d);
}

let asking = false, askAgain = false;
async function load() {
  if (asking) { askAgain = true; return; }
  asking = true;
  try {
    const answer = await fetch("api/node?name=" + encodeURIComponent(nodeName), {cache: "no-store"});
    const body = await answer.json();
    const err = document.getElementById("error");
    err.hidden = answer.ok;
    err.textContent = answer.ok ? "" : body.error;
    if (answer.ok) {
      detail = body;
      window.meshUpdates++;
      document.getElementById("updated").textContent = "updated " + clock(Date.now());
      render();
    }
  } catch (e) {
    const err = document.getElementById("error");
    err.hidden = false;
    err.textContent = "the server cannot be reached: " + e;
  } finally {
    asking = false;
    if (askAgain) { askAgain = false; load(); }
  }
}

document.getElementById("node").textContent = nodeName;
document.title = "mesh-host node " + nodeName;
const conn = document.getElementById("conn");
const source = new EventSource("events");
source.onopen = () => { conn.textContent = "live"; conn.className = "live"; };
source.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "lost"; };
source.addEventListener("fleet", () => load());
load();
setInterval(render, 10000);  // "ago" texts
</script>
</body>
</html>
)PAGE";

}  // namespace

std::string nodePage() {
  return std::string(kHead) + std::string(pageStyle()) + std::string(kBody) +
         std::string(pageHelpers()) + std::string(kScript);
}

}  // namespace mesh::cli
