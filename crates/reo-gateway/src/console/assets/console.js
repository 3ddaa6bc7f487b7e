// The console's script: polls /_reo/console/api/state, fills the tables, draws the two charts
// as SVG, and sends admin actions (with the session's CSRF token) after a confirmation.
"use strict";

const csrf = document.querySelector('meta[name="csrf"]').content;
const POLL_MS = 5000;

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function row(tbody, cells, id) {
  const tr = el("tr", id ? { id } : {});
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.appendChild(c); tr.appendChild(td); }
    else tr.appendChild(el("td", typeof c === "string" ? { class: "text" } : {}, c));
  }
  tbody.appendChild(tr);
  return tr;
}

function say(text, error) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.className = error ? "error" : "";
}

// A line chart of (t, y) points; gaps (null) break the line. Points as the SVG's data.
function chart(id, points, yMax, label) {
  const W = 600, H = 160, L = 40, B = 20;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("aria-label", label);
  const ts = points.map(p => p[0]);
  const t0 = Math.min(...ts), t1 = Math.max(...ts, t0 + 1);
  const x = t => L + (W - L - 5) * (t - t0) / (t1 - t0);
  const y = v => H - B - (H - B - 5) * (v / yMax);
  for (const frac of [0, 0.5, 1]) {
    const t = document.createElementNS(svg.namespaceURI, "text");
    t.setAttribute("x", 2); t.setAttribute("y", y(frac * yMax) + 3);
    t.textContent = (frac * yMax).toPrecision(2);
    svg.appendChild(t);
  }
  let run = [];
  const flush = () => {
    if (run.length === 0) return;
    if (run.length === 1) run.push([run[0][0] + 0.5, run[0][1]]);
    const pl = document.createElementNS(svg.namespaceURI, "polyline");
    pl.setAttribute("points", run.map(p => `${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(" "));
    svg.appendChild(pl);
    run = [];
  };
  for (const [t, v] of points) {
    if (v === null || v === undefined) { flush(); continue; }
    run.push([x(t), y(Math.min(v, yMax))]);
  }
  flush();
  const host = document.getElementById(id);
  host.replaceChildren(svg);
  host.dataset.points = String(points.filter(p => p[1] !== null && p[1] !== undefined).length);
}

async function act(what, params, question) {
  if (!window.confirm(question)) return;
  const q = new URLSearchParams({ what, ...params });
  say(`${what}: sent…`);
  try {
    const r = await fetch(`/_reo/console/api/action?${q}`, {
      method: "POST", headers: { "X-Reo-Csrf": csrf }, credentials: "same-origin",
    });
    const body = await r.text();
    let msg = body;
    try { const j = JSON.parse(body); msg = j.error || j.message || JSON.stringify(j); } catch (e) { /* plain text */ }
    say(`${what}: ${r.ok ? "done" : "refused"}: ${msg}`, !r.ok);
  } catch (e) {
    say(`${what}: ${e}`, true);
  }
  refresh();
}

function render(s) {
  const st = s.status;
  document.getElementById("who").textContent = s.user ? `signed in as ${s.user}` : "";
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();

  const dev = document.querySelector("#devices tbody");
  dev.replaceChildren();
  for (const d of st.devices) {
    const io = d.io || {};
    const health = el("span", { class: d.health }, d.health);
    let button;
    if (d.health === "healthy") {
      button = el("button", { class: "fail", "data-device": d.device }, "Fail");
      button.onclick = () => act("fail", { device: d.device },
        `Fail device ${d.device}? Its data is served from redundancy until it is replaced.`);
    } else if (d.health === "failed") {
      button = el("button", { class: "replace", "data-device": d.device }, "Replace");
      button.onclick = () => {
        const path = window.prompt(`Replacement device file for device ${d.device}:`, `dev${d.device}-replacement.img`);
        if (path) act("replace", { device: d.device, path }, `Replace device ${d.device} with ${path} and rebuild it?`);
      };
    } else {
      button = el("span", {}, "");
    }
    row(dev, [String(d.device), health, io.reads ?? 0, bytes(io.read_bytes ?? 0), io.writes ?? 0,
      bytes(io.write_bytes ?? 0), io.syncs ?? 0, io.errors ?? 0, button], `device-${d.device}`);
  }

  const rb = document.getElementById("rebuild");
  rb.replaceChildren();
  if (st.rebuild) {
    const r = st.rebuild;
    rb.appendChild(el("p", {}, `Rebuild of device ${r.device}: ${r.state}, ${bytes(r.bytes_done)} of ${bytes(r.bytes_total)}`));
    const t = el("table", { id: "rebuild-classes" });
    t.appendChild(el("thead")).appendChild(el("tr")).append(el("th", {}, "Class"), el("th", {}, "Restored"), el("th", {}, "Of"), el("th", {}, "Lost blobs"));
    const tb = t.appendChild(el("tbody"));
    for (const c of s.rebuild_classes) row(tb, [c.class, bytes(c.bytes_done), bytes(c.bytes_total), c.blobs_lost]);
    rb.appendChild(t);
  }

  const cls = document.querySelector("#classes tbody");
  cls.replaceChildren();
  for (const c of s.classes) row(cls, [c.class, c.scheme, c.objects, bytes(c.bytes)]);
  document.getElementById("hhot").textContent =
    `H_hot: ${s.hot_threshold === null ? "∞ (nothing hot)" : s.hot_threshold.toExponential(3)}; space efficiency ${(100 * s.space_efficiency).toFixed(1)} %`;
  const sp = document.querySelector("#space tbody");
  sp.replaceChildren();
  for (const p of st.space.per_scheme) row(sp, [p.scheme, p.bands, bytes(p.live_bytes), bytes(p.live_device_bytes)]);

  const wb = document.getElementById("writeback");
  wb.replaceChildren();
  const b = st.backend;
  const facts = [
    ["Dirty", `${st.dirty_objects} objects, ${bytes(st.dirty_bytes)}`],
    ["Flush lag", `${st.flush_lag_seconds.toFixed(1)} s`],
    ["Backend", b.up ? "up" : `down for ${b.down_seconds.toFixed(0)} s${b.last_error ? ": " + b.last_error : ""}`],
    ["Stuck", `${st.stuck.objects} objects`],
    ["Cache", `${st.cache.objects} objects, ${bytes(st.cache.bytes)} of ${bytes(st.cache.capacity)}; hit ratio ${(100 * st.cache.hit_ratio).toFixed(1)} %`],
    ["Data-loss events", st.data_loss_events],
    ["Scrub", s.scrub.running ? "running" : "idle"],
  ];
  for (const [k, v] of facts) wb.append(el("dt", {}, k), el("dd", { id: "wb-" + k.toLowerCase().replace(/[^a-z]+/g, "-") }, v));

  const hs = document.querySelector("#hints tbody");
  hs.replaceChildren();
  for (const h of (s.hints && s.hints.hints) || []) row(hs, [h.request_id, h.bucket, h.key ?? (h.prefix ?? "") + "*", h.intent]);

  const hist = s.history.map(p => [p.t, p.hit_ratio, p.latency_ms]);
  chart("chart-hit", hist.map(p => [p[0], p[1]]), 1, "hit ratio");
  const lat = hist.map(p => [p[0], p[2]]);
  const maxLat = Math.max(1, ...lat.map(p => p[1] || 0)) * 1.1;
  chart("chart-latency", lat, maxLat, "mean latency in milliseconds");
}

async function refresh() {
  try {
    const r = await fetch("/_reo/console/api/state", { credentials: "same-origin" });
    if (r.status === 401) { window.location.reload(); return; }
    if (!r.ok) { say(`state: ${r.status} ${await r.text()}`, true); return; }
    render(await r.json());
  } catch (e) {
    say(`state: ${e}`, true);
  }
}

document.getElementById("flush").onclick = () =>
  act("flush", {}, "Flush every unflushed object to the backend now?");
document.getElementById("scrub").onclick = () =>
  act("scrub", {}, "Scrub the array now (every chunk read and verified)?");
document.getElementById("logout").onclick = async () => {
  await fetch("/_reo/console/logout", { method: "POST", headers: { "X-Reo-Csrf": csrf }, credentials: "same-origin" });
  window.location.href = "/_reo/console";
};
refresh();
setInterval(refresh, POLL_MS);
