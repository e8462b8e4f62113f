#include "cli/serve_page.hh"

#include <string>

namespace mesh::cli {

namespace {

// What both pages share: the style, and the script's helpers. Data from etcd is only ever
// put into a page as text (textContent, attributes), never as HTML.
constexpr std::string_view kStyle = R"CSS(:root {
  --fg: #1d2329; --muted: #5f6b76; --line: #dde2e7; --bg: #f6f7f9; --card: #fff;
  --converged: #2e7d32; --behind: #1565c0; --churning: #7b1fa2; --failing: #e65100;
  --refused: #c62828; --down: #616161; --unenrolled: #8d6e63; --forged: #b71c1c;
  --paused: #f9a825;
}
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 1.2em; flex-wrap: wrap;
         padding: 14px 24px; background: var(--card); border-bottom: 1px solid var(--line); }
header h1 { font-size: 18px; margin: 0; }
header .meta { color: var(--muted); }
#conn { margin-left: auto; font-weight: 600; }
#conn.live { color: var(--converged); }
#conn.live::before { content: "\25CF  "; }
#conn.lost { color: var(--refused); }
main { padding: 16px 24px 40px; max-width: 1300px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
          padding: 14px 18px; margin-bottom: 16px; }
h2 { font-size: 15px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; display: flex; gap: .5em; align-items: center; }
.banner { background: #fdecea; color: var(--refused); border-color: #f5c2bd; }
.chips { display: flex; gap: 10px; flex-wrap: wrap; }
.chip { border-radius: 6px; padding: 6px 12px; background: var(--bg); border: 1px solid var(--line); }
.chip b { font-size: 18px; margin-right: .35em; }
.state { display: inline-block; border-radius: 10px; padding: 0 8px; color: #fff;
         font-size: 12px; font-weight: 600; line-height: 18px; white-space: nowrap; }
.s-converged { background: var(--converged); } .s-behind { background: var(--behind); }
.s-churning { background: var(--churning); } .s-failing { background: var(--failing); }
.s-refused { background: var(--refused); } .s-down { background: var(--down); }
.s-unenrolled { background: var(--unenrolled); } .s-forged { background: var(--forged); }
.s-paused { background: var(--paused); color: #1d2329; }
.s-pending { background: #b0bec5; }
.bar { display: flex; height: 14px; border-radius: 7px; overflow: hidden; background: #eceff1;
       margin: 8px 0 4px; }
.bar span { display: block; height: 100%; transition: width .3s; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 10px 5px 0; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; }
tr:last-child td { border-bottom: none; }
table.nodes { table-layout: fixed; }
table.nodes td { overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.err { color: var(--refused); }
.reasons { margin: 2px 0 0; padding-left: 1.1em; color: var(--muted); font-size: 12.5px; }
.history { display: flex; gap: 3px; flex-wrap: wrap; max-width: 320px; }
.history .state { font-size: 11px; padding: 0 6px; opacity: .85; }
.empty { color: var(--muted); font-style: italic; }
a.node-link { color: inherit; text-decoration: none; }
a.node-link:hover b { text-decoration: underline; }
pre.diff { margin: 4px 0 8px; padding: 8px 10px; background: var(--bg); border: 1px solid var(--line);
           border-radius: 6px; overflow-x: auto; font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace;
           max-height: 420px; white-space: pre; }
)CSS";

constexpr std::string_view kHelpers = R"JS(function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-") || k === "title") e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined)
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  return e;
}
const short = d => d ? d.slice(0, 19) : "-";
const shortKey = k => { if (!k) return "-"; const i = k.indexOf(":"); return k.slice(0, i + 9) + "…"; };
const orDash = v => (v === null || v === undefined) ? "-" : String(v);
function ago(ms) {
  if (!ms) return "never";
  const s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 120) return s + "s ago";
  if (s < 7200) return Math.floor(s / 60) + "m ago";
  if (s < 172800) return Math.floor(s / 3600) + "h ago";
  return Math.floor(s / 86400) + "d ago";
}
const clock = ms => new Date(ms).toLocaleTimeString([], {hour12: false});
const badge = (state, extra) => el("span", {class: "state s-" + state, text: extra || state});
)JS";

// The fleet page: every node, live (/events). Each row links to the node's page
// (serve_node_page.cc); what happened to a node over time is there, read from etcd.
constexpr std::string_view kFleetHead = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mesh-host fleet</title>
<style>
)PAGE";

constexpr std::string_view kFleetBody = R"PAGE(</style>
</head>
<body>
<header>
  <h1>mesh-host fleet</h1>
  <span class="meta">cluster <b id="cluster">…</b></span>
  <span class="meta">etcd revision <b id="revision">…</b></span>
  <span class="meta" id="updated"></span>
  <span id="conn">connecting…</span>
