// The plain jobs page: polls /v1/jobs every two seconds and renders the table. The full dashboard
// (charts, job pages, compare, best browser) replaces this page in a later step.
"use strict";

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

async function refresh() {
  try {
    const health = await fetch("/healthz").then((r) => r.json());
    document.getElementById("health").textContent = `database ${health.database}, ${health.devices} devices`;
    const page = await fetch("/v1/jobs?limit=100").then((r) => r.json());
    const body = document.querySelector("#jobs tbody");
    body.replaceChildren();
    for (const job of page.jobs) {
      const tr = document.createElement("tr");
      tr.append(cell(job.id), cell(job.status, "status-" + job.status), cell(job.kernel), cell(job.device),
        cell(job.strategy));
      const bar = document.createElement("progress");
      bar.max = 1;
      bar.value = job.progress.fraction;
      const td = document.createElement("td");
      td.append(bar, ` ${job.progress.trials}`);
      tr.append(td, cell(job.best ? job.best.time_ms.toFixed(4) : "–"), cell(job.timings.created_at));
      body.append(tr);
    }
    document.getElementById("jobs-empty").hidden = page.jobs.length > 0;
  } catch (e) {
    document.getElementById("health").textContent = "service unreachable";
  }
}

refresh();
setInterval(refresh, 2000);
