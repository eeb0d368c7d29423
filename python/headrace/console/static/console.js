// headrace web console: the live charts of the overview page. Polls the
// JSON series at data-source (headrace.console.metrics_history) once per
// second and redraws three dygraphs. Nothing else on the console needs
// script. window.headraceConsole exposes the charts and the poll count
// (the browser tests read them).
"use strict";
(function () {
  const root = document.getElementById("charts");
  if (!root || typeof Dygraph === "undefined") return;
  const POLL_MS = 1000;
  const specs = {
    throughput: { el: "chart-throughput", labels: ["time", "bytes in/s", "bytes out/s"],
                  cols: ["bytes_in_per_s", "bytes_out_per_s"], opts: { labelsKMG2: true } },
    requests: { el: "chart-requests", labels: ["time", "Produce/s", "Fetch/s", "other/s"],
                cols: ["produce_per_s", "fetch_per_s", "other_requests_per_s"], opts: {} },
    latency: { el: "chart-latency",
               labels: ["time", "Produce p50", "Produce p99", "Fetch p50", "Fetch p99"],
               cols: ["produce_p50_ms", "produce_p99_ms", "fetch_p50_ms", "fetch_p99_ms"],
               opts: { logscale: true } },
  };
  const state = { charts: {}, polls: 0, errors: 0, last: null };
  window.headraceConsole = state;

  function rows(doc, cols) {
    // A row per point: [Date, value or null, ...]; dygraphs breaks lines at null.
    return doc.t.map((t, i) => [new Date(t * 1000)].concat(cols.map((c) => doc[c][i])));
  }

  function hms(d) {
    return d.toTimeString().slice(0, 8);
  }

  function draw(doc) {
    if (doc.t.length === 0) return;  // a chart needs a first point (log scale)
    for (const [name, s] of Object.entries(specs)) {
      const data = rows(doc, s.cols);
      const chart = state.charts[name];
      // A log axis has no range without a value: wait for one.
      if (!chart && s.opts.logscale && !data.some((r) => r.slice(1).some((v) => v !== null))) {
        continue;
      }
      if (chart) {
        chart.updateOptions({ file: data });
      } else {
        const el = document.getElementById(s.el);
        el.textContent = "";
        state.charts[name] = new Dygraph(el, data, Object.assign({
          labels: s.labels, legend: "always", labelsDiv: s.el + "-legend",
          connectSeparatedPoints: false, includeZero: !s.opts.logscale, strokeWidth: 1.5,
          axes: { x: { axisLabelFormatter: hms, valueFormatter: (ms) => hms(new Date(ms)),
                      pixelsPerLabel: 90 },
                  y: { axisLabelWidth: 60 } },
        }, s.opts));
      }
    }
  }

  // What the latency chart measures: the handler's time when the broker
  // exports it (waits in the purgatory left out), else the total time.
  function caption(kind) {
    const el = document.getElementById("latency-caption");
    if (!el || !kind || el.dataset.kind === kind) return;
    el.dataset.kind = kind;
    el.textContent = kind === "handler"
      ? "Request processing time (in the handler), per interval (ms, log scale): long-poll and acks=all waits excluded"
      : "Request time, per interval (ms, log scale): total time, including long-poll and acks=all waits";
  }

  async function poll() {
    try {
      const res = await fetch(root.dataset.source, { cache: "no-store" });
      if (res.ok) {
        state.last = await res.json();
        caption(state.last.latency);
        draw(state.last);
        state.polls += 1;
      } else {
        state.errors += 1;
      }
    } catch (e) {
      state.errors += 1;
    }
    setTimeout(poll, POLL_MS);
  }
  poll();
})();