</header>
<main>
  <section id="etcd-error" class="banner" hidden></section>
  <section><div class="chips" id="summary"></div></section>
  <section>
    <h2>Rollout of the newest push</h2>
    <div id="rollout"><span class="empty">nothing pushed</span></div>
  </section>
  <section>
    <h2>Versions</h2>
    <table><thead><tr><th>Serial</th><th>Digest</th><th>Pushed by</th><th>Pushed</th>
      <th>Nodes</th></tr></thead><tbody id="versions"></tbody></table>
  </section>
  <section>
    <h2>Nodes by state</h2>
    <div id="nodes"><span class="empty">no nodes</span></div>
  </section>
</main>
<script>
"use strict";
)PAGE";

constexpr std::string_view kFleetScript =
    R"PAGE(const ORDER = ["forged", "unenrolled", "down", "refused", "failing", "paused", "behind",
               "churning", "converged"];
window.meshPageId = Math.random().toString(36).slice(2);
window.meshUpdates = 0;
let fleet = null;


// The newest push: the highest wanted serial any node holds, and how far it got. Every
// node it was pushed to is in exactly one of: applied (ok or failing), refused, down,
// pending; "applied" counts the same nodes in the headline and in the breakdown.
function rolloutOf(nodes) {
  let newest = null;
  for (const n of nodes)
    if (n.wanted_serial !== null && (!newest || n.wanted_serial > newest.serial))
      newest = {serial: n.wanted_serial, digest: n.wanted_digest};
  if (!newest) return null;
  const r = Object.assign(newest, {total: 0, applied: 0, ok: 0, failing: 0, refused: 0, down: 0});
  for (const n of nodes) {
    if (n.wanted_serial !== r.serial || n.wanted_digest !== r.digest) continue;
    r.total++;
    const has = n.applied_serial === r.serial && n.applied_digest === r.digest;
    if (n.state === "down") r.down++;
    else if (n.state === "refused") r.refused++;
    else if (has && n.state === "failing") r.failing++;
    else if (has) r.ok++;
  }
  r.applied = r.ok + r.failing;
  return r;
}

function renderRollout(v) {
  const box = document.getElementById("rollout");
  const r = rolloutOf(v.nodes);
  box.replaceChildren();
  if (!r) {
    box.append(el("span", {class: "empty", text: "nothing pushed"}));
    if (v.rollout) box.append(rolloutLine(v.rollout));
    return;
  }
  box.dataset.serial = r.serial;
  box.dataset.applied = r.applied;
  box.dataset.total = r.total;
  const ver = v.versions.find(x => x.serial === r.serial && x.digest === r.digest);
  const pct = n => (100 * n / r.total) + "%";
  const pending = r.total - r.ok - r.failing - r.refused - r.down;
  box.append(
    el("div", {},
       el("b", {text: "serial " + r.serial}), " ", el("code", {text: short(r.digest)}),
       ver && ver.pushed_by ? el("span", {class: "muted",
         text: " pushed by " + shortKey(ver.pushed_by) + " " + ago(Date.parse(ver.pushed_at))}) : null,
       " — ", el("b", {id: "rollout-count", text: r.applied + " of " + r.total}),
       " node(s) applied it"),
    el("div", {class: "bar"},
       el("span", {class: "s-converged", style: "width:" + pct(r.ok), title: r.ok + " applied"}),
       el("span", {class: "s-failing", style: "width:" + pct(r.failing), title: r.failing + " failing"}),
       el("span", {class: "s-refused", style: "width:" + pct(r.refused), title: r.refused + " refused"}),
       el("span", {class: "s-down", style: "width:" + pct(r.down), title: r.down + " down"}),
       el("span", {class: "s-pending", style: "width:" + pct(pending), title: pending + " pending"})),
    el("div", {class: "muted", id: "rollout-breakdown", text: [
       r.applied + " applied (" + r.ok + " ok, " + r.failing + " failing)", r.refused + " refused",
       r.down + " down", pending + " pending"].join(" · ")}),
    v.rollout ? rolloutLine(v.rollout) : null);
}

// A staged rollout's state, when the view carries one (`fleet push --canary`):
// "serial 7: wave 2 of 5, halted: web-3 restarted web.service 4 times".
function rolloutLine(ro) {
  const text = "serial " + orDash(ro.serial) + ": wave " + orDash(ro.wave) + " of " +
    orDash(ro.waves) + ", " + orDash(ro.state) + (ro.reason ? ": " + ro.reason : "");
  const bad = ro.state === "halted" || ro.state === "aborted" || ro.state === "reverted";
  return el("div", {id: "rollout-state", class: bad ? "err" : "muted", text: text});
}

