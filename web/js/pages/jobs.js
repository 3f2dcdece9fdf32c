// Jobs: a live table of jobs (polled every 2 s), filtered by status (by the API) and by text
// (kernel, device, strategy, problem: in the page), a cancel button on queued and running jobs, a
// selection to compare, and the form to start a job (start_form.js).

import { get, del, query } from "../api.js";
import { startForm } from "../start_form.js";
import { h, clear, objectiveOf, fmtDuration, fmtTime, fmtObject, statusBadge, progressBar, errorBox, TERMINAL } from "../dom.js";

const POLL_MS = 2000;
const STATUSES = ["", "queued", "running", "succeeded", "failed", "cancelled"];

function progressLabel(job) {
  const p = job.progress;
  const b = job.budget || {};
  let of = b.evaluations ?? null;
  if (of === null && p.space_size) of = p.space_size;
  if (b.seconds && !b.evaluations) return `${(p.clock_seconds || 0).toFixed(0)} / ${b.seconds} s`;
  return of ? `${p.trials.toLocaleString("en")} / ${Number(of).toLocaleString("en")}` : String(p.trials);
}

function elapsed(job) {
  return job.timings.elapsed_seconds ?? null;
}

export function mount(root) {
  let status = "";
  let text = "";
  let limit = 100;
  let timer = null;
  let alive = true;
  let last = null;
  const selected = new Set();
  const tbody = h("tbody");
  const msg = h("div", { class: "msg" }); // loading errors, cleared by the next good poll
  const actionMsg = h("div", { class: "msg", id: "jobs-action-msg" }); // cancel errors, kept until the next cancel
  const count = h("span", { class: "muted" });
  const compareBtn = h("button", { type: "button", disabled: true, onclick: () => (location.hash = "#/compare?jobs=" + [...selected].join(",")) }, "Compare selected");
  const more = h("button", { type: "button", class: "small", hidden: true, onclick: () => { limit = Math.min(500, limit + 100); refresh(); } }, "Show more");

  const statusSel = h(
    "select",
    { id: "status-filter", "aria-label": "status filter", onchange: (e) => { status = e.target.value; refresh(); } },
    STATUSES.map((s) => h("option", { value: s }, s || "all statuses"))
  );
  const search = h("input", {
    type: "search",
    id: "job-search",
    placeholder: "filter: kernel, device, strategy…",
    "aria-label": "text filter",
    oninput: (e) => { text = e.target.value.trim().toLowerCase(); render(); },
  });

  clear(
    root,
    h("div", { class: "page-head" }, h("h1", {}, "Jobs"), count),
    startForm((job) => refresh().then(() => flash(job.id))),
    h("div", { class: "toolbar" }, statusSel, search, compareBtn),
    msg,
    actionMsg,
    h(
      "div",
      { class: "table-scroll card" },
      h(
        "table",
        { id: "jobs-table", class: "jobs" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { class: "narrow" }, ""),
            h("th", {}, "id"),
            h("th", {}, "status"),
            h("th", {}, "kernel"),
            h("th", { class: "opt" }, "device"),
            h("th", { class: "opt2" }, "problem"),
            h("th", { class: "opt" }, "strategy"),
            h("th", {}, "progress"),
            h("th", {}, "best"),
            h("th", { class: "opt2" }, "started"),
            h("th", { class: "opt" }, "elapsed"),
            h("th", {}, "")
          )
        ),
        tbody
      )
    ),
    more
  );

  function flash(id) {
    const tr = tbody.querySelector(`tr[data-id="${id}"]`);
    if (tr) tr.classList.add("flash");
  }

  async function cancel(job, btn) {
    btn.disabled = true;
    try {
      await del(`/v1/jobs/${job.id}`);
      clear(actionMsg);
    } catch (e) {
      clear(actionMsg, errorBox(e));
    }
    refresh();
  }

  function matches(job) {
    if (!text) return true;
    const hay = [job.kernel, job.device, job.strategy, job.status, String(job.id), fmtObject(job.problem)].join(" ").toLowerCase();
    return hay.includes(text);
  }

  function render() {
    if (!last) return;
    const jobs = last.jobs.filter(matches);
    count.textContent = `${jobs.length} shown`;
    const rows = jobs.map((job) => {
      const box = h("input", {
        type: "checkbox",
        "aria-label": `select job ${job.id}`,
        checked: selected.has(job.id),
        onchange: (e) => {
          if (e.target.checked) selected.add(job.id);
          else selected.delete(job.id);
          compareBtn.disabled = selected.size < 1;
        },
      });
      const canCancel = !TERMINAL.has(job.status);
      return h(
        "tr",
        { dataset: { id: job.id, status: job.status } },
        h("td", { class: "narrow" }, box),
        h("td", {}, h("a", { href: `#/jobs/${job.id}` }, "#" + job.id)),
        h("td", {}, statusBadge(job.status)),
        h("td", {}, job.kernel),
        h("td", { class: "opt mono" }, job.device),
        h("td", { class: "opt2 mono" }, fmtObject(job.problem)),
        h("td", { class: "opt" }, job.strategy),
        h("td", {}, progressBar(job.progress.fraction, progressLabel(job))),
        h("td", { class: "num", dataset: { col: "best" } }, objectiveOf(job.device).fmt(job.best ? job.best.time_ms : null)),
        h("td", { class: "opt2", title: job.timings.started_at || job.timings.created_at }, fmtTime(job.timings.started_at || job.timings.created_at)),
        h("td", { class: "opt num" }, fmtDuration(elapsed(job))),
        h(
          "td",
          {},
          canCancel
            ? h("button", { type: "button", class: "small danger cancel", onclick: (e) => cancel(job, e.target) }, "Cancel")
            : null
        )
      );
    });
    if (!rows.length)
      rows.push(
        h(
          "tr",
          {},
          h("td", { colspan: 12, class: "empty" }, last.jobs.length ? "No job matches the filter." : "No jobs yet. Start one above, or with POST /v1/tune (see the README).")
        )
      );
    clear(tbody, rows);
    more.hidden = !last.next_before || limit >= 500;
    compareBtn.disabled = selected.size < 1;
  }

  // Only the latest call renders and schedules the next poll (a filter change may overtake one).
  let generation = 0;
  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    try {
      const page = await get("/v1/jobs" + query({ status, limit }), { quiet: last !== null });
      if (mine !== generation || !alive) return;
      last = page;
      clear(msg);
      render();
    } catch (e) {
      if (mine !== generation || !alive) return;
      clear(msg, errorBox(e));
    }
    timer = setTimeout(refresh, POLL_MS);
  }

  refresh();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
