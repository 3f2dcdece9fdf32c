// Devices and workers: what is attached (devices with their state and description), the
// measurement workers (status, the trial they hold, heartbeat), and what each device is measuring
// now (its running jobs). Polled every 2 s.

import { get } from "../api.js";
import { h, clear, fmtAgo, fmtObject, statusBadge, progressBar, errorBox } from "../dom.js";

const POLL_MS = 2000;

function describe(d) {
  const x = d.description || {};
  if (d.kind === "replay") {
    const gpu = x.gpu ? x.gpu : "unnamed GPU";
    return `${gpu} · ${Number(x.configurations || 0).toLocaleString("en")} recorded configurations (${Number(x.valid || 0).toLocaleString("en")} valid) · problem ${Array.isArray(x.problem_size) ? x.problem_size.join("×") : x.problem_size ?? "–"}`;
  }
  // A value the device cannot tell (a CPU cache size no probe source knew) is null: "unknown".
  const plain = Object.entries(x)
    .filter(([, v]) => v === null || typeof v !== "object")
    .map(([k, v]) => [k, v === null ? "unknown" : v]);
  return fmtObject(Object.fromEntries(plain));
}

export function mount(root) {
  let alive = true;
  let timer = null;
  let first = true;
  const msg = h("div", { class: "msg" });
  const devBody = h("tbody");
  const workBody = h("tbody");
  clear(
    root,
    h("div", { class: "page-head" }, h("h1", {}, "Devices and workers")),
    msg,
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Devices"),
      h(
        "div",
        { class: "table-scroll" },
        h(
          "table",
          { id: "devices-table" },
          h("thead", {}, h("tr", {}, h("th", {}, "device"), h("th", {}, "state"), h("th", { class: "opt" }, "kind"), h("th", {}, "kernels"), h("th", { class: "num opt" }, "peak"), h("th", { class: "opt2" }, "description"), h("th", {}, "measuring now"))),
          devBody
        )
      )
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Workers"),
      h(
        "div",
        { class: "table-scroll" },
        h(
          "table",
          { id: "workers-table" },
          h("thead", {}, h("tr", {}, h("th", {}, "worker"), h("th", {}, "status"), h("th", {}, "current trial"), h("th", { class: "num" }, "trials done"), h("th", { class: "opt" }, "devices"), h("th", { class: "opt" }, "heartbeat"), h("th", { class: "opt2" }, "started"))),
          workBody
        )
      )
    )
  );

  async function refresh() {
    try {
      const [devs, workers, running] = await Promise.all([
        get("/v1/devices", { quiet: !first }),
        get("/v1/workers", { quiet: !first }),
        get("/v1/jobs?status=running&limit=100", { quiet: !first }),
      ]);
      if (!alive) return;
      first = false;
      const byDevice = new Map();
      for (const j of running.jobs) {
        if (!byDevice.has(j.device)) byDevice.set(j.device, []);
        byDevice.get(j.device).push(j);
      }
      clear(
        devBody,
        devs.devices.map((d) => {
          const jobs = byDevice.get(d.name) || [];
          return h(
            "tr",
            { dataset: { device: d.name } },
            h("td", { class: "mono" }, d.name),
            h("td", {}, d.available ? h("span", { class: "badge status-succeeded" }, "available") : h("span", { class: "badge status-failed", title: d.reason || "" }, "unavailable"), d.available ? null : h("div", { class: "muted small-text" }, d.reason || d.error || "")),
            h("td", { class: "opt" }, d.kind),
            h("td", {}, (d.kernels || []).join(", ") || "–"),
            // GET /v1/devices' peak where every factor is known; the basis (or why not) on hover.
            h("td", { class: "num opt small-text", title: d.peak_basis || "", dataset: { peak: d.peak_gflops ?? "" } }, d.peak_gflops == null ? h("span", { class: "muted" }, "unknown") : `${Number(d.peak_gflops).toLocaleString("en", { maximumFractionDigits: 1 })} GFLOP/s`),
            h("td", { class: "opt2 small-text" }, describe(d)),
            h(
              "td",
              {},
              jobs.length
                ? jobs.map((j) => h("div", { class: "now" }, h("a", { href: `#/jobs/${j.id}` }, `#${j.id}`), ` ${j.kernel} · ${j.strategy} `, progressBar(j.progress.fraction, `${j.progress.trials.toLocaleString("en")}`)))
                : h("span", { class: "muted" }, "idle")
            )
          );
        })
      );
      clear(
        workBody,
        workers.workers.length
          ? workers.workers.map((w) =>
              h(
                "tr",
                {},
                h("td", { class: "mono" }, w.id),
                h("td", {}, statusBadge(w.status)),
                h("td", { class: "num" }, w.current_trial ?? "–"),
                h("td", { class: "num" }, Number(w.trials_done || 0).toLocaleString("en")),
                h("td", { class: "opt small-text" }, (w.devices || []).length > 3 ? `${w.devices.length} devices` : (w.devices || []).join(", ")),
                h("td", { class: "opt" }, fmtAgo(w.heartbeat_at)),
                h("td", { class: "opt2" }, fmtAgo(w.started_at))
              )
            )
          : h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No workers registered."))
      );
      clear(msg);
    } catch (e) {
      if (alive) clear(msg, errorBox(e));
    }
    if (alive) timer = setTimeout(refresh, POLL_MS);
  }

  refresh();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