function renderVersions(v) {
  const body = document.getElementById("versions");
  body.replaceChildren();
  for (const ver of v.versions) {
    const at = ver.pushed_at ? Date.parse(ver.pushed_at) : 0;
    body.append(el("tr", {"data-serial": orDash(ver.serial)},
      el("td", {}, el("b", {text: ver.digest ? orDash(ver.serial) : "nothing applied"})),
      el("td", {}, el("code", {text: short(ver.digest), title: ver.digest || ""})),
      el("td", {}, ver.pushed_by ? el("code", {text: shortKey(ver.pushed_by), title: ver.pushed_by})
                                 : el("span", {class: "muted", text: ver.digest ? "not known" : "-"}),
         ver.pushed_by && !ver.pushed_verified ? el("span", {class: "err", text: " (not a trusted key)"}) : null),
      el("td", {title: ver.pushed_at || ""}, at ? ago(at) : "-"),
      el("td", {}, el("b", {text: String(ver.nodes.length)}), " ",
         el("span", {class: "muted", text: ver.nodes.join(", ")}))));
  }
}

function renderNodes(v) {
  const box = document.getElementById("nodes");
  box.replaceChildren();
  if (!v.nodes.length) { box.append(el("span", {class: "empty", text: "no nodes under this cluster"})); return; }
  for (const state of ORDER) {
    const nodes = v.nodes.filter(n => n.state === state);
    if (!nodes.length) continue;
    const rows = nodes.map(n => {
      return el("tr", {"data-node": n.node, "data-state": n.state},
        el("td", {}, el("a", {class: "node-link", href: "node?name=" + encodeURIComponent(n.node)},
                        el("b", {text: n.node}))),
        el("td", {class: "mono", text: orDash(n.wanted_serial)}),
        el("td", {class: "mono", text: orDash(n.applied_serial)}),
        el("td", {}, el("code", {text: short(n.applied_digest)})),
        el("td", {title: n.last_seen_ms ? new Date(n.last_seen_ms).toISOString() : ""}, ago(n.last_seen_ms)),
        el("td", {},
           n.last_error ? el("div", {class: "err", text: n.last_error}) : null,
           n.reasons.length ? el("ul", {class: "reasons"}, ...n.reasons.map(r => el("li", {text: r}))) : null));
    });
    box.append(el("h3", {"data-group": state}, badge(state), el("span", {class: "muted", text: nodes.length + " node(s)"})),
      el("table", {class: "nodes"},
         el("colgroup", {}, ...["14%", "8%", "8%", "17%", "10%", "43%"].map(w =>
            el("col", {style: "width:" + w}))),
         el("thead", {}, el("tr", {}, ...["Node", "Wanted", "Applied", "Digest", "Last seen",
            "Error / why"].map(t => el("th", {text: t})))),
         el("tbody", {}, ...rows)));
  }
}

function render() {
  if (!fleet) return;
  const v = fleet;
  document.getElementById("cluster").textContent = v.cluster;
  document.getElementById("revision").textContent = v.revision;
  const sum = document.getElementById("summary");
  sum.replaceChildren(el("div", {class: "chip"}, el("b", {text: String(v.summary.nodes)}), "nodes"),
    ...ORDER.filter(s => v.summary[s]).map(s =>
      el("div", {class: "chip", "data-count": s}, el("b", {text: String(v.summary[s])}), badge(s))));
  renderRollout(v);
  renderVersions(v);
  renderNodes(v);
}

const conn = document.getElementById("conn");
const source = new EventSource("events");
source.onopen = () => { conn.textContent = "live"; conn.className = "live"; };
source.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "lost"; };
source.addEventListener("fleet", e => {
  fleet = JSON.parse(e.data);
  window.meshUpdates++;
  document.getElementById("updated").textContent = "updated " + clock(Date.now());
  render();
});
source.addEventListener("etcd", e => {
  const err = JSON.parse(e.data).error;
  const box = document.getElementById("etcd-error");
  box.hidden = !err;
  box.textContent = err ? "etcd cannot be read: " + err + " (showing the last view read)" : "";
});
setInterval(render, 10000);  // "ago" texts
// Tests draw a view they made (a rollout object, say) as if it had come from the stream.
window.meshShowFleet = v => { fleet = v; render(); };
</script>
</body>
</html>
)PAGE";

}  // namespace

std::string_view pageStyle() {
  return kStyle;
}

std::string_view pageHelpers() {
  return kHelpers;
}

std::string_view fleetPage() {
  static const std::string page = std::string(kFleetHead) + std::string(kStyle) +
                                  std::string(kFleetBody) + std::string(kHelpers) +
                                  std::string(kFleetScript);
  return page;
}

}  // namespace mesh::cli
